"""tools/clock.py: make test ends with how long each of its parts took, failed parts too."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import tools
from tools import clock

# What `make test` runs, each part bracketed in the Makefile (the order it prints them in
# is the order they start).
PARTS = {"install", "node packages", "lint", "typecheck", "system packages", "book", "pytest", "student"}


def test_each_part_is_reported_in_the_order_it_started_with_the_wall_clock_total(tmp_path):
    file = tmp_path / "clock.tsv"
    for event, part, at in [("start", "install", 100.0), ("stop", "install", 340.5),
                            ("start", "lint", 341.0), ("stop", "lint", 341.5),
                            ("start", "book", 342.0), ("stop", "book", 400.0),
                            ("start", "book", 500.0), ("stop", "book", 510.0)]:  # a part run twice adds up
        clock.record(event, part, file, now=at)
    assert clock.durations(file.read_text().splitlines(), now=520.0) == (
        [("install", 240.5, True), ("lint", 0.5, True), ("book", 68.0, True)], 420.0)
    table = clock.report(file, now=520.0).splitlines()
    assert [line.split()[0] for line in table[1:]] == ["install", "lint", "book", "total"]
    assert re.search(r"install\s+240\.5 s$", table[1]) and re.search(r"total\s+420\.0 s", table[4])


def test_a_part_that_failed_counts_until_the_report_and_says_so(tmp_path):
    file = tmp_path / "clock.tsv"
    clock.record("start", "pytest", file, now=10.0)
    (line,) = clock.report(file, now=70.0).splitlines()[1:2]
    assert re.search(r"pytest\s+60\.0 s  \(did not finish\)$", line)


def test_with_nothing_run_the_report_says_so(tmp_path):
    assert "no part ran" in clock.report(tmp_path / "missing.tsv")


@pytest.mark.parametrize(("event", "part"), [("begin", "book"), ("start", ""), ("stop", "a\tb")])
def test_a_malformed_record_is_refused(tmp_path, event, part):
    with pytest.raises(ValueError):
        clock.record(event, part, tmp_path / "clock.tsv")


def run_clock(*argv, file=None):
    environment = {k: v for k, v in os.environ.items() if k != clock.ENVIRONMENT}
    if file is not None:
        environment[clock.ENVIRONMENT] = str(file)
    return subprocess.run([sys.executable, str(tools.ROOT / "tools" / "clock.py"), *argv],
                          capture_output=True, text=True, env=environment)


def test_the_command_records_only_in_a_timed_run(tmp_path):
    file = tmp_path / "clock.tsv"
    assert run_clock("start", "book").returncode == 0 and not file.exists()  # make book alone
    assert run_clock("start", "book", file=file).returncode == 0
    assert run_clock("stop", "book", file=file).returncode == 0
    done = run_clock("report", file=file)
    assert done.returncode == 0 and re.search(r"^  book\s+\d+\.\d s$", done.stdout, re.MULTILINE)
    assert run_clock("start").returncode == 2  # a part is named


def recipes() -> dict[str, list[str]]:
    """The Makefile's targets -> their recipe lines."""
    found: dict[str, list[str]] = {}
    target = None
    for line in (tools.ROOT / "Makefile").read_text().splitlines():
        if line.startswith("\t") and target:
            found[target].append(line.strip())
        elif re.match(r"^[^\s#=]+:(?!=)", line):
            target = line.split(":")[0]
            found[target] = []
        elif not line.startswith("\t"):
            target = None
    return found


def test_the_makefile_times_every_part_of_make_test_and_reports_even_a_failure():
    timed: dict[str, str] = {}
    for target, lines in recipes().items():
        starts = [m.group(1) for line in lines if (m := re.match(r'@\$\(CLOCK\) start "?([^"]+)"?$', line))]
        stops = [m.group(1) for line in lines if (m := re.match(r'@\$\(CLOCK\) stop "?([^"]+)"?$', line))]
        assert starts == stops, f"{target}: every part started is stopped in its recipe"
        timed |= dict.fromkeys(starts, target)
    assert set(timed) == PARTS
    (report,) = [line for line in recipes()["test"] if "report" in line]
    assert "status=$$?" in report and "exit $$status" in report  # after a failed part too
