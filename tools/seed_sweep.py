"""Rerun chapters with every random seed moved, and list the cells that stop holding.

A chapter's asserts and glued sentences state claims. A claim about a random draw or a
trained model should hold for other draws too, not only for the seed the chapter happens
to use. This tool runs a notebook once as written (shift 0) and once per shift k = 1..N
with every integer seed moved by k: seeds given to ``numpy.random.default_rng``,
``numpy.random.seed``, ``numpy.random.RandomState``, ``random.seed``, ``random.Random``
and ``torch.manual_seed``, in the notebook's cells and in every module they call
(attncourse included), since the move is made in a first cell added in memory before
anything is imported. The file on disk is never changed.

Every cell runs, whatever fails before it. A cell *stops holding* under a shift when it
raises there. The report lists each such cell with the shifts where it failed and the
first line of the error.

A cell that builds a deliberately chosen draw (a picture of one typical case, say) may
carry the cell tag ``seed-specific``; its prose must say why. It is reported apart and
does not fail the sweep, but a notebook may hold at most one such cell: a second one
fails the sweep.

Usage (from the project root; ``make seed-sweep SHIFTS=3`` runs every chapter):

    .venv/bin/python -m tools.seed_sweep chapters/01_*.ipynb --shifts 3

Exit status 0 when every cell of every notebook holds under every shift, 1 otherwise.
Check cells run in "solved" mode unless ATTNCOURSE_CHECK_MODE says otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient

SEED_SPECIFIC = "seed-specific"
MAX_SEED_SPECIFIC = 1

# The first cell of every run: replaces the seeding functions by ones that add SHIFT to an
# integer seed (None, arrays and generators pass through unchanged, so "fresh entropy" stays
# fresh). torch is patched only if it imports, so numpy-only notebooks stay fast.
_PRELUDE = '''\
def _seed_sweep_install(shift):
    import functools
    import importlib.util
    import numbers
    import random

    import numpy

    def moved(seed):
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            return int(seed) + shift
        return seed

    def patch(owner, name):
        original = getattr(owner, name)

        @functools.wraps(original)
        def seeded(seed=None, *args, **kwargs):
            return original(moved(seed), *args, **kwargs)

        setattr(owner, name, seeded)

    patch(numpy.random, "default_rng")
    patch(numpy.random, "seed")
    patch(random, "seed")

    class MovedRandomState(numpy.random.RandomState):
        def __init__(self, seed=None):
            super().__init__(moved(seed))

        def seed(self, seed=None):
            super().seed(moved(seed))

    numpy.random.RandomState = MovedRandomState

    class MovedRandom(random.Random):
        def seed(self, a=None, version=2):
            super().seed(moved(a), version)

    random.Random = MovedRandom

    if importlib.util.find_spec("torch") is not None:
        import torch
        import torch.random

        original_manual_seed = torch.random.manual_seed

        @functools.wraps(original_manual_seed)
        def manual_seed(seed):
            return original_manual_seed(moved(seed))

        torch.manual_seed = torch.random.manual_seed = manual_seed


_seed_sweep_install({shift})
del _seed_sweep_install
'''


def prelude(shift: int) -> str:
    """The source of the cell that moves every integer seed by ``shift``."""
    return _PRELUDE.format(shift=int(shift))


@dataclasses.dataclass
class Failure:
    """One cell that raised under one shift."""

    index: int  # the cell's position in the notebook (0-based, counting every cell)
    cell_id: str
    shift: int
    error: str  # "AssertionError: ..." (first line)
    seed_specific: bool


def _first_error(cell) -> str | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            value = str(output.get("evalue", "")).strip().splitlines()
            return f"{output.get('ename', 'Error')}: {value[0] if value else ''}".rstrip(": ")
    return None


def run_shift(path: pathlib.Path, shift: int, timeout: int = 600) -> list[Failure]:
    """Execute the notebook at ``path`` with every seed moved by ``shift``; the cells that
    raised. The notebook runs in its own folder, every cell runs whatever fails before it."""
    notebook = nbformat.read(path, as_version=4)
    first = nbformat.v4.new_code_cell(prelude(shift))
    first.id = "seed-sweep-prelude"
    cells = notebook.cells
    notebook.cells = [first, *cells]
    client = NotebookClient(
        notebook, timeout=timeout, allow_errors=True,
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    client.execute()
    failures = []
    for index, cell in enumerate(notebook.cells[1:]):
        if cell.cell_type != "code" or (error := _first_error(cell)) is None:
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        failures.append(Failure(index, cell.get("id", "?"), shift, error, SEED_SPECIFIC in tags))
    if (error := _first_error(notebook.cells[0])) is not None:
        raise RuntimeError(f"the seed-moving prelude itself failed: {error}")
    return failures


def seed_specific_cells(path: pathlib.Path) -> list[int]:
    """Positions of the cells tagged ``seed-specific``."""
    notebook = nbformat.read(path, as_version=4)
    return [index for index, cell in enumerate(notebook.cells)
            if SEED_SPECIFIC in cell.get("metadata", {}).get("tags", [])]


@dataclasses.dataclass
class Report:
    """What one notebook did under shifts 0..shifts."""

    path: pathlib.Path
    shifts: int
    failures: list[Failure]
    tagged: list[int]
    seconds: float

    @property
    def ok(self) -> bool:
        return len(self.tagged) <= MAX_SEED_SPECIFIC and not any(
            not failure.seed_specific for failure in self.failures)

    def lines(self) -> list[str]:
        by_cell: dict[int, list[Failure]] = {}
        for failure in self.failures:
            by_cell.setdefault(failure.index, []).append(failure)
        verdict = "holds" if self.ok else "FAILS"
        lines = [f"{self.path}: {verdict} under shifts 0..{self.shifts} ({self.seconds:.0f} s)"]
        for index, failures in sorted(by_cell.items()):
            shifts = ", ".join(str(f.shift) for f in failures)
            label = " [seed-specific, not counted]" if failures[0].seed_specific else ""
            lines.append(f"  cell {index} (id {failures[0].cell_id}){label}: fails under "
                         f"shift(s) {shifts}: {failures[0].error}")
        if len(self.tagged) > MAX_SEED_SPECIFIC:
            lines.append(f"  {len(self.tagged)} cells are tagged {SEED_SPECIFIC} (cells "
                         f"{self.tagged}); at most {MAX_SEED_SPECIFIC} is allowed")
        return lines


def sweep(path: pathlib.Path, shifts: int, timeout: int = 600) -> Report:
    """Run ``path`` under shifts 0..shifts; its report."""
    start = time.monotonic()
    failures = [failure for shift in range(shifts + 1)
                for failure in run_shift(path, shift, timeout)]
    return Report(path, shifts, failures, seed_specific_cells(path), time.monotonic() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path)
    parser.add_argument("--shifts", type=int, default=3,
                        help="run shifts 0..SHIFTS (default 3: the notebook and three others)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell")
    options = parser.parse_args(argv)
    if options.shifts < 0:
        parser.error("--shifts must be 0 or more")
    os.environ.setdefault("ATTNCOURSE_CHECK_MODE", "solved")
    reports = []
    for path in options.notebooks:
        report = sweep(path, options.shifts, options.timeout)
        print("\n".join(report.lines()), flush=True)
        reports.append(report)
    failing = [report.path for report in reports if not report.ok]
    print(f"{len(reports) - len(failing)} of {len(reports)} notebook(s) hold under "
          f"{options.shifts} shift(s)" + (f"; failing: {', '.join(map(str, failing))}" if failing else ""))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
