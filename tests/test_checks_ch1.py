"""Tests for chapter 1's checks (``attncourse.checks.ch1``): each check with the reference
answer (passed), the untouched stub (not implemented) and the mistakes its hints name."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attncourse import checks
from attncourse.attention import softmax
from attncourse.examples import pool_beats_badminton
from tests.checks_feedback import FUZZ, feedback, learner_mode  # noqa: F401 (an autouse fixture)

SENTENCE = pool_beats_badminton()
A = SENTENCE.X
POOL, BEATS, BADMINTON = (SENTENCE.index(w) for w in SENTENCE.tokens)


# --- answers -----------------------------------------------------------------------------


def reference_softmax(scores):
    scores = np.asarray(scores, dtype=float)
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def stub(scores):
    raise NotImplementedError("write stable_softmax")


def naive_softmax(scores):
    exponentials = np.exp(scores)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def shift_by_min(scores):  # fixes underflow by accident, overflows on large scores
    exponentials = np.exp(scores - np.min(scores, axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def whole_array(scores):
    exponentials = np.exp(scores - scores.max())
    return exponentials / exponentials.sum()


def columns(scores):
    exponentials = np.exp(scores - scores.max(axis=0, keepdims=True))
    return exponentials / exponentials.sum(axis=0, keepdims=True)


def in_place(scores):
    scores -= scores.max(axis=-1, keepdims=True)
    exponentials = np.exp(scores)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def forgets_return(scores):
    reference_softmax(scores)


def endless(scores):
    while True:
        pass



# --- ch1-stable-softmax ------------------------------------------------------------------


def test_stable_softmax_passes_the_reference(capsys):
    line = feedback(capsys, checks.stable_softmax, reference_softmax)
    assert line.startswith("[ch1-stable-softmax] Passed. ")


def test_stable_softmax_reports_the_stub_as_not_implemented(capsys):
    line = feedback(capsys, checks.stable_softmax, stub)
    assert line.startswith("[ch1-stable-softmax] Not implemented yet. ")


@pytest.mark.parametrize(
    "answer, expected",
    [
        (naive_softmax, "np.exp(1000) overflows to inf"),
        (shift_by_min, "np.exp(1000) overflows to inf"),
        (whole_array, "You normalised the whole array at once"),
        (columns, "You normalised the columns"),
        (in_place, "changed its input"),
        (forgets_return, "returned None: did you forget `return`?"),
        (lambda scores: reference_softmax(scores)[..., :1], "expected shape (3,)"),
        (lambda scores: "weights", "returned a str, expected an array of numbers"),
        (lambda scores: reference_softmax(scores) + 0j, "expected an array of numbers"),
        (lambda scores: 1 / 0, "raised ZeroDivisionError: division by zero"),
        (lambda scores: reference_softmax(scores) * 2, "the rows sum to"),
        (lambda scores: np.full(np.shape(scores), np.nan), "Every weight should be a finite number"),
        (lambda scores: reference_softmax(scores)[..., ::-1], "gave [0.665, 0.245, 0.09 ]; expected [0.09 , 0.245, 0.665]"),
        (reference_softmax(np.zeros(3)), "Pass the function itself: check.stable_softmax(stable_softmax)"),
        (None, "expected the function stable_softmax, got a NoneType"),
    ],
)
def test_stable_softmax_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.stable_softmax, answer)
    assert line.startswith("[ch1-stable-softmax] Not right yet. ")
    assert expected in line


def test_stable_softmax_explains_underflow(capsys):
    def underflows(scores):  # correct except when every score is very negative
        scores = np.asarray(scores, dtype=float)
        if scores.max() < -700:
            return naive_softmax(scores)
        return reference_softmax(scores)

    assert "np.exp(-1000) underflows to 0, and 0 / 0 is nan" in feedback(capsys, checks.stable_softmax, underflows)



# --- a float16 softmax: float16 is too coarse to judge (red team 8, finding 1) ---------------


def float16_softmax(scores):
    scores = np.asarray(scores, dtype=np.float16)
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def float16_whole_array(scores):
    return whole_array(np.asarray(scores, dtype=np.float16))


def rounded_to_float16(temperature):
    """A wrong softmax (scores divided by ``temperature``) whose values are made float16's,
    handed back in float64."""
    def answer(scores):
        return reference_softmax(np.asarray(scores) / temperature).astype(np.float16).astype(np.float64)
    return answer


def test_stable_softmax_tells_a_right_float16_softmax_that_float16_is_too_coarse(capsys):
    line = feedback(capsys, checks.stable_softmax, float16_softmax)
    assert "Not right yet." in line and "computed in float16, whose 11 bits" in line
    assert "sum over" not in line  # no hint about the axis: the algorithm is right


@pytest.mark.parametrize("temperature", [0.985, 1.005, 1.02])
def test_a_wrong_softmax_rounded_to_float16_fails(capsys, temperature):
    assert "Not right yet." in feedback(capsys, checks.stable_softmax, rounded_to_float16(temperature))


def test_a_float16_mistake_is_first_told_to_leave_float16(capsys):
    line = feedback(capsys, checks.stable_softmax, float16_whole_array)
    assert "Not right yet." in line and "computed in float16" in line


# --- ch1-pool-prefers-badminton ----------------------------------------------------------


def tuned(row):
    A_tuned = A.copy()
    A_tuned[BADMINTON] = row
    return A_tuned


def test_pool_prefers_badminton_passes_a_longer_badminton(capsys):
    line = feedback(capsys, checks.pool_prefers_badminton, tuned([0.8, 0.0, 0.0, 0.0]))
    assert line.startswith("[ch1-pool-prefers-badminton] Passed. pool now gives badminton 0.372")


def test_pool_prefers_badminton_reports_the_untouched_start_as_not_implemented(capsys):
    line = feedback(capsys, checks.pool_prefers_badminton, A.copy())
    assert line == "[ch1-pool-prefers-badminton] Not implemented yet. X_tuned is still the starting matrix X: edit the row of badminton."


@pytest.mark.parametrize(
    "answer, expected",
    [
        (tuned([0.5, 0.1, 0.25, 0.1]), "badminton must score higher with pool than pool does with itself"),
        (tuned([0.6, 0.7, 0.0, 0.0]), "beats no longer attends to itself most"),
        (tuned([2.0, 0.0, 0.0, 0.0]), "an entry of X_tuned is outside [-1, 1]"),
        (np.vstack([A[:2] + 0.1, [[0.8, 0, 0, 0]]]), "you changed the row(s) of pool"),
        (tuned([np.nan, 0, 0, 0]), "contains nan or inf"),
        (A[:2], "X_tuned returned an array of shape (2, 4), expected shape (3, 4)"),
        ("A", "expected an array of numbers"),
    ],
)
def test_pool_prefers_badminton_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.pool_prefers_badminton, answer)
    assert line.startswith("[ch1-pool-prefers-badminton] Not right yet. ")
    assert expected in line


def test_pool_prefers_badminton_does_not_mutate_the_answer(capsys):
    answer = tuned([0.8, 0.0, 0.0, 0.0])
    before = answer.copy()
    feedback(capsys, checks.pool_prefers_badminton, answer)
    assert np.array_equal(answer, before)



@FUZZ
@given(row=hnp.arrays(np.float64, 4, elements=st.floats(-1, 1)))
def test_the_tuning_check_agrees_with_the_two_conditions(capsys, row):
    A_tuned = tuned(row)
    weights = np.exp(A_tuned @ A_tuned.T)
    weights /= weights.sum(axis=-1, keepdims=True)
    holds = weights[POOL, BADMINTON] > weights[POOL, POOL] and weights[BEATS].argmax() == BEATS
    line = feedback(capsys, checks.pool_prefers_badminton, A_tuned)
    if np.array_equal(A_tuned, A):
        assert "Not implemented yet." in line
    else:
        assert ("Passed." in line) == holds


# --- ch1-predict-doubling ----------------------------------------------------------------


def test_predict_doubling_expects_the_weight_of_pool_on_itself_for_2A(capsys):
    answer = softmax(4 * A @ A.T)[POOL, POOL]  # (2A)(2A)ᵀ = 4 A Aᵀ
    line = feedback(capsys, checks.predict_doubling, answer + 0.004)
    assert line.startswith("[ch1-predict-doubling] Passed. ")
    assert f"rises from {softmax(A @ A.T)[POOL, POOL]:.3f} to {answer:.3f}" in line


def test_predict_doubling_hints_first_and_answers_on_the_second_miss(capsys):
    first = feedback(capsys, checks.predict_doubling, 0.353)  # "the same": doubling changes nothing
    assert "Not right yet." in first and "Hint: Doubling both vectors multiplies each score by how much?" in first
    assert "0.405" not in first
    second = feedback(capsys, checks.predict_doubling, 0.3)  # "flatter"
    assert "the answer is 0.4053" in second


@pytest.mark.parametrize("prediction", [None, ...])
def test_predict_doubling_reports_no_prediction_as_not_implemented(capsys, prediction):
    assert "Not implemented yet." in feedback(capsys, checks.predict_doubling, prediction)


@pytest.mark.parametrize("prediction, expected", [("sharper", "got the text 'sharper'"), ([0.4], "got a list")])
def test_predict_doubling_asks_for_a_number(capsys, prediction, expected):
    line = feedback(capsys, checks.predict_doubling, prediction)
    assert "Not right yet. write your prediction as one number" in line and expected in line
