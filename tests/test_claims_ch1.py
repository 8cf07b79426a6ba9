"""Chapter 1's claims about random quantities, over ten seeds (issue #21, item 12), and
issue 36's findings (items 4 and 13): the chapter's words and the doubling check.

The chapter measures one draw; these tests redo each measurement, smaller, for seeds 0-9
at once (the seeds are an extra leading axis) and assert the claim for every seed.
"""

from __future__ import annotations

import functools
from pathlib import Path

import nbformat
import numpy as np
import pytest

from attncourse import checks
from attncourse.attention import dot_product_scores, softmax
from attncourse.checks.predict import PREDICTIONS
from attncourse.examples import pool_beats_badminton

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


# --- issue 36, items 4 and 13: what the chapter's words claim, and the doubling check ------

CHAPTER = Path(__file__).resolve().parents[1] / "chapters" / "01_dot_product_similarity.ipynb"


def _prose() -> str:
    """The chapter's markdown, its lines joined (a phrase may wrap)."""
    cells = nbformat.read(CHAPTER, as_version=4).cells
    return " ".join(" ".join(cell.source.split()) for cell in cells if cell.cell_type == "markdown")


def _scaled_peak(d, rng, n_queries=2000):
    """(mean largest weight of a row of scaled scores, mean row spread |q| / sqrt(d))."""
    q = rng.standard_normal((n_queries, d))  # (queries, d)
    k = rng.standard_normal((n_queries, N_KEYS, d))  # (queries, keys, d)
    scores = np.einsum("qd,qkd->qk", q, k) / np.sqrt(d)  # (queries, keys)
    return softmax(scores).max(axis=-1).mean(), (np.linalg.norm(q, axis=-1) / np.sqrt(d)).mean()


@pytest.mark.parametrize("seed", SEEDS)
def test_the_scaled_peak_holds_from_d_4_and_dips_below(seed):
    rng = np.random.default_rng([int(seed), 4])
    (peak_1, spread_1), (peak_2, spread_2), (peak_4, _) = (_scaled_peak(d, rng) for d in (1, 2, 4))
    assert peak_1 < peak_2 < peak_4 and spread_1 < spread_2 < 0.95
    assert "whatever $d$ is" not in _prose()
    assert "Below $d = 4$ it dips further" in _prose()


def _separate_self_weight(d, rng, n_sentences):
    """(mean self-weight, variance of the self-scores over that of the others) for random
    tokens and a fresh random pair W_Q, W_K per sentence, scores scaled by sqrt(d)."""
    X = rng.standard_normal((n_sentences, N_KEYS, d))  # (batch, seq, d)
    W_Q, W_K = rng.standard_normal((2, n_sentences, d, d)) / np.sqrt(d)  # (batch, d, d) each
    S = dot_product_scores(X @ W_Q, X @ W_K) / np.sqrt(d)  # (batch, seq, seq)
    own = np.diagonal(S, axis1=-2, axis2=-1)  # (batch, seq)
    return np.diagonal(softmax(S), axis1=-2, axis2=-1).mean(), own.var() / S[:, ~np.eye(N_KEYS, dtype=bool)].var()


@pytest.mark.parametrize("seed", SEEDS)
def test_separate_projections_keep_a_small_pull_that_fades_with_d(seed):
    rng = np.random.default_rng([int(seed), 5])
    (pull_2, ratio_2), (pull_4, ratio_4), (pull_64, ratio_64) = (
        _separate_self_weight(d, rng, 2000 if d < 64 else 1000) for d in (2, 4, 64))
    assert pull_4 > 1 / N_KEYS + 0.003 and abs(pull_64 - 1 / N_KEYS) < 0.003
    assert min(pull_2, pull_4) > pull_64 and ratio_2 > ratio_4 > ratio_64 > 1
    prose = _prose()
    assert "no pull" not in prose and "at every $d$ (measured" not in prose
    assert "a small pull that fades as $d$ grows" in prose


def test_the_self_score_is_a_sum_of_terms_none_negative_and_weights_follow_e_to_the_score():
    prose = _prose()
    assert "*positive* terms" not in prose and "a sum of $d$ terms $x_{im}^2$, none of them negative" in prose
    assert "in proportion to how similar" not in prose
    assert "proportional to $e$ to the power of a score, not to the score itself" in prose


def test_predict_doubling_accepts_no_other_weight_of_pools_row():
    X = pool_beats_badminton().X  # (seq, d_model)
    rows = [softmax(scale * X @ X.T)[0] for scale in (1, 4)]  # pool's row before and after doubling
    answer = rows[1][0]
    checks.load_all()  # the chapters' checks load lazily: this declares the predict exercises
    prediction = PREDICTIONS["ch1-predict-doubling"]
    assert prediction.accepts(answer)
    others = [weight for row in rows for weight in row if weight != answer]
    assert min(abs(np.array(others) - answer)) < 0.02  # 0.389, pool's weight on badminton
    assert not any(prediction.accepts(weight) for weight in others)


# --- issue 36 review (sci6), findings 4, 5 and 9 -----------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_the_scaled_peak_rises_slowly_from_d_4_and_d_4_is_already_low(seed):
    rng = np.random.default_rng([int(seed), 6])
    peaks = [_scaled_peak(d, rng)[0] for d in (4, 16, 256)]
    assert peaks[0] < min(peaks[1:]) and np.ptp(peaks) < 0.03 and max(peaks) < 0.26
    prose = _prose()
    assert "stays between" not in prose and "for every $d$ measured, from 4 to 1024" not in prose
    assert "rises slowly" in prose and "Below $d = 4$ it dips further" in prose


@pytest.mark.parametrize("seed", SEEDS)
def test_the_self_score_tops_its_row_for_most_random_tokens_only_from_d_16(seed):
    rng = np.random.default_rng([int(seed), 7])
    top = []
    for d in (4, 16, 64):
        X = rng.standard_normal((50, N_KEYS, d))  # (batch, seq, d), as the chapter draws them
        S = dot_product_scores(X, X)  # (batch, seq, seq)
        top.append((S.argmax(axis=-1) == np.arange(N_KEYS)).mean())
    assert 0.45 < top[0] < 0.7 and 0.97 < top[1] < 1 and top[2] == 1
    paragraph = " ".join(_prose().split("No temperature undoes that.")[1].split("\n")[:1])[:900]
    assert "so each token's own weight stays its largest at every temperature" not in paragraph
    assert "whose self-score is the largest of its row" in paragraph


def _independent_pull(d, rng, n_rows=20000):
    """The self-weight if a row's scores were independent normals, the others of variance 1
    and the self-score of variance 1 + 2/d (the separate projections' ratio)."""
    scores = rng.standard_normal((n_rows, N_KEYS))  # (rows, keys); column 0 is the self-score
    scores[:, 0] *= np.sqrt(1 + 2 / d)
    return softmax(scores)[:, 0].mean()


@pytest.mark.parametrize("seed", SEEDS)
def test_the_extra_variance_is_1_plus_2_over_d_and_overpredicts_the_pull(seed):
    rng = np.random.default_rng([int(seed), 5])  # the draws of the small-pull test above
    for d in (2, 4):
        pull, ratio = _separate_self_weight(d, rng, 2000)
        assert np.isclose(ratio, 1 + 2 / d, rtol=0.06)
        assert _independent_pull(d, np.random.default_rng([int(seed), 8, d])) > pull + 0.002
    prose = _prose()
    assert "the direction of the pull, not its size" in prose and "1 + 2/d" in prose
