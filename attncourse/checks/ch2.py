"""Checks of chapter 2's exercises: the reciprocity problem."""

from __future__ import annotations

import numpy as np

from attncourse.attention import dot_product_scores, softmax
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
from attncourse.examples import tennis_sentence
from attncourse.reciprocity import log_normalisers

# "He picked up the tennis ball and found it was wet", the sentence of chapters 2 and 3.
_SENTENCE = tennis_sentence()
_TENNIS, _BALL, _IT = (_SENTENCE.index(w) for w in ("tennis", "ball", "it"))


def _reference_stationary(X: np.ndarray) -> np.ndarray:
    """pi_i = Z_i / sum_k Z_k, from log Z so that no exponential overflows."""
    return softmax(log_normalisers(dot_product_scores(X, X)))  # (seq,)


def _stationary_cases() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(2025)
    return [
        ("the sentence's X", _SENTENCE.X),
        ("a random X of shape (4, 3)", rng.standard_normal((4, 3))),
        ("a single token [[2, 1]]", np.array([[2.0, 1.0]])),
        ("X with a repeated token", np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 0.0]])),
        ("twice the sentence's X", 2 * _SENTENCE.X),
    ]


@exercise("ch2-stationary-distribution", points=3)
def stationary_distribution(run, candidate) -> str:
    """Exercise ch2-stationary-distribution: pi (seq,) with pi_i proportional to Z_i, the
    row normaliser of A = softmax(X Xᵀ), summing to 1.

    Such a pi satisfies detailed balance, pi_i A_ij = pi_j A_ji, so pi A = pi. Tries the
    sentence, random inputs, a single token and a repeated token; the input must be left
    unchanged. The hints name the usual slips: Z itself, 1/Z, uniform, one step of W.
    """
    fn = expect_function(candidate, "stationary_distribution")
    cases = inputs(_stationary_cases())  # one at a time when the grader counts the inputs right
    for description, X in cases:
        what = f"stationary_distribution of {description}"
        pi = expect_array(run_on_copies(run, fn, [X], what), (len(X),), what)
        if not np.isfinite(pi).all():
            raise Failed(f"{what} gave {show(pi)}; every entry should be a finite number.")
        expected = _reference_stationary(X)
        if not close(pi, expected):
            if precision_problem(pi, expected):
                raise Failed(f"{what}: {precision_problem(pi, expected)}")
            raise Failed(f"{what} gave {show(pi)}; expected {show(expected)} ({difference(pi, expected)}). "
                         f"{_stationary_hint(pi, X)}")
    A = softmax(dot_product_scores(_SENTENCE.X, _SENTENCE.X))
    pi = _reference_stationary(_SENTENCE.X)
    balance = np.abs(pi[:, None] * A - (pi[:, None] * A).T).max()
    return (
        f"Your pi equals Z / sum(Z) on {len(cases)} inputs. On the sentence, pi_i A_ij and "
        f"pi_j A_ji differ by at most {balance:.1e}: detailed balance, so pi A = pi."
    )


def _stationary_hint(pi: np.ndarray, X: np.ndarray) -> str:
    scores = dot_product_scores(X, X)  # (seq, seq)
    Z = np.exp(log_normalisers(scores))  # (seq,)
    if close(pi, Z):
        return "That is Z itself: divide it by its sum, so that pi is a probability distribution."
    if close(pi, (1 / Z) / (1 / Z).sum()):
        return (
            "That is 1/Z, normalised: the wrong way round. A_ij / A_ji = Z_j / Z_i, so "
            "pi_i A_ij = pi_j A_ji asks for pi_i / pi_j = Z_i / Z_j."
        )
    if close(pi, np.full(len(X), 1 / len(X))):
        return "A uniform pi is stationary only when every row normaliser is the same. Hint: pi_i is proportional to Z_i."
    if close(pi, softmax(scores).mean(axis=0)):
        return "That is one step of the walk from the uniform distribution; the stationary pi does not move at all: pi A = pi."
    weights = softmax(scores)  # (seq, seq)
    if (pi >= 0).all() and close(pi.sum(), 1.0, like=pi):
        moved = np.abs(pi @ weights - pi).max()
        return (
            f"Your pi is a distribution but not stationary yet: one more step of the walk, pi A, "
            f"moves it by up to {moved:.1e}. If you iterate pi <- pi A, the walk converges "
            "slowly when a word keeps most of its attention for itself (one here keeps "
            f"{weights.diagonal().max():.3f}); the closed form needs no iteration: "
            "pi_i = Z_i / sum_k Z_k, with Z_i the sum of row i of exp(X Xᵀ)."
        )
    return "Hint: Z_i is the sum of row i of exp(X Xᵀ); pi is Z divided by its sum."


goal_ball_ignores_it = tune_goal(
    "ch2-ball-ignores-it",
    "Goal: it gives ball more than 0.4 of its attention, and ball gives it less than a "
    "tenth of that. Change only the rows of it and ball, every entry between -10 and 10.",
    conditions=(
        Condition(Cell("weights", "it", "ball"), ">", 0.4),
        Condition(Cell("weights", "ball", "it"), "<", Cell("weights", "it", "ball", factor=0.1)),
    ),
    fixed_rows={token: _SENTENCE.X[row] for row, token in enumerate(_SENTENCE.tokens)
                if row not in (_IT, _BALL)},
    bounds={"X": (-10.0, 10.0)},
)


@exercise("ch2-ball-ignores-it", points=2)
def ball_ignores_it(run, X_tuned) -> str:
    """Exercise ch2-ball-ignores-it: edit only the rows of "it" and "ball" of the tennis
    sentence's X, entries between -10 and 10, so that with A = softmax(X Xᵀ)

    1. A[it, ball] > 0.4, and
    2. A[ball, it] < A[it, ball] / 10.

    Possible only through the normalisers (A[it, ball] / A[ball, it] = Z_ball / Z_it); the
    pass message shows the price: how much ball still gives tennis. The goal is
    ``goal_ball_ignores_it``, which chapter 2's explorer shows too.
    """
    goal = goal_ball_ignores_it
    X = _SENTENCE.X
    tuned = expect_edited_embeddings(goal, X_tuned, X, _SENTENCE.tokens, "X_tuned", "the sentence's X")
    scores = tuned @ tuned.T  # (seq, seq)
    weights = softmax(scores)
    log_Z = log_normalisers(scores)
    views = {"scores": scores, "weights": weights}
    gives_ball, ignores_it = goal.conditions
    given, returned = weights[_IT, _BALL], weights[_BALL, _IT]
    z_ratio = float(np.exp(log_Z[_BALL] - log_Z[_IT]))
    if not gives_ball.holds(_SENTENCE.tokens, views):
        raise Failed(
            f"it gives ball {given:.3f}, not more than {gives_ball.right:g}. Hint: raise their "
            f"shared score it · ball (now {scores[_IT, _BALL]:.2f})."
        )
    if not ignores_it.holds(_SENTENCE.tokens, views):
        raise Failed(
            f"ball gives it {returned:.3f}, not less than a tenth of the {given:.3f} it gives "
            f"ball. Hint: A[it, ball] / A[ball, it] = Z_ball / Z_it, now {_readable(z_ratio, 2)}: "
            "ball's row normaliser must be more than 10 times that of it."
        )
    before = softmax(X @ X.T)[_BALL, _TENNIS]
    return (
        f"it gives ball {given:.3f}, ball gives it {returned:.3f}: Z_ball is {_readable(z_ratio, 1)} times "
        f"Z_it. The price: ball now gives tennis {weights[_BALL, _TENNIS]:.3f} (it gave "
        f"{before:.3f}) and itself {weights[_BALL, _BALL]:.3f}."
    )


def _readable(ratio: float, decimals: int) -> str:
    """A ratio of normalisers for a message: 2.19, or 1.7e+38 once it has many digits."""
    return f"{ratio:.{decimals}f}" if ratio < 1e4 else f"{ratio:.2g}"


_WEIGHTS = softmax(dot_product_scores(_SENTENCE.X, _SENTENCE.X))  # (seq, seq): A = softmax(X Xᵀ)

predict_weight_back = predict_exercise(
    "ch2-predict-weight-back",
    answer=float(_WEIGHTS[_TENNIS, _IT]),
    tolerance=0.005,
    hint=(
        "What happens to the shared e^S when you divide A[it, tennis] by A[tennis, it]?"
    ),
    explanation=(
        "A[tennis, it] = A[it, tennis] / (Z_tennis / Z_it) = "
        f"{_WEIGHTS[_IT, _TENNIS]:.3f} / {_WEIGHTS[_IT, _TENNIS] / _WEIGHTS[_TENNIS, _IT]:.3f}"
        f" = {_WEIGHTS[_TENNIS, _IT]:.3f}: one number per word, its row normaliser, "
        "decides how lopsided every pair is."
    ),
)
