"""Checks of chapter 9's exercises: attention at scale (the KV cache, the online softmax,
FlashAttention's tiles)."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from attncourse.checks.core import (
    Failed,
    NotImplementedYet,
    beyond_float32,
    close,
    exercise,
    expect_function,
    inputs,
    peak_memory,
    short_repr,
    type_name,
)
from attncourse.checks.predict import predict_exercise
from attncourse.checks.tune import Readout, tune_readout_goal
from attncourse.flash import fast_memory_values, tiled_traffic
from attncourse.kv_cache import kv_cache_bytes

# ---------------------------------------------------------------------------------------
# ch9-predict-cache-size

# Llama-3-70B: 80 layers, 8 key/value heads of 128 (grouped-query attention), a context of
# 8,192 tokens, one sequence, fp16.
LLAMA_3_70B = {"n_layers": 80, "n_kv_heads": 8, "d_head": 128, "seq_len": 8192, "batch": 1,
               "bytes_per_value": 2}
_GiB = 2**30
_CACHE_70B = kv_cache_bytes(**LLAMA_3_70B)

predict_cache_size = predict_exercise(
    "ch9-predict-cache-size",
    answer=_CACHE_70B / _GiB,
    tolerance=0.05,
    hint=(
        "Multiply the six factors of the formula, not forgetting the 2 (a key and a value); "
        "a GiB is 2^30 bytes. Llama-2-7B's 2 GiB is a good start: which factors changed?"
    ),
    explanation=(
        f"2 × {LLAMA_3_70B['n_layers']} layers × {LLAMA_3_70B['n_kv_heads']} kv heads × "
        f"{LLAMA_3_70B['d_head']} × {LLAMA_3_70B['seq_len']:,} tokens × "
        f"{LLAMA_3_70B['bytes_per_value']} bytes = {_CACHE_70B:,} bytes, "
        f"{_CACHE_70B / _GiB:g} GiB. Against Llama-2-7B's 2 GiB at 4,096 tokens: 2.5 times the "
        "layers and twice the context, but a quarter of the key/value heads."
    ),
)


# ---------------------------------------------------------------------------------------
# ch9-online-softmax


def _normaliser_cases() -> list[tuple[str, list[np.ndarray]]]:
    """(description, blocks): the blocks of columns, in order, of one array (..., n)."""
    rng = np.random.default_rng(9)
    batch = rng.standard_normal((2, 3, 10))
    return [
        ("the row [1, 2, 3] in blocks of one column", [np.array([1.0]), np.array([2.0]), np.array([3.0])]),
        ("the row [3, 1, 2] in blocks of one column (the maximum comes first)",
         [np.array([3.0]), np.array([1.0]), np.array([2.0])]),
        ("a batch (2, 3, 10) in blocks of 4, 4 and 2 columns",
         [batch[..., :4], batch[..., 4:8], batch[..., 8:]]),
        ("the row [0, 1e300, 1e300] in blocks of 1 and 2 columns",
         [np.array([0.0]), np.array([1e300, 1e300])]),
        ("the rows [[-inf, -inf, 5], [-inf, 2, 0]] in blocks of 2 and 1 columns (a first block all -inf)",
         [np.array([[-np.inf, -np.inf], [-np.inf, 2.0]]), np.array([[5.0], [0.0]])]),
        ("the row [-1000, -1001, -999] in blocks of one column",
         [np.array([-1000.0]), np.array([-1001.0]), np.array([-999.0])]),
        ("the rows [[1000, 999, 998, 997], [0, -1, 1, 0.5]] in blocks of 2 columns (row maxima 999 apart)",
         [np.array([[1000.0, 999.0], [0.0, -1.0]]), np.array([[998.0, 997.0], [1.0, 0.5]])]),
        (f"a batch (8, {LONG_ROW}) in {LONG_ROW // 512} blocks of 512 columns",
         np.split(rng.standard_normal((8, LONG_ROW)), LONG_ROW // 512, axis=-1)),
    ]


# A row long enough that holding it is seen: 1 MiB in 32 blocks of 32 KiB. An answer that
# reads it once holds a few blocks' worth at a time (exp of one block, its sum); one that
# keeps every block (copied, to read again) holds all of it.
LONG_ROW = 16_384
HELD_BLOCKS = 8  # what an answer may hold at once, in blocks (and never less than 64 KiB)


_KEPT_HINT = (" If you kept the blocks to read them later: the check, like a stream, delivers "
              "every block in one buffer that the next block overwrites. Keep numbers computed "
              "from each block (its maximum, its sum), not the block.")


def _stream(blocks: list[np.ndarray], stream: dict) -> object:
    """The blocks one at a time through ``stream["buffer"]``, as a stream delivers them: each
    block overwrites the last, so an answer that stores the blocks and reads them at the end
    (two passes in disguise) finds every stored block equal to the last one. Sets
    ``stream["changed"]`` if the answer wrote into a block, ``stream["done"]`` at the end."""
    for block in blocks:
        view = stream["buffer"][..., :block.shape[-1]]  # (..., b)
        view[...] = block
        yield view
        if not np.array_equal(view, block):
            stream["changed"] = True
    stream["done"] = True


def _close(m, total, expected) -> bool:
    """(m, l) equal to ``expected`` = (m, l) (core.close), NaN and inf included."""
    return all(close(a, b, equal_nan=True) for a, b in zip((m, total), expected))


def _expected(blocks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    x = np.concatenate(blocks, axis=-1)  # (..., n)
    maximum = x.max(axis=-1)
    return maximum, np.exp(x - maximum[..., None]).sum(axis=-1)


def _as_pair(value, shape, what):
    if value is None:
        raise Failed(f"{what} returned None: did you forget `return m, l`?")
    try:
        m, total = value
        m, total = (np.asarray(v, dtype=np.float64) for v in (m, total))
    except Exception:  # noqa: BLE001  a learner's object may refuse unpacking or conversion
        raise Failed(f"{what} returned {short_repr(value)}; expected a pair (m, l) of arrays.") from None
    for name, v in (("m", m), ("l", total)):
        if v.shape != shape:
            raise Failed(f"{what}: {name} has shape {v.shape}, expected {shape} (one number per row).")
    return m, total


@exercise("ch9-online-softmax", points=3)
def online_softmax(run, candidate) -> str:
    """Exercise ch9-online-softmax: ``online_normaliser(blocks)`` reads an iterator of blocks
    of columns (..., b) *once* and returns ``(m, l)``: each row's maximum and the sum of
    exp(x - m) over the row. The check passes a generator, so a second pass finds nothing.

    Cases: a maximum that grows at every block and one that comes first, a batch with
    blocks of unequal widths, entries of 1e300, a first block entirely -inf (the NaN trap
    of -inf - -inf) and entries near -1000. Diagnoses a sum not rescaled when the maximum
    grows, NaN from -inf, overflow, and a row read twice.
    """
    fn = expect_function(candidate, "online_normaliser")
    cases = inputs(_normaliser_cases())  # one at a time when the grader counts the inputs right
    for description, blocks in cases:
        what = f"online_normaliser on {description}"
        stream: dict[str, Any] = {"buffer": np.zeros((*blocks[0].shape[:-1], max(b.shape[-1] for b in blocks))),
                  "changed": False, "done": False}  # (..., widest): every block passes through it
        result, held = peak_memory(run, fn, _stream(blocks, stream))  # a generator: the blocks come once
        last = stream["buffer"][..., :blocks[-1].shape[-1]]  # (..., b): the last block, if untouched
        if stream["changed"] or (stream["done"] and not np.array_equal(last, blocks[-1])):
            raise Failed(f"{what} changed a block; work on new arrays.")
        m_expected, l_expected = _expected(blocks)
        m, total = _as_pair(result, m_expected.shape, what)
        block = max(b.nbytes for b in blocks)
        if held > max(HELD_BLOCKS * block, 64 * 1024):
            raise Failed(f"{what} held {held / 1024:,.0f} KiB at once, about {held / block:.0f} blocks of "
                         f"{block / 1024:,.0f} KiB: an online softmax keeps numbers per row (its maximum and its "
                         "sum), never the blocks. Fold each block into m and l as it comes, and let it go.")
        kept = [stream["buffer"][..., :b.shape[-1]] for b in blocks]  # what stored blocks now hold
        if len(blocks) > 1 and not _close(m, total, (m_expected, l_expected)) and _close(m, total, _expected(kept)):
            # With the right maxima, a sum never rescaled can give the same numbers: say both.
            rescaling = (" " + _sum_hint(blocks, total, l_expected)) if close(m, m_expected) else ""
            raise Failed(f"{what}: m = {m.tolist()} and l = {total.tolist()}, expected "
                         f"{m_expected.tolist()} and {l_expected.tolist()}.{rescaling}{_KEPT_HINT}")
        if np.isnan(m).any() or np.isnan(total).any():
            raise Failed(f"{what} gave NaN. {beyond_float32(m, *blocks) or _nan_hint(blocks)}")
        if not close(m, m_expected):
            raise Failed(f"{what}: m = {m.tolist()}, expected the row maxima {m_expected.tolist()}.")
        if not close(total, l_expected):
            raise Failed(f"{what}: l = {total.tolist()}, expected {l_expected.tolist()}. "
                         f"{_sum_hint(blocks, total, l_expected)}")
    return (f"Your running maximum and sum are right on {len(cases)} inputs, each read once holding a few "
            "blocks at most, "
            "including 1e300 and a first block of -inf: exp(x - m) / l is the softmax.")


def _nan_hint(blocks) -> str:
    maxima = np.max(np.concatenate(blocks, axis=-1), axis=-1)  # (...): each row's maximum
    if maxima.size > 1 and np.isfinite(maxima).all() and np.ptp(maxima) > 700:
        return ("Hint: keep one maximum per row (m has the shape of the rows, (...)): with one "
                "maximum for the whole batch, exp(x - m) of a row far below it underflows to 0, "
                "and 0 × inf is NaN.")
    if any(np.isneginf(block).any() for block in blocks):
        return ("Hint: while a row has seen only -inf, its maximum is -inf and -inf - (-inf) is "
                "NaN; treat that case apart (no entry seen yet means a sum of 0).")
    return ("Hint: exp of a large number overflows to inf, and inf / inf is NaN: take "
            "exp(x - m) with the running maximum m only.")


def _sum_hint(blocks, total, l_expected) -> str:
    if not np.isfinite(total).all():
        return "exp of a large number overflowed: take exp(x - m) with the running maximum m only."
    if len(blocks) > 1 and total.size == 1 and float(total.ravel()[0]) > float(np.ravel(l_expected)[0]):
        return ("When the maximum grows from m to m', the old sum was taken relative to m: "
                "multiply it by exp(m - m') before adding the new block's terms.")
    if np.all(total < l_expected) and len(blocks) > 1:
        return "Did your sum start again at each block? It must add up every block seen so far."
    return "l must be the sum over the whole row of exp(x_j - m), with m the row's maximum."


# ---------------------------------------------------------------------------------------
# ch9-tune-blocks

TUNE_SEQ, TUNE_D, TUNE_BUDGET, TUNE_MIN_BLOCK_K = 4096, 128, 32768, 16
TUNE_START = (32, 32)  # the stub's blocks


def _is_count(value) -> bool:
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (numbers.Integral, np.integer))


def least_traffic() -> int:
    """The least traffic of any blocks that fit the budget. For each block_q the smallest
    footprint is at the smallest block_k, and without the mask block_k changes no traffic."""
    fitting = [block_q for block_q in range(1, TUNE_SEQ + 1)  # cheap: the footprint first
               if fast_memory_values(block_q, TUNE_MIN_BLOCK_K, TUNE_D) <= TUNE_BUDGET]
    return min(tiled_traffic(TUNE_SEQ, TUNE_D, block_q, TUNE_MIN_BLOCK_K) for block_q in fitting)


def readouts_at(block_q: int, block_k: int) -> dict[str, int]:
    """The block explorer's readouts for the exercise's head (attncourse.explorers.block_explorer)."""
    return {"footprint": fast_memory_values(block_q, block_k, TUNE_D), "block_k": block_k,
            "traffic": tiled_traffic(TUNE_SEQ, TUNE_D, block_q, block_k)}


goal_blocks = tune_readout_goal(
    "ch9-tune-blocks",
    "Choose blocks that fit the fast memory and move the fewest values any such blocks can.",
    settings=("block_q", "block_k"),
    conditions=(Readout("footprint", "values in fast memory", "<=", TUNE_BUDGET),
                Readout("block_k", "block_k", ">=", TUNE_MIN_BLOCK_K),
                Readout("traffic", "values moved", "<=", least_traffic())),
    fixed={"seq": TUNE_SEQ, "d": TUNE_D, "budget": TUNE_BUDGET},
    readouts_at=readouts_at,
)


@exercise("ch9-tune-blocks", points=2)
def tune_blocks(run, block_q, block_k) -> str:
    """Exercise ch9-tune-blocks: blocks for ``tiled_attention`` at seq 4,096 and d 128 (no
    mask) whose fast-memory footprint (``fast_memory_values``) fits 32,768 values, with
    block_k >= 16, and whose traffic (``tiled_traffic``) is the least of all such blocks."""
    if all(_is_count(v) for v in (block_q, block_k)) and (int(block_q), int(block_k)) == TUNE_START:
        raise NotImplementedYet(f"the blocks are still the starting {TUNE_START}: change them.")
    for name, value in (("block_q", block_q), ("block_k", block_k)):
        if not _is_count(value) or value < 1:
            raise Failed(f"{name} must be a positive whole number, got {type_name(value)} "
                         f"{short_repr(value)}.")
    block_q, block_k = int(block_q), int(block_k)
    if block_k < TUNE_MIN_BLOCK_K:
        raise Failed(f"block_k = {block_k} is below {TUNE_MIN_BLOCK_K}, the smallest tile the "
                     "exercise allows.")
    held = fast_memory_values(block_q, block_k, TUNE_D)
    if held > TUNE_BUDGET:
        raise Failed(f"blocks ({block_q}, {block_k}) hold {held:,} values in fast memory, more than "
                     f"the {TUNE_BUDGET:,} it has. Hint: with d = {TUNE_D}, the query block and the running "
                     f"output (2 × block_q × d = {2 * block_q * TUNE_D:,}) weigh most; then the key and value "
                     f"blocks (2 × block_k × d = {2 * block_k * TUNE_D:,}), then the scores' tile.")
    traffic, best = tiled_traffic(TUNE_SEQ, TUNE_D, block_q, block_k), least_traffic()
    if traffic > best:
        raise Failed(
            f"blocks ({block_q}, {block_k}) fit ({held:,} values) and move {traffic:,} values; "
            f"the least possible is {best:,}. Hint: K and V are read again for every block of "
            "queries, so traffic falls with the number of query blocks; block_k only costs fast "
            "memory. Spend the memory on block_q.")
    n_blocks = math.ceil(TUNE_SEQ / block_q)
    return (f"blocks ({block_q}, {block_k}) hold {held:,} of {TUNE_BUDGET:,} values and move "
            f"{traffic:,} values, the least possible: K and V are read {n_blocks} times, once per "
            "query block. A real kernel also wants tiles that keep its matrix units busy, which "
            "this model does not count.")
