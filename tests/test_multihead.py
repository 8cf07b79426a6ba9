"""Tests of ``attncourse.multihead`` against PyTorch, in float64 to 1e-6.

References, each computed independently of the code under test:
``torch.nn.MultiheadAttention(bias=False, batch_first=True)`` with our matrices loaded
into it; ``F.scaled_dot_product_attention(enable_gqa=True)`` for grouped-query attention;
and a plain loop over the heads, one ``scaled_dot_product_attention`` per head, with the
head's columns sliced out of the wide matrices by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attncourse.attention import causal_mask, scaled_dot_product_attention
from attncourse.multihead import (
    attention_heads,
    head_contributions,
    merge_heads,
    multi_head_attention,
    projection_shapes,
    split_heads,
)
from tests.strategies import random_problem

FAST = settings(max_examples=60, deadline=None)
TOLERANCE = {"rtol": 0, "atol": 1e-6}


def per_head_loop(X, W_q, W_k, W_v, W_o, n_heads, mask=None, n_kv_heads=None):
    """The formula read literally: head h from its own column blocks, concatenated, then W_O."""
    n_kv_heads = n_kv_heads or n_heads
    d_head = W_q.shape[1] // n_heads
    group = n_heads // n_kv_heads
    heads, weights = [], []
    for h in range(n_heads):
        q = slice(h * d_head, (h + 1) * d_head)
        kv = slice((h // group) * d_head, (h // group + 1) * d_head)
        head_mask = None if mask is None else np.broadcast_to(mask, (*X.shape[:-2], n_heads, X.shape[-2], X.shape[-2]))[..., h, :, :]
        out, w = scaled_dot_product_attention(X @ W_q[:, q], X @ W_k[:, kv], X @ W_v[:, kv], mask=head_mask)
        heads.append(out)
        weights.append(w)
    return np.concatenate(heads, axis=-1) @ W_o, np.stack(weights, axis=-3)


def torch_module(W_q, W_k, W_v, W_o, n_heads):
    d_model = W_q.shape[0]
    module = torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.tensor(np.concatenate([W_q.T, W_k.T, W_v.T])))
        module.out_proj.weight.copy_(torch.tensor(W_o.T))
    return module


def torch_multihead(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    """torch.nn.MultiheadAttention; its boolean attn_mask is True where attention is *blocked*."""
    module = torch_module(W_q, W_k, W_v, W_o, n_heads)
    X_t = torch.tensor(X)
    blocked = None if mask is None else torch.tensor(~mask)
    with torch.no_grad():
        out, weights = module(X_t, X_t, X_t, attn_mask=blocked, need_weights=True, average_attn_weights=False)
    return out.numpy(), weights.numpy()


def torch_gqa(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    d_head = W_q.shape[1] // n_heads
    as_heads = lambda M, h: torch.tensor(M).unflatten(-1, (h, d_head)).transpose(-2, -3)
    Q, K, V = as_heads(X @ W_q, n_heads), as_heads(X @ W_k, n_kv_heads), as_heads(X @ W_v, n_kv_heads)
    attn_mask = None if mask is None else torch.tensor(mask)
    heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask, enable_gqa=True)
    return (heads.transpose(-2, -3).flatten(-2) @ torch.tensor(W_o)).numpy()


# ---------------------------------------------------------------- split and merge


def test_split_heads_gives_each_head_its_own_columns():
    M = np.arange(24.0).reshape(2, 3, 4)  # (batch, seq, 2 heads * 2)
    H = split_heads(M, 2)
    assert H.shape == (2, 2, 3, 2)
    np.testing.assert_array_equal(H[1, 0], M[1, :, 0:2])
    np.testing.assert_array_equal(H[1, 1], M[1, :, 2:4])


def test_reshape_without_transpose_is_not_split_heads():
    M = np.arange(12.0).reshape(3, 4)  # (seq, 2 heads * 2)
    wrong = M.reshape(2, 3, 2)  # runs, but mixes tokens into the wrong head
    assert not np.array_equal(wrong, split_heads(M, 2))


@FAST
@given(lead=st.lists(st.integers(1, 3), max_size=2), seq=st.integers(1, 5),
       n_heads=st.integers(1, 4), d_head=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_merge_heads_undoes_split_heads(lead, seq, n_heads, d_head, seed):
    M = np.random.default_rng(seed).standard_normal((*lead, seq, n_heads * d_head))
    np.testing.assert_array_equal(merge_heads(split_heads(M, n_heads)), M)
    np.testing.assert_array_equal(split_heads(merge_heads(split_heads(M, n_heads)), n_heads),
                                  split_heads(M, n_heads))


def test_split_heads_refuses_a_width_that_does_not_divide():
    with pytest.raises(ValueError, match=r"width 10 .* not divisible by n_heads=4"):
        split_heads(np.zeros((3, 10)), 4)


@pytest.mark.parametrize(("n_heads", "error"), [(0, ValueError), (-1, ValueError), (1.5, TypeError),
                                                (True, TypeError), ("2", TypeError)])
def test_split_heads_refuses_a_bad_head_count(n_heads, error):
    with pytest.raises(error, match="n_heads must be a positive integer"):
        split_heads(np.zeros((3, 4)), n_heads)


# ---------------------------------------------------------------- against torch


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n_heads, d_head", [(1, 8), (2, 4), (4, 2), (8, 1)])
def test_equal_to_torch_multihead_attention(n_heads, d_head, causal):
    rng = np.random.default_rng(n_heads)
    X, W_q, W_k, W_v, W_o = random_problem(rng, batch=(3,), seq=6, d_model=8, n_heads=n_heads, d_head=d_head)
    mask = causal_mask(6) if causal else None
    output, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=mask)
    expected_output, expected_weights = torch_multihead(X, W_q, W_k, W_v, W_o, n_heads, mask)
    np.testing.assert_allclose(output, expected_output, **TOLERANCE)
    np.testing.assert_allclose(weights, expected_weights, **TOLERANCE)
    if causal:
        assert np.all(weights[..., ~causal_mask(6)] == 0.0)


@pytest.mark.parametrize("causal", [False, True])
def test_with_biases_equal_to_torch_multihead_attention_with_bias(causal):
    rng = np.random.default_rng(11)
    X, W_q, W_k, W_v, W_o = random_problem(rng, batch=(2,), seq=5, d_model=6, n_heads=3, d_head=2)
    b_q, b_k, b_v, b_o = rng.standard_normal((4, 6))
    module = torch.nn.MultiheadAttention(6, 3, bias=True, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.tensor(np.concatenate([W_q.T, W_k.T, W_v.T])))
        module.in_proj_bias.copy_(torch.tensor(np.concatenate([b_q, b_k, b_v])))
        module.out_proj.weight.copy_(torch.tensor(W_o.T))
        module.out_proj.bias.copy_(torch.tensor(b_o))
        X_t = torch.tensor(X)
        blocked = torch.tensor(~causal_mask(5)) if causal else None
        expected, expected_weights = module(X_t, X_t, X_t, attn_mask=blocked, average_attn_weights=False)
    output, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, 3, mask=causal_mask(5) if causal else None,
                                           b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o)
    np.testing.assert_allclose(output, expected.numpy(), **TOLERANCE)
    np.testing.assert_allclose(weights, expected_weights.numpy(), **TOLERANCE)
    assert not np.allclose(output, multi_head_attention(X, W_q, W_k, W_v, W_o, 3,
                                                        mask=causal_mask(5) if causal else None)[0])


def test_a_bias_of_the_wrong_length_is_refused_by_name():
    X, W_q, W_k, W_v, W_o = random_problem(np.random.default_rng(0), seq=3, d_model=4, n_heads=2, d_head=2)
    with pytest.raises(ValueError, match=r"b_v must have shape \(4,\).*got shape \(3,\)"):
        multi_head_attention(X, W_q, W_k, W_v, W_o, 2, b_v=np.zeros(3))


def test_torch_reads_a_boolean_mask_the_other_way_round():
    rng = np.random.default_rng(5)
    X, W_q, W_k, W_v, W_o = random_problem(rng, seq=4, d_model=4, n_heads=2, d_head=2)
    others = ~np.eye(4, dtype=bool)  # each token may attend to every token but itself
    _, ours = multi_head_attention(X, W_q, W_k, W_v, W_o, 2, mask=others)
    _, theirs = torch_multihead(X, W_q, W_k, W_v, W_o, 2, mask=~others)  # hands torch `others` itself
    assert np.all(np.diagonal(ours, axis1=-2, axis2=-1) == 0.0)
    np.testing.assert_array_equal(theirs, np.broadcast_to(np.eye(4), (2, 4, 4)))  # only itself


@FAST
@given(seed=st.integers(0, 2**32 - 1), batch=st.lists(st.integers(1, 3), max_size=2),
       seq=st.integers(1, 6), kv_and_group=st.sampled_from([(1, 1), (1, 3), (2, 2), (3, 1), (2, 3)]),
       d_head=st.integers(1, 3), d_out=st.integers(1, 5), masked=st.booleans())
def test_grouped_query_attention_equals_torch_enable_gqa(seed, batch, seq, kv_and_group, d_head, d_out, masked):
    n_kv_heads, group = kv_and_group
    n_heads = n_kv_heads * group
    rng = np.random.default_rng(seed)
    X, W_q, W_k, W_v, W_o = random_problem(rng, batch=tuple(batch), seq=seq, d_model=5, n_heads=n_heads,
                                           n_kv_heads=n_kv_heads, d_head=d_head, d_out=d_out)
    mask = causal_mask(seq) if masked else None
    output, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=mask, n_kv_heads=n_kv_heads)
    np.testing.assert_allclose(output, torch_gqa(X, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask), **TOLERANCE)
    loop_output, loop_weights = per_head_loop(X, W_q, W_k, W_v, W_o, n_heads, mask, n_kv_heads)
    np.testing.assert_allclose(output, loop_output, **TOLERANCE)
    np.testing.assert_allclose(weights, loop_weights, **TOLERANCE)


def test_query_heads_of_one_group_share_their_key_value_head():
    rng = np.random.default_rng(0)
    X, W_q, W_k, W_v, W_o = random_problem(rng, seq=4, d_model=6, n_heads=4, n_kv_heads=2, d_head=3)
    W_q[:, 3:6] = W_q[:, 0:3]  # query heads 0 and 1 ask the same, and share key head 0
    W_q[:, 9:12] = W_q[:, 6:9]  # so do heads 2 and 3 (key head 1)
    _, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, 4, n_kv_heads=2)
    np.testing.assert_array_equal(weights[0], weights[1])
    np.testing.assert_array_equal(weights[2], weights[3])
    assert not np.allclose(weights[0], weights[2])


def test_one_key_value_head_is_multi_query_attention():
    rng = np.random.default_rng(1)
    X, W_q, W_k, W_v, W_o = random_problem(rng, seq=5, d_model=6, n_heads=3, n_kv_heads=1, d_head=2)
    output, _ = multi_head_attention(X, W_q, W_k, W_v, W_o, 3, n_kv_heads=1)
    tiled = lambda W: np.tile(W, (1, 3))
    expected, _ = multi_head_attention(X, W_q, tiled(W_k), tiled(W_v), W_o, 3)
    np.testing.assert_allclose(output, expected, **TOLERANCE)


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_projection_shapes_count_what_torch_counts(n_heads):
    shapes = projection_shapes(32, n_heads, 32 // n_heads)
    module = torch.nn.MultiheadAttention(32, n_heads, bias=False, batch_first=True)
    assert sum(np.prod(shape) for shape in shapes.values()) == sum(p.numel() for p in module.parameters())
    rng = np.random.default_rng(n_heads)
    matrices = [rng.standard_normal(shape) for shape in shapes.values()]
    output, _ = multi_head_attention(rng.standard_normal((3, 32)), *matrices, n_heads)
    assert output.shape == (3, 32)


def test_projection_shapes_of_grouped_query_attention():
    assert projection_shapes(512, 8, 64, n_kv_heads=2, d_out=10) == {
        "W_q": (512, 512), "W_k": (512, 128), "W_v": (512, 128), "W_o": (512, 10)}
    with pytest.raises(ValueError, match="n_kv_heads=3 must divide n_heads=8"):
        projection_shapes(512, 8, 64, n_kv_heads=3)
    with pytest.raises(ValueError, match="d_head must be a positive integer"):
        projection_shapes(512, 8, 0)


# ---------------------------------------------------------------- properties


@FAST
@given(seed=st.integers(0, 2**32 - 1), n_heads=st.integers(1, 4), d_head=st.integers(1, 3), seq=st.integers(1, 5))
def test_output_is_the_sum_of_the_heads_contributions(seed, n_heads, d_head, seq):
    rng = np.random.default_rng(seed)
    X, W_q, W_k, W_v, W_o = random_problem(rng, batch=(2,), seq=seq, d_model=4, n_heads=n_heads, d_head=d_head, d_out=3)
    output, _ = multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads)
    heads, _ = attention_heads(X, W_q, W_k, W_v, n_heads)
    contributions = head_contributions(heads, W_o)  # (batch, n_heads, seq, d_out)
    assert contributions.shape == (2, n_heads, seq, 3)
    np.testing.assert_allclose(contributions.sum(axis=-3), output, **TOLERANCE)


@FAST
@given(seed=st.integers(0, 2**32 - 1), seq=st.integers(2, 6))
def test_permuting_the_tokens_permutes_the_output(seed, seq):
    rng = np.random.default_rng(seed)
    X, W_q, W_k, W_v, W_o = random_problem(rng, seq=seq, d_model=4, n_heads=2, d_head=2)
    order = rng.permutation(seq)
    output, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, 2)
    permuted_output, permuted_weights = multi_head_attention(X[order], W_q, W_k, W_v, W_o, 2)
    np.testing.assert_allclose(permuted_output, output[order], **TOLERANCE)
    np.testing.assert_allclose(permuted_weights, weights[:, order][:, :, order], **TOLERANCE)


def test_inputs_are_not_mutated_and_lists_are_accepted():
    rng = np.random.default_rng(2)
    arrays = random_problem(rng, seq=3, d_model=4, n_heads=2, d_head=2)
    copies = [a.copy() for a in arrays]
    mask = causal_mask(3)
    output, _ = multi_head_attention(*arrays, 2, mask=mask)
    assert all(np.array_equal(a, c) for a, c in zip(arrays, copies))
    assert np.array_equal(mask, causal_mask(3))
    from_lists, _ = multi_head_attention(*(a.tolist() for a in arrays), 2, mask=mask.tolist())
    np.testing.assert_array_equal(from_lists, output)


def test_scale_defaults_to_one_over_the_root_of_d_head():
    rng = np.random.default_rng(3)
    X, W_q, W_k, W_v, W_o = random_problem(rng, seq=4, d_model=8, n_heads=2, d_head=4)
    default, _ = multi_head_attention(X, W_q, W_k, W_v, W_o, 2)
    explicit, _ = multi_head_attention(X, W_q, W_k, W_v, W_o, 2, scale=0.5)
    by_d_model, _ = multi_head_attention(X, W_q, W_k, W_v, W_o, 2, scale=1 / np.sqrt(8))
    np.testing.assert_array_equal(default, explicit)
    assert not np.allclose(default, by_d_model)


def test_a_mask_per_head_broadcasts_against_the_weights():
    rng = np.random.default_rng(4)
    X, W_q, W_k, W_v, W_o = random_problem(rng, seq=3, d_model=4, n_heads=2, d_head=2)
    per_head = np.stack([causal_mask(3), np.ones((3, 3), dtype=bool)])  # (n_heads, seq, seq)
    _, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, 2, mask=per_head)
    assert weights[0, 0, 1] == 0.0 and weights[1, 0, 1] > 0.0


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "change, message",
    [
        ({"W_q": np.zeros((5, 8))}, r"W_q must have shape \(d_model=4, \.\.\.\), got shape \(5, 8\)"),
        ({"W_q": np.zeros((4, 7))}, r"W_q has 7 columns, not divisible by n_heads=2"),
        ({"W_k": np.zeros((4, 6))}, r"W_k must have n_kv_heads \* d_head = 2 \* 2 = 4 columns, got shape \(4, 6\)"),
        ({"W_v": np.zeros((4, 2))}, r"W_v must have n_kv_heads \* d_head = 2 \* 2 = 4 columns"),
        ({"W_o": np.zeros((3, 4))}, r"W_o must have shape \(n_heads \* d_head=4, \.\.\.\), got shape \(3, 4\)"),
        ({"W_o": np.zeros((2, 2, 4))}, r"W_o must have shape \(n_heads \* d_head=4, \.\.\.\), got shape \(2, 2, 4\)"),
        ({"n_kv_heads": 3}, r"n_kv_heads=3 must divide n_heads=2"),
        ({"n_kv_heads": 0}, r"n_kv_heads must be a positive integer, got 0"),
        ({"n_heads": 0}, r"n_heads must be a positive integer, got 0"),
        ({"X": np.zeros(4)}, r"X must have at least 2 dimensions"),
        ({"mask": np.ones((2, 2), dtype=bool)}, r"mask of shape \(2, 2\) does not broadcast"),
        ({"mask": np.ones((3, 3))}, r"mask must be boolean"),
        ({"n_heads": "2"}, r"n_heads must be a positive integer, got '2' of type str"),
        ({"n_kv_heads": 1.0}, r"n_kv_heads must be a positive integer, got 1.0 of type float"),
        ({"W_v": np.ones((4, 4), dtype=complex)}, r"W_v must be real, got dtype complex128"),
        ({"X": np.ones((3, 4), dtype=bool)}, r"X must hold numbers, got a boolean array"),
    ],
)
def test_bad_input_is_an_error_naming_the_dimensions_or_the_kind(change, message):
    """A wrong value is a ValueError; the wrong kind of thing (a float mask, '2' heads,
    complex or boolean matrices) a TypeError."""
    rng = np.random.default_rng(0)
    X, W_q, W_k, W_v, W_o = random_problem(rng, seq=3, d_model=4, n_heads=2, d_head=2)
    arguments = {"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o, "n_heads": 2} | change
    wrong_kind = any(word in message for word in ("boolean", "of type", "must be real", "hold numbers"))
    with pytest.raises(TypeError if wrong_kind else ValueError, match=message):
        multi_head_attention(**arguments)


# ---------------------------------------------------------------- cross-attention (X_kv)

EXACT = {"rtol": 0, "atol": 1e-12}


def torch_cross_attention(X, X_kv, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask=None):
    """F.scaled_dot_product_attention on queries from X and keys/values from X_kv."""
    d_head = W_q.shape[1] // n_heads
    as_heads = lambda M, h: torch.tensor(M).unflatten(-1, (h, d_head)).transpose(-2, -3)
    Q = as_heads(X @ W_q, n_heads)
    K, V = as_heads(X_kv @ W_k, n_kv_heads), as_heads(X_kv @ W_v, n_kv_heads)
    attn_mask = None if mask is None else torch.tensor(mask)
    heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask, enable_gqa=True)
    return (heads.transpose(-2, -3).flatten(-2) @ torch.tensor(W_o)).numpy()


@FAST
@given(seed=st.integers(0, 2**32 - 1), batch=st.lists(st.integers(1, 3), max_size=2),
       seq=st.integers(1, 6), seq_kv=st.integers(1, 7),
       kv_and_group=st.sampled_from([(1, 1), (1, 3), (2, 2), (3, 1), (2, 3)]),
       d_head=st.integers(1, 3), d_out=st.integers(1, 5), masked=st.booleans())
def test_cross_attention_equals_torch_sdpa_per_head_gqa_included(seed, batch, seq, seq_kv, kv_and_group,
                                                                 d_head, d_out, masked):
    n_kv_heads, group = kv_and_group
    n_heads = n_kv_heads * group
    rng = np.random.default_rng(seed)
    X, W_q, W_k, W_v, W_o = random_problem(rng, batch=tuple(batch), seq=seq, d_model=5, n_heads=n_heads,
                                           n_kv_heads=n_kv_heads, d_head=d_head, d_out=d_out)
    X_kv = rng.standard_normal((*batch, seq_kv, 5))  # (..., seq_kv, d_model)
    mask = None
    if masked:  # a padding mask over the encoder's tokens; the first key is always visible
        mask = rng.random((1, seq_kv)) < 0.6  # (1, seq_kv): the same keys for every query
        mask[0, 0] = True
    output, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=mask,
                                           n_kv_heads=n_kv_heads, X_kv=X_kv)
    assert output.shape == (*batch, seq, d_out) and weights.shape == (*batch, n_heads, seq, seq_kv)
    expected = torch_cross_attention(X, X_kv, W_q, W_k, W_v, W_o, n_heads, n_kv_heads, mask)
    np.testing.assert_allclose(output, expected, **EXACT)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, **EXACT)


@pytest.mark.parametrize("seq, seq_kv, n_heads", [(3, 5, 2), (4, 1, 1), (6, 2, 4)])
def test_cross_attention_equals_torch_multihead_attention_with_separate_inputs(seq, seq_kv, n_heads):
    rng = np.random.default_rng(seq * 10 + seq_kv)
    d_model = 8
    X, W_q, W_k, W_v, W_o = random_problem(rng, batch=(2,), seq=seq, d_model=d_model, n_heads=n_heads,
                                           d_head=d_model // n_heads)
    X_kv = rng.standard_normal((2, seq_kv, d_model))  # (batch, seq_kv, d_model): the encoder's output
    output, weights = multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, X_kv=X_kv)
    module = torch_module(W_q, W_k, W_v, W_o, n_heads)
    with torch.no_grad():
        theirs, their_weights = module(torch.tensor(X), torch.tensor(X_kv), torch.tensor(X_kv),
                                       need_weights=True, average_attn_weights=False)
    np.testing.assert_allclose(output, theirs.numpy(), **EXACT)
    np.testing.assert_allclose(weights, their_weights.numpy(), **EXACT)


def test_cross_attention_reads_keys_and_values_from_x_kv_only():
    rng = np.random.default_rng(3)
    X, W_q, W_k, W_v, W_o = random_problem(rng, seq=4, d_model=6, n_heads=2, d_head=3)
    X_kv = rng.standard_normal((5, 6))  # (seq_kv, d_model)
    output, _ = multi_head_attention(X, W_q, W_k, W_v, W_o, 2, X_kv=X_kv)
    queries_changed = multi_head_attention(X + 1.0, W_q, W_k, W_v, W_o, 2, X_kv=X_kv)[0]
    assert not np.allclose(output, queries_changed)  # X still gives the queries
    self_attention = multi_head_attention(X, W_q, W_k, W_v, W_o, 2)
    with_itself = multi_head_attention(X, W_q, W_k, W_v, W_o, 2, X_kv=X)
    np.testing.assert_array_equal(self_attention[0], with_itself[0])
    np.testing.assert_array_equal(self_attention[1], with_itself[1])


@pytest.mark.parametrize(
    "X_kv, message",
    [
        (np.zeros((5, 3)), r"X_kv has d_model=3 but X has d_model=4"),
        (np.zeros((0, 4)), r"X_kv has no token \(shape \(0, 4\)\)"),
        (np.zeros(4), r"X_kv must have at least 2 dimensions"),
        (np.zeros((3, 5, 4)), r"batch dimensions of .* do not broadcast"),
    ],
)
def test_cross_attention_refuses_bad_x_kv(X_kv, message):
    rng = np.random.default_rng(0)
    X, W_q, W_k, W_v, W_o = random_problem(rng, batch=(2,), seq=3, d_model=4, n_heads=2, d_head=2)
    with pytest.raises(ValueError, match=message):
        multi_head_attention(X, W_q, W_k, W_v, W_o, 2, X_kv=X_kv)


def test_a_cross_attention_mask_must_have_the_keys_of_x_kv():
    rng = np.random.default_rng(0)
    X, W_q, W_k, W_v, W_o = random_problem(rng, seq=3, d_model=4, n_heads=2, d_head=2)
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\) does not broadcast .* \(2, 3, 5\)"):
        multi_head_attention(X, W_q, W_k, W_v, W_o, 2, mask=causal_mask(3), X_kv=np.ones((5, 4)))
