"""Scaled dot-product attention: the numpy reference every chapter builds on.

Conventions (used throughout the course):

* Rows are tokens. A sequence is an array of shape ``(seq, d_model)``; queries are
  ``(..., seq_q, d_k)``, keys ``(..., seq_k, d_k)``, values ``(..., seq_k, d_v)``.
  Leading ``...`` dimensions are batch dimensions, e.g. ``(batch, n_heads)``.
* Scores and weights have shape ``(..., seq_q, seq_k)``: row ``i`` says how much
  query token ``i`` attends to every key token, so every row of the weights sums to 1.
* A boolean mask is True where a query *may* attend to a key (the convention of
  ``torch.nn.functional.scaled_dot_product_attention``).

Every function accepts Python lists as well as arrays and never mutates its inputs. Bad
input is refused through ``attncourse.validation``: a ``TypeError`` for the wrong kind of
thing (not real numbers: strings, complex numbers, booleans, numpy masked arrays, whose
mask would be ignored; a mask that is not boolean; a ``scale`` that is not a number), a
``ValueError`` for a wrong value (shapes that disagree, NaN or infinity, no key to attend
to), each naming the argument and its shape.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Bool, Float

from attncourse.validation import (
    boolean_array,
    broadcastable,
    integer,
    number,
    real_array,
    same_size,
)

__all__ = [
    "softmax",
    "dot_product_scores",
    "scaled_dot_product_attention",
    "causal_mask",
]


def softmax(x: Float[np.ndarray, ...], axis: int = -1) -> Float[np.ndarray, ...]:
    """Softmax along ``axis``, safe for huge scores and for ``-inf`` (masked) entries.

    softmax(x)_j = exp(x_j - max(x)) / sum_k exp(x_k - max(x))

    Subtracting the maximum changes nothing mathematically (the factor exp(-max)
    cancels) but keeps every exponent <= 0, so scores of 1e4 do not overflow.
    Entries equal to ``-inf`` get weight exactly 0.

    >>> softmax([0.0, np.log(3.0)]).round(2).tolist()
    [0.25, 0.75]

    Raises ValueError if a slice along ``axis`` is empty or entirely ``-inf`` (a query
    that may attend to nothing) or contains NaN or ``+inf``; TypeError if ``x`` is not an
    array of real numbers or ``axis`` not an integer.
    """
    scores = real_array(x, "x", min_ndim=1, minus_inf=True)
    axis = integer(axis, "axis")
    if not -scores.ndim <= axis < scores.ndim:
        raise ValueError(f"axis {axis} is out of range: x has shape {scores.shape}, so axis must be "
                         f"from {-scores.ndim} to {scores.ndim - 1}")
    if scores.shape[axis] == 0:
        raise ValueError(
            f"x of shape {scores.shape} has no entries along axis {axis} to normalise (a "
            "distribution needs at least one)"
        )
    row_max = scores.max(axis=axis, keepdims=True)
    fully_masked = np.isneginf(row_max)
    if fully_masked.any():
        where = np.argwhere(np.squeeze(fully_masked, axis=axis))
        raise ValueError(
            f"softmax over axis {axis} of an array of shape {scores.shape}: "
            f"{len(where)} slice(s) are entirely -inf (every position masked), "
            f"first at index {tuple(int(i) for i in where[0])}; "
            "each query must be allowed to attend to at least one key"
        )
    with np.errstate(over="ignore"):  # a score far below the maximum becomes -inf, and exp(-inf) is 0
        exponentials = np.exp(scores - row_max)
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def _queries_and_keys(Q, K) -> tuple[np.ndarray, np.ndarray]:
    """Q and K as real arrays of at least 2 dimensions, one d_k, batch shapes that broadcast."""
    queries = real_array(Q, "Q", min_ndim=2, layout="(..., seq_q, d_k)")
    keys = real_array(K, "K", min_ndim=2, layout="(..., seq_k, d_k)")
    same_size("d_k", ("Q", queries, -1), ("K", keys, -1), "queries and keys must live in the same space")
    broadcastable(queries.shape[:-2], keys.shape[:-2], "Q", "K")
    return queries, keys


def dot_product_scores(
    Q: Float[np.ndarray, "... seq_q d_k"], K: Float[np.ndarray, "... seq_k d_k"]
) -> Float[np.ndarray, "... seq_q seq_k"]:
    """Raw attention scores Q K^T: entry (i, j) is the dot product of query i and key j.

    >>> dot_product_scores([[1.0, 0.0]], [[2.0, 5.0], [3.0, 7.0]]).tolist()
    [[2.0, 3.0]]
    """
    queries, keys = _queries_and_keys(Q, K)
    return queries @ np.swapaxes(keys, -1, -2)  # (..., seq_q, seq_k)


def scaled_dot_product_attention(
    Q: Float[np.ndarray, "... seq_q d_k"],
    K: Float[np.ndarray, "... seq_k d_k"],
    V: Float[np.ndarray, "... seq_k d_v"],
    mask: Bool[np.ndarray, "... seq_q seq_k"] | None = None,
    scale: float | None = None,
    bias: Float[np.ndarray, "... seq_q seq_k"] | None = None,
) -> tuple[Float[np.ndarray, "... seq_q d_v"], Float[np.ndarray, "... seq_q seq_k"]]:
    """Attention(Q, K, V) = softmax(scale * Q K^T + bias, masked) V.

    Returns ``(output, weights)``:

    * ``weights`` (..., seq_q, seq_k): row i is the distribution of query i over keys.
    * ``output`` (..., seq_q, d_v): row i is the weighted sum of the value rows.

    ``scale`` defaults to 1/sqrt(d_k). ``mask`` is boolean, broadcastable to
    (..., seq_q, seq_k), True where the query may attend to the key.

    ``bias`` is a real array added to the scaled scores before the mask and the softmax, as
    ``torch.nn.functional.scaled_dot_product_attention`` adds a float ``attn_mask``: a
    positional bias such as ALiBi's (``attncourse.positions.alibi_bias``). It must
    broadcast to the scores' shape (..., seq_q, seq_k) without enlarging it, and contain no
    NaN and no +inf anywhere, even where the mask hides it; -inf blocks a key as a mask
    does. ``mask`` and ``bias`` may be given together.

    Q, K and V must be finite (NaN or infinity anywhere is refused, naming the argument and
    the index), and their scores must not overflow to +inf or NaN (-inf is weight 0).

    The result has the float dtype numpy's promotion gives Q, K, V (and ``bias``): float32
    input gives float32 output and weights, float64 gives float64.

    >>> X = np.eye(2)
    >>> out, w = scaled_dot_product_attention(X, X, X, scale=np.log(3.0))
    >>> w.round(2).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    queries, keys = _queries_and_keys(Q, K)
    values = real_array(V, "V", min_ndim=2, layout="(..., seq_k, d_v)")
    same_size("seq_k", ("K", keys, -2), ("V", values, -2), "every key needs exactly one value")
    broadcastable(keys.shape[:-2], values.shape[:-2], "K", "V")
    broadcastable(queries.shape[:-2], values.shape[:-2], "Q", "V")
    if keys.shape[-2] == 0:
        raise ValueError(
            f"K has seq_k=0 keys (K shape {keys.shape}): each query needs at least one "
            "key to attend to"
        )
    d_k = keys.shape[-1]
    if d_k == 0:
        raise ValueError(
            f"d_k=0 (Q shape {queries.shape}, K shape {keys.shape}): queries and keys "
            "need at least one dimension to be compared"
        )
    factor = d_k**-0.5 if scale is None else number(scale, "scale")  # a Python float: float32 stays float32
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        scores = (queries @ np.swapaxes(keys, -1, -2)) * factor  # (..., seq_q, seq_k)
    if np.isnan(scores).any() or np.isposinf(scores).any():  # -inf is weight 0, as a mask gives
        raise ValueError(
            f"the scores scale * Q K^T of shape {scores.shape} overflow to +inf or NaN although "
            "Q and K are finite (Q, K or scale too large for float): softmax is undefined"
        )
    if bias is not None:
        scores = scores + _checked_bias(bias, scores.shape)
    if mask is not None:
        scores = _apply_mask(scores, mask)
    weights = softmax(scores, axis=-1)  # (..., seq_q, seq_k)
    return weights @ values, weights  # (..., seq_q, d_v)


def _checked_bias(bias, scores_shape: tuple[int, ...]) -> np.ndarray:
    """``bias`` as a float array that broadcasts to ``scores_shape`` without enlarging it."""
    try:
        values = real_array(bias, "bias", minus_inf=True)
    except TypeError:
        if np.asarray(bias).dtype == bool:
            raise TypeError(
                "bias is boolean; a bias is a number added to each score. To say which keys a "
                "query may see, pass the boolean array as mask="
            ) from None
        raise
    try:
        broadcast = np.broadcast_shapes(values.shape, scores_shape)
    except ValueError:
        broadcast = None
    if broadcast != tuple(scores_shape):
        raise ValueError(
            f"bias of shape {values.shape} does not broadcast to the scores' shape "
            f"(..., seq_q, seq_k) = {tuple(scores_shape)} without enlarging it"
        )
    return values


def _apply_mask(scores: np.ndarray, mask) -> np.ndarray:
    """Return a copy of ``scores`` with -inf wherever ``mask`` is False."""
    allowed = boolean_array(mask, "mask")
    try:
        allowed = np.broadcast_to(allowed, scores.shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {allowed.shape} does not broadcast to the scores' "
            f"shape (..., seq_q, seq_k) = {scores.shape}"
        ) from None
    return np.where(allowed, scores, -np.inf)


def causal_mask(n: int) -> Bool[np.ndarray, "seq seq"]:
    """Boolean (n, n) mask, True on and below the diagonal: token i sees tokens 0..i.

    >>> causal_mask(3).astype(int).tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    n = integer(n, "n", minimum=1)
    return np.tril(np.ones((n, n), dtype=bool))
