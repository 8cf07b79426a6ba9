"""Checks of chapter 2's exercises: the reciprocity problem."""

from __future__ import annotations

import numpy as np

from attncourse.attention import dot_product_scores, softmax
from attncourse.checks.core import (
    Failed,
    NotImplementedYet,
    _expect_choice,
    _show,
    exercise,
    expect_array,
    expect_function,
)
from attncourse.examples import tennis_sentence
from attncourse.reciprocity import log_normalisers, repeated_attention

# "He picked up the tennis ball and found it was wet", the sentence of chapters 2 and 3.
_SENTENCE = tennis_sentence()
_HE, _TENNIS, _BALL, _AND, _IT = (_SENTENCE.index(w) for w in ("He", "tennis", "ball", "and", "it"))


def _reference_log_ratio(X: np.ndarray) -> np.ndarray:
    log_Z = log_normalisers(dot_product_scores(X, X))  # (seq,)
    return log_Z[None, :] - log_Z[:, None]  # (seq, seq): [i, j] = log Z_j - log Z_i


def _log_ratio_cases() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(2025)
    return [
        ("the sentence's X", _SENTENCE.X),
        ("a random X of shape (4, 3)", rng.standard_normal((4, 3))),
        ("a single token [[2, 1]]", np.array([[2.0, 1.0]])),
        ("X with a repeated token", np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 0.0]])),
        ("20 X, whose scores reach 1300", 20 * _SENTENCE.X),
        ("30 times a random X of shape (6, 4)", 30 * rng.standard_normal((6, 4))),
    ]


@exercise("ch2-log-weight-ratio")
def log_weight_ratio(run, candidate) -> str:
    """Exercise ch2-log-weight-ratio: the matrix of log(W_ij / W_ji) for W = softmax(X Xᵀ).

    The answer is log Z_j - log Z_i. Tries small and random inputs, a single token, a
    repeated token, and scores in the thousands, where the weights underflow to 0 and
    np.log(W / W.T) gives nan. Also checks that the input is left unchanged.
    """
    fn = expect_function(candidate, "log_weight_ratio")
    cases = _log_ratio_cases()
    for description, X in cases:
        given = X.copy()
        what = f"log_weight_ratio of {description}"
        ratio = expect_array(run(fn, given), (len(X), len(X)), what)
        if not np.array_equal(given, X):
            raise Failed(f"{what} changed its input X; work on new arrays.")
        expected = _reference_log_ratio(X)
        if not np.isfinite(ratio).all():
            scores = X @ X.T
            cause = (
                "Scores this large make some weights underflow to exactly 0, and log(0 / 0) "
                "is nan. Hint: stay in logarithms, log W_ij = S_ij - log Z_i, and "
                "log_normalisers(S) computes log Z without overflow."
                if np.ptp(scores) > 700
                else "Every entry should be a finite number."
            )
            raise Failed(f"{what} gave {_show(ratio)}. {cause}")
        if not np.allclose(ratio, expected, rtol=1e-6, atol=1e-6):
            raise Failed(
                f"{what} gave {_show(ratio)}; expected {_show(expected)}. "
                f"{_log_ratio_hint(ratio, expected)}"
            )
    return (
        f"Your log ratios equal log Z_j - log Z_i on {len(cases)} inputs, including scores "
        "of 1300, where np.log(W / W.T) gives nan."
    )


def _log_ratio_hint(ratio: np.ndarray, expected: np.ndarray) -> str:
    with np.errstate(all="ignore"):
        plain_ratio = np.exp(expected)
    if np.allclose(ratio, -expected, rtol=1e-6, atol=1e-6):
        return "That is log(W_ji / W_ij), its transpose: entry [i, j] is log(W_ij / W_ji)."
    if np.allclose(ratio, 0.0):
        return "The scores are symmetric, but the weights are not: W_ij / W_ji = Z_j / Z_i."
    if np.allclose(ratio, plain_ratio, rtol=1e-6, atol=1e-6):
        return "That is the ratio W_ij / W_ji itself: take its logarithm."
    if not np.allclose(ratio, -ratio.T, rtol=1e-6, atol=1e-6):
        return "log(W_ij / W_ji) = -log(W_ji / W_ij), so the matrix must be antisymmetric; yours is not."
    return "Hint: log W_ij = S_ij - log Z_i, where Z_i is the sum of row i of exp(S)."


@exercise("ch2-ball-ignores-it")
def ball_ignores_it(run, X_tuned) -> str:
    """Exercise ch2-ball-ignores-it: edit only the rows of "it" and "ball" of the tennis
    sentence's X, entries between -10 and 10, so that with W = softmax(X Xᵀ)

    1. W[it, ball] > 0.4, and
    2. W[ball, it] < W[it, ball] / 10.

    Possible only through the normalisers (W[it, ball] / W[ball, it] = Z_ball / Z_it); the
    pass message shows the price: how much ball still gives tennis.
    """
    X = _SENTENCE.X
    tuned = expect_array(X_tuned, X.shape, "X_tuned")
    if not np.isfinite(tuned).all():
        raise Failed(f"X_tuned contains nan or inf: {_show(tuned)}")
    if np.array_equal(tuned, X):
        raise NotImplementedYet("X_tuned is still the sentence's X: edit the rows of it and ball.")
    changed = [
        _SENTENCE.tokens[row] for row in range(len(X))
        if row not in (_IT, _BALL) and not np.allclose(tuned[row], X[row])
    ]
    if changed:
        raise Failed(
            f"you changed the row(s) of {', '.join(changed)}; only the rows of it "
            f"(index {_IT}) and ball (index {_BALL}) may change."
        )
    if np.abs(tuned).max() > 10:
        raise Failed("an entry of X_tuned is outside [-10, 10]; keep the embeddings of a sensible size.")
    scores = tuned @ tuned.T  # (seq, seq)
    weights = softmax(scores)
    log_Z = log_normalisers(scores)
    given, returned = weights[_IT, _BALL], weights[_BALL, _IT]
    z_ratio = np.exp(log_Z[_BALL] - log_Z[_IT])
    if not given > 0.4:
        raise Failed(
            f"it gives ball {given:.3f}, not more than 0.4. Hint: raise their shared "
            f"score it · ball (now {scores[_IT, _BALL]:.2f})."
        )
    if not returned < given / 10:
        raise Failed(
            f"ball gives it {returned:.3f}, not less than a tenth of the {given:.3f} it gives "
            f"ball. Hint: W[it, ball] / W[ball, it] = Z_ball / Z_it, now {z_ratio:.2f}: "
            "ball's row normaliser must be more than 10 times that of it."
        )
    before = softmax(X @ X.T)[_BALL, _TENNIS]
    return (
        f"it gives ball {given:.3f}, ball gives it {returned:.3f}: Z_ball is {z_ratio:.1f} times "
        f"Z_it. The price: ball now gives tennis {weights[_BALL, _TENNIS]:.3f} (it gave "
        f"{before:.3f}) and itself {weights[_BALL, _BALL]:.3f}."
    )


_HE_AND_BALL_ANSWERS = ("negative", "zero", "positive")


@exercise("ch2-predict-he-and-ball")
def predict_he_and_ball(run, prediction) -> str:
    """Exercise ch2-predict-he-and-ball: He and ball score 0; after one round of
    similarity attention their score is ...? "positive": every weight is positive, so
    each word takes in a little of every other, and no entry of X is negative."""
    choice = _expect_choice(prediction, _HE_AND_BALL_ANSWERS)
    states, _ = repeated_attention(_SENTENCE.X, steps=1)  # (2, seq, d_model)
    after = dot_product_scores(states[1], states[1])[_HE, _BALL]
    why = (
        f"He and ball share no dimension (score 0), but softmax weights are never 0: after "
        f"one round each word holds a little of every other (He takes in ball, tennis and it, "
        f"all things), and their score is {after:.3f}. No entry of X is negative, so no "
        "mixture of them is, and no score can fall below 0."
    )
    if choice != "positive":
        raise Failed(f"you predicted {prediction.strip()!r}. {why}")
    return why
