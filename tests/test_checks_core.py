"""Tests for ``attncourse.checks.core``: a check never hangs or raises, whatever the
learner's answer does when the check converts it, measures it, reads its attributes or
shows it; and how a check meets the grader's replay of a learner's function (what the
function did in the sandbox, or a call the notebook did not record).

The chapters' checks are tested in tests/test_checks.py; here each test registers a
check of its own, as a chapter's module does, so the machinery is tested by itself.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from attncourse import checks
from attncourse.checks import core
from tests.checks_feedback import empty_registries

BUDGET = 0.3


@pytest.fixture(autouse=True)
def learner_mode(monkeypatch):
    for variable in (checks.MODE_VARIABLE, checks.LOG_VARIABLE, checks.TIMEOUT_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    empty_registries(monkeypatch)


def one_line(capsys, check, *answers) -> str:
    """Run ``check`` with a short budget; it must return None within the budget (plus the
    second _stop gives a stuck worker) and print exactly one line."""
    start = time.monotonic()
    assert check(*answers, timeout=BUDGET) is None
    assert time.monotonic() - start < BUDGET + 2.0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def array_check():
    @checks.exercise("ch9-array")
    def array(run, answer):
        fn = checks.expect_function(answer, "array")
        checks.expect_array(run(fn), (2,), "array()")
        return "an array of shape (2,)"

    return array


def pair_check():
    @checks.exercise("ch9-pair")
    def pair(run, answer):
        result = run(checks.expect_function(answer, "pair"))
        if not isinstance(result, tuple) or len(result) != 2 or not isinstance(result[0], np.ndarray):
            raise checks.Failed(f"expected a pair, got {core.short_repr(result)}")
        return f"a pair whose first item has {result[0].size} numbers"

    return pair


class Loops:
    def __array__(self, dtype=None, copy=None):
        while True:
            pass


class Exits:
    def __array__(self, dtype=None, copy=None):
        raise SystemExit("bye")


class LongTuple(tuple):
    def __len__(self):
        while True:
            pass


class ExitingAttribute:
    def __getattr__(self, name):
        raise KeyboardInterrupt


class BadClass:
    @property
    def __class__(self):  # isinstance() asks for it
        raise SystemExit(1)


class BadMessage(Exception):
    def __str__(self):
        raise SystemExit("no message")


@pytest.mark.parametrize(
    "answer, expected",
    [
        (Loops(), "<lambda>() did not return within the time budget of 0.3 s"),
        (Exits(), "array() returned a Exits (not data)"),
    ],
    ids=["__array__ loops", "__array__ exits"],
)
def test_converting_the_answer_to_an_array_is_under_the_budget(capsys, answer, expected):
    """What a function returns is read as the grader reads it (wire.returned_as_sent), in the
    check's worker: an endless reading is stopped, one that exits is not data."""
    line = one_line(capsys, array_check(), lambda: answer)
    assert line.startswith("[ch9-array] Not right yet. ") and expected in line


@pytest.mark.parametrize(
    "answer, expected",
    [
        (LongTuple((1, 2)), "expected a pair, got (1, 2)"),
        ((ExitingAttribute(), 1), "expected a pair, got (<"),
        (BadClass(), "<lambda>() raised SystemExit: 1"),
    ],
    ids=["__len__ loops", "__getattr__ interrupts", "__class__ exits"],
)
def test_len_attributes_and_isinstance_on_the_answer_are_contained(capsys, answer, expected):
    """The check reads what the grader receives: a tuple's own __len__ never runs, an
    object whose attributes interrupt is not data, one whose class exits stops the call."""
    line = one_line(capsys, pair_check(), lambda: answer)
    assert line.startswith("[ch9-pair] Not right yet. ") and expected in line


def test_an_exception_whose_message_raises_is_still_a_message(capsys):
    def raises():
        raise BadMessage

    line = one_line(capsys, array_check(), raises)
    assert line == "[ch9-array] Not right yet. raises() raised BadMessage: (a BadMessage that cannot be shown)"


def test_an_endless_call_is_named_and_no_worker_is_left(capsys):
    def endless():
        while True:
            pass

    line = one_line(capsys, array_check(), endless)
    assert "endless() did not return within the time budget of 0.3 s" in line
    assert "still running" not in line
    assert not [t for t in threading.enumerate() if t.name == "attncourse check" and t.is_alive()]


def test_a_right_answer_still_passes(capsys):
    assert one_line(capsys, array_check(), lambda: [1.0, 2.0]) == "[ch9-array] Passed. an array of shape (2,)"


# --- the grader's replay ---------------------------------------------------------------


def replayed(**outcome):
    """A stand-in for the grader's replay of a learner's function ``f``."""
    def f(*args):
        raise core.Replayed("f", **outcome)
    return f


def test_a_replayed_error_reads_as_the_functions_own(capsys):
    line = one_line(capsys, array_check(), replayed(raised="ZeroDivisionError: division by zero"))
    assert line == "[ch9-array] Not right yet. f() raised ZeroDivisionError: division by zero"


def test_a_replayed_stub_is_not_implemented_and_a_replayed_loop_is_out_of_time(capsys):
    check = array_check()
    assert "Not implemented yet. f() raised NotImplementedError" in one_line(
        capsys, check, replayed(raised="NotImplementedError: x", not_implemented=True))
    assert "f() did not return within the time budget of 2 s" in one_line(capsys, check, replayed(stopped=2.0))


def test_a_call_the_notebook_did_not_record_needs_review(capsys):
    def f(*args):
        raise core.NotRecorded("f() was called on inputs whose output the notebook did not record")

    assert one_line(capsys, array_check(), f) == (
        "[ch9-array] Needs review. f() was called on inputs whose output the notebook did not record")


def test_an_answer_that_was_not_data_is_named_as_such():
    assert core.type_name(core.Opaque("a Exits")) == "a Exits (not data)"
    with pytest.raises(core.Failed, match=r"returned a Exits \(not data\), expected an array of numbers"):
        core.expect_array(core.Opaque("a Exits"), (2,), "f()")


def test_the_helpers_chapters_use_are_public():
    for name in ("show", "type_name", "short_repr", "describe", "expect_array", "expect_function"):
        assert callable(getattr(checks, name)) and not name.startswith("_")
