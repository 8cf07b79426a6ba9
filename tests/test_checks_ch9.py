"""Checks of chapter 9's exercises: right answers pass, stubs are "not implemented", each
typical mistake gets the message that names it, and no answer crashes a check."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse import checks
from attncourse.checks import ch9
from attncourse.checks.predict import PREDICTIONS
from attncourse.flash import fast_memory_values, tiled_traffic
from attncourse.kv_cache import kv_cache_bytes
from tests.checks_feedback import feedback, learner_mode  # noqa: F401 (an autouse fixture)

# --- ch9-predict-cache-size --------------------------------------------------------------


def test_the_cache_answer_is_the_formula_for_llama_3_70b():
    assert ch9.LLAMA_3_70B == {"n_layers": 80, "n_kv_heads": 8, "d_head": 128, "seq_len": 8192,
                               "batch": 1, "bytes_per_value": 2}
    assert PREDICTIONS["ch9-predict-cache-size"].answer == 2.5  # 2*80*8*128*8192*2 = 2.5 * 2**30
    assert kv_cache_bytes(**ch9.LLAMA_3_70B) == 2 * 80 * 8 * 128 * 8192 * 2


def test_predict_cache_size_hints_before_it_tells(capsys):
    assert "Not implemented yet." in feedback(capsys, checks.predict_cache_size, None)
    first = feedback(capsys, checks.predict_cache_size, 10.0)
    assert "Hint:" in first and "2.5" not in first
    assert "the answer is 2.5" in feedback(capsys, checks.predict_cache_size, 10.0)
    assert "Passed." in feedback(capsys, checks.predict_cache_size, 2.5)
    assert "Passed." in feedback(capsys, checks.predict_cache_size, 2.52)


# --- ch9-online-softmax --------------------------------------------------------------------


def reference(blocks):
    """A right answer: a running maximum and sum, rescaled when the maximum grows."""
    m, total = None, None
    for block in blocks:
        block_max = block.max(axis=-1)
        if m is None:
            m, total = block_max, np.zeros(block_max.shape)
        new_m = np.maximum(m, block_max)
        safe = np.where(np.isneginf(new_m), 0.0, new_m)
        total = total * np.exp(np.where(np.isneginf(m), -np.inf, m - safe)) + np.exp(block - safe[..., None]).sum(axis=-1)
        m = new_m
    return m, total


def no_rescaling(blocks):
    m, total = -np.inf, 0.0
    for block in blocks:
        m = np.maximum(m, block.max(axis=-1))
        total = total + np.exp(block - m[..., None]).sum(axis=-1)
    return m, total


def naive_minus_infinity(blocks):
    m, total = None, None
    for block in blocks:
        new_m = block.max(axis=-1) if m is None else np.maximum(m, block.max(axis=-1))
        total = (0 if total is None else total * np.exp(m - new_m)) + np.exp(block - new_m[..., None]).sum(axis=-1)
        m = new_m
    return m, total


def two_passes(blocks):
    x = np.concatenate(list(blocks), axis=-1)
    m = x.max(axis=-1)
    rest = np.concatenate(list(blocks), axis=-1)  # the generator is spent: this is empty
    return m, np.exp(rest - m[..., None]).sum(axis=-1)


def no_max_at_all(blocks):
    m, total = -np.inf, 0.0
    for block in blocks:
        m = np.maximum(m, block.max(axis=-1))
        total = total + np.exp(block).sum(axis=-1)
    return m, total / np.exp(m)


def stub(blocks):
    raise NotImplementedError("write online_normaliser")


def test_the_reference_passes(capsys):
    assert "Passed." in feedback(capsys, checks.online_softmax, reference)


@pytest.mark.parametrize("answer, expected", [
    (stub, "Not implemented yet."),
    (no_rescaling, "multiply it by exp(m - m')"),
    (naive_minus_infinity, "-inf - (-inf) is NaN"),
    (two_passes, "Not right yet."),
    (no_max_at_all, "overflows to inf"),
    (lambda blocks: None, "did you forget `return m, l`"),
    (lambda blocks: 3.0, "expected a pair (m, l)"),
    (lambda blocks: (np.zeros(2), np.zeros(2)), "m has shape (2,), expected ()"),
    (np.ones(3), "expected the function online_normaliser"),
])
def test_typical_mistakes_are_named(capsys, answer, expected):
    assert expected in feedback(capsys, checks.online_softmax, answer)


def test_an_answer_that_changes_its_blocks_is_refused(capsys):
    def scribbles(blocks):
        blocks = list(blocks)
        result = reference(iter([b.copy() for b in blocks]))
        blocks[0][...] = 0.0
        return result

    assert "changed a block" in feedback(capsys, checks.online_softmax, scribbles)


def test_an_answer_that_stores_the_blocks_and_reads_them_at_the_end_is_refused(capsys):
    """Regression (review): list(blocks) then concatenate is two passes, not the online
    softmax, and passed while the check's generator yielded fresh arrays."""
    def keeps_them(blocks):
        x = np.concatenate(list(blocks), axis=-1)  # (..., n)
        m = x.max(axis=-1)
        return m, np.exp(x - m[..., None]).sum(axis=-1)

    message = feedback(capsys, checks.online_softmax, keeps_them)
    assert "Not right yet." in message and "one buffer that the next block overwrites" in message


def copies_and_reads_twice(blocks):
    """Two passes in disguise, past the shared buffer: every block copied, then the row."""
    x = np.concatenate([np.array(block) for block in blocks], axis=-1)  # (..., n)
    m = x.max(axis=-1)
    with np.errstate(invalid="ignore"):
        return m, np.nan_to_num(np.exp(x - m[..., None])).sum(axis=-1)


def test_an_answer_that_copies_every_block_to_read_them_again_is_refused_by_the_memory_it_holds(capsys):
    message = feedback(capsys, checks.online_softmax, copies_and_reads_twice)
    assert "Not right yet." in message and "blocks of 32 KiB" in message and "never the blocks" in message


def test_one_maximum_shared_by_every_row_of_a_batch_is_named(capsys):
    """Regression (review): a scalar running maximum passed while no batch held rows far apart."""
    def one_maximum(blocks):
        shared, total, row_max = -np.inf, None, None
        for block in blocks:
            grown = max(shared, float(block.max()))
            part = np.exp(block - grown).sum(axis=-1)
            total = part if total is None else total * np.exp(shared - grown) + part
            row_max = block.max(axis=-1) if row_max is None else np.maximum(row_max, block.max(axis=-1))
            shared = grown
        return row_max, total * np.exp(shared - row_max)

    assert "keep one maximum per row" in feedback(capsys, checks.online_softmax, one_maximum)


def test_the_grader_judges_the_memory_the_sandbox_measured():
    from attncourse.instructor import replay
    from tests.test_instructor_wire import recorded

    held = recorded("ch9-online-softmax", copies_and_reads_twice)
    assert max(call.get("peak", 0) for call in held["calls"]) > ch9.HELD_BLOCKS * 8 * 512 * 8  # (8, 512) float64
    assert "never the blocks" in replay.judge_check("ch9-online-softmax", held).message
    assert replay.judge_check("ch9-online-softmax", recorded("ch9-online-softmax", reference)).status == checks.PASSED


def test_an_endless_loop_is_stopped(capsys):
    def forever(blocks):
        while True:
            pass

    assert "did not return within the time budget" in feedback(capsys, checks.online_softmax, forever, timeout=0.5)


# --- ch9-tune-blocks ------------------------------------------------------------------------


def test_the_least_traffic_is_found_by_brute_force_over_every_pair():
    # Without the mask every query block reads all of K and V: 2 N d (Q, output) + N (lse)
    # + ceil(N / block_q) 2 N d (tiled_traffic is checked against a loop in test_flash).
    fitting = [(bq, bk) for bq in range(1, 400) for bk in range(16, 300) if fast_memory_values(bq, bk, 128) <= 32768]
    best = min(2 * 4096 * 128 + 4096 + -(-4096 // bq) * 2 * 4096 * 128 for bq, _ in fitting)
    assert ch9.least_traffic() == best


def test_the_starting_blocks_fit_but_are_not_best():
    assert fast_memory_values(32, 32, 128) <= 32768
    assert tiled_traffic(4096, 128, 32, 32) > ch9.least_traffic()


def best_blocks():
    """The largest block_q that fits with block_k = 16 (found here by a loop of its own)."""
    block_q = 1
    while fast_memory_values(block_q + 1, 16, 128) <= 32768:
        block_q += 1
    return block_q, 16


def test_tune_blocks_passes_the_best_blocks_and_others_of_equal_traffic(capsys):
    block_q, block_k = best_blocks()
    assert "Passed." in feedback(capsys, checks.tune_blocks, block_q, block_k)
    assert "Passed." in feedback(capsys, checks.tune_blocks, np.int64(block_q), np.int32(block_k))
    # A smaller block_q with as many query blocks moves as much.
    smaller = block_q - 1
    assert tiled_traffic(4096, 128, smaller, 16) == tiled_traffic(4096, 128, block_q, 16)
    assert "Passed." in feedback(capsys, checks.tune_blocks, smaller, 16)


@pytest.mark.parametrize("answer, expected", [
    ((32, 32), "Not implemented yet."),
    ((64, 32), "the least possible is"),
    ((48, 64), "Spend the memory on block_q"),
    ((512, 16), "more than the 32,768 it has"),
    ((200, 8), "below 16"),
    ((200.0, 16), "block_q must be a positive whole number"),
    ((True, 16), "block_q must be a positive whole number"),
    ((200, "16"), "block_k must be a positive whole number"),
    ((0, 16), "block_q must be a positive whole number"),
    ((None, None), "block_q must be a positive whole number"),
    ((np.array([0.0, 0.0]), None), "block_q must be a positive whole number"),
])
def test_tune_blocks_names_what_is_wrong(capsys, answer, expected):
    assert expected in feedback(capsys, checks.tune_blocks, *answer)
