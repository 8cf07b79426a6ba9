"""Tests for ``attncourse.checks.core``: a check never hangs or raises, whatever the
learner's answer does when the check converts it, measures it, reads its attributes or
shows it; and the grader's channel (nonce records, the fingerprint of the checks).

The chapters' checks are tested in tests/test_checks.py; here each test registers a
check of its own, as a chapter's module does, so the machinery is tested by itself.
"""

from __future__ import annotations

import builtins
import threading
import time
import warnings

import numpy as np
import pytest

from attncourse import checks
from attncourse.checks import core

BUDGET = 0.3


@pytest.fixture(autouse=True)
def learner_mode(monkeypatch):
    for variable in (checks.MODE_VARIABLE, checks.LOG_VARIABLE, checks.TIMEOUT_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(core, "CHECKS", {})
    monkeypatch.setattr(core, "_grading", type(core._grading)(nonce=None))


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
        if not isinstance(result, tuple) or len(result) != 2:
            raise checks.Failed(f"expected a pair, got {core._short_repr(result)}")
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
        (Loops(), "your answer did not let the check finish within the time budget of 0.3 s"),
        (Exits(), "your answer raised SystemExit: bye while the check examined it"),
    ],
    ids=["__array__ loops", "__array__ exits"],
)
def test_converting_the_answer_to_an_array_is_under_the_budget(capsys, answer, expected):
    line = one_line(capsys, array_check(), lambda: answer)
    assert line.startswith("[ch9-array] Not right yet. ") and expected in line


@pytest.mark.parametrize(
    "answer, expected",
    [
        (LongTuple((1, 2)), "did not let the check finish within the time budget"),
        ((ExitingAttribute(), 1), "your answer raised KeyboardInterrupt while the check examined it"),
        (BadClass(), "your answer raised SystemExit: 1 while the check examined it"),
    ],
    ids=["__len__ loops", "__getattr__ interrupts", "__class__ exits"],
)
def test_len_attributes_and_isinstance_on_the_answer_are_contained(capsys, answer, expected):
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


# --- the grader's channel --------------------------------------------------------------


@pytest.fixture
def sent(monkeypatch):
    """What the checks send to the grader (IPython's display, captured)."""
    records = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda data, raw: records.append(data[core.RESULT_MIMETYPE]))
    return records


def test_nothing_is_sent_outside_grading(capsys, sent):
    one_line(capsys, array_check(), lambda: [1.0, 2.0])
    assert sent == []


def test_each_result_carries_the_cells_nonce_and_the_fingerprint(capsys, sent):
    check = array_check()
    core._grading_cell("opening-nonce", opening=True)
    core._grading_cell("cell-nonce")
    one_line(capsys, check, lambda: [1.0, 2.0])
    opening, result = sent
    assert opening == {"exercise": "", "status": "", "message": "", "kind": "opening",
                       "nonce": "opening-nonce", "fingerprint": opening["fingerprint"]}
    assert result == {"exercise": "ch9-array", "status": "passed", "message": "an array of shape (2,)",
                      "kind": "check", "nonce": "cell-nonce", "fingerprint": opening["fingerprint"]}


def test_the_fingerprint_is_stable_across_checks_and_imports(capsys):
    before = core._fingerprint()
    check = array_check()  # registering a check changes only the registry, replaced here
    core.CHECKS.clear()
    one_line(capsys, check, lambda: [1.0, 2.0])
    import numpy.testing  # noqa: F401  (a submodule becomes an attribute of numpy)

    import attncourse.plotting  # noqa: F401  (what a chapter imports)

    assert core._fingerprint() == before


def test_a_warning_met_in_the_checks_code_does_not_change_the_fingerprint():
    vars(core).pop("__warningregistry__", None)
    before = core._fingerprint()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile("warnings.warn('from a check')", core.__file__, "exec"), vars(core))
    assert "__warningregistry__" in vars(core) and core._fingerprint() == before


@pytest.mark.parametrize(
    "owner, name, replacement",
    [
        (core, "_evaluate", lambda *args: None),
        (core, "_report", print),
        (checks, "stable_softmax", print),
        (np, "allclose", lambda *args, **kwargs: True),
        (builtins, "round", lambda *args: 0),
        (core.Failed, "__init__", lambda self, *args: None),
    ],
)
def test_the_fingerprint_changes_when_what_the_checks_use_is_replaced(monkeypatch, owner, name, replacement):
    before = core._fingerprint()
    monkeypatch.setattr(owner, name, replacement)
    assert core._fingerprint() != before


def test_the_fingerprint_of_a_process_whose_isinstance_lies_differs_and_does_not_raise():
    before = core._fingerprint()
    original = builtins.isinstance
    builtins.isinstance = lambda *args: True  # pytest itself needs the real one: no monkeypatch
    try:
        during = core._fingerprint()
    finally:
        builtins.isinstance = original
    assert during != before and core._fingerprint() == before


def test_the_fingerprint_sees_a_closure_or_code_swapped_inside_a_check():
    before = core._fingerprint()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checks.stable_softmax.__wrapped__, "__code__", (lambda run, candidate: "passed").__code__)
        assert core._fingerprint() != before
    assert core._fingerprint() == before
    cell = next(c for c in checks.stable_softmax.__closure__ if callable(c.cell_contents))
    original = cell.cell_contents
    try:
        cell.cell_contents = lambda run, candidate: "passed"
        assert core._fingerprint() != before
    finally:
        cell.cell_contents = original
