"""Tests of ``attncourse.kv_cache``: the cache's size for real models (exact beyond 2**63),
decoding with the cache equal to causal multi-head attention (and torch) to 1e-12, the
cache doing the work, and the multiply-add counts."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attncourse import kv_cache
from attncourse.attention import causal_mask
from attncourse.kv_cache import (
    decode_with_cache,
    decoding_mask,
    kv_cache_bytes,
    prefill,
    step_multiply_adds,
)
from attncourse.multihead import multi_head_attention, projection_shapes, split_heads

FAST = settings(max_examples=50, deadline=None)
EXACT = {"rtol": 0, "atol": 1e-12}
GiB = 2**30


# ---------------------------------------------------------------- the size of the cache


def test_real_models_cache_sizes():
    # Llama-2-7B: 32 layers, 32 kv heads of 128; 4096 tokens in fp16.
    assert kv_cache_bytes(32, 32, 128, 4096) == 2 * GiB
    # Llama-3-8B and Mistral-7B: grouped-query attention with 8 kv heads, a quarter of it.
    assert kv_cache_bytes(32, 8, 128, 4096) == kv_cache_bytes(32, 32, 128, 4096) // 4 == 536_870_912
    # GPT-2 small, 12 layers of 12 heads of 64, its full context of 1024 tokens, fp32.
    assert kv_cache_bytes(12, 12, 64, 1024, bytes_per_value=4) == 2 * 12 * 12 * 64 * 1024 * 4


def test_the_size_is_the_product_of_its_factors_in_each_argument():
    base = kv_cache_bytes(2, 3, 5, 7, batch=11, bytes_per_value=13)
    assert base == 2 * 2 * 3 * 5 * 7 * 11 * 13
    for name in ("n_layers", "n_kv_heads", "d_head", "seq_len", "batch", "bytes_per_value"):
        arguments = {"n_layers": 2, "n_kv_heads": 3, "d_head": 5, "seq_len": 7, "batch": 11,
                     "bytes_per_value": 13}
        arguments[name] *= 2
        assert kv_cache_bytes(**arguments) == 2 * base, name


def test_the_size_is_exact_beyond_2_to_the_63():
    size = kv_cache_bytes(2**20, 2**10, 2**10, 2**20, batch=2**5, bytes_per_value=8)
    assert size == 2**69 and isinstance(size, int)
    assert kv_cache_bytes(np.int64(2**40), np.int64(2**40), 3, 1) == 12 * 2**80  # numpy ints: no wrap
    assert kv_cache_bytes(10**10 + 1, 3, 7, 10**10 + 3) == 2 * (10**10 + 1) * 21 * (10**10 + 3) * 2  # fp16 by default


@pytest.mark.parametrize("name", ["n_layers", "n_kv_heads", "d_head", "seq_len", "batch", "bytes_per_value"])
@pytest.mark.parametrize("bad", [0, -1, True, 2.5, 32.0, np.float64(4.0), "8", None])
def test_the_size_refuses_non_positive_or_non_integer_arguments(name, bad):
    arguments = {"n_layers": 2, "n_kv_heads": 3, "d_head": 5, "seq_len": 7} | {name: bad}
    error = ValueError if type(bad) is int else TypeError  # a wrong size, or not an integer at all
    with pytest.raises(error, match=f"{name} must be a positive integer"):
        kv_cache_bytes(**arguments)


# ---------------------------------------------------------------- decoding with the cache


def random_layer(rng, d_model, n_heads, d_head, n_kv_heads=None, d_out=None):
    shapes = projection_shapes(d_model, n_heads, d_head, n_kv_heads, d_out)
    return [rng.standard_normal(shape) / np.sqrt(shape[0]) for shape in shapes.values()]


@FAST
@given(seed=st.integers(0, 2**32 - 1), seq=st.integers(1, 12), d_model=st.integers(1, 6),
       kv_and_group=st.sampled_from([(1, 1), (1, 4), (2, 2), (3, 1), (2, 3)]), d_head=st.integers(1, 3),
       d_out=st.integers(1, 5), scale=st.sampled_from([None, 0.5, 2.0]))
def test_decoding_with_the_cache_equals_causal_multi_head_attention(seed, seq, d_model, kv_and_group, d_head,
                                                                    d_out, scale):
    n_kv_heads, group = kv_and_group
    n_heads = n_kv_heads * group
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((seq, d_model))
    W_q, W_k, W_v, W_o = random_layer(rng, d_model, n_heads, d_head, n_kv_heads, d_out)
    decoded = decode_with_cache(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads=n_kv_heads, scale=scale)
    full, _ = multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=causal_mask(seq),
                                   n_kv_heads=n_kv_heads, scale=scale)
    np.testing.assert_allclose(decoded, full, **EXACT)


def test_decoding_with_the_cache_equals_torch_causal_sdpa_with_gqa():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((9, 16))  # (seq, d_model)
    W_q, W_k, W_v, W_o = random_layer(rng, 16, 8, 4, n_kv_heads=2)
    heads = F.scaled_dot_product_attention(
        torch.tensor(split_heads(X @ W_q, 8)), torch.tensor(split_heads(X @ W_k, 2)),
        torch.tensor(split_heads(X @ W_v, 2)), is_causal=True, enable_gqa=True)  # (n_heads, seq, d_head)
    expected = heads.transpose(0, 1).reshape(9, 32).numpy() @ W_o
    np.testing.assert_allclose(decode_with_cache(X, W_q, W_k, W_v, W_o, 8, n_kv_heads=2), expected, **EXACT)


def test_the_cache_holds_every_tokens_key_and_value_and_does_the_work():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((6, 8))
    W_q, W_k, W_v, W_o = random_layer(rng, 8, 4, 2, n_kv_heads=2)
    output, K_cache, V_cache = decode_with_cache(X, W_q, W_k, W_v, W_o, 4, n_kv_heads=2, return_cache=True)
    assert K_cache.shape == V_cache.shape == (2, 6, 2)
    np.testing.assert_allclose(K_cache, split_heads(X @ W_k, 2), **EXACT)
    np.testing.assert_allclose(V_cache, split_heads(X @ W_v, 2), **EXACT)
    # Row t of the output depends on tokens 0..t only: changing the last token leaves the rest.
    changed = X.copy()
    changed[-1] += 5.0
    np.testing.assert_array_equal(decode_with_cache(changed, W_q, W_k, W_v, W_o, 4, n_kv_heads=2)[:-1], output[:-1])


def test_each_step_projects_one_token_only(monkeypatch):
    rng = np.random.default_rng(9)
    X = rng.standard_normal((5, 4))
    W_q, W_k, W_v, W_o = random_layer(rng, 4, 2, 2)
    expected = decode_with_cache(X, W_q, W_k, W_v, W_o, 2)
    split = []  # the shape of every key or value projection the cache receives

    def recording(M, n_heads):
        split.append(M.shape)
        return split_heads(M, n_heads)

    monkeypatch.setattr(kv_cache, "split_heads", recording)
    np.testing.assert_array_equal(decode_with_cache(X, W_q, W_k, W_v, W_o, 2), expected)
    assert split == [(1, 4)] * 10  # 5 steps, a key and a value of one token each


@pytest.mark.parametrize(
    "change, message",
    [
        ({"X": np.zeros(4)}, r"X must have at least 2 dimensions, shape \(\.\.\., seq, d_model\), got shape \(4,\)"),
        ({"X": np.zeros((0, 4))}, r"X of shape \(\.\.\., seq, d_model\) \(0, 4\) is empty along axis -2"),
        ({"padding": [False, True]}, r"padding of shape \(2,\) must have shape \(\.\.\., 3\)"),
        ({"padding": np.bool_(True)}, r"padding must have shape \(\.\.\., 3\), one flag per position"),
        ({"window": 0}, r"window must be a positive integer"),
        ({"cache": (np.zeros((2, 5, 2)), np.zeros((2, 4, 2)))}, r"K_cache of shape \(2, 5, 2\) and V_cache of shape "
                                                               r"\(2, 4, 2\) must hold as many positions"),
        ({"cache": (np.zeros((3, 5, 2)), np.zeros((3, 5, 2)))}, r"K_cache must have shape \(2, 'cached', 2\)"),
        ({"W_q": np.zeros((5, 4))}, r"W_q must have shape \(d_model=4, \.\.\.\)"),
        ({"W_q": np.zeros((4, 5))}, r"W_q has 5 columns, not divisible by n_heads=2"),
        ({"W_k": np.zeros((4, 6))}, r"W_k must have n_kv_heads \* d_head = 2 \* 2 = 4 columns"),
        ({"W_o": np.zeros((3, 4))}, r"W_o must have shape \(n_heads \* d_head=4, \.\.\.\)"),
        ({"n_heads": 0}, r"n_heads must be a positive integer"),
        ({"n_kv_heads": 3}, r"n_kv_heads=3 must divide n_heads=2"),
        ({"W_v": np.full((4, 4), np.nan)}, r"W_v of shape \(4, 4\) contains NaN at index \(0, 0\)"),
        ({"W_o": np.diag([1.0, 1.0, np.inf, 1.0])}, r"W_o of shape \(4, 4\) contains \+inf at index \(2, 2\)"),
        ({"scale": np.nan}, r"scale must be a finite number, got nan"),
    ],
)
def test_decode_with_cache_refuses_bad_input(change, message):
    arguments = {"X": np.zeros((3, 4)), "W_q": np.zeros((4, 4)), "W_k": np.zeros((4, 4)),
                 "W_v": np.zeros((4, 4)), "W_o": np.zeros((4, 4)), "n_heads": 2} | change
    with pytest.raises(ValueError, match=message):
        decode_with_cache(**arguments)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"n_heads": 2.0}, r"n_heads must be a positive integer, got 2.0 of type float"),
        ({"n_kv_heads": True}, r"n_kv_heads must be a positive integer, got True of type bool"),
        ({"X": [["a"] * 4] * 3}, r"X must be an array of real numbers"),
        ({"W_k": np.eye(4) * 1j}, r"W_k must be real, got dtype complex128"),
        ({"return_cache": "yes"}, r"return_cache must be True or False"),
        ({"padding": [0, 1, 0]}, r"padding must be boolean \(True where a position holds padding\), got dtype int64"),
        ({"window": 2.0}, r"window must be a positive integer, got 2.0 of type float"),
        ({"cache": [np.zeros((2, 1, 2))] * 2}, r"cache must be a pair \(K_cache, V_cache\), as prefill returns them, "
                                               r"got list"),
    ],
)
def test_decode_with_cache_refuses_the_wrong_kind_of_input_as_a_type_error(change, message):
    arguments = {"X": np.zeros((3, 4)), "W_q": np.zeros((4, 4)), "W_k": np.zeros((4, 4)),
                 "W_v": np.zeros((4, 4)), "W_o": np.zeros((4, 4)), "n_heads": 2} | change
    with pytest.raises(TypeError, match=message):
        decode_with_cache(**arguments)


# ---------------------------------------------------------------- a prompt, padding, windows


def _reference(X, layer, padding=None, window=None):
    """The whole sequence at once: multi-head attention with the decoder's mask, padding rows 0."""
    pad = np.zeros(X.shape[:-1], dtype=bool) if padding is None else padding
    full, _ = multi_head_attention(X, **layer, mask=decoding_mask(X.shape[-2], pad, window)[..., None, :, :])
    return np.where(pad[..., None], 0.0, full)


@FAST
@given(seed=st.integers(0, 2**32 - 1), seq=st.integers(1, 10), split=st.integers(0, 10),
       window=st.sampled_from([None, 1, 2, 3, 7, 50]), kv_and_group=st.sampled_from([(1, 1), (1, 3), (2, 2)]),
       batch=st.sampled_from([(), (2,), (2, 1)]))
def test_a_prompt_read_at_once_then_decoded_equals_the_whole_sequence_at_once(seed, seq, split, window,
                                                                              kv_and_group, batch):
    """prefill reads the first tokens in one pass, decode_with_cache continues from its cache:
    together, the rows of one pass over everything, with left padding and a sliding window."""
    n_kv_heads, group = kv_and_group
    rng = np.random.default_rng(seed)
    layer = dict(zip(("W_q", "W_k", "W_v", "W_o"), random_layer(rng, 5, n_kv_heads * group, 2, n_kv_heads)),
                 n_heads=n_kv_heads * group, n_kv_heads=n_kv_heads)
    X = rng.standard_normal((*batch, seq, 5))
    lengths = rng.integers(1, seq + 1, size=batch)  # each sequence's real tokens, padded on the left
    padding = np.arange(seq) < (seq - np.asarray(lengths))[..., None]  # (*batch, seq)
    expected = _reference(X, layer, padding, window)
    np.testing.assert_allclose(decode_with_cache(X, **layer, padding=padding, window=window), expected, **EXACT)
    split = min(split, seq - 1)
    if split > 0:
        prompt, K, V = prefill(X[..., :split, :], **layer, padding=padding[..., :split], window=window)
        rest = decode_with_cache(X[..., split:, :], **layer, cache=(K, V), padding=padding, window=window)
        np.testing.assert_allclose(np.concatenate([prompt, rest], axis=-2), expected, **EXACT)


def test_a_left_padded_sequence_needs_its_padding_masked_at_every_step():
    rng = np.random.default_rng(10)
    layer = dict(zip(("W_q", "W_k", "W_v", "W_o"), random_layer(rng, 6, 4, 3, 2)), n_heads=4, n_kv_heads=2)
    tokens = rng.standard_normal((5, 6))  # (seq, d_model): the sequence's own tokens
    padded = np.concatenate([np.tile(rng.standard_normal(6), (3, 1)), tokens])  # three pad tokens in front
    padding = np.arange(8) < 3
    alone = decode_with_cache(tokens, **layer)
    masked = decode_with_cache(padded, **layer, padding=padding)
    np.testing.assert_allclose(masked[3:], alone, **EXACT)
    assert (masked[:3] == 0).all()  # padding asks nothing
    unmasked = decode_with_cache(padded, **layer)
    assert (np.abs(unmasked[3:] - alone).max(axis=-1) > 1e-3).all()  # every real token's output is off


def test_a_window_caps_the_cache_and_hands_back_the_last_positions_in_order():
    rng = np.random.default_rng(11)
    layer = dict(zip(("W_q", "W_k", "W_v", "W_o"), random_layer(rng, 4, 2, 2)), n_heads=2)
    X = rng.standard_normal((10, 4))
    _, K_cache, V_cache = decode_with_cache(X, **layer, window=4, return_cache=True)
    assert K_cache.shape == V_cache.shape == (2, 4, 2)  # four slots, not ten positions
    keys, values = split_heads(X @ layer["W_k"], 2), split_heads(X @ layer["W_v"], 2)  # (n_kv_heads, seq, d_head)
    np.testing.assert_allclose(K_cache, keys[:, 6:], **EXACT)  # positions 6..9, oldest first
    np.testing.assert_allclose(V_cache, values[:, 6:], **EXACT)
    # a window as long as the sequence changes nothing
    np.testing.assert_array_equal(decode_with_cache(X, **layer, window=10), decode_with_cache(X, **layer))


def test_the_decoding_mask_is_causal_banded_and_blind_to_padding():
    mask = decoding_mask(5, padding=[True, False, False, False, False], window=2)
    assert mask.astype(int).tolist() == [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 1, 0],
                                         [0, 0, 0, 1, 1]]
    np.testing.assert_array_equal(decoding_mask(4), causal_mask(4))
    batch = decoding_mask(3, padding=[[False] * 3, [True, False, False]])
    assert batch.shape == (2, 3, 3) and not batch[1, 2, 0] and batch[0, 2, 0]


# ---------------------------------------------------------------- the work per step


def test_multiply_adds_per_step_worked_out_by_hand():
    # d_model 4, 2 heads of 2, t = 2 (3 tokens): projections 4 * 12 = 48, W_O 4 * 4 = 16,
    # scores and sum 2 * 2 * 2 * 3 = 24 with the cache; 3 * 64 + 2 * 2 * 2 * 9 = 264 without.
    assert step_multiply_adds(2, 4, 2, 2) == 88
    assert step_multiply_adds(2, 4, 2, 2, cached=False) == 264


def test_with_the_cache_the_work_grows_linearly_without_it_quadratically():
    cached = [step_multiply_adds(t, 768, 12, 64) for t in range(6)]
    uncached = [step_multiply_adds(t, 768, 12, 64, cached=False) for t in range(6)]
    assert cached[0] == uncached[0]  # one token: nothing to reuse
    assert len(set(np.diff(cached))) == 1  # a constant increment: linear in t
    assert len(set(np.diff(uncached, n=2))) == 1 and np.diff(uncached, n=2)[0] > 0  # quadratic
    assert step_multiply_adds(3, 8, 8, 4, n_kv_heads=2) < step_multiply_adds(3, 8, 8, 4)


@pytest.mark.parametrize("arguments, message, error", [
    ((-1, 4, 2, 2), r"t must be a non-negative integer", ValueError),
    ((True, 4, 2, 2), r"t must be a non-negative integer", TypeError),
    ((1.0, 4, 2, 2), r"t must be a non-negative integer", TypeError),
    ((1, 0, 2, 2), r"d_model must be a positive integer", ValueError),
    ((1, 4, 2, 2, None, None, 0), r"cached must be True or False", TypeError),
])
def test_multiply_adds_refuse_bad_sizes(arguments, message, error):
    with pytest.raises(error, match=message):
        step_multiply_adds(*arguments)
