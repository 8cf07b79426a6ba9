"""Chapter 9's claims about random quantities, over ten seeds (review of issue #26).

The chapter states them for its seed: the mask changes every row of causal attention but the
last; the KV cache and the tiled loop agree with the full computation to rounding, which is
not 0 for the tiles; torch's top-left causal alignment differs from the bottom-right one
the last queries need.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attncourse.attention import causal_mask, scaled_dot_product_attention
from attncourse.flash import tile_order, tiled_attention
from attncourse.kv_cache import decode_with_cache, step_multiply_adds
from attncourse.multihead import multi_head_attention, projection_shapes

pytestmark = pytest.mark.slow
SEEDS = range(10)


def chapter_layer(seed: int):
    """The chapter's toy layer: 10 tokens, d_model 16, 4 query heads sharing 2 kv heads of 4."""
    rng = np.random.default_rng(seed)
    shapes = projection_shapes(16, 4, 4, n_kv_heads=2)
    weights = [rng.standard_normal(shape) / np.sqrt(shape[0]) for shape in shapes.values()]
    return rng.standard_normal((10, 16)), dict(zip(("W_q", "W_k", "W_v", "W_o"), weights),
                                                n_heads=4, n_kv_heads=2)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_mask_changes_every_row_but_the_last_and_the_cache_changes_none(seed):
    X, layer = chapter_layer(seed)
    full, _ = multi_head_attention(X, **layer, mask=causal_mask(10))
    unmasked, _ = multi_head_attention(X, **layer)
    change = np.abs(unmasked - full).max(axis=1)  # (seq,)
    assert (change[:-1] > 1e-6).all() and change[-1] < 1e-12
    assert np.abs(decode_with_cache(X, **layer) - full).max() < 1e-12


@pytest.mark.parametrize("seed", SEEDS)
def test_tiles_round_differently_but_within_1e_12_and_torch_aligns_top_left(seed):
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((2, 3, 100, 16)) for _ in range(3))
    ours = tiled_attention(Q, K, V, 7, 13, causal=True)
    direct, _ = scaled_dot_product_attention(Q, K, V, mask=causal_mask(100))
    assert 0 < np.abs(ours - direct).max() < 1e-12
    last = tiled_attention(Q[..., -3:, :], K, V, causal=True)
    top_left = F.scaled_dot_product_attention(*(torch.tensor(M) for M in (Q[..., -3:, :], K, V)),
                                              is_causal=True).numpy()
    assert np.abs(last - ours[..., -3:, :]).max() < 1e-12
    assert np.abs(top_left - ours[..., -3:, :]).max() > 0.1


# --- issue 36, item 14: chapter 9's functions and bad input ---------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_infinity_in_v_is_refused_as_in_q_and_k(bad):
    """Issue 36: tiled_attention refused NaN in Q and K but let it through V into the
    output (a NaN column); so did decode_with_cache through W_v (every output NaN)."""
    X, layer = chapter_layer(0)
    Q, K, V = X[:, :4], X[:, 4:8], X[:, 8:].copy()
    V[3, 2] = bad
    with pytest.raises(ValueError, match=r"V of shape \(10, 8\) contains (NaN|[+-]inf) at index \(3, 2\)"):
        tiled_attention(Q, K, V, 4, 4)
    with pytest.raises(ValueError, match=r"V of shape \(10, 8\) contains (NaN|[+-]inf) at index \(3, 2\)"):
        scaled_dot_product_attention(Q, K, V)
    W_v = layer["W_v"].copy()
    W_v[5, 1] = bad
    with pytest.raises(ValueError, match=r"W_v of shape \(16, 8\) contains (NaN|[+-]inf) at index \(5, 1\)"):
        decode_with_cache(X, **(layer | {"W_v": W_v}))


def test_the_tile_order_refuses_the_causal_problem_the_loop_refuses():
    """Issue 36: tile_order(5, 3, 2, 2, causal=True) listed query block 0..1 with no key block
    at all, where tiled_attention raised. A query that may see no key has no softmax (the
    chapter says so of online_softmax): the schedule refuses it too, with the loop's words,
    rather than show a learner a block that would divide 0 by 0."""
    message = r"causal attention with seq_q=5 > seq_k=3: aligned bottom-right, the first 2 queries would have no key"
    with pytest.raises(ValueError, match=message):
        tile_order(5, 3, 2, 2, causal=True)
    with pytest.raises(ValueError, match=message):
        tiled_attention(np.ones((5, 2)), np.ones((3, 2)), np.ones((3, 2)), 2, 2, causal=True)
    assert all(cols for _, cols in tile_order(3, 5, 2, 2, causal=True))  # every block sees a key
    assert tile_order(5, 3, 2, 2)[0][1] == [range(0, 2), range(2, 3)]  # without the mask, nothing to refuse


@pytest.mark.parametrize("n_kv_heads", [5, 24, 7])
def test_the_work_per_step_needs_kv_heads_that_divide_the_query_heads(n_kv_heads):
    """Issue 36: step_multiply_adds counted a layer of 12 query heads sharing 5 (or 24)
    key/value heads, a layer multi_head_attention refuses."""
    with pytest.raises(ValueError, match=rf"n_kv_heads={n_kv_heads} must divide n_heads=12"):
        step_multiply_adds(3, 768, 12, 64, n_kv_heads=n_kv_heads)
    with pytest.raises(ValueError, match=rf"n_kv_heads={n_kv_heads} must divide n_heads=12"):
        projection_shapes(768, 12, 64, n_kv_heads=n_kv_heads)
    assert step_multiply_adds(3, 768, 12, 64, n_kv_heads=4) < step_multiply_adds(3, 768, 12, 64)
