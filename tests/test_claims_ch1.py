"""Chapter 1's claims about random quantities, over ten seeds (issue #21, item 12).

The chapter measures one draw; these tests redo each measurement, smaller, for seeds 0-9
at once (the seeds are an extra leading axis) and assert the claim for every seed.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from attncourse.attention import dot_product_scores, softmax

pytestmark = pytest.mark.slow

SEEDS = np.arange(10)
N_KEYS = 16  # tokens per sentence, as in the chapter


def _draw(shape_per_seed, stream):
    """Standard normal draws (seeds, *shape): one generator per seed and stream, so that
    queries, keys and projections of one seed are independent of each other."""
    return np.stack([np.random.default_rng([seed, stream]).standard_normal(shape_per_seed)
                     for seed in SEEDS])


DIMS = (4, 16, 64, 256, 1024)


@functools.cache
def _scaling(seed, n_queries=600):
    """The chapter's measurement for one seed: (raw_std, scaled_std, raw_peak, scaled_peak),
    each (dims,). A loop over seeds: at d = 1024 one seed's scores are already large."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in DIMS:
        q = rng.standard_normal((n_queries, 1, d))  # (queries, 1, d)
        k = rng.standard_normal((n_queries, N_KEYS, d))  # (queries, keys, d)
        scores = dot_product_scores(q, k)[:, 0, :]  # (queries, keys)
        rows.append((scores.std(), (scores / np.sqrt(d)).std(),
                     softmax(scores).max(axis=-1).mean(), softmax(scores / np.sqrt(d)).max(axis=-1).mean()))
    return tuple(np.array(column) for column in zip(*rows))


@pytest.mark.parametrize("seed", SEEDS)
def test_scaling_by_sqrt_d_steadies_the_spread_and_the_peak(seed):
    raw_std, scaled_std, raw_peak, scaled_peak = _scaling(int(seed))
    assert np.allclose(raw_std, np.sqrt(DIMS), rtol=0.05)
    assert np.allclose(scaled_std, 1.0, rtol=0.05)
    assert raw_peak[0] < 0.5 and raw_peak[-1] > 0.95
    assert np.ptp(scaled_peak) < 0.03 and scaled_peak.max() < 0.26


def _self_weights(d, n_sentences=30):
    """(similarity, separate) mean self-weight per seed, as the chapter measures them."""
    X = _draw((n_sentences, N_KEYS, d), 2)  # (seeds, batch, seq, d)
    W_Q, W_K = _draw((2, n_sentences, d, d), 3).swapaxes(0, 1) / np.sqrt(d)  # (seeds, batch, d, d) each
    similar = softmax(dot_product_scores(X, X) / np.sqrt(d))  # (seeds, batch, seq, seq)
    separate = softmax(dot_product_scores(X @ W_Q, X @ W_K) / np.sqrt(d))
    diagonal = lambda A: np.diagonal(A, axis1=-2, axis2=-1).mean(axis=(-2, -1))  # (seeds,)
    return diagonal(similar), diagonal(separate), X


def test_self_similarity_grows_with_d_and_separate_projections_stay_near_one_in_sixteen():
    results = [_self_weights(d) for d in (4, 16, 64, 256)]
    similar = np.array([r[0] for r in results])  # (dims, seeds)
    separate = np.array([r[1] for r in results])
    assert (np.diff(similar, axis=0) > 0).all() and (similar[-1] > 0.99).all()
    assert np.allclose(separate, 1 / N_KEYS, atol=0.02)


def test_the_self_score_stands_sqrt_d_deviations_above_and_T_d_gives_e_over_e_plus_15():
    d = 256
    _, _, X = _self_weights(d)
    S = dot_product_scores(X, X)  # (seeds, batch, seq, seq)
    off = S[..., ~np.eye(N_KEYS, dtype=bool)]  # (seeds, batch, seq * (seq - 1))
    diagonal = np.diagonal(S, axis1=-2, axis2=-1)  # (seeds, batch, seq)
    standing = (diagonal.mean(axis=(1, 2)) - off.mean(axis=(1, 2))) / off.std(axis=(1, 2))
    assert np.allclose(standing, np.sqrt(d), rtol=0.1)
    self_hot = np.diagonal(softmax(S / d), axis1=-2, axis2=-1).mean(axis=(1, 2))  # (seeds,)
    assert np.allclose(self_hot, np.e / (np.e + N_KEYS - 1), atol=0.01)
    assert ((off / d).std(axis=(1, 2)) < 2 / np.sqrt(d)).all()
    for T in (np.sqrt(d), d, 10 * d):  # no temperature changes the winner
        assert np.array_equal(softmax(S / T).argmax(axis=-1), S.argmax(axis=-1))
