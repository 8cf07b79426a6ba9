"""Tests for chapter 3's checks (``attncourse.checks.ch3``): each check with the reference
answer (passed), the untouched stub (not implemented) and the mistakes its hints name."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attncourse import checks
from attncourse.attention import softmax
from attncourse.examples import keys_and_locks, tennis_sentence
from attncourse.explorers.attention_explorer import AttentionExplorer
from tests.checks_feedback import FUZZ, feedback, learner_mode  # noqa: F401 (an autouse fixture)

SENTENCE = tennis_sentence()
X = SENTENCE.X
BALL, IT = SENTENCE.index("ball"), SENTENCE.index("it")


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
    weights = softmax(X @ LOPSIDED @ LOPSIDED.T @ X.T)
    assert weights[IT, BALL] >= 0.5 and weights[BALL, IT] <= 0.05


@FUZZ
@given(W_q=hnp.arrays(np.float64, (5, 5), elements=st.floats(-10, 10)), W_k=hnp.arrays(np.float64, (5, 5), elements=st.floats(-10, 10)))
def test_the_head_tuning_check_agrees_with_its_conditions(capsys, W_q, W_k):
    scores = (X @ W_q) @ (X @ W_k).T
    weights = softmax(scores)
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
    weights = softmax(scores)
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
    weights = softmax((Q @ K.T / np.sqrt(Q.shape[-1])).T).T
    return weights @ (X @ W_v), weights


def in_place_head(X, W_q, W_k, W_v, mask=None):
    X -= X.mean(axis=0)
    return reference_head(X, W_q, W_k, W_v, mask)


@pytest.mark.parametrize("answer", [head_with(), head_with(fill=-1e9), lambda *args: tuple(a.tolist() for a in reference_head(*args))])
def test_attention_head_passes_the_reference(capsys, answer):
    line = feedback(capsys, checks.attention_head, answer)
    cases = len(checks.ch3._head_cases())
    assert line.startswith(f"[ch3-attention-head] Passed. Your head matches scaled_dot_product_attention on {cases} inputs")


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
        (mask_after_softmax, f"{CAUSAL}: the rows of the weights sum to [0.992, 0.854, 0.994, 1. ] (the largest difference is 0.15). Each query's weights must sum to 1: mask the scores before the softmax"),
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
    lowest_allowed = [(np.where(mask, a[0] @ a[1] @ (a[0] @ a[2]).T / np.sqrt(a[1].shape[1]), -np.inf)).max(axis=-1).min()
                      for _, a, mask in cases if mask is not None]
    assert min(lowest_allowed) < -1000  # a finite fill of -1000 for masked scores is caught
    description, (X_big, W_q, W_k, _), _ = next(case for case in cases if case[0].endswith("±1000"))
    scores = X_big @ W_q @ (X_big @ W_k).T / np.sqrt(W_q.shape[1])
    assert description.endswith("about ±1000") and 900 < scores.max() < 1100 and -1100 < scores.min() < -900



# --- ch3-predict-rotation ----------------------------------------------------------------

QUARTER_TURN = np.array([[0.0, -1.0], [1.0, 0.0]])


def test_predict_rotation_expects_minus_the_score_of_it_on_ball(capsys):
    W_Q, _ = keys_and_locks()
    scores = (X @ W_Q) @ (X @ W_Q @ QUARTER_TURN).T  # (seq, seq)
    assert np.allclose(scores, -scores.T)
    line = feedback(capsys, checks.predict_rotation, -scores[IT, BALL])
    assert line.startswith("[ch3-predict-rotation] Passed. ")
    assert f"S[ball, it] = -S[it, ball] = {scores[BALL, IT]:.1f}" in line


def test_predict_rotation_hints_first_and_answers_on_the_second_miss(capsys):
    first = feedback(capsys, checks.predict_rotation, 6.0)  # "symmetric"
    assert "Hint: Write M = W_Q W_Kᵀ" in first and "-6" not in first
    assert "What does that make Mᵀ?" in first and "Rᵀ = -R" not in first
    second = feedback(capsys, checks.predict_rotation, 0.0)
    assert "the answer is -6. M = W_Q Rᵀ W_Qᵀ" in second
