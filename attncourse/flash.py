"""Exact attention without the score matrix: the online softmax and FlashAttention's tiling.

``online_softmax`` (Milakov and Gimelshein 2018) finds a row's maximum and normaliser in
one pass over blocks of columns: a running maximum m and a running sum l of exp(x - m),
rescaled by exp(m_old - m_new) whenever the maximum grows. ``tiled_attention`` (the
forward pass of FlashAttention, Dao et al. 2022) applies the same bookkeeping to attention:
for each block of queries it visits the key/value blocks one by one, keeping per query row
the running maximum, the running sum and an unnormalised output, so that only one
(block_q, block_k) tile of scores ever exists.

``naive_traffic``, ``tiled_traffic`` and ``fast_memory_values`` are the memory model of the
paper: how many values go between slow memory (a GPU's HBM) and fast memory (its on-chip
SRAM) for the standard computation and for this loop, and how much fast memory one step of
the loop occupies. Counts are in values (numbers), not bytes. ``A100`` is the GPU the paper
prices them on, and ``multiply_adds_per_value_read`` what one value read is worth on a chip.

Conventions are those of ``attncourse.attention``: rows are tokens; Q (..., seq_q, d_k),
K (..., seq_k, d_k), V (..., seq_k, d_v); leading dimensions broadcast. Inputs are never
mutated; bad input is refused through ``attncourse.validation``: ``TypeError`` for the
wrong kind of thing, ``ValueError`` naming the values at fault.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from jaxtyping import Float

from attncourse.validation import broadcastable, flag, integer, number, real_array, same_size

__all__ = [
    "A100",
    "Chip",
    "fast_memory_values",
    "multiply_adds_per_value_read",
    "naive_traffic",
    "online_softmax",
    "tile_order",
    "tiled_attention",
    "tiled_trace",
    "tiled_traffic",
]


def _refuse_overflowing_scores(S: np.ndarray, rows: range, cols: range) -> None:
    """Finite Q and K can still give scores of +inf or NaN (1e200 x 1e200 overflows), which
    would turn the running maximum into NaN: refuse them, as ``attention.softmax`` does."""
    if np.isnan(S).any() or np.isposinf(S).any():
        raise ValueError(f"the scores of queries {rows.start}..{rows.stop - 1} against keys "
                         f"{cols.start}..{cols.stop - 1} overflow to +inf or NaN (Q, K or scale too "
                         "large for float): softmax is undefined")


def _rescale(old_max: np.ndarray, new_max: np.ndarray) -> np.ndarray:
    """exp(old_max - new_max), the factor that moves a sum taken relative to ``old_max`` to
    one relative to ``new_max``; 0 where nothing has been seen yet (old_max = -inf)."""
    safe_new = np.where(np.isneginf(new_max), 0.0, new_max)  # -inf - -inf would be NaN
    with np.errstate(over="ignore"):  # 1e300 - -1e300 overflows to inf: exp(-inf) = 0
        return np.exp(old_max - safe_new)


def online_softmax(x: Float[np.ndarray, "... n"], block: int) -> Float[np.ndarray, "... n"]:
    """softmax(x) over the last axis, its maximum and normaliser found in one pass over
    blocks of ``block`` columns (then one more pass writes the weights).

    After block b the running maximum is m_b = max(m_{b-1}, max of block b) and the running
    sum l_b = l_{b-1} exp(m_{b-1} - m_b) + sum over block b of exp(x_j - m_b): the sum of
    every exp(x_j - m_b) seen so far, exactly, since the old terms only needed rescaling.
    Every exponent stays <= 0, so entries of 1e300 do not overflow; -inf entries get 0.

    >>> online_softmax([0.0, np.log(3.0), 1000.0, 1000.0], block=2).round(3).tolist()
    [0.0, 0.0, 0.5, 0.5]

    Raises ValueError for NaN or +inf entries, a row entirely -inf (as
    ``attention.softmax`` does), an empty last axis, or a ``block`` below 1; TypeError for
    an ``x`` that is not real numbers or a ``block`` that is not an integer.
    """
    block = integer(block, "block", minimum=1)
    scores = real_array(x, "x", min_ndim=1, minus_inf=True)
    n = scores.shape[-1]
    if n == 0:
        raise ValueError(f"x of shape {scores.shape} has no entries along its last axis to normalise")
    running_max = np.full(scores.shape[:-1], -np.inf, dtype=scores.dtype)  # (...,)
    running_sum = np.zeros(scores.shape[:-1], dtype=scores.dtype)  # (...,)
    for start in range(0, n, block):
        chunk = scores[..., start:start + block]  # (..., <= block)
        new_max = np.maximum(running_max, chunk.max(axis=-1))
        safe_max = np.where(np.isneginf(new_max), 0.0, new_max)[..., None]
        with np.errstate(over="ignore"):  # -1e308 - 1e308 = -inf: its exp is the right 0
            running_sum = (running_sum * _rescale(running_max, new_max)
                           + np.exp(chunk - safe_max).sum(axis=-1))
        running_max = new_max
    if np.isneginf(running_max).any():
        first = tuple(int(i) for i in np.argwhere(np.isneginf(running_max))[0])
        raise ValueError(
            f"online_softmax of an array of shape {scores.shape}: the row at index {first} is "
            "entirely -inf (every position masked); each row needs at least one finite entry"
        )
    with np.errstate(over="ignore"):
        return np.exp(scores - running_max[..., None]) / running_sum[..., None]


def _causal_tile(rows: range, cols: range, offset: int) -> np.ndarray:
    """(len(rows), len(cols)) boolean tile, True where query i may see key j: j <= i + offset."""
    return np.arange(cols.start, cols.stop)[None, :] <= (np.arange(rows.start, rows.stop) + offset)[:, None]


def tile_order(seq_q: int, seq_k: int, block_q: int, block_k: int,
               causal: bool = False) -> list[tuple[range, list[range]]]:
    """The loop of ``tiled_attention``: for each block of query rows, in order, the blocks of
    key rows it visits, in order. With ``causal`` (bottom-right: query i sees keys
    j <= i + seq_k - seq_q), key blocks that no row of the query block may see are skipped.
    Causal with seq_q > seq_k is refused, as ``tiled_attention`` refuses it: the first
    queries would have no key to see, and a query block with no key block has no softmax.

    >>> [(rows, cols) for rows, cols in tile_order(3, 3, 2, 2, causal=True)]
    [(range(0, 2), [range(0, 2)]), (range(2, 3), [range(0, 2), range(2, 3)])]
    """
    seq_q, seq_k = integer(seq_q, "seq_q", minimum=1), integer(seq_k, "seq_k", minimum=1)
    block_q, block_k = integer(block_q, "block_q", minimum=1), integer(block_k, "block_k", minimum=1)
    _check_causal_alignment(seq_q, seq_k, flag(causal, "causal"))
    order = []
    for q_start in range(0, seq_q, block_q):
        rows = range(q_start, min(q_start + block_q, seq_q))
        keys_seen = _keys_seen(rows, seq_q, seq_k, causal)
        order.append((rows, [range(k, min(k + block_k, seq_k)) for k in range(0, keys_seen, block_k)]))
    return order


def _check_causal_alignment(seq_q: int, seq_k: int, causal: bool) -> None:
    """Bottom-right causal attention needs every query to see key 0: seq_q <= seq_k."""
    if causal and seq_q > seq_k:
        raise ValueError(
            f"causal attention with seq_q={seq_q} > seq_k={seq_k}: aligned bottom-right, the "
            f"first {seq_q - seq_k} queries would have no key to see"
        )


def _keys_seen(rows: range, seq_q: int, seq_k: int, causal: bool) -> int:
    """How many keys, from key 0, some row of the query block ``rows`` may see."""
    return min(rows.stop + seq_k - seq_q, seq_k) if causal else seq_k


def tiled_attention(
    Q: Float[np.ndarray, "... seq_q d_k"],
    K: Float[np.ndarray, "... seq_k d_k"],
    V: Float[np.ndarray, "... seq_k d_v"],
    block_q: int = 64,
    block_k: int = 64,
    causal: bool = False,
    scale: float | None = None,
    return_lse: bool = False,
):
    """softmax(scale Q K^T) V computed tile by tile, never forming the (seq_q, seq_k) scores.

    Returns the output (..., seq_q, d_v), or ``(output, lse)`` with ``return_lse=True``:
    lse (..., seq_q) is the log-sum-exp of each row's scaled (masked) scores, the one number
    per row that FlashAttention's backward pass keeps to rebuild the weights.

    For each block of ``block_q`` queries, the loop visits the key/value blocks of
    ``block_k`` rows in order, keeping per row a running maximum m, a running sum l and an
    unnormalised output acc; a new tile S of scores updates them as
    m' = max(m, rowmax S), l' = l e^{m - m'} + rowsum e^{S - m'},
    acc' = acc e^{m - m'} + e^{S - m'} V_block; at the end output = acc / l and
    lse = m + log l. Blocks need not divide the sequence (the last block is shorter).

    ``causal=True`` lets query i see keys j <= i + (seq_k - seq_q): the queries are the
    *last* seq_q tokens of the seq_k (bottom-right alignment, what new queries against a
    KV cache need). For seq_q = seq_k this is the usual causal mask; torch's
    ``scaled_dot_product_attention(is_causal=True)`` aligns top-left instead, so the two
    differ when seq_q < seq_k. Key blocks a whole query block may not see are skipped.
    Causal with seq_q > seq_k would leave the first queries with no key: ValueError. So do
    scores that overflow although Q and K are finite (+inf, NaN, or -inf for every key a
    query may see), as in ``attention.scaled_dot_product_attention``.

    >>> Q = K = V = np.eye(3)
    >>> np.allclose(tiled_attention(Q, K, V, block_q=2, block_k=2, scale=np.log(3.0)),
    ...             np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3]]) / 5)
    True
    """
    queries, keys, values, block_q, block_k, factor = _checked_problem(Q, K, V, block_q, block_k, causal, scale)
    return_lse = flag(return_lse, "return_lse")
    lead = np.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2])
    dtype = np.result_type(queries, keys, values)
    output = np.empty((*lead, queries.shape[-2], values.shape[-1]), dtype=dtype)  # (..., seq_q, d_v)
    lse = np.empty((*lead, queries.shape[-2]), dtype=dtype)  # (..., seq_q)
    for rows, _, last, running_max, running_sum, acc in _tiles(queries, keys, values, block_q, block_k,
                                                               causal, factor):
        if last:  # the query block has seen every key it may see
            output[..., rows.start:rows.stop, :] = acc / running_sum[..., None]
            lse[..., rows.start:rows.stop] = running_max + np.log(running_sum)
    return (output, lse) if return_lse else output


def _checked_problem(Q, K, V, block_q, block_k, causal, scale):
    """(Q, K, V as float arrays, block_q, block_k, the scale), or TypeError / ValueError
    naming the fault. Q, K and V must be finite: NaN in V would reach the output unseen."""
    block_q = integer(block_q, "block_q", minimum=1)
    block_k = integer(block_k, "block_k", minimum=1)
    causal = flag(causal, "causal")
    queries, keys, values = (real_array(M, name, min_ndim=2, layout=layout) for M, name, layout in (
        (Q, "Q", "(..., seq_q, d_k)"), (K, "K", "(..., seq_k, d_k)"), (V, "V", "(..., seq_k, d_v)")))
    d_k = same_size("d_k", ("Q", queries, -1), ("K", keys, -1), "queries and keys must live in the same space")
    same_size("seq_k", ("K", keys, -2), ("V", values, -2), "every key needs exactly one value")
    seq_q, seq_k = queries.shape[-2], keys.shape[-2]
    if seq_q == 0 or seq_k == 0 or d_k == 0:
        raise ValueError(f"need at least one query, one key and d_k >= 1, got Q of shape "
                         f"{queries.shape} and K of shape {keys.shape}")
    broadcastable(queries.shape[:-2], keys.shape[:-2], "Q", "K")
    broadcastable(queries.shape[:-2], values.shape[:-2], "Q", "V")
    broadcastable(keys.shape[:-2], values.shape[:-2], "K", "V")
    _check_causal_alignment(seq_q, seq_k, causal)
    factor = d_k**-0.5 if scale is None else number(scale, "scale")  # a Python float: float32 stays float32
    return queries, keys, values, block_q, block_k, factor


def _tiles(queries, keys, values, block_q, block_k, causal, factor):
    """The loop of ``tiled_attention``: after each tile, yields (rows, cols, last, m, l, acc),
    ``last`` True at the query block's last key block; m, l (..., rows) and acc
    (..., rows, d_v) are the block's running maximum, sum and unnormalised output."""
    seq_q, seq_k, d_v = queries.shape[-2], keys.shape[-2], values.shape[-1]
    offset = seq_k - seq_q  # query i is token offset + i of the sequence of keys
    lead = np.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2])
    dtype = np.result_type(queries, keys, values)
    for rows, key_blocks in tile_order(seq_q, seq_k, block_q, block_k, causal):
        Q_block = queries[..., rows.start:rows.stop, :]  # (..., rows, d_k)
        running_max = np.full((*lead, len(rows)), -np.inf, dtype=dtype)  # (..., rows)
        running_sum = np.zeros((*lead, len(rows)), dtype=dtype)  # (..., rows)
        acc = np.zeros((*lead, len(rows), d_v), dtype=dtype)  # (..., rows, d_v)
        for cols in key_blocks:
            K_block = keys[..., cols.start:cols.stop, :]  # (..., cols, d_k)
            V_block = values[..., cols.start:cols.stop, :]  # (..., cols, d_v)
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused just below
                S = (Q_block @ np.swapaxes(K_block, -1, -2)) * factor  # (..., rows, cols): one tile
            _refuse_overflowing_scores(S, rows, cols)
            if causal and cols.stop - 1 > rows.start + offset:  # the tile crosses the diagonal
                S = np.where(_causal_tile(rows, cols, offset), S, -np.inf)
            # Every row may see key 0, so new_max is finite unless scores overflowed to -inf:
            # such a row keeps m = -inf, l = 0 until a finite score comes (or is refused below).
            new_max = np.maximum(running_max, S.max(axis=-1))
            rescale = _rescale(running_max, new_max)[..., None]  # (..., rows, 1); 0 at the first tile
            safe_max = np.where(np.isneginf(new_max), 0.0, new_max)[..., None]  # -inf - -inf is NaN
            P = np.exp(S - safe_max)  # (..., rows, cols), unnormalised weights
            running_sum = running_sum * rescale[..., 0] + P.sum(axis=-1)
            acc = acc * rescale + P @ V_block
            running_max = new_max
            if cols is key_blocks[-1] and np.isneginf(running_max).any():
                raise ValueError(f"scores of queries {rows.start}..{rows.stop - 1} overflowed to -inf for "
                                 "every key they may see (Q, K or scale too large): softmax is undefined")
            yield rows, cols, cols is key_blocks[-1], running_max, running_sum, acc


def tiled_trace(
    Q: Float[np.ndarray, "seq_q d_k"],
    K: Float[np.ndarray, "seq_k d_k"],
    V: Float[np.ndarray, "seq_k d_v"],
    block_q: int,
    block_k: int,
    causal: bool = False,
    scale: float | None = None,
) -> list[dict]:
    """Every step of ``tiled_attention``'s loop on one small problem, for showing it.

    One dict per tile, in order: ``rows`` and ``cols`` ((start, stop) of the query and key
    blocks in fast memory), ``m`` and ``l`` (rows,) and ``o`` (rows, d_v), the query block's
    running maximum, sum and unnormalised output after this tile, and ``read`` and
    ``written``, the values moved so far: a query block is read at its first tile, a key
    and a value block at every tile, the output and lse written at the block's last tile.
    At the end ``read + written`` is ``tiled_traffic`` when seq_q = seq_k and d_k = d_v.

    >>> steps = tiled_trace(np.eye(3), np.eye(3), np.eye(3), block_q=2, block_k=2, causal=True)
    >>> [(step["rows"], step["cols"]) for step in steps]
    [((0, 2), (0, 2)), ((2, 3), (0, 2)), ((2, 3), (2, 3))]
    """
    queries, keys, values, block_q, block_k, factor = _checked_problem(Q, K, V, block_q, block_k, causal, scale)
    if queries.ndim != 2 or keys.ndim != 2 or values.ndim != 2:
        raise ValueError(f"tiled_trace shows one head: Q, K, V of shapes (seq, d), got {queries.shape}, "
                         f"{keys.shape}, {values.shape}")
    d_k, d_v = queries.shape[-1], values.shape[-1]
    steps, read, written = [], 0, 0
    for rows, cols, last, m, total, acc in _tiles(queries, keys, values, block_q, block_k, causal, factor):
        if cols.start == 0:  # the query block's first tile: its queries come in
            read += len(rows) * d_k
        read += len(cols) * (d_k + d_v)
        if last:  # its output and lse go out
            written += len(rows) * (d_v + 1)
        steps.append({"rows": (rows.start, rows.stop), "cols": (cols.start, cols.stop),
                      "m": m.tolist(), "l": total.tolist(), "o": acc.tolist(),
                      "read": read, "written": written})
    return steps


def naive_traffic(seq: int, d: int) -> int:
    """Values moved between slow and fast memory by standard attention (Dao et al. 2022,
    Algorithm 0) for seq queries and keys of width d (d_k = d_v = d): read Q and K, write S;
    read S, write P; read P and V, write the output. 4 seq d + 4 seq^2: Theta(N d + N^2).

    >>> naive_traffic(2, 1)
    24
    """
    seq, d = integer(seq, "seq", minimum=1), integer(d, "d", minimum=1)
    return 4 * seq * d + 4 * seq * seq


def tiled_traffic(seq: int, d: int, block_q: int, block_k: int, causal: bool = False) -> int:
    """Values moved by ``tiled_attention``'s loop (d_k = d_v = d): each query block is read
    once and its output and lse written once; every key and value block it visits is read
    again for it. Without the mask that is 2 seq d + seq + ceil(seq / block_q) * 2 seq d;
    with block_q = Theta(M / d) for fast memory M it is Theta(N^2 d^2 / M), the paper's
    Theorem 2. ``causal`` skips the key blocks a query block cannot see, as the loop does.
    ``block_k`` changes nothing without the mask and only which blocks are skipped with it.

    >>> tiled_traffic(4, 1, block_q=2, block_k=4)
    28
    """
    seq, d = integer(seq, "seq", minimum=1), integer(d, "d", minimum=1)
    block_q, block_k = integer(block_q, "block_q", minimum=1), integer(block_k, "block_k", minimum=1)
    causal = flag(causal, "causal")
    keys_read = 0  # summed without listing the tiles: tiny blocks make millions of them
    for q_start in range(0, seq, block_q):
        keys_seen = _keys_seen(range(q_start, min(q_start + block_q, seq)), seq, seq, causal)
        keys_read += min(-(-keys_seen // block_k) * block_k, seq)  # whole key blocks, the last shorter
    return 2 * seq * d + seq + keys_read * 2 * d


def fast_memory_values(block_q: int, block_k: int, d: int) -> int:
    """Values one step of the loop holds in fast memory (d_k = d_v = d): the query block,
    the key and value blocks, the tile of scores, the running output and the running max
    and sum of each row: block_q d + 2 block_k d + block_q block_k + block_q d + 2 block_q.

    >>> fast_memory_values(2, 2, 1)
    16
    """
    block_q, block_k = integer(block_q, "block_q", minimum=1), integer(block_k, "block_k", minimum=1)
    d = integer(d, "d", minimum=1)
    return 2 * block_q * d + 2 * block_k * d + block_q * block_k + 2 * block_q


@dataclass(frozen=True)
class Chip:
    """A GPU as the traffic model sees it: ``operations_per_second`` (fp16, dense),
    ``bytes_per_second`` read from slow memory (one figure per memory size, in GB),
    ``processors`` and the ``fast_memory_bytes`` of each (its SRAM)."""

    name: str
    operations_per_second: float
    bytes_per_second: dict[int, float]
    processors: int
    fast_memory_bytes: int


# The chip of the FlashAttention paper: its datasheet (NVIDIA 2021) and Dao et al. 2022, section 2.1.
A100 = Chip("A100", operations_per_second=312e12, bytes_per_second={40: 1.555e12, 80: 2.039e12},
            processors=108, fast_memory_bytes=192 * 1024)


def multiply_adds_per_value_read(chip: Chip, memory_gb: int) -> float:
    """The fp16 multiply-adds ``chip`` can do in the time it reads one fp16 value from the
    slow memory of its ``memory_gb`` version: a multiply-add is two operations and an fp16
    value two bytes. A kernel doing fewer per value it reads waits for memory (memory-bound).

    >>> round(multiply_adds_per_value_read(A100, 40))
    201
    """
    if not isinstance(chip, Chip):
        raise TypeError(f"chip must be a flash.Chip (such as flash.A100), got {type(chip).__name__}")
    memory_gb = integer(memory_gb, "memory_gb", minimum=1)
    if memory_gb not in chip.bytes_per_second:
        raise ValueError(f"memory_gb of the {chip.name} is one of {sorted(chip.bytes_per_second)}, not {memory_gb}")
    fp16_bytes = 2
    return (chip.operations_per_second / 2) / (chip.bytes_per_second[memory_gb] / fp16_bytes)
