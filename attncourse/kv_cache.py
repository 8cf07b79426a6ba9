"""The KV cache: decode token by token, keeping every past token's keys and values.

A decoder generating text computes, at step t, the query, key and value of token t only,
appends the key and value to the cache and lets the one new query attend over the cache.
No mask is needed: the cache holds only tokens 0..t, the ones token t may see. The result
equals causal multi-head attention over the whole sequence, computed once.

``kv_cache_bytes`` is what the cache costs: 2 (a key and a value) x layers x key/value
heads x d_head x tokens x batch x bytes per value. ``step_multiply_adds`` counts the work of
one decoding step of one layer, with and without the cache.

Conventions are those of ``attncourse.multihead``: rows are tokens, W_q is
(d_model, n_heads * d_head), W_k and W_v (d_model, n_kv_heads * d_head),
W_o (n_heads * d_head, d_out). Bad input is refused through ``attncourse.validation``:
``TypeError`` for the wrong kind of thing, ``ValueError`` naming the value at fault.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float

from attncourse.attention import scaled_dot_product_attention
from attncourse.multihead import _checked_projections, _kv_heads, _matrix, split_heads
from attncourse.validation import flag, integer, number, real_array

__all__ = ["decode_with_cache", "kv_cache_bytes", "step_multiply_adds"]


def kv_cache_bytes(n_layers: int, n_kv_heads: int, d_head: int, seq_len: int, batch: int = 1,
                   bytes_per_value: int = 2) -> int:
    """Bytes of a KV cache: 2 x n_layers x n_kv_heads x d_head x seq_len x batch x
    bytes_per_value, as a Python int (exact however large). ``bytes_per_value`` is 2 for
    fp16/bf16, 4 for fp32, 1 for an 8-bit cache.

    >>> kv_cache_bytes(32, 32, 128, 4096) == 2 * 2**30  # Llama-2-7B, 4096 tokens, fp16: 2 GiB
    True

    Every argument must be a positive integer (numpy integers accepted): bool, float (even
    32.0) and strings raise TypeError, 0 and negative sizes ValueError.
    """
    factors = [integer(value, name, minimum=1) for value, name in (
        (n_layers, "n_layers"), (n_kv_heads, "n_kv_heads"), (d_head, "d_head"),
        (seq_len, "seq_len"), (batch, "batch"), (bytes_per_value, "bytes_per_value"))]
    total = 2
    for factor in factors:
        total *= factor  # Python ints: no overflow at 2**63
    return total


def _projections(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads):
    """Checked (X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, d_head) for a single sequence;
    every array finite (NaN in W_v or W_o would reach the output unseen)."""
    X = real_array(X, "X", ndim=2, non_empty=(0,), layout="(seq, d_model)")
    d_model = X.shape[1]
    n_heads = integer(n_heads, "n_heads", minimum=1)
    n_kv_heads = _kv_heads(n_heads, n_kv_heads)
    W_q, W_k, W_v, d_head = _checked_projections(d_model, W_q, W_k, W_v, n_heads, n_kv_heads)
    W_o = _matrix(W_o, "W_o", n_heads * d_head, "n_heads * d_head")
    return X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, d_head


def decode_with_cache(
    X: Float[np.ndarray, "seq d_model"],
    W_q: Float[np.ndarray, "d_model n_heads_x_d_head"],
    W_k: Float[np.ndarray, "d_model n_kv_heads_x_d_head"],
    W_v: Float[np.ndarray, "d_model n_kv_heads_x_d_head"],
    W_o: Float[np.ndarray, "n_heads_x_d_head d_out"],
    n_heads: int,
    n_kv_heads: int | None = None,
    scale: float | None = None,
    return_cache: bool = False,
):
    """Causal multi-head attention computed token by token with a KV cache.

    At step t only token t's query, key and value are computed (one row of X times each
    projection); its key and value go into the cache at position t, and its query heads
    attend over cache positions 0..t, with no mask. Query head h reads key/value head
    h // (n_heads // n_kv_heads), as in ``multihead.multi_head_attention``.

    Returns the output (seq, d_out), equal to
    ``multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=causal_mask(seq),
    n_kv_heads=n_kv_heads, scale=scale)[0]``; with ``return_cache=True``,
    ``(output, K_cache, V_cache)``, each cache (n_kv_heads, seq, d_head).

    >>> X = np.eye(2)
    >>> decode_with_cache(X, X, X, X, X, n_heads=1, scale=np.log(3.0)).round(2).tolist()
    [[1.0, 0.0], [0.25, 0.75]]
    """
    X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, d_head = _projections(
        X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads)
    scale = None if scale is None else number(scale, "scale")
    return_cache = flag(return_cache, "return_cache")
    seq = X.shape[0]
    group = n_heads // n_kv_heads
    dtype = np.result_type(X, W_q, W_k, W_v, W_o)
    K_cache = np.zeros((n_kv_heads, seq, d_head), dtype=dtype)  # filled one position per step
    V_cache = np.zeros((n_kv_heads, seq, d_head), dtype=dtype)
    output = np.empty((seq, W_o.shape[1]), dtype=dtype)  # (seq, d_out)
    for t in range(seq):
        x = X[t:t + 1]  # (1, d_model): token t alone
        K_cache[:, t:t + 1] = split_heads(x @ W_k, n_kv_heads)  # (n_kv_heads, 1, d_head)
        V_cache[:, t:t + 1] = split_heads(x @ W_v, n_kv_heads)
        q = (x @ W_q).reshape(n_kv_heads, group, d_head)  # (n_kv_heads, group, d_head)
        heads, _ = scaled_dot_product_attention(
            q, K_cache[:, :t + 1], V_cache[:, :t + 1], scale=scale)  # (n_kv_heads, group, d_head)
        output[t] = heads.reshape(n_heads * d_head) @ W_o  # (d_out,)
    return (output, K_cache, V_cache) if return_cache else output


def step_multiply_adds(t: int, d_model: int, n_heads: int, d_head: int, n_kv_heads: int | None = None,
                       d_out: int | None = None, cached: bool = True) -> int:
    """Multiply-adds of one attention layer to produce token t's output (t counts from 0,
    so t + 1 tokens are in context). ``d_out`` defaults to d_model, ``n_kv_heads`` to n_heads.

    With the cache: project token t (d_model (n_heads + 2 n_kv_heads) d_head), score its
    query heads against t + 1 keys and sum t + 1 values (2 n_heads d_head (t + 1)), apply
    W_O (n_heads d_head d_out). Without it, the layer is run on the whole prefix, as a model
    without a cache does (every position, since the next layer reads them all): the
    projections and W_O for t + 1 tokens and the full (t + 1) x (t + 1) scores per head.

    >>> step_multiply_adds(0, 1, 1, 1) == step_multiply_adds(0, 1, 1, 1, cached=False) == 6
    True
    """
    t = integer(t, "t", minimum=0)
    d_model, n_heads, d_head = (integer(v, name, minimum=1) for v, name in
                                ((d_model, "d_model"), (n_heads, "n_heads"), (d_head, "d_head")))
    n_kv_heads = _kv_heads(n_heads, n_kv_heads)
    d_out = d_model if d_out is None else integer(d_out, "d_out", minimum=1)
    cached = flag(cached, "cached")
    context = t + 1
    per_token = d_model * (n_heads + 2 * n_kv_heads) * d_head + n_heads * d_head * d_out
    if cached:
        return per_token + 2 * n_heads * d_head * context
    return context * per_token + 2 * n_heads * d_head * context * context
