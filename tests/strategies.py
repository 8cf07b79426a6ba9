"""What the tests draw their random problems from, in one place: hypothesis strategies
(attention problems, score arrays, sequences with a permutation) and seeded numpy problems
in the shapes of the course's contracts (multi-head attention's X and four matrices).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
SIZES = st.integers(min_value=1, max_value=8)
BATCH_SHAPES = st.lists(st.integers(min_value=1, max_value=3), min_size=0, max_size=2).map(
    tuple
)
SCALES = st.none() | st.floats(min_value=0.01, max_value=3.0)


def random_mask(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random boolean mask of ``shape`` in which every row has at least one True.

    The guaranteed True sits in a random column of each row, so no column is favoured.
    """
    mask = rng.random(shape) < 0.5
    keep = rng.integers(0, shape[-1], size=shape[:-1] + (1,))
    np.put_along_axis(mask, keep, True, axis=-1)
    return mask


@st.composite
def attention_problems(draw, broadcast_mask: bool = False):
    """Random (Q, K, V, mask, scale) in float64, batch shape of 0-2 dims.

    With ``broadcast_mask`` the mask is always given and has a shape that has to be
    broadcast: (seq_q, seq_k), (1, seq_k) or (seq_k,).
    """
    batch = draw(BATCH_SHAPES)
    seq_q, seq_k, d_k, d_v = draw(SIZES), draw(SIZES), draw(SIZES), draw(SIZES)
    scale = draw(SCALES)
    rng = np.random.default_rng(draw(SEEDS))
    Q = rng.normal(size=batch + (seq_q, d_k))
    K = rng.normal(size=batch + (seq_k, d_k))
    V = rng.normal(size=batch + (seq_k, d_v))
    if broadcast_mask:
        mask_shape = draw(st.sampled_from([(seq_q, seq_k), (1, seq_k), (seq_k,)]))
        mask = random_mask(rng, mask_shape)
    elif draw(st.booleans()):
        mask = random_mask(rng, batch + (seq_q, seq_k))
    else:
        mask = None
    return Q, K, V, mask, scale


@st.composite
def score_arrays(draw, with_minus_inf: bool = False):
    """Random float64 scores of shape (..., n) with entries in [-50, 50].

    With ``with_minus_inf`` some entries are -inf, but never a whole row.
    """
    shape = draw(BATCH_SHAPES) + (draw(SIZES),)
    rng = np.random.default_rng(draw(SEEDS))
    x = rng.uniform(-50.0, 50.0, size=shape)
    if with_minus_inf:
        x[~random_mask(rng, shape)] = -np.inf
    return x


@st.composite
def sequences_and_permutations(draw):
    n, d = draw(SIZES), draw(SIZES)
    X = np.random.default_rng(draw(SEEDS)).normal(size=(n, d))
    perm = np.array(draw(st.permutations(range(n))), dtype=int)
    return X, perm, draw(SCALES)


def random_problem(rng, batch=(), seq=5, d_model=8, n_heads=4, n_kv_heads=None, d_head=2,
                   d_out=None):
    """X (*batch, seq, d_model) and the four matrices, in the shapes of the contract of
    ``attncourse.multihead``: W_q (d_model, n_heads * d_head), W_k and W_v
    (d_model, n_kv_heads * d_head), W_o (n_heads * d_head, d_out)."""
    n_kv_heads = n_kv_heads or n_heads
    d_out = d_out or d_model
    X = rng.standard_normal((*batch, seq, d_model))
    W_q = rng.standard_normal((d_model, n_heads * d_head))
    W_k, W_v = (rng.standard_normal((d_model, n_kv_heads * d_head)) for _ in range(2))
    W_o = rng.standard_normal((n_heads * d_head, d_out))
    return X, W_q, W_k, W_v, W_o
