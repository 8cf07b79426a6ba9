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
from attncourse.flash import tiled_attention
from attncourse.kv_cache import decode_with_cache
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
