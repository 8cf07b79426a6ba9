"""Chapter 9's claims about random quantities, over ten seeds (review of issue #26).

The chapter states them for its seed: the mask changes every row of causal attention but the
last; the KV cache and the tiled loop agree with the full computation to rounding, which is
not 0 for the tiles; torch's top-left causal alignment differs from the bottom-right one
the last queries need.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attncourse import checks
from attncourse.attention import causal_mask, scaled_dot_product_attention
from attncourse.checks import wire
from attncourse.explorers.flash_explorer import default_problem
from attncourse.explorers.kv_cache_explorer import PRESETS, KVCacheCalculator, preset_for
from attncourse.flash import (
    A100,
    fast_memory_values,
    multiply_adds_per_value_read,
    naive_traffic,
    tile_order,
    tiled_attention,
    tiled_traffic,
)
from attncourse.kv_cache import (
    decode_with_cache,
    decoding_mask,
    kv_cache_bytes,
    prefill,
    step_multiply_adds,
)
from attncourse.multihead import multi_head_attention, projection_shapes, split_heads
from tests.checks_feedback import feedback, learner_mode  # noqa: F401 (an autouse fixture)
from tests.markdown_of import markdown_of
from tests.node_module import call_in_node

pytestmark = pytest.mark.slow
SEEDS = range(10)


def chapter_layer(seed: int):
    """The chapter's toy layer: 10 tokens, d_model 16, 4 query heads sharing 2 kv heads of 4."""
    rng = np.random.default_rng(seed)
    shapes = projection_shapes(16, 4, 4, n_kv_heads=2)
    weights = [rng.standard_normal(shape) / np.sqrt(shape[0]) for shape in shapes.values()]
    return rng.standard_normal((10, 16)), dict(zip(("W_q", "W_k", "W_v", "W_o"), weights),
                                                n_heads=4, n_kv_heads=2)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_mask_changes_every_row_but_the_last_and_the_cache_changes_none(seed):
    X, layer = chapter_layer(seed)
    full, _ = multi_head_attention(X, **layer, mask=causal_mask(10))
    unmasked, _ = multi_head_attention(X, **layer)
    change = np.abs(unmasked - full).max(axis=1)  # (seq,)
    assert (change[:-1] > 1e-6).all() and change[-1] < 1e-12
    assert np.abs(decode_with_cache(X, **layer) - full).max() < 1e-12


@pytest.mark.parametrize("seed", SEEDS)
def test_tiles_round_differently_but_within_1e_12_and_torch_aligns_top_left(seed):
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((2, 3, 100, 16)) for _ in range(3))
    ours = tiled_attention(Q, K, V, 7, 13, causal=True)
    direct, _ = scaled_dot_product_attention(Q, K, V, mask=causal_mask(100))
    assert 0 < np.abs(ours - direct).max() < 1e-12
    last = tiled_attention(Q[..., -3:, :], K, V, causal=True)
    top_left = F.scaled_dot_product_attention(*(torch.tensor(M) for M in (Q[..., -3:, :], K, V)),
                                              is_causal=True).numpy()
    assert np.abs(last - ours[..., -3:, :]).max() < 1e-12
    assert np.abs(top_left - ours[..., -3:, :]).max() > 0.1


# --- issue 36, item 14: chapter 9's functions and bad input ---------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_infinity_in_v_is_refused_as_in_q_and_k(bad):
    """Issue 36: tiled_attention refused NaN in Q and K but let it through V into the
    output (a NaN column); so did decode_with_cache through W_v (every output NaN)."""
    X, layer = chapter_layer(0)
    Q, K, V = X[:, :4], X[:, 4:8], X[:, 8:].copy()
    V[3, 2] = bad
    with pytest.raises(ValueError, match=r"V of shape \(10, 8\) contains (NaN|[+-]inf) at index \(3, 2\)"):
        tiled_attention(Q, K, V, 4, 4)
    with pytest.raises(ValueError, match=r"V of shape \(10, 8\) contains (NaN|[+-]inf) at index \(3, 2\)"):
        scaled_dot_product_attention(Q, K, V)
    W_v = layer["W_v"].copy()
    W_v[5, 1] = bad
    with pytest.raises(ValueError, match=r"W_v of shape \(16, 8\) contains (NaN|[+-]inf) at index \(5, 1\)"):
        decode_with_cache(X, **(layer | {"W_v": W_v}))


def test_the_tile_order_refuses_the_causal_problem_the_loop_refuses():
    """Issue 36: tile_order(5, 3, 2, 2, causal=True) listed query block 0..1 with no key block
    at all, where tiled_attention raised. A query that may see no key has no softmax (the
    chapter says so of online_softmax): the schedule refuses it too, with the loop's words,
    rather than show a learner a block that would divide 0 by 0."""
    message = r"causal attention with seq_q=5 > seq_k=3: aligned bottom-right, the first 2 queries would have no key"
    with pytest.raises(ValueError, match=message):
        tile_order(5, 3, 2, 2, causal=True)
    with pytest.raises(ValueError, match=message):
        tiled_attention(np.ones((5, 2)), np.ones((3, 2)), np.ones((3, 2)), 2, 2, causal=True)
    assert all(cols for _, cols in tile_order(3, 5, 2, 2, causal=True))  # every block sees a key
    assert tile_order(5, 3, 2, 2)[0][1] == [range(0, 2), range(2, 3)]  # without the mask, nothing to refuse


@pytest.mark.parametrize("n_kv_heads", [5, 24, 7])
def test_the_work_per_step_needs_kv_heads_that_divide_the_query_heads(n_kv_heads):
    """Issue 36: step_multiply_adds counted a layer of 12 query heads sharing 5 (or 24)
    key/value heads, a layer multi_head_attention refuses."""
    with pytest.raises(ValueError, match=rf"n_kv_heads={n_kv_heads} must divide n_heads=12"):
        step_multiply_adds(3, 768, 12, 64, n_kv_heads=n_kv_heads)
    with pytest.raises(ValueError, match=rf"n_kv_heads={n_kv_heads} must divide n_heads=12"):
        projection_shapes(768, 12, 64, n_kv_heads=n_kv_heads)
    assert step_multiply_adds(3, 768, 12, 64, n_kv_heads=4) < step_multiply_adds(3, 768, 12, 64)


# --- issue 36, items 3, 11 and 17: what the chapter says of masks, tiles and the cache ---


def test_the_explorer_text_says_the_mask_changes_every_row_but_the_last():
    """Issue 36 item 3: "change the block sizes or the mask and step again: the final output
    of every row stays the same", where turning the mask off changes 11 of the 12 rows."""
    text = markdown_of(9)
    assert "block sizes or the mask and step again" not in text
    assert "The mask is another matter" in text
    for seed in SEEDS:  # the explorer's problem is seed 9; any draw behaves alike
        problem = default_problem(seed=seed)
        causal, _ = scaled_dot_product_attention(**problem, mask=causal_mask(12))
        open_, _ = scaled_dot_product_attention(**problem)
        changed = np.abs(causal - open_).max(axis=1) > 1e-12
        assert changed[:-1].all() and not changed[-1]
        for blocks in [(4, 3), (1, 12), (5, 7)]:  # the block sizes change nothing but rounding
            assert np.abs(tiled_attention(**problem, block_q=blocks[0], block_k=blocks[1], causal=True)
                          - causal).max() < 1e-12


@pytest.mark.parametrize("seed", SEEDS)
def test_one_tile_rounds_differently_too(seed):
    """Issue 36 item 11: the chapter blamed the tiles' order of addition for the difference
    from the direct computation; a single tile also differs, since the loop multiplies by V
    before it divides by l."""
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((2, 3, 100, 16)) for _ in range(3))
    direct, _ = scaled_dot_product_attention(Q, K, V)
    assert 0 < np.abs(tiled_attention(Q, K, V, 100, 100) - direct).max() < 1e-12
    text = markdown_of(9)
    assert "Not to 0: the tiles add the same terms in another order" not in text
    assert "a single tile that holds every score" in text


@pytest.mark.parametrize("seed", SEEDS)
def test_a_left_padded_batch_needs_a_padding_mask_at_every_decoding_step(seed):
    """Issue 36 item 11: "one new query ... needs no mask at all"; a left-padded sequence's
    tokens all move without a padding mask, the last step's included."""
    X, layer = chapter_layer(seed)
    pad_token = np.random.default_rng(seed + 100).standard_normal(16)
    padded = np.concatenate([np.tile(pad_token, (3, 1)), X[:7]])  # (10, d_model)
    padding = np.arange(10) < 3
    alone = decode_with_cache(X[:7], **layer)
    assert np.abs(decode_with_cache(padded, **layer, padding=padding)[3:] - alone).max() < 1e-12
    assert (np.abs(decode_with_cache(padded, **layer)[3:] - alone).max(axis=1) > 1e-3).all()
    text = markdown_of(9)
    assert "needs no mask at all" not in text
    assert "padding mask" in text and "at every step" in text


def test_the_cache_is_capped_by_a_sliding_window_and_flash_2_keeps_the_log_sum_exp():
    """Issue 36 item 11: "the cache grows with every token" (Mistral-7B v0.1's window caps
    it); the unnormalised output and one log-sum-exp per row are FlashAttention-2's; the
    traffic lines are parallel only for N much larger than the query block."""
    text = markdown_of(9)
    assert "The cache grows with every token" not in text
    assert "Unless each query looks back a fixed distance only" in text
    assert "as FlashAttention-2 does" in text and "FlashAttention-2's backward pass keeps" in text
    assert "so the lines are parallel on a log-log scale" not in text
    assert "the lines become parallel" in text
    X, layer = chapter_layer(0)
    _, K_cache, _ = decode_with_cache(X, **layer, window=4, return_cache=True)
    assert K_cache.shape[-2] == 4  # 4 slots after 10 tokens
    block_q = max(b for b in range(1, 2**16) if fast_memory_values(b, 16, 64) <= 2**16)
    slope = np.log(tiled_traffic(2048, 64, block_q, 16) / tiled_traffic(1024, 64, block_q, 16)) / np.log(2)
    assert slope < 1.7 and tiled_traffic(block_q, 64, block_q, 16) == 4 * block_q * 64 + block_q


@pytest.mark.parametrize("seed", SEEDS)
def test_a_prompt_read_at_once_then_decoded_is_the_full_computation(seed):
    """Issue 36 item 17: prefill, then decode from its cache; the chapter explains both, the
    padding mask, a rolling cache, why no queries are cached, and what bounds each phase."""
    X, layer = chapter_layer(seed)
    full, _ = multi_head_attention(X, **layer, mask=causal_mask(10))
    prompt, K, V = prefill(X[:6], **layer)
    rest = decode_with_cache(X[6:], **layer, cache=(K, V))
    assert np.abs(np.concatenate([prompt, rest]) - full).max() < 1e-12
    text = markdown_of(9)
    for phrase in ("*prefill*", "*decode*", "*memory-bound*", "*compute-bound*", "*rolling buffer*",
                   "Why a cache of keys and values, and none of queries?"):
        assert phrase in text


# --- issue 36, second reading (sci5): what a reviewer recomputed in chapter 9 ----------


def _chunks(X, layer, pieces, window, padding=None):
    """Decode X in pieces of the given lengths, each call continuing from the cache the
    last one returned, with ``padding`` (seq,) sliced to the positions each call sees."""
    outputs, cache, start = [], None, 0
    for length in pieces:
        held = 0 if cache is None else cache[0].shape[-2]
        pad = None if padding is None else padding[start - held:start + length]
        out, K, V = decode_with_cache(X[start:start + length], **layer, cache=cache, padding=pad,
                                      window=window, return_cache=True)
        outputs.append(out)
        cache, start = (K, V), start + length
    return np.concatenate(outputs), cache


@pytest.mark.parametrize("seed", SEEDS)
def test_a_windowed_cache_handed_back_continues_the_banded_computation(seed):
    """sci5 finding 2: decode_with_cache(window=W, return_cache=True) returned its rolling
    buffer in slot order (position p in slot p % W); handed back as cache=, it was read in
    position order and every later row was off (0.63 to 0.79 on the chapter's layer). The
    cache now comes back in position order, the last W positions, and continues exactly."""
    X, layer = chapter_layer(seed)
    banded, _ = multi_head_attention(X, **layer, mask=decoding_mask(10, window=4))
    first, K, V = decode_with_cache(X[:6], **layer, window=4, return_cache=True)
    keys = split_heads(X @ layer["W_k"], 2)  # (n_kv_heads, seq, d_head)
    np.testing.assert_allclose(K, keys[:, 2:6], rtol=0, atol=1e-12)  # positions 2..5, in order
    rest = decode_with_cache(X[6:], **layer, window=4, cache=(K, V))
    assert np.abs(np.concatenate([first, rest]) - banded).max() < 1e-12
    for pieces in ([3, 1, 4, 2], [1] * 10, [5, 5], [2, 8]):
        chained, (K_end, _) = _chunks(X, layer, pieces, window=4)
        assert np.abs(chained - banded).max() < 1e-12, pieces
        np.testing.assert_allclose(K_end, keys[:, 6:], rtol=0, atol=1e-12)
    padding = np.arange(10) < 3  # three pad tokens in front, the padding sliced to what each call holds
    expected, _ = multi_head_attention(X, **layer, mask=decoding_mask(10, padding, window=4))
    expected[:3] = 0.0
    chained, _ = _chunks(X, layer, [2, 3, 1, 4], window=4, padding=padding)
    assert np.abs(chained - expected).max() < 1e-12


def test_the_padding_flags_are_described_as_padding_when_refused():
    """sci5 finding 3: integer padding flags were refused with "padding must be boolean
    (True = may attend)", the opposite of what padding's True means."""
    X, layer = chapter_layer(0)
    with pytest.raises(TypeError, match=r"padding must be boolean \(True where a position holds padding\), "
                                        r"got dtype int64") as refused:
        decode_with_cache(X, **layer, padding=np.zeros(10, dtype=int))
    assert "may attend" not in str(refused.value)
    with pytest.raises(TypeError, match=r"padding must be boolean \(True where a position holds padding\)"):
        prefill(X, **layer, padding=[0] * 10)
    with pytest.raises(TypeError, match=r"mask must be boolean \(True = may attend\)"):
        scaled_dot_product_attention(X, X, X, mask=np.ones((10, 10)))  # a mask's True still means may attend


def test_a_preset_chosen_stays_chosen_when_another_has_its_shape():
    """sci5 finding 4: the KV-cache calculator showed "Llama-3-8B (GQA)" when "Mistral-7B
    (GQA)" was picked, both being 32 layers of 8 key/value heads of 128: it named the first
    preset of the shape. The preset picked stays picked, in Python and in the browser's code,
    and the readout names it."""
    calculator = KVCacheCalculator("Mistral-7B (GQA)", seq_len=32768)
    assert calculator.preset == "Mistral-7B (GQA)"
    calculator.seq_len, calculator.batch = 4096, 4  # the context and the batch leave the model alone
    assert calculator.preset == "Mistral-7B (GQA)"
    calculator.n_kv_heads = 4
    assert calculator.preset == ""  # no preset's shape: custom
    calculator.n_kv_heads = 8
    assert calculator.preset == "Llama-3-8B (GQA)"  # typed back by hand: the first preset of that shape
    calculator.preset = "Mistral-7B (GQA)"
    assert calculator.preset == "Mistral-7B (GQA)" and calculator.cache_bytes == kv_cache_bytes(32, 8, 128, 4096, 4)
    calculator.preset = "Falcon-7B (MQA)"
    assert (calculator.n_layers, calculator.n_kv_heads, calculator.d_head) == PRESETS["Falcon-7B (MQA)"]
    presets = {name: list(shape) for name, shape in PRESETS.items()}
    shapes = [dict(zip(("n_layers", "n_kv_heads", "d_head"), shape)) for shape in ((32, 8, 128), (32, 8, 128), (3, 2, 1))]
    problems = [{"presets": presets, "chosen": chosen, "shape": shape}
                for chosen, shape in zip(("Mistral-7B (GQA)", "", "Mistral-7B (GQA)"), shapes)]
    shown = call_in_node("kv_cache_explorer.js", "presetFor", problems, "problem.presets, problem.chosen, problem.shape")
    assert shown == ["Mistral-7B (GQA)", "Llama-3-8B (GQA)", ""]
    assert shown == [preset_for(p["chosen"], tuple(p["shape"].values())) for p in problems]


@pytest.mark.parametrize("typed", [Decimal("2.5"), np.array(2.5), np.array(2.5, dtype=np.float32),
                                   np.array(5, dtype=np.int64) / 2, Fraction(5, 2)])
def test_the_cache_size_prediction_takes_any_real_number_a_learner_may_hold(capsys, typed):
    """sci5 finding 6: predict_cache_size refused Decimal("2.5") and np.array(2.5) ("write your
    prediction as one number ... got a Decimal"), both the right 2.5 GiB. The learner's check
    and the grader (which reads the recorded answer back through the wire) both take them."""
    line = feedback(capsys, checks.predict_cache_size, typed)
    assert line.startswith("[ch9-predict-cache-size] Passed. you predicted 2.5;"), line
    assert "Passed." in feedback(capsys, checks.predict_cache_size, wire.decode(wire.encode(typed)))
    for wrong in (Decimal("3"), np.array(3.0)):  # still judged, not waved through
        assert "Not right yet." in feedback(capsys, checks.predict_cache_size, wrong)
    for refused in (np.array([2.5]), Decimal("NaN"), np.array(True), complex(2.5, 0)):
        assert "write your prediction as" in feedback(capsys, checks.predict_cache_size, refused)


def test_prefill_is_compute_bound_only_for_a_kernel_that_tiles_on_a_chip_that_allows_it():
    """sci5 finding 1: "Prefill, at 8,194 (counted with each key and value read once) ... is
    compute-bound". The chapter's own traffic model gives 31 multiply-adds per value moved
    for a direct computation of a Llama-3-8B head over 4,096 tokens, below an A100's 153-201
    (312 TFLOPS fp16 over 2.039 or 1.555 TB/s): memory-bound; tiles that fill one of its
    processors' 192 KB reach about 271. The chapter now says so, with the chip's ratio cited."""
    n, width = 4096, 128
    head_adds = width * n * (n + 1)  # causal: N (N + 1) / 2 scores and weighted values of width d
    ratios = [312e12 / bandwidth for bandwidth in (2.039e12, 1.555e12)]  # multiply-adds per fp16 value
    assert [multiply_adds_per_value_read(A100, gb) for gb in (80, 40)] == pytest.approx(ratios, rel=1e-15)
    assert A100.fast_memory_bytes == 192 * 1024
    block_q = max(b for b in range(1, n + 1) if fast_memory_values(b, 16, width) <= 192 * 1024 // 2)
    direct, tiled = head_adds / naive_traffic(n, width), head_adds / tiled_traffic(n, width, block_q, 16, causal=True)
    assert 30 < direct < ratios[0] < ratios[1] < tiled
    half = max(b for b in range(1, n + 1) if fast_memory_values(b, 16, width) <= 2**15)
    assert head_adds / tiled_traffic(n, width, half, 16, causal=True) < ratios[0]  # a third of it: memory-bound
    text = markdown_of(9)
    assert "keeps the arithmetic busy: it is *compute-bound*. That is why" not in text
    assert "memory-bound on an A100 too" in text and "{cite}`nvidia2020a100`" in text
    assert "Compute-bound or memory-bound is a property of a kernel on a chip, not of prefill itself." in text


def test_the_work_saved_by_the_cache_is_said_to_be_attention_s():
    """sci5 finding 5: "over all 1,024 steps, without the cache is 555 times the work": the
    count is one attention layer's (step_multiply_adds has no MLP). The chapter says so and
    counts GPT-2's block with its MLP too (about 530 times)."""
    assert step_multiply_adds(0, 768, 12, 64) == 4 * 768 * 768 + 2 * 768  # projections, W_O, one score and value
    text = markdown_of(9)
    assert "without the cache is {glue:text}`total_ratio:,.0f` times the work" not in text
    assert "That counts attention alone." in text and "{glue:text}`block_ratio:,.0f`" in text
