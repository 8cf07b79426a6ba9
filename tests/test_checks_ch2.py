"""Tests for chapter 2's checks (``attncourse.checks.ch2``): each check with the reference
answer (passed), the untouched stub (not implemented) and the mistakes its hints name."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attncourse import checks
from attncourse.attention import softmax
from attncourse.examples import tennis_sentence
from tests.checks_feedback import FUZZ, feedback, learner_mode  # noqa: F401 (an autouse fixture)

SENTENCE = tennis_sentence()
X = SENTENCE.X
TENNIS, BALL, IT = (SENTENCE.index(w) for w in ("tennis", "ball", "it"))


# --- ch2-ball-ignores-it -----------------------------------------------------------------



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
    assert line == "[ch2-ball-ignores-it] Not implemented yet. X_tuned is still the sentence's X: edit the rows of ball and it."


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
        (_other_row_changed(), "you changed the row(s) of tennis; only the rows of ball (index 5) and it (index 8)"),
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
    weights = softmax(X_tuned @ X_tuned.T)
    holds = weights[IT, BALL] > 0.4 and weights[BALL, IT] < weights[IT, BALL] / 10
    line = feedback(capsys, checks.ball_ignores_it, X_tuned)
    if np.array_equal(X_tuned, X):
        assert "Not implemented yet." in line
    else:
        assert ("Passed." in line) == holds




# --- ch2-stationary-distribution ---------------------------------------------------------


def normalisers(X):
    return np.exp(X @ X.T).sum(axis=-1)  # (seq,): Z_i, fine for the check's moderate scores


def reference_stationary(X):
    Z = normalisers(X)
    return Z / Z.sum()


def in_place_stationary(X):
    X *= 1.0 + 1e-3
    return reference_stationary(X)


def test_stationary_distribution_passes_the_reference_and_shows_detailed_balance(capsys):
    line = feedback(capsys, checks.stationary_distribution, reference_stationary)
    assert line.startswith("[ch2-stationary-distribution] Passed. Your pi equals Z / sum(Z) on 5 inputs.")
    assert "detailed balance, so pi A = pi" in line


def test_the_reference_is_stationary_and_balanced():
    pi, W = reference_stationary(X), softmax(X @ X.T)
    assert np.allclose(pi @ W, pi)
    assert np.allclose(pi[:, None] * W, (pi[:, None] * W).T)


def test_stationary_distribution_reports_the_stub_as_not_implemented(capsys):
    def stationary_distribution(X):
        raise NotImplementedError("write stationary_distribution")

    line = feedback(capsys, checks.stationary_distribution, stationary_distribution)
    assert line.startswith("[ch2-stationary-distribution] Not implemented yet. ")


@pytest.mark.parametrize(
    "answer, expected",
    [
        (normalisers, "That is Z itself: divide it by its sum"),
        (lambda X: (1 / normalisers(X)) / (1 / normalisers(X)).sum(), "That is 1/Z, normalised: the wrong way round"),
        (lambda X: np.full(len(X), 1 / len(X)), "A uniform pi is stationary only when"),
        (lambda X: softmax(X @ X.T).mean(axis=0), "one step of the walk from the uniform distribution"),
        (lambda X: reference_stationary(X) ** 2, "Hint: Z_i is the sum of row i of exp(X Xᵀ)"),
        (in_place_stationary, "changed its input"),
        (lambda X: reference_stationary(X)[:, None], "expected shape (11,)"),
        (lambda X: np.full(len(X), np.nan), "every entry should be a finite number"),
        (reference_stationary(X), "Pass the function itself"),
    ],
)
def test_stationary_distribution_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.stationary_distribution, answer)
    assert line.startswith("[ch2-stationary-distribution] Not right yet. ")
    assert expected in line


# --- issue 36 review (sci6), finding 7: what an unconverged walk and a huge ratio are told ----


def power_iteration(steps):
    def stationary_distribution(X):
        weights = softmax(X @ X.T)  # (seq, seq)
        pi = np.full(len(X), 1 / len(X))
        for _ in range(steps):
            pi = pi @ weights
        return pi
    return stationary_distribution


@pytest.mark.parametrize("steps", [50, 1000])
def test_an_unconverged_power_iteration_is_told_it_has_not_converged(capsys, steps):
    line = feedback(capsys, checks.stationary_distribution, power_iteration(steps))
    assert "Not right yet." in line
    assert "not stationary yet: one more step of the walk, pi A, moves it by" in line
    assert "pi_i = Z_i / sum_k Z_k" in line and "needs no iteration" in line


def test_ball_ignores_it_writes_a_huge_ratio_of_normalisers_readably(capsys):
    X_tuned = X.copy()
    X_tuned[BALL] = [10.0, 0.0, 0.0, 0.0, 0.0]
    line = feedback(capsys, checks.ball_ignores_it, X_tuned)
    assert "Passed." in line and "Z_ball is 1.7e+38 times Z_it" in line
    assert not re.search(r"\d{8}", line)


# --- ch2-predict-weight-back -------------------------------------------------------------


def test_predict_weight_back_expects_what_tennis_gives_it(capsys):
    W = softmax(X @ X.T)
    Z = normalisers(X)
    assert np.isclose(W[IT, TENNIS] / (Z[TENNIS] / Z[IT]), W[TENNIS, IT])  # the ratio identity
    line = feedback(capsys, checks.predict_weight_back, W[TENNIS, IT] - 0.004)
    assert line.startswith("[ch2-predict-weight-back] Passed. ")
    assert f"= {W[TENNIS, IT]:.3f}: one number per word" in line


def test_predict_weight_back_hints_first_and_answers_on_the_second_miss(capsys):
    W = softmax(X @ X.T)
    first = feedback(capsys, checks.predict_weight_back, W[IT, TENNIS])  # "the same weight back"
    assert "Hint: What happens to the shared e^S when you divide" in first
    assert "Z_tennis / Z_it" not in first and f"{W[TENNIS, IT]:.3f}" not in first
    second = feedback(capsys, checks.predict_weight_back, W[IT, TENNIS])
    assert f"the answer is {W[TENNIS, IT]:.4g}" in second
