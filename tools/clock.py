"""make test's clock: how long each part of the run took, printed at its end.

The Makefile brackets each part of ``make test`` (install, lint, typecheck, the system
packages, the book, pytest, the student version) with ``start PART`` and ``stop PART``;
``make test`` names a file in ``ATTNCOURSE_CLOCK`` for the run and ends with ``report``,
which prints the parts in the order they started, so CI's log shows where the time went.
Without ``ATTNCOURSE_CLOCK`` (``make book`` on its own) start and stop record nothing.

    python tools/clock.py start book      # the Makefile's recipes
    python tools/clock.py stop book
    python tools/clock.py report          # the end of make test

Standard library only: the first part (install) runs before the venv exists.
"""

from __future__ import annotations

import os
import pathlib
import sys
import time

ENVIRONMENT = "ATTNCOURSE_CLOCK"


def record(event: str, part: str, file: pathlib.Path, now: float | None = None) -> None:
    """Append ``event`` ("start" or "stop") of ``part`` at ``now`` (seconds since the epoch)."""
    if event not in ("start", "stop"):
        raise ValueError(f"an event is start or stop, got {event!r}")
    if not part or "\t" in part or "\n" in part:
        raise ValueError(f"a part is named on one line without tabs, got {part!r}")
    file.parent.mkdir(parents=True, exist_ok=True)
    with file.open("a", encoding="utf-8") as out:
        out.write(f"{event}\t{part}\t{time.time() if now is None else now!r}\n")


def durations(lines: list[str], now: float) -> tuple[list[tuple[str, float, bool]], float]:
    """``([(part, seconds, finished), ...] in the order the parts first started, wall
    seconds from the first start to now)``. A part started again adds its time; one
    started and not stopped (it failed, or runs still) counts until ``now``."""
    order: list[str] = []
    spent: dict[str, float] = {}
    running: dict[str, float] = {}
    first = now
    for line in lines:
        if not line.strip():
            continue
        event, part, at = line.split("\t")
        stamp = float(at)
        if event == "start":
            first = min(first, stamp)
            if part not in spent:
                order.append(part)
                spent[part] = 0.0
            running[part] = stamp
        elif part in running:
            spent[part] += stamp - running.pop(part)
    for part, since in running.items():
        spent[part] += now - since
    return [(part, spent[part], part not in running) for part in order], now - first


def report(file: pathlib.Path, now: float | None = None) -> str:
    """The table ``make test`` ends with: one line a part, then the wall-clock total."""
    now = time.time() if now is None else now
    lines = file.read_text(encoding="utf-8").splitlines() if file.is_file() else []
    parts, wall = durations(lines, now)
    if not parts:
        return "make test's clock: no part ran (every one was up to date)"
    width = max(len(part) for part, _, _ in parts + [("total", 0.0, True)])
    rows = [f"  {part:<{width}}  {seconds:7.1f} s" + ("" if finished else "  (did not finish)")
            for part, seconds, finished in parts]
    return "\n".join(["make test's clock (seconds each part took):", *rows,
                      f"  {'total':<{width}}  {wall:7.1f} s  (wall clock, first start to now)"])


def main(argv: list[str]) -> int:
    named = os.environ.get(ENVIRONMENT)
    if not argv or argv[0] not in ("start", "stop", "report") or len(argv) != (1 if argv[0] == "report" else 2):
        print("usage: clock.py start PART | stop PART | report", file=sys.stderr)
        return 2
    if not named:
        return 0  # not a timed run
    if argv[0] == "report":
        print(report(pathlib.Path(named)))
    else:
        record(argv[0], argv[1], pathlib.Path(named))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
