"""Tests for ``attncourse.checks``: the feedback learners get on their exercises.

Each check is tried with the reference answer (passed), the untouched stub (not
implemented) and the typical mistakes its hints are about (the message must name the
mistake). The machinery is tried with answers that misbehave (raise, loop forever,
return nonsense) and fuzzed with hypothesis: a check must always print one line and
return None, and raise only in the CI modes.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attncourse import checks
from attncourse.checks import CheckError
from attncourse.examples import tennis_sentence
from attncourse.widgets import AttentionExplorer

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
A = np.array([[0.5, 0.1, 0.1, 0.2], [0.1, 0.5, 0.2, 0.1], [0.5, 0.1, 0.2, 0.1]])
POOL, BEATS, BADMINTON = 0, 1, 2


@pytest.fixture(autouse=True)
def learner_mode(monkeypatch):
    for variable in (checks.MODE_VARIABLE, checks.LOG_VARIABLE, checks.TIMEOUT_VARIABLE):
        monkeypatch.delenv(variable, raising=False)


def feedback(capsys, check, *answers, **options) -> str:
    """Run a check; assert it returned None and printed exactly one line; return that line."""
    assert check(*answers, **options) is None
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


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


def test_an_endless_function_is_stopped_within_the_time_budget(capsys):
    start = time.monotonic()
    line = feedback(capsys, checks.stable_softmax, endless, timeout=0.3)
    assert time.monotonic() - start < 2.0
    assert "did not return within the time budget of 0.3 s" in line
    assert not [t for t in threading.enumerate() if t.name.startswith("attncourse check")]


def test_the_time_budget_comes_from_the_environment(capsys, monkeypatch):
    monkeypatch.setenv(checks.TIMEOUT_VARIABLE, "0.2")
    assert "time budget of 0.2 s" in feedback(capsys, checks.stable_softmax, endless)
    monkeypatch.setenv(checks.TIMEOUT_VARIABLE, "soon")
    with pytest.raises(ValueError, match="ATTNCOURSE_CHECK_TIMEOUT='soon' is not a number"):
        checks.stable_softmax(reference_softmax)


def test_a_learner_function_that_exits_or_recurses_forever_is_a_message(capsys):
    def exits(scores):
        raise SystemExit(3)

    def recurses(scores):
        return recurses(scores)

    assert "raised SystemExit: 3" in feedback(capsys, checks.stable_softmax, exits)
    assert "raised RecursionError" in feedback(capsys, checks.stable_softmax, recurses)


def test_warnings_from_the_learners_code_do_not_reach_the_page(capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        feedback(capsys, checks.stable_softmax, naive_softmax)  # np.exp(1000) overflows
    assert caught == []


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
    assert line == "[ch1-pool-prefers-badminton] Not implemented yet. A_tuned is still the starting matrix A: edit badminton's row."


@pytest.mark.parametrize(
    "answer, expected",
    [
        (tuned([0.5, 0.1, 0.25, 0.1]), "badminton must score higher with pool than pool does with itself"),
        (tuned([0.6, 0.7, 0.0, 0.0]), "beats no longer attends to itself most"),
        (tuned([2.0, 0.0, 0.0, 0.0]), "has an entry outside [-1, 1]"),
        (np.vstack([A[:2] + 0.1, [[0.8, 0, 0, 0]]]), "you changed the row of pool"),
        (tuned([np.nan, 0, 0, 0]), "contains nan or inf"),
        (A[:2], "A_tuned returned an array of shape (2, 4), expected shape (3, 4)"),
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


# --- ch1-predict-doubling ----------------------------------------------------------------


@pytest.mark.parametrize("prediction", ["sharper", " Sharper "])
def test_predict_doubling_passes_sharper(capsys, prediction):
    line = feedback(capsys, checks.predict_doubling, prediction)
    assert line.startswith("[ch1-predict-doubling] Passed. Doubling A multiplies every score by 4")
    assert "to [0.405, 0.205, 0.389]" in line


@pytest.mark.parametrize("prediction", [None, ...])
def test_predict_doubling_reports_no_prediction_as_not_implemented(capsys, prediction):
    assert "Not implemented yet." in feedback(capsys, checks.predict_doubling, prediction)


@pytest.mark.parametrize(
    "prediction, expected",
    [("flatter", "you predicted 'flatter'. Doubling A"), ("same", "you predicted 'same'"),
     ("sharp", "should be one of 'sharper', 'flatter', 'same', got 'sharp'"), (4, "got 4")],
)
def test_predict_doubling_explains_a_wrong_prediction(capsys, prediction, expected):
    line = feedback(capsys, checks.predict_doubling, prediction)
    assert line.startswith("[ch1-predict-doubling] Not right yet. ") and expected in line


# --- predictions (ch2-predict-he-and-ball, ch3-predict-rotation) -------------------------


@pytest.mark.parametrize(
    "check, answer, expected",
    [
        (checks.predict_he_and_ball, "positive", "their score is 0.453"),
        (checks.predict_rotation, "antisymmetric", "S[it, ball] = -5.73 and S[ball, it] = 5.73"),
    ],
)
def test_predictions_pass_with_the_numbers(capsys, check, answer, expected):
    for prediction in (answer, f" {answer.upper()} "):
        line = feedback(capsys, check, prediction)
        assert "] Passed. " in line and expected in line


@pytest.mark.parametrize("check", [checks.predict_he_and_ball, checks.predict_rotation])
def test_no_prediction_is_not_implemented(capsys, check):
    for prediction in (None, ...):
        assert "Not implemented yet. set prediction to one of" in feedback(capsys, check, prediction)


@pytest.mark.parametrize(
    "check, prediction, expected",
    [
        (checks.predict_he_and_ball, "zero", "you predicted 'zero'. He and ball share no dimension"),
        (checks.predict_he_and_ball, "negative", "no score can fall below 0"),
        (checks.predict_he_and_ball, "more", "should be one of 'negative', 'zero', 'positive', got 'more'"),
        (checks.predict_rotation, "symmetric", "you predicted 'symmetric'. With W_K = W_Q R"),
        (checks.predict_rotation, "neither", "Rᵀ = -R makes Mᵀ = -M"),
        (checks.predict_rotation, ["antisymmetric"], "got ['antisymmetric']"),
    ],
)
def test_predictions_explain_a_wrong_answer(capsys, check, prediction, expected):
    line = feedback(capsys, check, prediction)
    assert "Not right yet. " in line and expected in line


# --- ch2-ball-ignores-it -----------------------------------------------------------------

SENTENCE = tennis_sentence()
X = SENTENCE.X
HE, TENNIS, BALL, AND, IT = (SENTENCE.index(w) for w in ("He", "tennis", "ball", "and", "it"))


def rescaled(it=1.0, ball=1.0):
    X_tuned = X.copy()
    X_tuned[IT] *= it
    X_tuned[BALL] *= ball
    return X_tuned


def test_ball_ignores_it_passes_a_longer_ball_and_shows_the_price(capsys):
    line = feedback(capsys, checks.ball_ignores_it, rescaled(ball=1.5))
    assert line == (
        "[ch2-ball-ignores-it] Passed. it gives ball 0.461, ball gives it 0.010: Z_ball is 48.2 "
        "times Z_it. The price: ball now gives tennis 0.019 (it gave 0.185) and itself 0.964."
    )


def test_ball_ignores_it_reports_the_untouched_sentence_as_not_implemented(capsys):
    line = feedback(capsys, checks.ball_ignores_it, X.copy())
    assert line == "[ch2-ball-ignores-it] Not implemented yet. X_tuned is still the sentence's X: edit the rows of it and ball."


def _other_row_changed():
    X_tuned = rescaled(ball=1.5)
    X_tuned[TENNIS] = 0.0
    return X_tuned


@pytest.mark.parametrize(
    "answer, expected",
    [
        (rescaled(ball=1.1), "it gives ball 0.294, not more than 0.4. Hint: raise their shared score"),
        (rescaled(it=1.2, ball=1.3), "ball gives it 0.057, not less than a tenth of the 0.407"),
        (rescaled(it=1.2, ball=1.3), "Z_ball / Z_it, now 7.09"),
        (_other_row_changed(), "you changed the row(s) of tennis; only the rows of it (index 8) and ball (index 5)"),
        (rescaled(ball=20.0), "outside [-10, 10]"),
        (rescaled(ball=np.nan), "X_tuned contains nan or inf"),
        (X.T, "X_tuned returned an array of shape (5, 11), expected shape (11, 5)"),
        ("X", "expected an array of numbers"),
    ],
)
def test_ball_ignores_it_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.ball_ignores_it, answer)
    assert line.startswith("[ch2-ball-ignores-it] Not right yet. ")
    assert expected in line


@FUZZ
@given(rows=hnp.arrays(np.float64, (2, 5), elements=st.floats(-3, 3)))
def test_the_ball_tuning_check_agrees_with_its_two_conditions(capsys, rows):
    X_tuned = X.copy()
    X_tuned[[IT, BALL]] = rows
    weights = reference_softmax(X_tuned @ X_tuned.T)
    holds = weights[IT, BALL] > 0.4 and weights[BALL, IT] < weights[IT, BALL] / 10
    line = feedback(capsys, checks.ball_ignores_it, X_tuned)
    if np.array_equal(X_tuned, X):
        assert "Not implemented yet." in line
    else:
        assert ("Passed." in line) == holds


# --- ch2-log-weight-ratio ----------------------------------------------------------------


def reference_log_ratio(X):
    X = np.asarray(X, dtype=float)
    scores = X @ X.T
    top = scores.max(axis=-1, keepdims=True)
    log_W = scores - top - np.log(np.exp(scores - top).sum(axis=-1, keepdims=True))  # (seq, seq)
    return log_W - log_W.T


def textbook_log_ratio(X):
    weights = reference_softmax(X @ X.T)
    return np.log(weights / weights.T)


def log_ratio_in_place(X):
    X -= X.mean(axis=0)  # centres the caller's array too
    return reference_log_ratio(X)


@pytest.mark.parametrize("answer", [reference_log_ratio, lambda X: reference_log_ratio(X).tolist()])
def test_log_weight_ratio_passes_the_reference(capsys, answer):
    line = feedback(capsys, checks.log_weight_ratio, answer)
    assert line.startswith("[ch2-log-weight-ratio] Passed. ")
    assert "scores of 1300, where np.log(W / W.T) gives nan" in line


def test_log_weight_ratio_reports_the_stub_as_not_implemented(capsys):
    def log_weight_ratio(X):
        raise NotImplementedError("write log_weight_ratio")

    line = feedback(capsys, checks.log_weight_ratio, log_weight_ratio)
    assert line.startswith("[ch2-log-weight-ratio] Not implemented yet. log_weight_ratio() raised NotImplementedError")


@pytest.mark.parametrize(
    "answer, expected",
    [
        (textbook_log_ratio, "20 X, whose scores reach 1300 gave"),
        (textbook_log_ratio, "underflow to exactly 0, and log(0 / 0) is nan. Hint: stay in logarithms"),
        (lambda X: -reference_log_ratio(X), "That is log(W_ji / W_ij), its transpose"),
        (lambda X: np.zeros((len(X), len(X))), "The scores are symmetric, but the weights are not"),
        (lambda X: np.exp(reference_log_ratio(X)), "That is the ratio W_ij / W_ji itself: take its logarithm."),
        (lambda X: reference_log_ratio(X) + 1, "the matrix must be antisymmetric; yours is not"),
        (lambda X: 2 * reference_log_ratio(X), "Hint: log W_ij = S_ij - log Z_i"),
        (lambda X: np.full((len(X), len(X)), np.inf), "the sentence's X gave [[inf, inf, ..., inf, inf]"),
        (log_ratio_in_place, "changed its input X"),
        (lambda X: reference_log_ratio(X)[:, 0], "returned an array of shape (11,), expected shape (11, 11)"),
        (lambda X: None, "returned None: did you forget `return`?"),
        (lambda X: X @ X.T @ "W", "<lambda>() raised UFuncTypeError"),
        (reference_log_ratio(X), "Pass the function itself: check.log_weight_ratio(log_weight_ratio)"),
    ],
)
def test_log_weight_ratio_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.log_weight_ratio, answer)
    assert line.startswith("[ch2-log-weight-ratio] Not right yet. ")
    assert expected in line


def test_the_log_ratio_cases_include_what_the_exercise_is_about():
    cases = dict(checks.ch2._log_ratio_cases())
    loud = cases["20 X, whose scores reach 1300"]
    assert (loud @ loud.T).max() == 1300
    with np.errstate(all="ignore"):
        assert np.isnan(textbook_log_ratio(loud)).any()
    assert cases["a single token [[2, 1]]"].shape == (1, 2)
    repeated = cases["X with a repeated token"]
    assert any(np.array_equal(a, b) for i, a in enumerate(repeated) for b in repeated[i + 1:])


# --- ch3-it-attends-to-ball --------------------------------------------------------------

THING, PERSON, PRONOUN, SPORT, ACTION = range(5)


def query_matrix(pronoun_to_thing=8.0, thing_to_thing=0.0, sport_to_sport=2.0):
    W_q = np.eye(5)  # (d_model, d_k)
    W_q[PRONOUN, THING] = pronoun_to_thing
    W_q[THING, THING] = thing_to_thing
    W_q[SPORT, SPORT] = sport_to_sport
    return W_q


LOPSIDED = np.diag([np.sqrt(10.0), 1.0, 1.0, 1.0, 1.0])  # symmetric scores, lopsided weights


def test_it_attends_to_ball_passes_the_solution(capsys):
    line = feedback(capsys, checks.it_attends_to_ball, query_matrix(), np.eye(5))
    assert line == (
        "[ch3-it-attends-to-ball] Passed. it gives ball 0.686 and ball gives it 0.027; the score of "
        "it on ball is 6.00, that of ball on it 0.00: no symmetric form gives that."
    )


def test_it_attends_to_ball_reads_the_explorer(capsys):
    explorer = AttentionExplorer(SENTENCE.tokens, X, W_q=query_matrix(), W_k=np.eye(5), scale=1.0, editable=("W_q", "W_k"))
    assert "Passed." in feedback(capsys, checks.it_attends_to_ball, explorer)
    untouched = AttentionExplorer(SENTENCE.tokens, X, W_q=np.eye(5), W_k=np.eye(5), scale=1.0, editable=("W_q", "W_k"))
    assert "Not implemented yet. W_q and W_k are still the identity" in feedback(capsys, checks.it_attends_to_ball, untouched)


@pytest.mark.parametrize(
    "answers, expected",
    [
        ((LOPSIDED, LOPSIDED), "ball scores it 18.00, more than the 0 it scores the empty word 'and', exactly as much as it scores ball: symmetric scores"),
        ((query_matrix(thing_to_thing=1.0), np.eye(5)), "ball scores it 1.80, more than the 0 it scores the empty word 'and'. Hint: ball and it are both things"),
        ((query_matrix(pronoun_to_thing=3.0), np.eye(5)), "it gives ball 0.316 of its attention, less than 0.5 (its score on ball is 2.25)"),
        ((query_matrix(sport_to_sport=1.0), np.eye(5)), "ball still gives it 0.062 of its attention (at most 0.05)"),
        ((np.eye(5),), "pass both matrices, check.it_attends_to_ball(W_q, W_k)"),
        ((np.zeros((5, 2)), np.zeros((5, 2))), "W_q has shape (5, 2); edit the explorer's 5 × 5 matrices"),
        ((query_matrix(), np.eye(5)[:4]), "W_k has shape (4, 5)"),
        ((query_matrix(), "I"), "W_k returned a str, expected an array of numbers"),
        ((np.full((5, 5), np.nan), np.eye(5)), "W_q contains nan or inf"),
        ((1e200 * np.eye(5), 1e200 * np.eye(5)), "the scores overflow to inf"),
    ],
)
def test_it_attends_to_ball_names_the_mistake(capsys, answers, expected):
    line = feedback(capsys, checks.it_attends_to_ball, *answers)
    assert line.startswith("[ch3-it-attends-to-ball] Not right yet. ")
    assert expected in line


def test_the_lopsided_symmetric_form_meets_both_weight_conditions():
    """What the score condition is for: without it, a symmetric form would pass."""
    weights = reference_softmax(X @ LOPSIDED @ LOPSIDED.T @ X.T)
    assert weights[IT, BALL] >= 0.5 and weights[BALL, IT] <= 0.05


@FUZZ
@given(W_q=hnp.arrays(np.float64, (5, 5), elements=st.floats(-10, 10)), W_k=hnp.arrays(np.float64, (5, 5), elements=st.floats(-10, 10)))
def test_the_head_tuning_check_agrees_with_its_conditions(capsys, W_q, W_k):
    scores = (X @ W_q) @ (X @ W_k).T
    weights = reference_softmax(scores)
    holds = weights[IT, BALL] >= 0.5 and scores[BALL, IT] <= 0 and weights[BALL, IT] <= 0.05
    line = feedback(capsys, checks.it_attends_to_ball, W_q, W_k)
    if np.array_equal(W_q, np.eye(5)) and np.array_equal(W_k, np.eye(5)):
        assert "Not implemented yet." in line
    else:
        assert ("Passed." in line) == holds


def test_no_symmetric_form_passes_the_head_tuning_check(capsys):
    """Symmetric scores with S[ball, it] <= 0 leave W[it, ball] <= W[it, and] < 0.5."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        W = rng.standard_normal((5, 5)) * rng.uniform(0.1, 5)
        assert "Passed." not in feedback(capsys, checks.it_attends_to_ball, W, W)


# --- ch3-attention-head ------------------------------------------------------------------


def reference_head(X, W_q, W_k, W_v, mask=None, scale=None, fill=-np.inf):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = Q @ K.T * (1 / np.sqrt(Q.shape[-1]) if scale is None else scale)
    if mask is not None:
        scores = np.where(mask, scores, fill)
    weights = reference_softmax(scores)
    return weights @ V, weights


def head_with(**options):
    return lambda X, W_q, W_k, W_v, mask=None: reference_head(X, W_q, W_k, W_v, mask, **options)


def always_causal(X, W_q, W_k, W_v, mask=None):
    return reference_head(X, W_q, W_k, W_v, np.tril(np.ones((len(X), len(X)), dtype=bool)))


def causal_when_masked(X, W_q, W_k, W_v, mask=None):
    return reference_head(X, W_q, W_k, W_v, None if mask is None else np.tril(np.ones(mask.shape, dtype=bool)))


def mask_after_softmax(X, W_q, W_k, W_v, mask=None):
    _, weights = reference_head(X, W_q, W_k, W_v)
    weights = weights if mask is None else weights * mask
    return weights @ (X @ W_v), weights


def naive_head(X, W_q, W_k, W_v, mask=None):
    Q, K = X @ W_q, X @ W_k
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    exponentials = np.exp(scores)
    weights = exponentials / exponentials.sum(axis=-1, keepdims=True)
    return weights @ (X @ W_v), weights


def column_head(X, W_q, W_k, W_v, mask=None):
    Q, K = X @ W_q, X @ W_k
    weights = reference_softmax((Q @ K.T / np.sqrt(Q.shape[-1])).T).T
    return weights @ (X @ W_v), weights


def in_place_head(X, W_q, W_k, W_v, mask=None):
    X -= X.mean(axis=0)
    return reference_head(X, W_q, W_k, W_v, mask)


@pytest.mark.parametrize("answer", [head_with(), head_with(fill=-1e9), lambda *args: tuple(a.tolist() for a in reference_head(*args))])
def test_attention_head_passes_the_reference(capsys, answer):
    line = feedback(capsys, checks.attention_head, answer)
    assert line.startswith("[ch3-attention-head] Passed. Your head matches scaled_dot_product_attention on 6 inputs")


def test_attention_head_reports_the_stub_as_not_implemented(capsys):
    def attention_head(X, W_q, W_k, W_v, mask=None):
        raise NotImplementedError("write attention_head")

    assert "Not implemented yet. attention_head() raised NotImplementedError" in feedback(capsys, checks.attention_head, attention_head)


FIRST = "attention_head on a head with seq 4, d_model 6, d_k 3, d_v 2"
CAUSAL = "attention_head on the same head with the causal mask"


@pytest.mark.parametrize(
    "answer, expected",
    [
        (head_with(scale=1.0), f"{FIRST}: You did not scale the scores: divide them by sqrt(d_k)."),
        (head_with(scale=1 / 3), "Divide the scores by sqrt(d_k), not by d_k."),
        (head_with(scale=1 / np.sqrt(6)), "the width of the queries and keys (3 here), not of X (6)"),
        (head_with(scale=1 / np.sqrt(2)), "the width of the queries and keys (3 here), not of the values (2)"),
        (head_with(fill=0.0), f"{CAUSAL}: query 2 gives key 3 the weight 0.157, but the mask forbids it. A masked score of 0"),
        (lambda X, W_q, W_k, W_v, mask=None: reference_head(X, W_q, W_k, W_v), f"{CAUSAL}: query 1 gives key 3 the weight 0.145, but the mask forbids it: the mask was ignored."),
        (lambda X, W_q, W_k, W_v, mask=None: reference_head(X, W_q, W_k, W_v, None if mask is None else ~mask, fill=-1e9), "query 2 gives key 3 the weight 1, but the mask forbids it, and most of the weight goes to forbidden pairs: the mask is True where a query MAY attend"),
        (always_causal, f"{FIRST}: you applied the causal mask, but mask is None here"),
        (causal_when_masked, "see only later words: query 0 gives key 0 the weight 1, but the mask forbids it: you applied the causal mask, not the mask given."),
        (mask_after_softmax, f"{CAUSAL}: the rows of the weights sum to [0.992, 0.854, 0.994, 1. ]. Each query's weights must sum to 1: mask the scores before the softmax"),
        (naive_head, "scores reach about ±1000 gave the weights"),
        (naive_head, "np.exp of scores near 1000 overflows. Hint: subtract each row's maximum"),
        (column_head, "You normalised the columns: the softmax runs along each query's row (axis=-1)."),
        (lambda *args: (args[0] @ args[3] * 0, reference_head(*args)[1]), "the weights are right but the output"),
        (lambda *args: reference_head(*args)[::-1], f"{FIRST} returned (weights, output); return (output, weights), in that order."),
        (lambda *args: reference_head(*args)[0], f"{FIRST} returned an array of shape (4, 2); it should return the pair (output, weights)."),
        (lambda *args: (*reference_head(*args), None), "returned a tuple of 3 items; it should return the pair"),
        (lambda *args: None, "returned None: did you forget `return`? Return the pair (output, weights)."),
        (lambda *args: (reference_head(*args)[1] @ args[0], reference_head(*args)[1]), "(the output, its first item) returned an array of shape (4, 6), expected shape (4, 2)"),
        (lambda *args: (reference_head(*args)[0], "w"), "(the weights, its second item) returned a str"),
        (in_place_head, f"{FIRST} changed one of its inputs"),
        (lambda X, W_q, W_k, W_v: reference_head(X, W_q, W_k, W_v), "raised TypeError"),
        ("attention_head", "expected the function attention_head, got a str"),
    ],
)
def test_attention_head_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.attention_head, answer)
    assert line.startswith("[ch3-attention-head] Not right yet. ")
    assert expected in line


def test_the_head_cases_include_what_the_exercise_is_about():
    cases = checks.ch3._head_cases()
    assert any(len({a[0].shape[1], a[1].shape[1], a[3].shape[1]}) == 3 for _, a, _ in cases)  # d_model, d_k, d_v differ
    masks = [mask for _, _, mask in cases if mask is not None]
    assert any(not np.array_equal(mask, np.tril(np.ones_like(mask))) for mask in masks)
    assert all(mask.any(axis=-1).all() for mask in masks)  # every query may see a key
    assert min(len(a[0]) for _, a, _ in cases) == 1
    description, (X_big, W_q, W_k, _), _ = cases[-1]
    scores = X_big @ W_q @ (X_big @ W_k).T / np.sqrt(W_q.shape[1])
    assert description.endswith("about ±1000") and 900 < scores.max() < 1100 and -1100 < scores.min() < -900


# --- hidden tests --------------------------------------------------------------------------


def test_hidden_test_records_a_pass_a_failed_assert_a_stub_and_a_loop(capsys):
    outcomes = []
    for body in (lambda: None, _fails, lambda: stub(None), lambda: endless(None)):
        assert checks.hidden_test("ch1-stable-softmax", timeout=0.3)(body) is None
        outcomes.append(capsys.readouterr().out.strip())
    assert outcomes[0] == "[ch1-stable-softmax] hidden test: Passed. a hidden test passed"
    assert outcomes[1] == "[ch1-stable-softmax] hidden test: Not right yet. a hidden test raised AssertionError: float32 scores"
    assert outcomes[2].startswith("[ch1-stable-softmax] hidden test: Not implemented yet.")
    assert "did not return within the time budget of 0.3 s" in outcomes[3]


def _fails():
    raise AssertionError("float32 scores")  # what `assert ..., "float32 scores"` raises in a notebook


# --- modes and the log -------------------------------------------------------------------


def test_solved_mode_raises_unless_the_check_passes(capsys, monkeypatch):
    monkeypatch.setenv(checks.MODE_VARIABLE, "solved")
    checks.stable_softmax(reference_softmax)
    with pytest.raises(CheckError, match="ch1-stable-softmax should be 'passed', got 'failed'"):
        checks.stable_softmax(naive_softmax)
    with pytest.raises(CheckError, match="got 'not implemented'"):
        checks.stable_softmax(stub)


def test_student_mode_raises_unless_the_stub_is_not_implemented(capsys, monkeypatch):
    monkeypatch.setenv(checks.MODE_VARIABLE, "student")
    checks.stable_softmax(stub)
    checks.pool_prefers_badminton(A.copy())
    checks.predict_doubling(None)
    with pytest.raises(CheckError, match="got 'passed'.*A solution may have leaked"):
        checks.stable_softmax(reference_softmax)
    with pytest.raises(CheckError, match="got 'failed'"):
        checks.predict_doubling("flatter")


def test_an_unknown_mode_is_an_error_naming_it(monkeypatch):
    monkeypatch.setenv(checks.MODE_VARIABLE, "strict")
    with pytest.raises(ValueError, match="ATTNCOURSE_CHECK_MODE='strict'"):
        checks.predict_doubling("sharper")


def test_every_result_is_appended_to_the_log(capsys, monkeypatch, tmp_path):
    log = tmp_path / "checks.jsonl"
    monkeypatch.setenv(checks.LOG_VARIABLE, str(log))
    checks.stable_softmax(stub)
    checks.predict_doubling("sharper")
    checks.hidden_test("ch1-stable-softmax")(_fails)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["exercise"], r["status"], r["kind"]) for r in records] == [
        ("ch1-stable-softmax", "not implemented", "check"),
        ("ch1-predict-doubling", "passed", "check"),
        ("ch1-stable-softmax", "failed", "hidden"),
    ]


# --- registering checks ------------------------------------------------------------------


def test_exercise_registers_a_check_named_after_its_label(capsys, monkeypatch):
    monkeypatch.setattr(checks.core, "CHECKS", {})

    @checks.exercise("ch9-half")
    def half(run, fn):
        """Exercise ch9-half: halve a number."""
        if run(checks.expect_function(fn, "half"), 4) != 2:
            raise checks.Failed("half(4) should be 2")
        return "half(4) is 2"

    assert checks.core.CHECKS == {"ch9-half": half}
    assert str(inspect.signature(half)) == "(fn, *, timeout: 'float | None' = None) -> None"
    assert feedback(capsys, half, lambda x: x / 2) == "[ch9-half] Passed. half(4) is 2"
    assert feedback(capsys, half, lambda x: x) == "[ch9-half] Not right yet. half(4) should be 2"
    with pytest.raises(ValueError, match="must be named 'double'"):
        checks.exercise("ch9-double")(half)
    with pytest.raises(ValueError, match="already has a check"):
        checks.exercise("ch9-half")(half)


def test_a_bug_in_a_check_is_reported_not_raised(capsys, monkeypatch):
    monkeypatch.setattr(checks.core, "CHECKS", {})

    @checks.exercise("ch9-buggy")
    def buggy(run, answer):
        return {}["missing"]

    line = feedback(capsys, buggy, 1)
    assert line == "[ch9-buggy] Not right yet. the check itself hit an error (please report it): KeyError: 'missing'"


# --- fuzzing: whatever the answer, one line and no exception ------------------------------

ARRAYS = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.float32, np.int64, np.bool_, np.complex128]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
)
VALUES = st.one_of(
    st.none(), st.just(...), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
    ARRAYS, st.lists(st.floats() | st.integers(), max_size=5), st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
    st.builds(object), st.builds(lambda: np.float64("nan")),
)
EXCEPTIONS = st.sampled_from([ValueError, TypeError, IndexError, KeyError, ZeroDivisionError,
                              NotImplementedError, AssertionError, MemoryError, SystemExit, RecursionError])
ANSWERS = st.one_of(
    VALUES,
    VALUES.map(lambda value: lambda *args, **kwargs: value),
    EXCEPTIONS.map(lambda error: lambda *args, **kwargs: (_ for _ in ()).throw(error("learner's bug"))),
)


def _positional_parameters(check) -> tuple[int, int]:
    """How many answers ``check`` takes: (required, at most)."""
    parameters = [p for p in inspect.signature(check).parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD]
    return sum(p.default is p.empty for p in parameters), len(parameters)


@FUZZ
@given(data=st.data(), check=st.sampled_from(sorted(checks.CHECKS)))
def test_no_answer_crashes_a_check(capsys, data, check):
    required, most = _positional_parameters(checks.CHECKS[check])
    answers = data.draw(st.lists(ANSWERS, min_size=required, max_size=most))
    line = feedback(capsys, checks.CHECKS[check], *answers, timeout=2.0)
    assert line.startswith(f"[{check}] ")
    assert any(headline in line for headline in ("Passed.", "Not right yet.", "Not implemented yet."))
    assert "the check itself hit an error" not in line


TUNING_CHECKS = [checks.pool_prefers_badminton, checks.ball_ignores_it, checks.it_attends_to_ball]


@FUZZ
@given(data=st.data(), check=st.sampled_from(TUNING_CHECKS))
def test_arbitrary_matrices_never_crash_the_tuning_checks(capsys, data, check):
    required, _ = _positional_parameters(check)
    answers = data.draw(st.lists(ARRAYS, min_size=required, max_size=required))
    line = feedback(capsys, check, *answers)
    assert "the check itself hit an error" not in line


@FUZZ
@given(
    output=ARRAYS | hnp.arrays(np.float64, (4, 2)),
    weights=ARRAYS | hnp.arrays(np.float64, (4, 4)) | hnp.arrays(np.float64, (4, 4), elements=st.floats(0, 1)),
)
def test_arbitrary_results_never_crash_the_head_check(capsys, output, weights):
    line = feedback(capsys, checks.attention_head, lambda *args: (output, weights))
    assert line.startswith("[ch3-attention-head] Not right yet. ")
    assert "the check itself hit an error" not in line


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
