"""attncourse.block against torch in float64: layer_norm and rms_norm to 1e-12,
encoder_block equal to torch.nn.TransformerEncoderLayer (and stacks of it) to 1e-11 for both
norm placements, both activations and a causal mask; bad input refused by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attncourse.attention import causal_mask
from attncourse.block import PARAMETER_NAMES, encoder_block, feed_forward, layer_norm, rms_norm

NORM_TOLERANCE = {"rtol": 0, "atol": 1e-12}
BLOCK_TOLERANCE = {"rtol": 0, "atol": 1e-11}
FAST = settings(max_examples=60, deadline=None)


def torch_layer(seed: int, d_model: int, n_heads: int, d_ff: int, norm_first: bool, activation: str):
    """A TransformerEncoderLayer in eval mode with random parameters (its LayerNorms' gains
    and biases too, which start at 1 and 0) and numpy copies of its state_dict."""
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout=0.0, activation=activation,
                                             batch_first=True, norm_first=norm_first, dtype=torch.float64)
    with torch.no_grad():
        for name, value in layer.named_parameters():
            if name.startswith("norm"):
                value.copy_(torch.randn_like(value) * 0.3 + (1.0 if name.endswith("weight") else 0.0))
            elif name.endswith("bias"):
                value.copy_(torch.randn_like(value) * 0.1)
    layer.eval()
    return layer, {name: value.detach().numpy().copy() for name, value in layer.state_dict().items()}


def run_torch(layer, X: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    blocked = None if mask is None else torch.tensor(~mask)  # torch: True = may NOT attend
    with torch.no_grad():
        return layer(torch.tensor(X), src_mask=blocked).numpy()


# ---------------------------------------------------------------- the norms


@FAST
@given(seed=st.integers(0, 2**32 - 1), lead=st.lists(st.integers(1, 3), max_size=2),
       d_model=st.integers(1, 9), eps=st.sampled_from([1e-5, 1e-6, 0.5]), affine=st.booleans())
def test_layer_norm_equals_torch(seed, lead, d_model, eps, affine):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((*lead, d_model)) * 3 + rng.standard_normal()
    weight, bias = (rng.standard_normal(d_model), rng.standard_normal(d_model)) if affine else (None, None)
    expected = F.layer_norm(torch.tensor(X), (d_model,),
                            None if weight is None else torch.tensor(weight),
                            None if bias is None else torch.tensor(bias), eps).numpy()
    np.testing.assert_allclose(layer_norm(X, weight, bias, eps), expected, **NORM_TOLERANCE)


@FAST
@given(seed=st.integers(0, 2**32 - 1), lead=st.lists(st.integers(1, 3), max_size=2),
       d_model=st.integers(1, 9), eps=st.sampled_from([1e-6, 1e-5, 0.5]), gained=st.booleans())
def test_rms_norm_equals_torch(seed, lead, d_model, eps, gained):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((*lead, d_model)) * 3
    norm = torch.nn.RMSNorm(d_model, eps=eps, dtype=torch.float64)
    weight = None
    if gained:
        weight = rng.standard_normal(d_model)
        with torch.no_grad():
            norm.weight.copy_(torch.tensor(weight))
    with torch.no_grad():
        expected = norm(torch.tensor(X)).numpy()
    np.testing.assert_allclose(rms_norm(X, weight, eps), expected, **NORM_TOLERANCE)


def test_layer_norm_projects_off_the_mean_and_scales_to_norm_sqrt_d():
    X = np.random.default_rng(3).standard_normal((5, 7)) * 4 + 2
    Y = layer_norm(X, eps=1e-300)
    np.testing.assert_allclose(Y.sum(axis=-1), 0.0, atol=1e-12)  # orthogonal to (1, ..., 1)
    np.testing.assert_allclose(np.linalg.norm(Y, axis=-1), np.sqrt(7), rtol=1e-12)
    projected = X - X @ np.ones((7, 7)) / 7  # the projection onto the plane orthogonal to ones
    np.testing.assert_allclose(Y, projected / np.linalg.norm(projected, axis=-1, keepdims=True) * np.sqrt(7),
                               atol=1e-12)


def test_rms_norm_keeps_the_mean_that_layer_norm_removes():
    X = np.array([[1.0, 2.0, 3.0]])
    assert abs(layer_norm(X).mean()) < 1e-12 < rms_norm(X).mean()


@pytest.mark.parametrize("norm", [layer_norm, rms_norm])
@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda n: n([[1.0, np.nan]]), ValueError, "NaN"),
    (lambda n: n([[1.0, np.inf]]), ValueError, "inf"),
    (lambda n: n(np.zeros((2, 0))), ValueError, "empty last axis"),
    (lambda n: n([[1.0, 2.0]], eps=0.0), ValueError, "eps must be"),
    (lambda n: n([[1.0, 2.0]], eps=-1e-5), ValueError, "eps must be"),
    (lambda n: n([[1.0, 2.0]], np.ones(3)), ValueError, r"weight must have shape .*\(2,\).*got shape \(3,\)"),
    (lambda n: n("abc"), TypeError, "X must be an array of real numbers"),
    (lambda n: n([[1.0, 2.0]], weight="ab"), TypeError, "weight must be an array of real numbers"),
])
def test_the_norms_refuse_bad_input_by_name(norm, call, error, match):
    with pytest.raises(error, match=match):
        call(norm)


def test_layer_norm_refuses_a_bias_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"bias must have shape .*\(2,\).*got shape \(2, 1\)"):
        layer_norm([[1.0, 2.0]], bias=np.zeros((2, 1)))


# ---------------------------------------------------------------- the block


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_block_equals_torch_s_encoder_layer(norm_first, activation, causal):
    layer, params = torch_layer(1, d_model=8, n_heads=2, d_ff=16, norm_first=norm_first, activation=activation)
    X = np.random.default_rng(2).standard_normal((3, 5, 8))
    mask = causal_mask(5) if causal else None
    ours = encoder_block(X, params, n_heads=2, norm_first=norm_first, activation=activation, mask=mask)
    np.testing.assert_allclose(ours, run_torch(layer, X, mask), **BLOCK_TOLERANCE)
    single = encoder_block(X[1], params, n_heads=2, norm_first=norm_first, activation=activation, mask=mask)
    np.testing.assert_allclose(single, ours[1], **BLOCK_TOLERANCE)  # one 2-D sequence


@FAST
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from([(4, 1), (2, 4, 2), (1, 3, 8), (2, 6, 4)]),
       n_heads=st.sampled_from([1, 2, 4]), norm_first=st.booleans(), activation=st.sampled_from(["relu", "gelu"]))
def test_encoder_block_equals_torch_for_any_shape(seed, shape, n_heads, norm_first, activation):
    d_model = {1: 4, 2: 8, 4: 8}[n_heads]
    layer, params = torch_layer(seed, d_model, n_heads, d_ff=3, norm_first=norm_first, activation=activation)
    X = np.random.default_rng(seed).standard_normal((*shape[:-1], d_model))
    expected = run_torch(layer, X if X.ndim == 3 else X[None])
    ours = encoder_block(X, params, n_heads=n_heads, norm_first=norm_first, activation=activation)
    np.testing.assert_allclose(ours, expected.reshape(ours.shape), **BLOCK_TOLERANCE)


def test_a_mask_per_sequence_is_each_sequence_s_own():
    layer, params = torch_layer(4, d_model=4, n_heads=2, d_ff=8, norm_first=True, activation="relu")
    X = np.random.default_rng(4).standard_normal((2, 3, 4))
    masks = np.stack([causal_mask(3), np.ones((3, 3), bool)])  # (batch, seq, seq)
    ours = encoder_block(X, params, n_heads=2, norm_first=True, mask=masks)
    for b in range(2):
        np.testing.assert_allclose(ours[b], run_torch(layer, X[b:b + 1], masks[b])[0], **BLOCK_TOLERANCE)


@pytest.mark.parametrize("norm_first", [False, True])
def test_a_stack_equals_torch_s_transformer_encoder(norm_first):
    torch.manual_seed(6)
    template = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first,
                                                dtype=torch.float64)
    final_norm = torch.nn.LayerNorm(8, dtype=torch.float64) if norm_first else None
    stack = torch.nn.TransformerEncoder(template, num_layers=3, norm=final_norm, enable_nested_tensor=False).eval()
    with torch.no_grad():  # each layer different (the clones start equal)
        for parameter in stack.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.2)
    X = np.random.default_rng(6).standard_normal((2, 5, 8))
    ours = X
    for layer in stack.layers:
        ours = encoder_block(ours, {k: v.numpy() for k, v in layer.state_dict().items()}, n_heads=2,
                             norm_first=norm_first, mask=causal_mask(5))
    if norm_first:
        ours = layer_norm(ours, stack.norm.weight.detach().numpy(), stack.norm.bias.detach().numpy())
    with torch.no_grad():
        expected = stack(torch.tensor(X), mask=torch.tensor(~causal_mask(5))).numpy()
    np.testing.assert_allclose(ours, expected, **BLOCK_TOLERANCE)


def test_the_block_changes_neither_its_input_nor_its_parameters():
    _, params = torch_layer(0, d_model=4, n_heads=2, d_ff=8, norm_first=False, activation="gelu")
    before = {k: v.copy() for k, v in params.items()}
    X = np.random.default_rng(0).standard_normal((3, 4))
    X_before = X.copy()
    encoder_block(X, params, n_heads=2, norm_first=False, activation="gelu", mask=causal_mask(3))
    np.testing.assert_array_equal(X, X_before)
    for name in PARAMETER_NAMES:
        np.testing.assert_array_equal(params[name], before[name])


def test_the_mlp_acts_on_each_token_alone():
    _, params = torch_layer(2, d_model=4, n_heads=1, d_ff=8, norm_first=True, activation="relu")
    X = np.random.default_rng(2).standard_normal((5, 4))
    changed = X.copy()
    changed[3] += 10.0
    difference = np.abs(feed_forward(changed, params) - feed_forward(X, params)).sum(axis=-1)
    assert difference[3] > 0 and np.all(np.delete(difference, 3) == 0.0)


def _params(d_model=4, **replaced):
    _, params = torch_layer(0, d_model=d_model, n_heads=2, d_ff=8, norm_first=True, activation="relu")
    return {**params, **replaced}


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda X, p: encoder_block(X, p, n_heads=3, norm_first=True), ValueError,
     r"d_model=4 \(X of shape \(3, 4\)\) is not divisible by n_heads=3"),
    (lambda X, p: encoder_block(X[:, :3], p, n_heads=1, norm_first=True), ValueError,
     r"self_attn.in_proj_weight has shape \(12, 4\), but a layer over inputs of width d_model=3"),
    (lambda X, p: encoder_block(X, {k: v for k, v in p.items() if k != "norm2.bias"}, n_heads=2,
                                norm_first=True), ValueError, "params lacks norm2.bias"),
    (lambda X, p: encoder_block(np.where(X > 1, np.nan, X), p, n_heads=2, norm_first=True), ValueError, "NaN"),
    (lambda X, p: encoder_block(X * np.inf, p, n_heads=2, norm_first=True), ValueError, "inf"),
    (lambda X, p: encoder_block(X, p, n_heads=2, norm_first=True, activation="swish"), ValueError,
     r"activation must be one of \['relu', 'gelu'\], got 'swish'"),
    (lambda X, p: encoder_block(X, p, n_heads=2, norm_first=1), TypeError, "norm_first must be True or False"),
    (lambda X, p: encoder_block(X, p, n_heads=2, norm_first=True, mask=np.ones((2, 2), bool)), ValueError,
     r"mask has shape \(2, 2\)"),
    (lambda X, p: encoder_block(X, {**p, "linear2.bias": np.zeros(5)}, n_heads=2, norm_first=True), ValueError,
     r"linear2.bias has shape \(5,\)"),
    (lambda X, p: encoder_block(X, list(p.values()), n_heads=2, norm_first=True), TypeError,
     "params must be a mapping"),
])
def test_the_block_refuses_bad_input_naming_the_fault(call, error, match):
    X = np.random.default_rng(1).standard_normal((3, 4)) + np.array([0, 0, 0, 2.0])
    with pytest.raises(error, match=match):
        call(X, _params())
