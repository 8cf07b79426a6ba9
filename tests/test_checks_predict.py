"""The predict-a-number exercises: declaration, hint first, answer from the second miss."""

import math

import numpy as np
import pytest

from attncourse.checks import core, predict
from tests.checks_feedback import empty_registries


@pytest.fixture
def declare(monkeypatch):
    """Declare predict exercises into empty registries (the course's stay untouched)."""
    empty_registries(monkeypatch)
    monkeypatch.setattr(predict, "PREDICTIONS", {})
    monkeypatch.setattr(predict, "_misses", predict._MissCounter())
    for variable in (core.MODE_VARIABLE, core.LOG_VARIABLE, core.TIMEOUT_VARIABLE):
        monkeypatch.delenv(variable, raising=False)

    def make(answer=0.3, tolerance=0.01):
        return predict.predict_exercise(
            "ch9-predict-weight", answer=answer, tolerance=tolerance,
            hint="Think about the normaliser.", explanation="Because the row sums to 1.",
        )

    return make


def said(capsys, check, *answers, **options):
    check(*answers, **options)
    return capsys.readouterr().out.strip()


def test_a_declaration_registers_the_check_and_its_answer(declare):
    check = declare()
    assert check.__name__ == "predict_weight"
    assert core.CHECKS["ch9-predict-weight"] is check
    assert predict.PREDICTIONS["ch9-predict-weight"].answer == 0.3


@pytest.mark.parametrize("value", [0.3, 0.309, 0.291, np.float32(0.3), 3 / 10, "0.3", "3/10", "0,3"])
def test_a_prediction_within_the_tolerance_passes(capsys, declare, value):
    line = said(capsys, declare(), value)
    assert line.startswith("[ch9-predict-weight] Passed. you predicted")
    assert "Because the row sums to 1." in line


def test_the_first_miss_gives_the_hint_and_not_the_answer(capsys, declare):
    check = declare(answer=0.123456)
    first = said(capsys, check, 0.5)
    assert "Not right yet." in first and "Hint: Think about the normaliser." in first
    assert "0.1235" not in first
    second = said(capsys, check, 0.6)
    assert "the answer is 0.1235. Because the row sums to 1." in second
    assert "Hint" not in second


def test_no_prediction_is_not_implemented_and_is_not_a_miss(capsys, declare):
    check = declare()
    assert "Not implemented yet." in said(capsys, check, None)
    assert "Not implemented yet." in said(capsys, check, ...)
    assert "Hint:" in said(capsys, check, 1.0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("about 0.3", "got the text 'about 0.3'"),
        ("1/0", "got the text '1/0'"),
        (True, "got a bool"),
        ([0.3], "got a list"),
        (math.nan, "a finite number; got nan"),
        (math.inf, "a finite number; got inf"),
    ],
)
def test_what_is_not_a_number_gets_a_friendly_message(capsys, declare, value, expected):
    line = said(capsys, declare(), value)
    assert line.startswith("[ch9-predict-weight] Not right yet.") and expected in line


def test_a_hostile_number_is_stopped_within_the_time_budget(capsys, declare):
    class Endless:
        def __array__(self, dtype=None, copy=None):
            while True:
                pass

    line = said(capsys, declare(), Endless(), timeout=0.3)
    assert "within the time budget of 0.3 s" in line


def test_a_float_whose_own_conversion_lies_is_judged_on_its_value_as_the_grader_reads_it(capsys, declare):
    """The grader receives a float subclass as its float value (``wire``), never through its
    own ``__float__``; the notebook's check judges that value too (red team 15)."""
    class Lying(float):
        def __float__(self):
            while True:
                pass

    assert "Passed." in said(capsys, declare(), Lying(0.3), timeout=0.3)


@pytest.mark.parametrize(("answer", "tolerance"), [(math.nan, 0.1), ("0.3", 0.1), (0.3, 0.0), (0.3, -1)])
def test_a_bad_declaration_is_refused_naming_the_value(declare, answer, tolerance):
    with pytest.raises(ValueError, match="ch9-predict-weight"):
        declare(answer=answer, tolerance=tolerance)


def test_whole_numbers_are_written_out_in_full(capsys, declare):
    check = declare(answer=655_360, tolerance=0.5)
    said(capsys, check, 1)
    assert "the answer is 655,360." in said(capsys, check, 2)
    assert "you predicted 655,360; the answer is 655,360." in said(capsys, check, 655_360)


def test_every_attempt_is_kept_with_whether_the_answer_was_shown(capsys, declare):
    check = declare()
    for value in (1.0, 2.0, 0.3):
        said(capsys, check, value)
    assert predict._misses.attempts["ch9-predict-weight"] == [
        {"value": 1.0, "right": False, "revealed": False},  # the hint only
        {"value": 2.0, "right": False, "revealed": True},  # the answer shown
        {"value": 0.3, "right": True, "revealed": False},
    ]
