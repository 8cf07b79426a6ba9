"""Multi-head attention: several heads side by side, joined by one output projection.

MultiHead(X) = Concat(head_1, ..., head_H) W_O,  head_h = Attention(X W_q^h, X W_k^h, X W_v^h)

The per-head matrices live side by side in one wide matrix each: W_q is
(d_model, n_heads * d_head) and its columns ``h * d_head : (h + 1) * d_head`` are head h's
W_q^h. ``split_heads`` turns the wide projections into one block per head and
``merge_heads`` undoes it. With ``n_kv_heads`` < ``n_heads`` (grouped-query attention),
several query heads share one key/value head, as in
``torch.nn.functional.scaled_dot_product_attention(enable_gqa=True)``.

Conventions are those of ``attncourse.attention``: rows are tokens, masks are True where
a query may attend. Inputs are never mutated; bad input is refused through
``attncourse.validation`` (``TypeError`` for the wrong kind of thing, ``ValueError`` naming
the dimensions or values at fault).
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Bool, Float

from attncourse.attention import scaled_dot_product_attention
from attncourse.validation import divides, integer, real_array, same_size

__all__ = [
    "attention_heads",
    "head_contributions", "merge_heads", "multi_head_attention", "split_heads"]


def split_heads(
    M: Float[np.ndarray, "... seq width"], n_heads: int
) -> Float[np.ndarray, "... n_heads seq d_head"]:
    """(..., seq, n_heads * d_head) -> (..., n_heads, seq, d_head): one block of columns per head.

    Reshape *then* swap the seq and head axes: reshaping straight to
    (..., n_heads, seq, d_head) runs too, but mixes tokens into the wrong heads.

    >>> M = np.arange(12.0).reshape(2, 6)  # (seq, 3 heads * 2)
    >>> split_heads(M, 3)[1].tolist()  # head 1: columns 2-3 of every token
    [[2.0, 3.0], [8.0, 9.0]]
    """
    M = real_array(M, "M", min_ndim=2, layout="(..., seq, n_heads * d_head)")
    n_heads = integer(n_heads, "n_heads", minimum=1)
    *lead, seq, width = M.shape
    if width % n_heads:
        raise ValueError(
            f"the width {width} of an array of shape {M.shape} is not divisible by "
            f"n_heads={n_heads}"
        )
    per_token = M.reshape(*lead, seq, n_heads, width // n_heads)  # (..., seq, n_heads, d_head)
    return np.swapaxes(per_token, -2, -3)  # (..., n_heads, seq, d_head)


def merge_heads(H: Float[np.ndarray, "... n_heads seq d_head"]) -> Float[np.ndarray, "... seq width"]:
    """(..., n_heads, seq, d_head) -> (..., seq, n_heads * d_head): the inverse of split_heads,
    the heads' outputs of each token side by side (the "Concat" of the formula).

    >>> H = np.arange(8.0).reshape(2, 2, 2)  # (n_heads, seq, d_head)
    >>> merge_heads(H).tolist()
    [[0.0, 1.0, 4.0, 5.0], [2.0, 3.0, 6.0, 7.0]]
    """
    H = real_array(H, "H", min_ndim=3, layout="(..., n_heads, seq, d_head)")
    *lead, n_heads, seq, d_head = H.shape
    per_token = np.swapaxes(H, -2, -3)  # (..., seq, n_heads, d_head)
    return per_token.reshape(*lead, seq, n_heads * d_head)  # (..., seq, n_heads * d_head)


def projection_shapes(
    d_model: int, n_heads: int, d_head: int, n_kv_heads: int | None = None, d_out: int | None = None
) -> dict[str, tuple[int, int]]:
    """The shapes of W_q, W_k, W_v and W_o that ``multi_head_attention`` takes.

    ``n_kv_heads`` defaults to ``n_heads`` and ``d_out`` to ``d_model``.

    >>> projection_shapes(8, n_heads=2, d_head=4, n_kv_heads=1)
    {'W_q': (8, 8), 'W_k': (8, 4), 'W_v': (8, 4), 'W_o': (8, 8)}
    """
    d_model, n_heads, d_head = (integer(v, name, minimum=1) for v, name in
                                ((d_model, "d_model"), (n_heads, "n_heads"), (d_head, "d_head")))
    n_kv_heads = _kv_heads(n_heads, n_kv_heads)
    d_out = d_model if d_out is None else integer(d_out, "d_out", minimum=1)
    return {
        "W_q": (d_model, n_heads * d_head),
        "W_k": (d_model, n_kv_heads * d_head),
        "W_v": (d_model, n_kv_heads * d_head),
        "W_o": (n_heads * d_head, d_out),
    }


def _kv_heads(n_heads: int, n_kv_heads: int | None) -> int:
    """``n_kv_heads`` as a positive int that divides ``n_heads`` (a positive int already);
    ``n_heads`` when it is None."""
    if n_kv_heads is None:
        return n_heads
    n_kv_heads = integer(n_kv_heads, "n_kv_heads", minimum=1)
    divides(n_kv_heads, "n_kv_heads", n_heads, "n_heads",
            "each key/value head serves a whole group of query heads")
    return n_kv_heads


def _matrix(W, name: str, rows: int, rows_name: str) -> np.ndarray:
    return real_array(W, name, shape=(rows, None), layout=f"({rows_name}, ...)")


def _bias(b, name: str, width: int) -> np.ndarray | float:
    """``b`` as a (width,) array, added to every token's row; 0.0 (no bias) when None."""
    if b is None:
        return 0.0
    return real_array(b, name, shape=(width,), layout=f"({width},), one entry per column")


def _checked_projections(d_model: int, W_q, W_k, W_v, n_heads: int, n_kv_heads: int):
    """``(W_q, W_k, W_v, d_head)`` as arrays once their shapes fit ``d_model`` rows and the
    head counts (checked already by ``_kv_heads``): W_q (d_model, n_heads * d_head), W_k
    and W_v (d_model, n_kv_heads * d_head)."""
    W_q, W_k, W_v = (_matrix(W, name, d_model, "d_model")
                     for W, name in ((W_q, "W_q"), (W_k, "W_k"), (W_v, "W_v")))
    if W_q.shape[1] % n_heads:
        raise ValueError(f"W_q has {W_q.shape[1]} columns, not divisible by n_heads={n_heads}")
    d_head = W_q.shape[1] // n_heads
    for W, name in ((W_k, "W_k"), (W_v, "W_v")):
        if W.shape[1] != n_kv_heads * d_head:
            raise ValueError(
                f"{name} must have n_kv_heads * d_head = {n_kv_heads} * {d_head} = "
                f"{n_kv_heads * d_head} columns, got shape {W.shape}"
            )
    return W_q, W_k, W_v, d_head


def multi_head_attention(
    X: Float[np.ndarray, "... seq d_model"],
    W_q: Float[np.ndarray, "d_model n_heads_x_d_head"],
    W_k: Float[np.ndarray, "d_model n_kv_heads_x_d_head"],
    W_v: Float[np.ndarray, "d_model n_kv_heads_x_d_head"],
    W_o: Float[np.ndarray, "n_heads_x_d_head d_out"],
    n_heads: int,
    mask: Bool[np.ndarray, "... n_heads seq seq_kv"] | None = None,
    n_kv_heads: int | None = None,
    scale: float | None = None,
    X_kv: Float[np.ndarray, "... seq_kv d_model"] | None = None,
    *,
    b_q: Float[np.ndarray, " n_heads_x_d_head"] | None = None,
    b_k: Float[np.ndarray, " n_kv_heads_x_d_head"] | None = None,
    b_v: Float[np.ndarray, " n_kv_heads_x_d_head"] | None = None,
    b_o: Float[np.ndarray, " d_out"] | None = None,
) -> tuple[Float[np.ndarray, "... seq d_out"], Float[np.ndarray, "... n_heads seq seq_kv"]]:
    """Multi-head attention, without biases unless given. Returns ``(output, weights)``.

    X (..., seq, d_model); W_q (d_model, n_heads * d_head); W_k and W_v
    (d_model, n_kv_heads * d_head); W_o (n_heads * d_head, d_out).
    output (..., seq, d_out); weights (..., n_heads, seq, seq), row i of head h being
    query i's distribution over the keys. ``scale`` defaults to 1/sqrt(d_head); ``mask``
    (True = may attend) broadcasts against the weights. ``n_kv_heads`` (default
    ``n_heads``) must divide ``n_heads``: query head h uses key/value head
    h // (n_heads // n_kv_heads).

    With ``X_kv`` (..., seq_kv, d_model), the keys and values are projected from X_kv
    instead of X (cross-attention: queries from a decoder, keys and values from an
    encoder's output); the weights are then (..., n_heads, seq, seq_kv).

    The biases, each a vector added to every token's row, are those of a torch layer
    (``in_proj_bias`` split in three, ``out_proj.bias``): b_q (n_heads * d_head,), b_k
    and b_v (n_kv_heads * d_head,), b_o (d_out,).

    >>> X = np.eye(2)
    >>> out, w = multi_head_attention(X, X, X, X, X, n_heads=2)
    >>> w.shape  # (n_heads, seq, seq)
    (2, 2, 2)
    >>> out.round(3).tolist()  # head h sees dimension h only: token h stands out to it
    [[0.731, 0.5], [0.5, 0.731]]
    """
    heads, weights = attention_heads(X, W_q, W_k, W_v, n_heads, mask, n_kv_heads, scale, X_kv,
                                     b_q=b_q, b_k=b_k, b_v=b_v)
    n_heads, _, d_head = heads.shape[-3:]
    W_o = _matrix(W_o, "W_o", n_heads * d_head, "n_heads * d_head")
    return merge_heads(heads) @ W_o + _bias(b_o, "b_o", W_o.shape[1]), weights  # (..., seq, d_out)


def attention_heads(
    X: Float[np.ndarray, "... seq d_model"],
    W_q: Float[np.ndarray, "d_model n_heads_x_d_head"],
    W_k: Float[np.ndarray, "d_model n_kv_heads_x_d_head"],
    W_v: Float[np.ndarray, "d_model n_kv_heads_x_d_head"],
    n_heads: int,
    mask: Bool[np.ndarray, "... n_heads seq seq_kv"] | None = None,
    n_kv_heads: int | None = None,
    scale: float | None = None,
    X_kv: Float[np.ndarray, "... seq_kv d_model"] | None = None,
    *,
    b_q: Float[np.ndarray, " n_heads_x_d_head"] | None = None,
    b_k: Float[np.ndarray, " n_kv_heads_x_d_head"] | None = None,
    b_v: Float[np.ndarray, " n_kv_heads_x_d_head"] | None = None,
) -> tuple[Float[np.ndarray, "... n_heads seq d_head"], Float[np.ndarray, "... n_heads seq seq_kv"]]:
    """Every head's output before W_O: ``(heads, weights)``, heads (..., n_heads, seq, d_head)
    and weights (..., n_heads, seq, seq_kv), seq_kv = seq without ``X_kv``. Arguments as in
    ``multi_head_attention``.

    >>> heads, _ = attention_heads(np.eye(2), np.eye(2), np.eye(2), np.eye(2), n_heads=2)
    >>> heads.shape
    (2, 2, 1)
    """
    X = real_array(X, "X", min_ndim=2, layout="(..., seq, d_model)")
    d_model = X.shape[-1]
    if X_kv is None:
        X_kv = X
    else:
        X_kv = real_array(X_kv, "X_kv", min_ndim=2, layout="(..., seq_kv, d_model)")
        same_size("d_model", ("X_kv", X_kv, -1), ("X", X, -1),
                  "both are projected by matrices of d_model rows")
    if X_kv.shape[-2] == 0:
        raise ValueError(f"X_kv has no token (shape {X_kv.shape}): the queries need a key")
    n_heads = integer(n_heads, "n_heads", minimum=1)
    n_kv_heads = _kv_heads(n_heads, n_kv_heads)
    W_q, W_k, W_v, d_head = _checked_projections(d_model, W_q, W_k, W_v, n_heads, n_kv_heads)
    Q = split_heads(X @ W_q + _bias(b_q, "b_q", W_q.shape[1]), n_heads)  # (..., n_heads, seq, d_head)
    K = split_heads(X_kv @ W_k + _bias(b_k, "b_k", W_k.shape[1]), n_kv_heads)  # (..., n_kv_heads, seq_kv, d_head)
    V = split_heads(X_kv @ W_v + _bias(b_v, "b_v", W_v.shape[1]), n_kv_heads)  # (..., n_kv_heads, seq_kv, d_head)
    group = n_heads // n_kv_heads
    # Each key/value head serves `group` consecutive query heads (torch's repeat_interleave).
    K, V = (np.repeat(M, group, axis=-3) for M in (K, V))  # (..., n_heads, seq_kv, d_head)
    return scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)


def head_contributions(
    heads: Float[np.ndarray, "... n_heads seq d_head"], W_o: Float[np.ndarray, "n_heads_x_d_head d_out"]
) -> Float[np.ndarray, "... n_heads seq d_out"]:
    """What each head adds to the output: head_h W_O[block h], (..., n_heads, seq, d_out).

    Concat(heads) W_O multiplies head h by rows h * d_head : (h + 1) * d_head of W_O only,
    so the output is the sum of these contributions over the heads.

    >>> H = np.ones((2, 1, 1))  # (n_heads, seq, d_head)
    >>> head_contributions(H, [[1.0], [10.0]]).sum(axis=-3).tolist()
    [[11.0]]
    """
    heads = real_array(heads, "heads", min_ndim=3, non_empty=(-3, -1), layout="(..., n_heads, seq, d_head)")
    *_, n_heads, _, d_head = heads.shape
    W_o = _matrix(W_o, "W_o", n_heads * d_head, "n_heads * d_head")
    blocks = W_o.reshape(n_heads, d_head, W_o.shape[1])  # (n_heads, d_head, d_out)
    return heads @ blocks  # (..., n_heads, seq, d_out)
