"""Checks of chapter 1's exercises: dot-product similarity."""

from __future__ import annotations

import numpy as np

from attncourse.attention import softmax
from attncourse.checks.core import (
    Failed,
    close,
    difference,
    exercise,
    expect_array,
    expect_function,
    inputs,
    precision_problem,
    show,
)
from attncourse.checks.predict import predict_exercise
from attncourse.checks.pure import run_on_copies
from attncourse.checks.tune import Cell, Condition, expect_edited_embeddings, tune_goal
from attncourse.examples import pool_beats_badminton

# "pool beats badminton" (seed 003), the sentence of chapter 1.
_SENTENCE = pool_beats_badminton()
_CH1_EMBEDDINGS, _CH1_TOKENS = _SENTENCE.X, _SENTENCE.tokens
_POOL, _BEATS, _BADMINTON = (_SENTENCE.index(w) for w in _CH1_TOKENS)


def _softmax_cases() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(2024)
    return [
        ("the scores [1, 2, 3]", np.array([1.0, 2.0, 3.0])),
        ("chapter 1's scores S = X Xᵀ", _CH1_EMBEDDINGS @ _CH1_EMBEDDINGS.T),
        ("a random batch of shape (2, 3, 5)", rng.standard_normal((2, 3, 5))),
        ("a single score [[4]]", np.array([[4.0]])),
        ("the large scores [1000, 999, 0]", np.array([1000.0, 999.0, 0.0])),
        ("the very negative scores [-1000, -1001]", np.array([-1000.0, -1001.0])),
        ("the rows [[1000, 0, -1000], [0.5, 0.5, 0.5]]", np.array([[1000.0, 0.0, -1000.0], [0.5, 0.5, 0.5]])),
    ]


@exercise("ch1-stable-softmax", points=3)
def stable_softmax(run, candidate) -> str:
    """Exercise ch1-stable-softmax: a softmax over the last axis that never overflows.

    Tries vectors, matrices and a batch, and scores of +-1000, where exp overflows to
    inf (inf / inf = nan) or underflows to 0 (0 / 0 = nan) unless the row maximum is
    subtracted first. Also checks that the input is left unchanged. A softmax computed in
    float16 is told that float16 is too coarse for the check: at its precision (7.8e-3) a
    temperature off by 2% would pass, and whether an answer is float16 is the learner's to
    choose (round a wrong answer to float16 and hand it back as float64).
    """
    fn = expect_function(candidate, "stable_softmax")
    cases = inputs(_softmax_cases())  # one at a time when the grader counts the inputs right
    for description, scores in cases:
        what = f"stable_softmax of {description}"
        weights = expect_array(run_on_copies(run, fn, [scores], what), scores.shape, what)
        if not np.isfinite(weights).all():
            raise Failed(f"{what} gave {show(weights)}. {_overflow_hint(scores)}")
        if (weights < 0).any():
            raise Failed(f"{what} gave negative weights {show(weights)}; exp is never negative.")
        expected = softmax(scores)
        lost = precision_problem(weights, expected)  # float16's 3 digits: told so, not given a hint
        if lost:
            raise Failed(f"{what}: {lost}")
        sums = weights.sum(axis=-1)
        if not close(sums, 1.0, like=weights):
            raise Failed(f"{what}: the rows sum to {show(sums)}, not 1 ({difference(sums, 1.0)}). "
                         f"{_axis_hint(weights)}")
        if not close(weights, expected):
            raise Failed(f"{what} gave {show(weights)}; expected {show(expected)} "
                         f"({difference(weights, expected)}).")
    return (
        f"Your softmax matches the reference on {len(cases)} inputs, including scores of "
        f"±1000, where the textbook formula gives nan."
    )


def _overflow_hint(scores: np.ndarray) -> str:
    if scores.max() > 700:  # exp(710) is already inf in float64
        cause = "np.exp(1000) overflows to inf, and inf / inf is nan."
    elif scores.max() < -700:
        cause = "every np.exp(-1000) underflows to 0, and 0 / 0 is nan."
    else:
        return "Every weight should be a finite number."
    return (
        f"{cause} Hint: softmax(s) = softmax(s - c) for any constant c; "
        "subtract each row's maximum before taking exp."
    )


def _axis_hint(weights: np.ndarray) -> str:
    if close(weights.sum(), 1.0, like=weights):
        return "You normalised the whole array at once: divide each row by its own sum (axis=-1, keepdims=True)."
    if weights.ndim > 1 and close(weights.sum(axis=0), 1.0, like=weights):
        return "You normalised the columns: sum over the last axis (axis=-1, keepdims=True)."
    return "Divide each exponential by the sum of its row (axis=-1, keepdims=True)."


def _W(row: str, col: str) -> Cell:
    return Cell("weights", row, col)


goal_pool_prefers_badminton = tune_goal(
    "ch1-pool-prefers-badminton",
    "Goal: pool attends to badminton more than to itself, and beats still attends to itself "
    "most. Change only badminton's row, every entry between -1 and 1, at scale 1.",
    conditions=(
        Condition(_W("pool", "badminton"), ">", _W("pool", "pool")),
        Condition(_W("beats", "beats"), ">", _W("beats", "pool")),
        Condition(_W("beats", "beats"), ">", _W("beats", "badminton")),
    ),
    fixed_rows={_CH1_TOKENS[row]: _CH1_EMBEDDINGS[row] for row in (_POOL, _BEATS)},
    bounds={"X": (-1.0, 1.0)},
)


@exercise("ch1-pool-prefers-badminton", points=2)
def pool_prefers_badminton(run, X_tuned) -> str:
    """Exercise ch1-pool-prefers-badminton: edit badminton's embedding only, so that

    1. pool attends to badminton more than to itself, and
    2. beats still attends to itself more than to any other word,

    with every entry between -1 and 1. The weights are A = softmax(X Xᵀ) by rows. The goal
    is ``goal_pool_prefers_badminton``, which chapter 1's explorer shows too.
    """
    goal = goal_pool_prefers_badminton
    tuned = expect_edited_embeddings(goal, X_tuned, _CH1_EMBEDDINGS, _CH1_TOKENS, "X_tuned",
                                     "the starting matrix X")
    weights = softmax(tuned @ tuned.T)  # (seq, seq)
    views = {"scores": tuned @ tuned.T, "weights": weights}
    prefers, *beats_most = goal.conditions
    pool = weights[_POOL]
    if not prefers.holds(_CH1_TOKENS, views):
        raise Failed(
            f"pool gives itself {pool[_POOL]:.3f} and badminton {pool[_BADMINTON]:.3f}; "
            "badminton must score higher with pool than pool does with itself. "
            "Hint: a dot product grows with the length of the vectors, not only their direction."
        )
    if not all(condition.holds(_CH1_TOKENS, views) for condition in beats_most):
        raise Failed(f"beats no longer attends to itself most (weights {show(weights[_BEATS])}).")
    return (
        f"pool now gives badminton {pool[_BADMINTON]:.3f}, more than the {pool[_POOL]:.3f} it "
        "keeps for itself: a dot product rewards length as well as direction."
    )


def _doubled_self_weight() -> float:
    doubled = 2 * _CH1_EMBEDDINGS  # (seq, d_model)
    return float(softmax(doubled @ doubled.T)[_POOL, _POOL])


predict_doubling = predict_exercise(
    "ch1-predict-doubling",
    answer=_doubled_self_weight(),
    tolerance=0.005,  # under half the gap to 0.389, pool's weight on badminton after doubling
    hint=(
        "Doubling both vectors multiplies each score by how much? "
        "What does that do to the temperature?"
    ),
    explanation=(
        "Every score is multiplied by 4, like a temperature of 1/4, and a lower temperature "
        "sharpens the row: pool's weight on itself rises from "
        f"{softmax(_CH1_EMBEDDINGS @ _CH1_EMBEDDINGS.T)[_POOL, _POOL]:.3f} to "
        f"{_doubled_self_weight():.3f}."
    ),
)
