"""Tests for ``attncourse.instructor.progress``: grade's bar says learners done, failed and
remaining, and the time left, on a terminal, and nothing at all elsewhere."""

from __future__ import annotations

import io
import re
import sys

from attncourse.instructor.model import Grade, Progress
from attncourse.instructor.progress import ProgressBar, status


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_counts_learners_done_failed_and_remaining_with_the_time_left():
    terminal = Terminal()
    with ProgressBar(terminal) as bar:
        bar(Progress(0, 3, 0, 0.0))
        bar(Progress(1, 3, 0, 2.0, "ada", (Grade("ada", "x", "passed", "", ""),)))
        bar(Progress(2, 3, 1, 4.0, "bob", (Grade("bob", "x", "error", "", ""),)))
    shown = terminal.getvalue().split("\r")[-1]
    assert re.search(r"\b2/3\b", shown) and "bob: done, 1 failed, 1 remaining" in shown
    assert re.search(r"<\d\d:\d\d", shown)  # tqdm's estimate of the time left


def test_the_bar_is_silent_where_the_output_is_not_a_terminal():
    log = io.StringIO()
    with ProgressBar(log) as bar:
        bar(Progress(1, 2, 0, 1.0, "ada"))
    assert log.getvalue() == ""


def test_the_status_before_the_first_learner_names_none():
    assert status(Progress(0, 5, 0, 0.0)) == "0 failed, 5 remaining"


def test_a_learner_s_name_reaches_the_terminal_with_its_escape_sequences_written_out():
    """Red team 11: a file or folder name may retitle, clear or recolour the terminal."""
    shown = status(Progress(1, 2, 0, 1.0, "\x1b]0;OWNED\x07\x1b[2Jmal"))
    assert "\x1b" not in shown and "\x07" not in shown and shown.startswith("\\x1b]0;OWNED\\x07\\x1b[2Jmal: done")


def test_a_bar_writes_to_the_standard_error_in_place_when_it_is_made(monkeypatch):
    """A default bound when the module was imported may be a stream closed since (a test's
    captured one): grade then stopped with "I/O operation on closed file"."""
    now = io.StringIO()
    monkeypatch.setattr(sys, "stderr", now)
    assert ProgressBar().stream is now
