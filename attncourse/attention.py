"""Scaled dot-product attention: the numpy reference every chapter builds on.

Conventions (used throughout the course):

* Rows are tokens. A sequence is an array of shape ``(seq, d_model)``; queries are
  ``(..., seq_q, d_k)``, keys ``(..., seq_k, d_k)``, values ``(..., seq_k, d_v)``.
  Leading ``...`` dimensions are batch dimensions, e.g. ``(batch, n_heads)``.
* Scores and weights have shape ``(..., seq_q, seq_k)``: row ``i`` says how much
  query token ``i`` attends to every key token, so every row of the weights sums to 1.
* A boolean mask is True where a query *may* attend to a key (the convention of
  ``torch.nn.functional.scaled_dot_product_attention``).

Every function accepts Python lists as well as arrays, never mutates its inputs,
and raises ``ValueError`` naming the shapes at fault. It refuses, with a ``TypeError``
naming the argument, what it cannot compute faithfully: complex numbers (attention here is
real), numpy masked arrays (their mask would be ignored: pass ``mask=`` instead) and a
``scale`` that is not a real number.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from jaxtyping import Bool, Float

__all__ = [
    "softmax",
    "dot_product_scores",
    "scaled_dot_product_attention",
    "causal_mask",
]


def _refuse_masked_array(x, name: str) -> None:
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(
            f"{name} is a numpy masked array, whose mask this function would ignore: "
            "pass plain arrays and say which keys each query may see with mask="
        )


def _as_float_array(x, name: str, min_ndim: int) -> np.ndarray:
    """Return ``x`` as a real float array (a copy only when needed), checking its rank."""
    _refuse_masked_array(x, name)
    array = np.asarray(x)
    if np.issubdtype(array.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {array.dtype}")
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.number) or array.dtype == bool
    ):
        raise ValueError(f"{name} must be numeric, got dtype {array.dtype}")
    if not np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float64)
    if array.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimensions "
            f"(rows are tokens), got shape {array.shape}"
        )
    return array


def softmax(x: Float[np.ndarray, ...], axis: int = -1) -> Float[np.ndarray, ...]:
    """Softmax along ``axis``, safe for huge scores and for ``-inf`` (masked) entries.

    softmax(x)_j = exp(x_j - max(x)) / sum_k exp(x_k - max(x))

    Subtracting the maximum changes nothing mathematically (the factor exp(-max)
    cancels) but keeps every exponent <= 0, so scores of 1e4 do not overflow.
    Entries equal to ``-inf`` get weight exactly 0.

    >>> softmax([0.0, np.log(3.0)]).round(2).tolist()
    [0.25, 0.75]

    Raises ValueError if a slice along ``axis`` is empty or entirely ``-inf`` (a query
    that may attend to nothing) or contains NaN or ``+inf``.
    """
    scores = _as_float_array(x, "x", min_ndim=1)
    try:
        length = scores.shape[axis]
    except IndexError:
        raise ValueError(
            f"axis {axis} is out of range for x with shape {scores.shape}"
        ) from None
    if length == 0:
        raise ValueError(
            f"softmax over axis {axis} of x with shape {scores.shape}: no entries to "
            "normalise (a distribution needs at least one)"
        )
    if np.isnan(scores).any():
        raise ValueError(f"softmax input of shape {scores.shape} contains NaN")
    if np.isposinf(scores).any():
        raise ValueError(f"softmax input of shape {scores.shape} contains +inf")
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
    exponentials = np.exp(scores - row_max)
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def dot_product_scores(
    Q: Float[np.ndarray, "... seq_q d_k"], K: Float[np.ndarray, "... seq_k d_k"]
) -> Float[np.ndarray, "... seq_q seq_k"]:
    """Raw attention scores Q K^T: entry (i, j) is the dot product of query i and key j.

    >>> dot_product_scores([[1.0, 0.0]], [[2.0, 5.0], [3.0, 7.0]]).tolist()
    [[2.0, 3.0]]
    """
    queries = _as_float_array(Q, "Q", min_ndim=2)
    keys = _as_float_array(K, "K", min_ndim=2)
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"Q has d_k={queries.shape[-1]} but K has d_k={keys.shape[-1]} "
            f"(Q shape {queries.shape}, K shape {keys.shape}); "
            "queries and keys must live in the same space"
        )
    _check_batch_dims(queries.shape[:-2], keys.shape[:-2], "Q", "K")
    return queries @ np.swapaxes(keys, -1, -2)  # (..., seq_q, seq_k)


def _check_batch_dims(a: tuple, b: tuple, name_a: str, name_b: str) -> None:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        raise ValueError(
            f"batch dimensions of {name_a} {a} and {name_b} {b} do not broadcast"
        ) from None


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

    >>> X = np.eye(2)
    >>> out, w = scaled_dot_product_attention(X, X, X, scale=np.log(3.0))
    >>> w.round(2).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    queries = _as_float_array(Q, "Q", min_ndim=2)
    keys = _as_float_array(K, "K", min_ndim=2)
    values = _as_float_array(V, "V", min_ndim=2)
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(
            f"K has seq_k={keys.shape[-2]} but V has seq_k={values.shape[-2]} "
            f"(K shape {keys.shape}, V shape {values.shape}); "
            "every key needs exactly one value"
        )
    _check_batch_dims(keys.shape[:-2], values.shape[:-2], "K", "V")
    _check_batch_dims(queries.shape[:-2], values.shape[:-2], "Q", "V")
    if keys.shape[-2] == 0:
        raise ValueError(
            f"K has seq_k=0 keys (K shape {keys.shape}): each query needs at least one "
            "key to attend to"
        )
    scores = dot_product_scores(queries, keys)  # (..., seq_q, seq_k)
    d_k = keys.shape[-1]
    if d_k == 0:
        raise ValueError(
            f"d_k=0 (Q shape {queries.shape}, K shape {keys.shape}): queries and keys "
            "need at least one dimension to be compared"
        )
    scores = scores * _checked_scale(scale, d_k)
    if bias is not None:
        scores = scores + _checked_bias(bias, scores.shape)
    if mask is not None:
        scores = _apply_mask(scores, mask)
    weights = softmax(scores, axis=-1)  # (..., seq_q, seq_k)
    return weights @ values, weights  # (..., seq_q, d_v)


def _checked_scale(scale, d_k: int) -> float:
    """``scale`` as a float, 1/sqrt(d_k) when None; refuses anything but a finite real."""
    if scale is None:
        return 1.0 / np.sqrt(d_k)
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(
            f"scale must be a real number (or None for 1/sqrt(d_k)), got {scale!r} "
            f"of type {type(scale).__name__}"
        )
    if not math.isfinite(scale):
        raise ValueError(f"scale must be a finite number, got {scale}")
    return float(scale)


def _checked_bias(bias, scores_shape: tuple[int, ...]) -> np.ndarray:
    """``bias`` as a float array that broadcasts to ``scores_shape`` without enlarging it."""
    _refuse_masked_array(bias, "bias")
    values = np.asarray(bias)
    if values.dtype == bool:
        raise ValueError(
            "bias is boolean; a bias is a number added to each score. To say which keys a "
            "query may see, pass the boolean array as mask="
        )
    values = _as_float_array(values, "bias", min_ndim=0)
    try:
        broadcast = np.broadcast_shapes(values.shape, scores_shape)
    except ValueError:
        broadcast = None
    if broadcast != tuple(scores_shape):
        raise ValueError(
            f"bias of shape {values.shape} does not broadcast to the scores' shape "
            f"(..., seq_q, seq_k) = {tuple(scores_shape)} without enlarging it"
        )
    if np.isnan(values).any():
        raise ValueError(f"bias of shape {values.shape} contains NaN (at index "
                         f"{tuple(int(i) for i in np.argwhere(np.isnan(values))[0])})")
    if np.isposinf(values).any():
        raise ValueError(f"bias of shape {values.shape} contains +inf: no weight can follow "
                         "from an infinitely large score")
    return values


def _apply_mask(scores: np.ndarray, mask) -> np.ndarray:
    """Return a copy of ``scores`` with -inf wherever ``mask`` is False."""
    _refuse_masked_array(mask, "mask")
    allowed = np.asarray(mask)
    if allowed.dtype != bool:
        raise ValueError(
            f"mask must be boolean (True = may attend), got dtype {allowed.dtype}"
        )
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
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"causal_mask needs a positive integer length, got {n!r}")
    return np.tril(np.ones((n, n), dtype=bool))
