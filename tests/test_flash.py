"""Tests of ``attncourse.flash``: the online softmax against ``attention.softmax``, the tiled
attention against ``torch.nn.functional.scaled_dot_product_attention`` to 1e-12 in float64
(any block sizes, causal or not), its memory with tracemalloc, its traffic model, and every
ValueError."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attncourse.attention import causal_mask, scaled_dot_product_attention, softmax
from attncourse.flash import (
    A100,
    Chip,
    _checked_problem,
    _tiles,
    fast_memory_values,
    multiply_adds_per_value_read,
    naive_traffic,
    online_softmax,
    tile_order,
    tiled_attention,
    tiled_trace,
    tiled_traffic,
)

FAST = settings(max_examples=60, deadline=None)
EXACT = {"rtol": 0, "atol": 1e-12}


# ---------------------------------------------------------------- online softmax


@FAST
@given(seed=st.integers(0, 2**32 - 1), shape=st.lists(st.integers(1, 4), min_size=0, max_size=2),
       n=st.integers(1, 12), block=st.integers(1, 15), spread=st.sampled_from([1.0, 30.0, 1e5]),
       masked=st.booleans())
def test_online_softmax_equals_softmax_for_any_block(seed, shape, n, block, spread, masked):
    rng = np.random.default_rng(seed)
    x = spread * rng.standard_normal((*shape, n))
    if masked:  # some -inf entries, never a whole row
        x = np.where(rng.random(x.shape) < 0.4, -np.inf, x)
        x[..., rng.integers(n)] = 1.0
    np.testing.assert_allclose(online_softmax(x, block), softmax(x), **EXACT)


def test_online_softmax_is_stable_for_huge_and_minus_infinite_entries():
    x = np.array([[1e300, -np.inf, 1e300, 0.0], [-1e308, 1e308, -np.inf, -np.inf]])
    expected = np.array([[0.5, 0.0, 0.5, 0.0], [0.0, 1.0, 0.0, 0.0]])
    for block in (1, 2, 3, 4, 10):
        np.testing.assert_array_equal(online_softmax(x, block), expected)
    # The maximum grows in the last block: the earlier sum is rescaled by exp(-2e300) = 0.
    np.testing.assert_array_equal(online_softmax([-1e300, 1e300], 1), [0.0, 1.0])


def test_online_softmax_rescales_the_running_sum_when_the_maximum_grows():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    weights = online_softmax(x, 1)  # the maximum grows at every block
    np.testing.assert_allclose(weights, np.exp(x) / np.exp(x).sum(), rtol=1e-15)


def test_online_softmax_accepts_lists_and_numpy_integer_blocks_and_leaves_its_input():
    x = np.array([[1.0, 2.0, 3.0]])
    before = x.copy()
    np.testing.assert_allclose(online_softmax(x.tolist(), np.int64(2)), softmax(x), **EXACT)
    online_softmax(x, np.int32(1))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize(
    "x, block, message, error",
    [
        ([1.0, np.nan], 1, r"contains NaN", ValueError),
        ([1.0, np.inf], 2, r"contains \+inf", ValueError),
        ([[0.0, 1.0], [-np.inf, -np.inf]], 1, r"row at index \(1,\) is entirely -inf", ValueError),
        (np.zeros((2, 0)), 1, r"x of shape \(2, 0\) has no entries along its last axis to normalise", ValueError),
        ([1.0, 2.0], 0, r"block must be a positive integer, got 0", ValueError),
        ([1.0, 2.0], -3, r"block must be a positive integer, got -3", ValueError),
        ([1.0, 2.0], True, r"block must be a positive integer, got True of type bool", TypeError),
        ([1.0, 2.0], 2.0, r"block must be a positive integer, got 2.0 of type float", TypeError),
        ([1.0, 2.0], "2", r"block must be a positive integer", TypeError),
        ([1.0, 2.0], np.float64(2.0), r"block must be a positive integer", TypeError),
        ([1.0, 2.0], np.bool_(True), r"block must be a positive integer", TypeError),
    ],
)
def test_online_softmax_refuses_bad_input(x, block, message, error):
    with pytest.raises(error, match=message):
        online_softmax(x, block)


# ---------------------------------------------------------------- tiled attention


def torch_sdpa(Q, K, V, causal=False, scale=None, attn_mask=None):
    out = F.scaled_dot_product_attention(torch.tensor(Q), torch.tensor(K), torch.tensor(V),
                                         is_causal=causal, scale=scale,
                                         attn_mask=None if attn_mask is None else torch.tensor(attn_mask))
    return out.numpy()


def bottom_right_mask(seq_q, seq_k):
    """True where query i (token seq_k - seq_q + i) may see key j; built with numpy's tril."""
    return np.tril(np.ones((seq_q, seq_k), dtype=bool), k=seq_k - seq_q)


@FAST
@given(seed=st.integers(0, 2**32 - 1), batch=st.lists(st.integers(1, 3), max_size=2),
       seq=st.integers(1, 40), d_k=st.integers(1, 6), d_v=st.integers(1, 5),
       block_q=st.integers(1, 50), block_k=st.integers(1, 50), causal=st.booleans())
def test_tiled_attention_equals_torch_sdpa_for_any_block_sizes(seed, batch, seq, d_k, d_v, block_q, block_k,
                                                               causal):
    rng = np.random.default_rng(seed)
    Q, K = (rng.standard_normal((*batch, seq, d_k)) for _ in range(2))
    V = rng.standard_normal((*batch, seq, d_v))
    output = tiled_attention(Q, K, V, block_q=block_q, block_k=block_k, causal=causal)
    np.testing.assert_allclose(output, torch_sdpa(Q, K, V, causal=causal), **EXACT)


@FAST
@given(seed=st.integers(0, 2**32 - 1), seq_q=st.integers(1, 20), extra=st.integers(0, 20),
       block_q=st.integers(1, 25), block_k=st.integers(1, 25), causal=st.booleans(),
       scale=st.sampled_from([None, 0.1, 1.0, 3.0]))
def test_tiled_attention_with_fewer_queries_than_keys_aligns_bottom_right(seed, seq_q, extra, block_q,
                                                                          block_k, causal, scale):
    seq_k = seq_q + extra
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((2, seq_q, 4))
    K, V = rng.standard_normal((2, seq_k, 4)), rng.standard_normal((2, seq_k, 3))
    output, lse = tiled_attention(Q, K, V, block_q, block_k, causal=causal, scale=scale, return_lse=True)
    mask = bottom_right_mask(seq_q, seq_k) if causal else None
    np.testing.assert_allclose(output, torch_sdpa(Q, K, V, scale=scale, attn_mask=mask), **EXACT)
    scores = torch.tensor(Q) @ torch.tensor(K).transpose(-1, -2) * (scale or 1 / math.sqrt(4))
    if causal:
        scores = scores.masked_fill(~torch.tensor(mask), -math.inf)
    np.testing.assert_allclose(lse, torch.logsumexp(scores, dim=-1).numpy(), **EXACT)


def test_bottom_right_alignment_is_what_a_cache_needs_and_differs_from_torch_is_causal():
    rng = np.random.default_rng(0)
    Q_all, K, V = (rng.standard_normal((6, 3)) for _ in range(3))
    full = tiled_attention(Q_all, K, V, block_q=4, block_k=4, causal=True)
    last_two = tiled_attention(Q_all[4:], K, V, block_q=4, block_k=4, causal=True)
    np.testing.assert_allclose(last_two, full[4:], **EXACT)  # the new queries' rows of the full result
    top_left = torch_sdpa(Q_all[4:], K, V, causal=True)  # torch: query i sees keys 0..i
    assert not np.allclose(last_two, top_left)


def test_tiled_attention_equals_the_course_reference_and_returns_the_log_sum_exp():
    rng = np.random.default_rng(1)
    Q, K, V = (rng.standard_normal((3, 2, 37, 5)) for _ in range(3))
    output, lse = tiled_attention(Q, K, V, block_q=8, block_k=11, causal=True, return_lse=True)
    reference, weights = scaled_dot_product_attention(Q, K, V, mask=causal_mask(37))
    np.testing.assert_allclose(output, reference, **EXACT)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(5)
    # The weights are exp(score - lse): the backward pass rebuilds them from lse alone.
    np.testing.assert_allclose(np.where(causal_mask(37), np.exp(scores - lse[..., None]), 0.0), weights, **EXACT)


def test_tiled_attention_broadcasts_batch_dimensions_like_torch():
    rng = np.random.default_rng(2)
    Q = rng.standard_normal((2, 1, 9, 4))
    K, V = rng.standard_normal((3, 9, 4)), rng.standard_normal((1, 3, 9, 2))
    output = tiled_attention(Q, K, V, block_q=4, block_k=5, causal=True)
    assert output.shape == (2, 3, 9, 2)
    expected = torch_sdpa(*(np.ascontiguousarray(np.broadcast_to(M, (2, 3, *M.shape[-2:]))) for M in (Q, K, V)),
                          causal=True)
    np.testing.assert_allclose(output, expected, **EXACT)


def test_tiled_attention_accepts_huge_scores_numpy_integer_blocks_and_lists_and_leaves_its_inputs():
    Q = np.array([[300.0, 0.0], [0.0, 300.0]])
    K = np.array([[300.0, 0.0], [0.0, 300.0], [1.0, 1.0]])
    V = np.array([[1.0], [2.0], [3.0]])
    before = [M.copy() for M in (Q, K, V)]
    output = tiled_attention(Q.tolist(), K.tolist(), V.tolist(), block_q=np.int64(1), block_k=np.uint8(2),
                             scale=1.0)  # scores of 90,000: exp overflows without the running max
    np.testing.assert_array_equal(output, [[1.0], [2.0]])
    for M, copy in zip((Q, K, V), before):
        np.testing.assert_array_equal(M, copy)


def test_a_custom_scale_equals_torch():
    rng = np.random.default_rng(4)
    Q, K, V = (rng.standard_normal((10, 3)) for _ in range(3))
    np.testing.assert_allclose(tiled_attention(Q, K, V, 3, 4, scale=2.5), torch_sdpa(Q, K, V, scale=2.5), **EXACT)


@pytest.mark.parametrize("scale", [None, 2.5])
def test_a_float32_problem_is_computed_in_float32_throughout(scale):
    rng = np.random.default_rng(5)
    Q, K, V = (rng.standard_normal((9, 4)).astype(np.float32) for _ in range(3))
    output, lse = tiled_attention(Q, K, V, 4, 3, causal=True, scale=scale, return_lse=True)
    assert output.dtype == lse.dtype == np.float32
    *problem, factor = _checked_problem(Q, K, V, 4, 3, True, scale)
    for *_, running_max, running_sum, acc in _tiles(*problem, True, factor):
        assert running_max.dtype == running_sum.dtype == acc.dtype == np.float32
    reference = torch_sdpa(*(M.astype(np.float64) for M in (Q, K, V)), scale=scale, causal=True)
    np.testing.assert_allclose(output, reference, rtol=1e-5, atol=1e-6)


def traced_peak(function) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_tracemalloc_sees_numpy_arrays_so_a_score_matrix_would_show():
    assert traced_peak(lambda: np.empty((4096, 4096))) >= 4096 * 4096 * 8  # 134 MB


@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_never_forms_the_score_matrix(causal):
    rng = np.random.default_rng(5)
    Q, K, V = (rng.standard_normal((4096, 64)) for _ in range(3))
    peak = traced_peak(lambda: tiled_attention(Q, K, V, block_q=128, block_k=128, causal=causal))
    assert peak < 16 * 10**6, f"peak traced memory {peak:,} bytes"


@pytest.mark.parametrize(
    "change, message, error",
    [
        ({"block_q": 0}, r"block_q must be a positive integer, got 0", ValueError),
        ({"block_k": -1}, r"block_k must be a positive integer, got -1", ValueError),
        ({"block_q": True}, r"block_q must be a positive integer, got True of type bool", TypeError),
        ({"block_k": np.bool_(True)}, r"block_k must be a positive integer", TypeError),
        ({"block_q": 4.0}, r"block_q must be a positive integer, got 4.0 of type float", TypeError),
        ({"block_k": np.float32(4)}, r"block_k must be a positive integer", TypeError),
        ({"block_k": None}, r"block_k must be a positive integer, got None", TypeError),
        ({"causal": 1}, r"causal must be True or False, got 1", TypeError),
        ({"K": np.zeros((5, 3))}, r"Q has d_k=4 but K has d_k=3", ValueError),
        ({"V": np.zeros((4, 2))}, r"K has seq_k=5 but V has seq_k=4", ValueError),
        ({"K": np.zeros((0, 4)), "V": np.zeros((0, 2))}, r"need at least one query, one key", ValueError),
        ({"Q": np.zeros((2, 0, 4))}, r"need at least one query, one key", ValueError),
        ({"K": np.zeros((3, 5, 4))}, r"batch dimensions of Q \(2,\) and K \(3,\) do not broadcast", ValueError),
        ({"Q": np.full((2, 6, 4), np.nan)}, r"Q of shape \(2, 6, 4\) contains NaN at index \(0, 0, 0\)", ValueError),
        ({"K": np.full((5, 4), np.inf)}, r"K of shape \(5, 4\) contains \+inf at index \(0, 0\)", ValueError),
        ({"Q": np.zeros(4)}, r"Q must have at least 2 dimensions", ValueError),
        ({"Q": np.zeros((2, 6, 4)), "causal": True}, r"seq_q=6 > seq_k=5: .* first 1 queries would have no key", ValueError),
        ({"scale": float("nan")}, r"scale must be a finite number", ValueError),
    ],
)
def test_tiled_attention_refuses_bad_input_naming_it(change, message, error):
    arguments = {"Q": np.zeros((2, 3, 4)), "K": np.zeros((5, 4)), "V": np.zeros((5, 2))} | change
    with pytest.raises(error, match=message):
        tiled_attention(**arguments)



@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the overflow is the point
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sign, message", [(1.0, r"overflow to \+inf or NaN"), (-1.0, r"overflowed to -inf")])
def test_scores_that_overflow_from_finite_inputs_are_refused_not_nan(sign, message, causal):
    """Regression (review): Q = K = 1e200 are finite but their scores are +inf; the loop
    returned NaN silently where attention.scaled_dot_product_attention raises."""
    huge = np.full((3, 2), 1e200)
    with pytest.raises(ValueError, match=message):
        tiled_attention(huge, sign * huge, np.ones((3, 2)), block_q=2, block_k=2, causal=causal)
    with pytest.raises(ValueError):
        scaled_dot_product_attention(huge, sign * huge, np.ones((3, 2)))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the overflow is the point
def test_a_row_whose_first_scores_overflow_to_minus_inf_still_gets_the_right_weights():
    """Regression (review): key 0's score overflows to -inf, later keys are finite; the
    running maximum starts at -inf and must not turn the row into NaN."""
    Q = np.array([[1e200, 1.0]])
    K = np.array([[-1e200, 0.0], [0.0, 1.0], [0.0, 2.0]])  # (3, 2): key 0 scores -inf
    V = np.arange(6.0).reshape(3, 2)
    expected, _ = scaled_dot_product_attention(Q, K, V, scale=1.0)
    for block_k in (1, 2, 3):
        np.testing.assert_allclose(tiled_attention(Q, K, V, 1, block_k, scale=1.0), expected, rtol=1e-12)


# ---------------------------------------------------------------- the traffic model


def count_tiled_loop(seq, d, block_q, block_k, causal):
    """Values moved by the loop of tiled_attention, counted tile by tile."""
    moved = 0
    for q_start in range(0, seq, block_q):
        rows = min(block_q, seq - q_start)
        moved += rows * d + rows * d + rows  # read Q block; write output and lse
        for k_start in range(0, seq, block_k):
            if causal and k_start > q_start + rows - 1:
                continue  # no row of this block may see these keys
            moved += 2 * min(block_k, seq - k_start) * d  # read K and V blocks
    return moved


@pytest.mark.parametrize("seq, d, block_q, block_k", [(1, 1, 1, 1), (10, 3, 4, 3), (64, 8, 16, 16),
                                                      (37, 5, 8, 11), (5, 2, 9, 9)])
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_traffic_counts_what_the_loop_reads_and_writes(seq, d, block_q, block_k, causal):
    assert tiled_traffic(seq, d, block_q, block_k, causal) == count_tiled_loop(seq, d, block_q, block_k, causal)


def test_traffic_grows_as_the_paper_says():
    d, block = 64, 128
    for seq in (1024, 2048, 4096):
        naive, tiled = naive_traffic(seq, d), tiled_traffic(seq, d, block, block)
        assert naive > 4 * seq * seq and tiled < naive
        assert naive_traffic(2 * seq, d) / naive == pytest.approx(4, rel=0.1)  # ~ N^2
        assert tiled_traffic(2 * seq, d, block, block) / tiled == pytest.approx(4, rel=0.1)  # ~ N^2 d / B_q
    # Doubling the query block (twice the fast memory) halves the re-reads of K and V.
    assert tiled_traffic(4096, d, 256, 128) / tiled_traffic(4096, d, 128, 128) == pytest.approx(0.5, rel=0.05)
    assert tiled_traffic(4096, d, 128, 128, causal=True) < 0.6 * tiled_traffic(4096, d, 128, 128)


def test_fast_memory_counts_every_array_the_loop_holds():
    block_q, block_k, d = 3, 5, 4
    held = {"Q block": block_q * d, "K block": block_k * d, "V block": block_k * d,
            "score tile": block_q * block_k, "running output": block_q * d, "max and sum": 2 * block_q}
    assert fast_memory_values(block_q, block_k, d) == sum(held.values())


@pytest.mark.parametrize("function, arguments, message, error", [
    (naive_traffic, (0, 4), r"seq must be a positive integer", ValueError),
    (tiled_traffic, (8, 4, 2.0, 2), r"block_q must be a positive integer", TypeError),
    (fast_memory_values, (2, True, 4), r"block_k must be a positive integer", TypeError),
])
def test_the_traffic_model_refuses_bad_sizes(function, arguments, message, error):
    with pytest.raises(error, match=message):
        function(*arguments)


# ---------------------------------------------------------------- the loop, step by step


@pytest.mark.parametrize("seq, block_q, block_k, causal", [(12, 4, 3, True), (12, 4, 3, False), (7, 3, 2, True),
                                                           (5, 8, 8, False)])
def test_the_trace_is_the_loop_of_tiled_attention(seq, block_q, block_k, causal):
    rng = np.random.default_rng(seq)
    Q, K, V = (rng.standard_normal((seq, 3)) for _ in range(3))
    steps = tiled_trace(Q, K, V, block_q, block_k, causal=causal)
    order = [((rows.start, rows.stop), (cols.start, cols.stop))
             for rows, key_blocks in tile_order(seq, seq, block_q, block_k, causal) for cols in key_blocks]
    assert [(step["rows"], step["cols"]) for step in steps] == order
    output = tiled_attention(Q, K, V, block_q, block_k, causal=causal)
    for step, following in zip(steps, steps[1:] + [None]):
        if following is None or following["rows"] != step["rows"]:  # the block's last tile
            start, stop = step["rows"]
            finished = np.array(step["o"]) / np.array(step["l"])[:, None]
            np.testing.assert_allclose(finished, output[start:stop], **EXACT)
    assert steps[-1]["read"] + steps[-1]["written"] == tiled_traffic(seq, 3, block_q, block_k, causal)
    reads = [step["read"] for step in steps]
    assert reads == sorted(reads)  # counters only grow


def test_the_trace_shows_the_running_maximum_of_the_scores_seen():
    rng = np.random.default_rng(3)
    Q, K, V = (rng.standard_normal((6, 2)) for _ in range(3))
    scores = Q @ K.T / np.sqrt(2)
    for step in tiled_trace(Q, K, V, 3, 2):
        (r0, r1), (_, c1) = step["rows"], step["cols"]
        np.testing.assert_allclose(step["m"], scores[r0:r1, :c1].max(axis=1), **EXACT)
        np.testing.assert_allclose(step["l"], np.exp(scores[r0:r1, :c1] - np.array(step["m"])[:, None]).sum(axis=1),
                                   **EXACT)


def test_the_trace_shows_one_head_only():
    with pytest.raises(ValueError, match=r"tiled_trace shows one head"):
        tiled_trace(np.zeros((2, 3, 4)), np.zeros((3, 4)), np.zeros((3, 4)), 2, 2)


def test_a_value_read_is_worth_the_operations_per_byte_in_multiply_adds():
    chip = Chip("toy", operations_per_second=8.0, bytes_per_second={1: 2.0}, processors=1, fast_memory_bytes=4)
    assert multiply_adds_per_value_read(chip, 1) == 4.0  # 4 multiply-adds a second, 1 fp16 value read
    assert multiply_adds_per_value_read(A100, 80) < multiply_adds_per_value_read(A100, 40)  # faster memory
    with pytest.raises(ValueError, match=r"memory_gb of the A100 is one of \[40, 80\], not 60"):
        multiply_adds_per_value_read(A100, 60)
