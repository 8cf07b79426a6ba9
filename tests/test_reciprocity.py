"""Tests for ``attncourse.reciprocity``. Expected values are worked out by hand or
computed independently (naive formulas on small inputs); hypothesis checks the identities
chapter 2 states: W_ij / W_ji = Z_j / Z_i for similarity attention, and that repeated
attention never spreads the tokens apart."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attncourse.attention import softmax
from attncourse.reciprocity import (
    cosine_similarity,
    log_normalisers,
    repeated_attention,
)

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
FAST = settings(max_examples=60, deadline=None)


def _random_sentence(seed, max_seq=6, max_d=5):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rng.integers(2, max_seq + 1), rng.integers(1, max_d + 1)))


def test_log_normalisers_match_the_naive_formula_on_small_scores():
    scores = np.array([[0.0, 1.0, 2.0], [-1.0, 0.5, 0.0]])
    assert np.allclose(log_normalisers(scores), np.log(np.exp(scores).sum(axis=-1)))


def test_log_normalisers_do_not_overflow():
    result = log_normalisers([[1000.0, 1000.0], [-1000.0, -1000.0]])
    assert np.allclose(result, [1000.0 + np.log(2.0), -1000.0 + np.log(2.0)])


@FAST
@given(SEEDS)
def test_weight_ratio_is_a_ratio_of_normalisers(seed):
    X = _random_sentence(seed)
    S = X @ X.T
    W = softmax(S)
    log_Z = log_normalisers(S)
    assert np.allclose(np.log(W) - np.log(W.T), log_Z[None, :] - log_Z[:, None])


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros((2, 2, 2)), [[0.0, np.inf]]])
def test_log_normalisers_reject_bad_scores(bad):
    with pytest.raises(ValueError, match="scores"):
        log_normalisers(bad)


def test_repeated_attention_applies_similarity_attention_step_by_step():
    X = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    states, weights = repeated_attention(X, steps=2, scale=0.5)
    assert states.shape == (3, 3, 2) and weights.shape == (3, 3, 3)
    expected = X
    for t in range(3):
        assert np.allclose(states[t], expected)
        w = np.exp(0.5 * expected @ expected.T)
        w /= w.sum(axis=1, keepdims=True)
        assert np.allclose(weights[t], w)
        expected = w @ expected


def test_repeated_attention_with_zero_steps_returns_the_input():
    X = np.eye(3)
    states, weights = repeated_attention(X, steps=0)
    assert states.shape == (1, 3, 3) and np.array_equal(states[0], X)
    assert weights.shape == (1, 3, 3)


def test_repeated_attention_does_not_mutate_its_input():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    copy = X.copy()
    states, _ = repeated_attention(X, steps=3)
    states[0, 0, 0] = 99.0
    assert np.array_equal(X, copy)


@FAST
@given(SEEDS)
def test_repeated_attention_never_spreads_the_tokens(seed):
    states, _ = repeated_attention(_random_sentence(seed), steps=4)
    # the diameter of the token cloud: the largest distance between two rows
    spreads = [np.linalg.norm(state[:, None] - state[None, :], axis=-1).max() for state in states]
    assert all(later <= earlier + 1e-12 for earlier, later in itertools.pairwise(spreads))


@pytest.mark.parametrize(("steps", "error"), [(-1, ValueError), (1.5, TypeError), (True, TypeError)])
def test_repeated_attention_rejects_bad_steps(steps, error):
    with pytest.raises(error, match="steps must be a non-negative integer"):
        repeated_attention(np.eye(2), steps=steps)


def test_cosine_similarity_known_values():
    assert cosine_similarity([1.0, 0.0], [0.0, 3.0]) == 0.0
    assert np.isclose(cosine_similarity([1.0, 1.0], [2.0, 2.0]), 1.0)
    assert cosine_similarity([1.0, 0.0], [-2.0, 0.0]) == -1.0


def test_cosine_similarity_rejects_zero_and_mismatched_vectors():
    with pytest.raises(ValueError, match="zero vector"):
        cosine_similarity([0.0, 0.0], [1.0, 0.0])
    with pytest.raises(ValueError, match=r"a has d=2 but b has d=3 \(a shape \(2,\), b shape \(3,\)\)"):
        cosine_similarity([1.0, 0.0], [1.0, 0.0, 0.0])
