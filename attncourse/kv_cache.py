"""The KV cache: decode token by token, keeping every past token's keys and values.

A decoder generating text computes, at step t, the query, key and value of token t only,
appends the key and value to the cache and lets the one new query attend over the cache.
No causal mask is needed: the cache holds only tokens 0..t, the ones token t may see. The
result equals causal multi-head attention over the whole sequence, computed once.

``prefill`` reads a prompt in one causal pass and returns the cache ``decode_with_cache``
continues from. Two things still need a mask or a limit at decoding time: the positions of
a batch that hold padding (``padding``: never attended to, their own rows 0), and a
sliding window (``window``: each query sees the last ``window`` positions only, and the
cache becomes a rolling buffer of that many slots, position p in slot p % window, as in
Mistral-7B). ``decoding_mask`` is the mask all of these amount to over a whole sequence.

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
from jaxtyping import Bool, Float

from attncourse.attention import scaled_dot_product_attention
from attncourse.multihead import (
    _checked_projections,
    _kv_heads,
    _matrix,
    multi_head_attention,
    split_heads,
)
from attncourse.validation import boolean_array, flag, integer, number, real_array

__all__ = ["decode_with_cache", "decoding_mask", "kv_cache_bytes", "prefill", "step_multiply_adds"]


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
    """Checked (X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, d_head) for a sequence or a batch
    of them; every array finite (NaN in W_v or W_o would reach the output unseen)."""
    X = real_array(X, "X", min_ndim=2, non_empty=(-2,), layout="(..., seq, d_model)")
    d_model = X.shape[-1]
    n_heads = integer(n_heads, "n_heads", minimum=1)
    n_kv_heads = _kv_heads(n_heads, n_kv_heads)
    W_q, W_k, W_v, d_head = _checked_projections(d_model, W_q, W_k, W_v, n_heads, n_kv_heads)
    W_o = _matrix(W_o, "W_o", n_heads * d_head, "n_heads * d_head")
    return X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, d_head


def _padding(padding, lead: tuple[int, ...], total: int) -> np.ndarray:
    """``padding`` (True where a position holds padding) as a boolean array of shape
    (*lead, total); none by default."""
    if padding is None:
        return np.zeros((*lead, total), dtype=bool)
    array = boolean_array(padding, "padding", meaning="True where a position holds padding")
    if array.ndim == 0:
        raise ValueError(f"padding must have shape (..., {total}), one flag per position, got a single {array!r}")
    try:
        return np.broadcast_to(array, (*lead, total))
    except ValueError:
        raise ValueError(f"padding of shape {array.shape} must have shape (..., {total}), one flag per "
                         f"position of the sequence (its batch dimensions {lead})") from None


def _window(window) -> int | None:
    return None if window is None else integer(window, "window", minimum=1)


def decoding_mask(seq: int, padding=None, window: int | None = None) -> Bool[np.ndarray, "... seq seq"]:
    """The mask of a decoder's attention over ``seq`` positions (True = may attend): query i
    sees key j if j <= i (causal), j > i - window (with a sliding ``window``), and j is not
    padding (``padding`` (..., seq), True where a position holds padding). A padding
    position's own row sees itself only: it has nothing to attend to, and ``prefill`` and
    ``decode_with_cache`` set its output to 0.

    >>> decoding_mask(3, padding=[True, False, False]).astype(int).tolist()
    [[1, 0, 0], [0, 1, 0], [0, 1, 1]]
    >>> decoding_mask(4, window=2).astype(int).tolist()
    [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    """
    seq = integer(seq, "seq", minimum=1)
    window = _window(window)
    pad = _padding(padding, np.shape(padding)[:-1] if padding is not None else (), seq)
    query, key = np.arange(seq)[:, None], np.arange(seq)[None, :]
    visible = key <= query  # (seq, seq)
    if window is not None:
        visible = visible & (key > query - window)
    own_row = pad[..., :, None] & (key == query)  # (..., seq, seq): a padding row sees itself
    return (visible & ~pad[..., None, :]) | own_row


def prefill(
    X: Float[np.ndarray, "... seq d_model"],
    W_q: Float[np.ndarray, "d_model n_heads_x_d_head"], W_k: Float[np.ndarray, "d_model n_kv_heads_x_d_head"],
    W_v: Float[np.ndarray, "d_model n_kv_heads_x_d_head"], W_o: Float[np.ndarray, "n_heads_x_d_head d_out"],
    n_heads: int, n_kv_heads: int | None = None, scale: float | None = None,
    padding=None, window: int | None = None,
):
    """Read a prompt in one causal pass: ``(output, K_cache, V_cache)``.

    The whole prompt X (..., seq, d_model) goes through multi-head attention at once, with
    ``decoding_mask(seq, padding, window)``: one (seq, seq) score matrix per head, the work
    a GPU does at full speed. Rows of padding positions are 0. The caches
    (..., n_kv_heads, seq, d_head) are every position's keys and values, what
    ``decode_with_cache(..., cache=(K_cache, V_cache))`` continues from.

    >>> out, K, V = prefill(np.eye(2), np.eye(2), np.eye(2), np.eye(2), np.eye(2), n_heads=1, scale=np.log(3.0))
    >>> out.round(2).tolist(), K.shape
    ([[1.0, 0.0], [0.25, 0.75]], (1, 2, 2))
    """
    X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, d_head = _projections(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads)
    scale = None if scale is None else number(scale, "scale")
    seq = X.shape[-2]
    pad = _padding(padding, X.shape[:-2], seq)
    mask = decoding_mask(seq, pad, _window(window))[..., None, :, :]  # (..., 1, seq, seq): every head
    output, _ = multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=mask, n_kv_heads=n_kv_heads,
                                     scale=scale)
    output = np.where(pad[..., None], 0.0, output)  # (..., seq, d_out): padding asks nothing
    return output, split_heads(X @ W_k, n_kv_heads), split_heads(X @ W_v, n_kv_heads)


def _cache(cache, lead: tuple[int, ...], n_kv_heads: int, d_head: int) -> tuple[np.ndarray, np.ndarray]:
    """(K_cache, V_cache), each (*lead, n_kv_heads, cached, d_head); empty by default."""
    if cache is None:
        empty = np.zeros((*lead, n_kv_heads, 0, d_head))
        return empty, empty
    if not isinstance(cache, tuple) or len(cache) != 2:
        raise TypeError(f"cache must be a pair (K_cache, V_cache), as prefill returns them, got {type(cache).__name__}")
    layout = f"(..., n_kv_heads={n_kv_heads}, cached, d_head={d_head})"
    K0, V0 = (real_array(M, name, ndim=len(lead) + 3, layout=layout) for M, name in zip(cache, ("K_cache", "V_cache")))
    for M, name in ((K0, "K_cache"), (V0, "V_cache")):
        if M.shape[:len(lead)] != lead or M.shape[-3] != n_kv_heads or M.shape[-1] != d_head:
            raise ValueError(f"{name} must have shape {(*lead, n_kv_heads, 'cached', d_head)} (X's batch "
                             f"dimensions, its key/value heads, their width), got {M.shape}")
    if K0.shape != V0.shape:
        raise ValueError(f"K_cache of shape {K0.shape} and V_cache of shape {V0.shape} must hold as many positions")
    return K0, V0


def decode_with_cache(
    X: Float[np.ndarray, "... seq d_model"],
    W_q: Float[np.ndarray, "d_model n_heads_x_d_head"], W_k: Float[np.ndarray, "d_model n_kv_heads_x_d_head"],
    W_v: Float[np.ndarray, "d_model n_kv_heads_x_d_head"], W_o: Float[np.ndarray, "n_heads_x_d_head d_out"],
    n_heads: int, n_kv_heads: int | None = None, scale: float | None = None, return_cache: bool = False,
    cache=None, padding=None, window: int | None = None,
):
    """Causal multi-head attention computed token by token with a KV cache.

    At step t only token t's query, key and value are computed (one row of X times each
    projection); its key and value go into the cache, and its query heads attend over the
    cache with no causal mask. Query head h reads key/value head h // (n_heads // n_kv_heads),
    as in ``multihead.multi_head_attention``. X is (seq, d_model), or (..., seq, d_model)
    for a batch decoded together.

    ``cache=(K_cache, V_cache)`` (..., n_kv_heads, cached, d_head), as ``prefill`` returns
    them, holds the keys and values of the positions before X's: X's tokens are then
    positions cached .. cached + seq - 1. ``padding`` (..., cached + seq), True where a
    position holds padding (a batch's shorter prompts, padded on the left): those keys are
    never attended to, at any step, and those positions' outputs are 0. ``window``: each
    query sees only the last ``window`` positions, itself included; the cache is then a
    rolling buffer of ``window`` slots, position p in slot p % window, overwritten as
    decoding goes on, so it never grows past ``window`` positions.

    Returns the output (..., seq, d_out), equal to the rows of X's positions in
    ``multi_head_attention`` over the whole sequence with ``decoding_mask`` (and padding
    rows 0); with ``return_cache=True``, ``(output, K_cache, V_cache)``, each cache
    (..., n_kv_heads, held, d_head) in position order, oldest first: every one of the
    cached + seq positions, or with a window the last min(window, cached + seq), the
    rolling buffer's slots put back in order. Either is what ``cache=`` takes to continue:
    with a window, hand it back with the same window, and the padding flags of the
    positions it holds followed by those of the new tokens.

    >>> X = np.eye(2)
    >>> decode_with_cache(X, X, X, X, X, n_heads=1, scale=np.log(3.0)).round(2).tolist()
    [[1.0, 0.0], [0.25, 0.75]]
    """
    X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, d_head = _projections(
        X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads)
    scale = None if scale is None else number(scale, "scale")
    return_cache = flag(return_cache, "return_cache")
    lead, seq = X.shape[:-2], X.shape[-2]
    K_before, V_before = _cache(cache, lead, n_kv_heads, d_head)
    cached = K_before.shape[-2]
    total = cached + seq
    pad = _padding(padding, lead, total)
    window = _window(window)
    slots = total if window is None else min(window, total)  # the buffer never holds more
    group = n_heads // n_kv_heads
    dtype = np.result_type(X, W_q, W_k, W_v, W_o, K_before, V_before)
    K_cache = np.zeros((*lead, n_kv_heads, slots, d_head), dtype=dtype)  # (..., n_kv_heads, slots, d_head)
    V_cache = np.zeros((*lead, n_kv_heads, slots, d_head), dtype=dtype)
    held = np.full(slots, -1)  # the position each slot holds (-1: none yet)
    for position in range(max(0, cached - slots), cached):  # the last `slots` positions of the given cache
        K_cache[..., position % slots, :] = K_before[..., position, :]
        V_cache[..., position % slots, :] = V_before[..., position, :]
        held[position % slots] = position
    output = np.empty((*lead, seq, W_o.shape[1]), dtype=dtype)  # (..., seq, d_out)
    for t in range(seq):
        position = cached + t
        slot = position % slots  # = position without a window
        x = X[..., t:t + 1, :]  # (..., 1, d_model): token t alone
        K_cache[..., slot:slot + 1, :] = split_heads(x @ W_k, n_kv_heads)  # (..., n_kv_heads, 1, d_head)
        V_cache[..., slot:slot + 1, :] = split_heads(x @ W_v, n_kv_heads)
        held[slot] = position
        filled = min(position + 1, slots)  # slots 0 .. filled - 1 hold the positions this query may see
        keys = pad[..., held[:filled]]  # (..., filled): True where a held position is padding
        mask = None
        if keys.any():  # only padding needs a mask; a padding query sees itself, its output set to 0
            mask = (~keys | (pad[..., position, None] & (np.arange(filled) == slot)))[..., None, None, :]
        q = (x @ W_q).reshape(*lead, n_kv_heads, group, d_head)  # (..., n_kv_heads, group, d_head)
        heads, _ = scaled_dot_product_attention(q, K_cache[..., :filled, :], V_cache[..., :filled, :],
                                                mask=mask, scale=scale)  # (..., n_kv_heads, group, d_head)
        row = heads.reshape(*lead, n_heads * d_head) @ W_o  # (..., d_out)
        output[..., t, :] = np.where(pad[..., position, None], 0.0, row)
    if not return_cache:
        return output
    in_order = np.argsort(held)  # the slots by the position they hold: oldest first
    return output, K_cache[..., in_order, :], V_cache[..., in_order, :]


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
