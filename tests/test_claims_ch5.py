"""Chapter 5's claims about random quantities, over many seeds (issue #21 item 12).

The six random layers of section 5 are drawn 100 times (numpy only, a second of CPU); the
claims about biases and the converse of section 3 over ten random problems each.
"""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.attention import dot_product_scores, softmax
from attncourse.examples import tennis_sentence
from attncourse.graph import (
    attention_rollout,
    cycle_ratio,
    largest_cycle_ratio,
    stacked_attention,
    stationary_distribution,
    token_residual,
)
from tests.chapter_prose import paragraph_with, paragraphs

pytestmark = pytest.mark.slow
N_LAYERS, DRAWS = 6, range(100)


def layers(seed: int, d_model: int = 5):
    """The chapter's random layers: separate W_Q, W_K per layer, W_V scaled by 1/sqrt(d_model)."""
    rng = np.random.default_rng(seed)
    W_qs, W_ks = rng.standard_normal((2, N_LAYERS, d_model, d_model))
    W_vs = rng.standard_normal((N_LAYERS, d_model, d_model)) / np.sqrt(d_model)
    return W_qs, W_ks, W_vs


@pytest.fixture(scope="module")
def draws():
    X = tennis_sentence().X  # (seq, d_model)
    out = []
    for seed in DRAWS:
        pure_states, _ = stacked_attention(X, *layers(seed))
        skip_states, skip_weights = stacked_attention(X, *layers(seed), skip=True)
        out.append((np.array([token_residual(s) for s in pure_states]) / token_residual(X),
                    pure_states, skip_states, skip_weights))
    return X, out


def test_each_layer_roughly_cubes_a_small_residual(draws):
    """The successive slope of log residuals is unit-free; near 3 once the residual is small."""
    _, out = draws
    slopes = []
    for pure, *_ in out:
        for scale in (1.0, 1e-3):  # other units: the slopes do not move
            drops = np.diff(np.log(scale * pure))
            small = (pure[1:-1] < 0.1) & (pure[2:] > 1e-14)
            assert small.any()
            these = drops[1:][small] / drops[:-1][small]
            assert np.all((these > 1.5) & (these < 6))
        slopes.extend(these)
    low, mid, high = np.percentile(slopes, [10, 50, 90])
    assert 2.7 < mid < 3.3 and low > 2.2 and high < 4


def test_the_log_ratio_depends_on_the_units(draws):
    """Why the chapter no longer uses log r_{l+1} / log r_l: it moves with the units of r."""
    pure = draws[1][0][0]
    assert not np.isclose(np.log(pure[3]) / np.log(pure[2]), np.log(1e-3 * pure[3]) / np.log(1e-3 * pure[2]))


def test_pure_attention_collapses_and_mostly_ever_faster(draws):
    _, out = draws
    faster = 0
    for pure, pure_states, *_ in out:
        assert pure[-1] < 1e-12
        assert token_residual(pure_states[-1]) / np.linalg.norm(pure_states[-1]) < 1e-12
        shrink = pure[1:] / pure[:-1]
        faster += bool(np.all(np.diff(shrink[:4]) < 0))
    assert faster >= 0.9 * len(out)


def test_skips_prevent_the_collapse_but_not_the_drift(draws):
    X, out = draws
    lows, drift = [], []
    for _, _, skip_states, _ in out:
        residuals = np.array([token_residual(s) for s in skip_states]) / token_residual(X)
        relative = np.array([token_residual(s) / np.linalg.norm(s) for s in skip_states])
        lows.append(residuals[1:].min())
        assert relative.min() > 0.02
        drift.append(relative[-1] / relative[0])
    assert min(lows) > 0.5
    assert 0 < sum(low < 1 for low in lows) < len(lows)  # "never below its start" is false
    assert np.mean(np.array(drift) < 1) > 0.9


def test_the_rollout_is_positive_and_flatter_than_the_last_layer(draws):
    _, out = draws
    flatter = 0
    for *_, skip_weights in out:
        rollout = attention_rollout(skip_weights)
        assert np.allclose(rollout.sum(axis=1), 1.0) and rollout.min() > 0
        assert np.diag(rollout).min() >= 0.5**N_LAYERS
        flatter += bool(rollout.max() < skip_weights[-1].max(axis=1).mean())
    assert flatter >= 0.9 * len(out)


def test_biases_keep_a_symmetric_block_reversible_and_a_symmetric_m_is_needed_with_or_without_them():
    X = tennis_sentence().X
    for seed in range(10):
        rng = np.random.default_rng(seed)
        W_Q = rng.standard_normal((5, 3))
        W_K = W_Q @ np.diag(rng.choice([-1.0, 1.0], size=3))  # M = W_Q W_K^T symmetric
        b_Q, b_K = rng.standard_normal((2, 3))
        biased = softmax(dot_product_scores(X @ W_Q + b_Q, X @ W_K + b_K) / np.sqrt(3))
        assert abs(largest_cycle_ratio(biased)[0] - 1) < 1e-9
        W_K_other = rng.standard_normal((5, 3))  # M not symmetric: two tokens and the origin
        B = W_Q @ W_K_other.T - W_K_other @ W_Q.T
        x_a, x_b = rng.standard_normal((2, 5))
        three = np.vstack([x_a, x_b, np.zeros(5)])  # (3, d_model)
        weights = softmax(dot_product_scores(three @ W_Q, three @ W_K_other))
        assert np.isclose(np.log(cycle_ratio(weights, [0, 1, 2])), x_a @ B @ x_b)
        weights_biased = softmax(dot_product_scores(three @ W_Q + b_Q, three @ W_K_other + b_K))
        assert np.isclose(np.log(cycle_ratio(weights_biased, [0, 1, 2])), x_a @ B @ x_b)  # biases too


def test_the_converse_needs_a_positive_stationary_distribution():
    for seed in range(10):
        rng = np.random.default_rng(seed)
        S = rng.standard_normal((6, 6))
        A = softmax(S + S.T)  # symmetric scores: reversible, every weight positive
        pi = stationary_distribution(A)
        assert pi.min() > 0
        rebuilt = np.log(pi[:, None] * A)  # (seq, seq)
        assert np.allclose(rebuilt, rebuilt.T) and np.allclose(softmax(rebuilt), A)
    causal = softmax(np.where(np.tril(np.ones((6, 6), bool)), S + S.T, -np.inf))
    assert np.allclose(stationary_distribution(causal), np.eye(6)[0])  # pi_i = 0 for i > 0


# Issue 36 item 8: the skip connections hold the collapse off over six layers, not at any
# depth, and how much they hold it off depends on their weight (Noci et al. 2022); what a
# layer always shrinks is the range along every direction, not the residual.

def relative_residual_after(X, n_layers, seed, skip=1.0, branch=1.0):
    """X_{l+1} = skip X_l + branch A_l X_l W_V with the chapter's random layers; ||X - 1 x||/||X|| at the end."""
    rng = np.random.default_rng(seed)
    d_model = X.shape[1]
    W_qs, W_ks = rng.standard_normal((2, n_layers, d_model, d_model))
    W_vs = rng.standard_normal((n_layers, d_model, d_model)) / np.sqrt(d_model)
    state = X
    for W_q, W_k, W_v in zip(W_qs, W_ks, W_vs):
        scores = (state @ W_q) @ (state @ W_k).T / np.sqrt(d_model)  # (seq, seq)
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        state = skip * state + branch * (weights / weights.sum(axis=1, keepdims=True)) @ state @ W_v
    return np.linalg.norm(state - state.mean(axis=0)) / np.linalg.norm(state)


@pytest.mark.parametrize("first_seed", [0, 1000])
def test_with_depth_the_skips_only_slow_the_collapse_and_their_weight_decides(first_seed):
    X = tennis_sentence().X  # (seq, d_model)
    seeds = range(first_seed, first_seed + 40)
    six = [relative_residual_after(X, 6, seed) for seed in seeds]
    assert min(six) > 0.02  # six layers: held off
    for n_layers, ceiling in ((24, 0.05), (48, 1e-3)):
        assert np.median([relative_residual_after(X, n_layers, seed) for seed in seeds]) < ceiling
    half_skip = np.array([relative_residual_after(X, 24, seed, skip=0.5) for seed in seeds])
    assert np.mean(half_skip < 1e-4) >= 0.95
    for n_layers in (24, 48):
        scaled = [relative_residual_after(X, n_layers, seed, branch=1 / np.sqrt(n_layers)) for seed in seeds]
        assert min(scaled) > 0.2


@pytest.mark.parametrize("seed", range(10))
def test_one_layer_can_raise_the_residual_but_shrinks_every_range(seed):
    tokens = np.array([[0.0], [1.0], [2.0]])  # (seq, d_model)
    scores = np.zeros((3, 3))
    scores[0, 0] = scores[1, 2] = scores[2, 2] = 5.0
    mixed = softmax(scores) @ tokens
    assert token_residual(tokens) == pytest.approx(1.414, abs=1e-3)
    assert token_residual(mixed) == pytest.approx(1.600, abs=1e-3) and np.ptp(mixed) < 2.0
    rng = np.random.default_rng(seed)
    raised = 0
    for _ in range(500):
        X = rng.standard_normal((6, 3))  # (seq, d_model)
        Y = softmax(4.0 * rng.standard_normal((6, 6))) @ X  # every weight positive
        raised += token_residual(Y) > token_residual(X)
        for direction in rng.standard_normal((5, 3)):
            assert np.ptp(Y @ direction) < np.ptp(X @ direction)
    assert raised > 0


def test_the_chapter_says_what_shrinks_and_that_depth_and_the_skips_weight_matter():
    text = " ".join(paragraphs(5))
    assert "Skip connections prevent the collapse" not in text
    assert "it is there for any softmax attention with finite scores" not in text
    pull = paragraph_with(5, "The pull has nothing to do with symmetry")
    assert "range" in pull and "not every measure of spread" in pull
    rises = paragraph_with(5, "{glue:text}`pull_residual_after:.3f`")
    assert "{glue:text}`pull_residual_before:.3f`" in rises
    depth = paragraph_with(5, "{glue:text}`deep_48_mid:.1e`")
    for needed in ("{glue:text}`deep_half_collapsed:d`", "{glue:text}`deep_scaled_low:.2f`",
                   "{cite}`noci2022signal`", "depends on their weight"):
        assert needed in depth, needed
