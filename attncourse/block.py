"""The block around attention: LayerNorm and RMSNorm, the MLP, and the encoder block that
adds both sublayers to the residual stream, with the norm after (Post-LN) or before (Pre-LN).

Post-LN (the original paper):   x = LN1(x + Attn(x));   x = LN2(x + MLP(x))
Pre-LN (GPT-2 and since):       x = x + Attn(LN1(x));   x = x + MLP(LN2(x))

Parameters are a mapping with the names of ``torch.nn.TransformerEncoderLayer``'s
``state_dict`` (``PARAMETER_NAMES``), holding numpy arrays in torch's (out, in) layout: the
course's rows-are-tokens matrices are their transposes, W_Q = in_proj_weight[:d_model].T.
Masks are True where a query may attend (torch's ``src_mask`` is True where it may not).
Everything is computed in float64; inputs and parameters are never changed. Bad input is
refused through ``attncourse.validation``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from jaxtyping import Bool, Float

from attncourse.multihead import multi_head_attention
from attncourse.validation import boolean_array, choice, flag, integer, number, real_array

__all__ = ["PARAMETER_NAMES", "encoder_block", "feed_forward", "layer_norm", "rms_norm"]

PARAMETER_NAMES = (
    "self_attn.in_proj_weight", "self_attn.in_proj_bias",
    "self_attn.out_proj.weight", "self_attn.out_proj.bias",
    "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
    "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
)
MLP_PARAMETER_NAMES = ("linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias")
ACTIVATIONS = ("relu", "gelu")


def _features(X, name: str = "X") -> np.ndarray:
    """``X`` as a float64 array whose last axis (d_model) holds at least one feature."""
    X = real_array(X, name, min_ndim=1, layout="(..., d_model)").astype(np.float64, copy=False)
    if X.shape[-1] == 0:
        raise ValueError(f"{name} has an empty last axis (shape {X.shape}): there is nothing to normalise")
    return X


def _gain(value, name: str, d_model: int, default: float) -> np.ndarray | float:
    """A learned (d_model,) gain or bias as float64; ``default`` when None."""
    if value is None:
        return default
    return real_array(value, name, shape=(d_model,), layout=f"(d_model,) = ({d_model},)").astype(np.float64)


def layer_norm(
    X: Float[np.ndarray, "... d_model"],
    weight: Float[np.ndarray, " d_model"] | None = None,
    bias: Float[np.ndarray, " d_model"] | None = None,
    eps: float = 1e-5,
) -> Float[np.ndarray, "... d_model"]:
    """LayerNorm over the last axis: (x - mean(x)) / sqrt(var(x) + eps) * weight + bias.

    Geometrically, for each token: subtract its mean (the projection onto the plane
    orthogonal to the all-ones vector), scale the result to norm sqrt(d_model) (exactly so
    as eps -> 0), then apply the learned gain and bias. The variance is the biased one
    (divided by d_model), as in torch.

    >>> y = layer_norm([[1.0, 2.0, 3.0]], eps=1e-12)
    >>> y.round(4).tolist(), round(float(np.linalg.norm(y)) ** 2, 6)
    ([[-1.2247, 0.0, 1.2247]], 3.0)
    """
    X = _features(X)
    eps = number(eps, "eps", above=0)
    centred = X - X.mean(axis=-1, keepdims=True)  # on the plane orthogonal to (1, ..., 1)
    variance = np.mean(centred**2, axis=-1, keepdims=True)
    normed = centred / np.sqrt(variance + eps)  # norm sqrt(d_model), up to eps
    d_model = X.shape[-1]
    return normed * _gain(weight, "weight", d_model, 1.0) + _gain(bias, "bias", d_model, 0.0)


def rms_norm(
    X: Float[np.ndarray, "... d_model"],
    weight: Float[np.ndarray, " d_model"] | None = None,
    eps: float = 1e-6,
) -> Float[np.ndarray, "... d_model"]:
    """RMSNorm over the last axis: x / sqrt(mean(x**2) + eps) * weight (LayerNorm without
    removing the mean, and without a bias), as ``torch.nn.RMSNorm(d_model, eps=eps)``.

    >>> rms_norm([[3.0, -4.0]], eps=1e-12).round(4).tolist()
    [[0.8485, -1.1314]]
    """
    X = _features(X)
    eps = number(eps, "eps", above=0)
    normed = X / np.sqrt(np.mean(X**2, axis=-1, keepdims=True) + eps)
    return normed * _gain(weight, "weight", X.shape[-1], 1.0)


def _gelu(x: np.ndarray) -> np.ndarray:
    """The exact GELU, x * Phi(x) = x / 2 * (1 + erf(x / sqrt 2)), torch's default."""
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _activate(x: np.ndarray, activation: str) -> np.ndarray:
    return np.maximum(x, 0.0) if activation == "relu" else _gelu(x)


def _parameters(params, d_model: int, names: tuple[str, ...] = PARAMETER_NAMES) -> dict[str, np.ndarray]:
    """The parameters ``names`` as float64 arrays of the shapes a d_model-wide layer needs."""
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of parameter names to arrays, got {type(params).__name__}")
    missing = [name for name in names if name not in params]
    if missing:
        raise ValueError(f"params lacks {', '.join(missing)} (a TransformerEncoderLayer's state_dict names)")
    arrays = {name: real_array(params[name], name).astype(np.float64) for name in names}
    W_1 = arrays["linear1.weight"]  # every caller needs the MLP
    if W_1.ndim != 2 or W_1.shape[0] == 0:
        raise ValueError(f"linear1.weight has shape {W_1.shape}; it must be (d_ff, d_model) with d_ff >= 1")
    d_ff = W_1.shape[0]
    expected = {
        "self_attn.in_proj_weight": (3 * d_model, d_model), "self_attn.in_proj_bias": (3 * d_model,),
        "self_attn.out_proj.weight": (d_model, d_model), "self_attn.out_proj.bias": (d_model,),
        "linear1.weight": (d_ff, d_model), "linear1.bias": (d_ff,),
        "linear2.weight": (d_model, d_ff), "linear2.bias": (d_model,),
        **{f"norm{k}.{part}": (d_model,) for k in (1, 2) for part in ("weight", "bias")},
    }
    for name in names:
        if arrays[name].shape != expected[name]:
            raise ValueError(f"{name} has shape {arrays[name].shape}, but a layer over inputs of "
                             f"width d_model={d_model} (and d_ff={d_ff}) needs {expected[name]}")
    return arrays


def feed_forward(
    X: Float[np.ndarray, "... seq d_model"], params: Mapping[str, np.ndarray], activation: str = "relu"
) -> Float[np.ndarray, "... seq d_model"]:
    """The block's MLP, applied to each token alone: act(x W_1 + b_1) W_2 + b_2, with
    W_1 = linear1.weight.T (d_model, d_ff) and W_2 = linear2.weight.T (d_ff, d_model).
    Tokens do not meet here: row i of the output depends on row i of X only. ``params``
    needs only the four ``MLP_PARAMETER_NAMES``."""
    X = _features(X)
    p = _parameters(params, X.shape[-1], MLP_PARAMETER_NAMES)
    activation = choice(activation, "activation", ACTIVATIONS)
    hidden = _activate(X @ p["linear1.weight"].T + p["linear1.bias"], activation)  # (..., seq, d_ff)
    return hidden @ p["linear2.weight"].T + p["linear2.bias"]  # (..., seq, d_model)


def _attention_mask(mask, X: np.ndarray) -> np.ndarray | None:
    """The mask with a head axis inserted: (seq, seq) or X's leading dims + (seq, seq)."""
    if mask is None:
        return None
    mask = boolean_array(mask, "mask")
    *lead, seq, _ = X.shape
    if mask.shape not in ((seq, seq), (*lead, seq, seq)):
        raise ValueError(
            f"mask has shape {mask.shape}; for X of shape {X.shape} it must be (seq, seq) = "
            f"{(seq, seq)} or X's leading dims + (seq, seq) = {(*lead, seq, seq)}"
        )
    return mask[..., None, :, :]  # (..., 1, seq, seq): the same mask for every head


def encoder_block(
    X: Float[np.ndarray, "... seq d_model"],
    params: Mapping[str, np.ndarray],
    *,
    n_heads: int,
    norm_first: bool,
    activation: str = "relu",
    mask: Bool[np.ndarray, "... seq seq"] | None = None,
    eps: float = 1e-5,
) -> Float[np.ndarray, "... seq d_model"]:
    """One transformer encoder block, equal to ``torch.nn.TransformerEncoderLayer`` (eval
    mode, dropout 0, ``batch_first=True``) with the same parameters and ``norm_first``.

    X (..., seq, d_model), a single (seq, d_model) sequence too; ``mask`` True where a query
    may attend, (seq, seq) or X's leading dims + (seq, seq). Each sublayer's output is added
    to the residual stream x; ``norm_first`` decides whether LayerNorm comes before the
    sublayer (Pre-LN) or after the addition (Post-LN).
    """
    X = real_array(X, "X", min_ndim=2, non_empty=True, layout="(..., seq, d_model)").astype(np.float64, copy=False)
    d_model = X.shape[-1]
    eps = number(eps, "eps", above=0)
    n_heads = integer(n_heads, "n_heads", minimum=1)
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} (X of shape {X.shape}) is not divisible by n_heads={n_heads}")
    norm_first = flag(norm_first, "norm_first")
    activation = choice(activation, "activation", ACTIVATIONS)
    p = _parameters(params, d_model)
    attend_mask = _attention_mask(mask, X)
    W_q, W_k, W_v = (W.T for W in np.split(p["self_attn.in_proj_weight"], 3))  # each (d_model, d_model)
    b_q, b_k, b_v = np.split(p["self_attn.in_proj_bias"], 3)

    def attend(x):
        out, _ = multi_head_attention(x, W_q, W_k, W_v, p["self_attn.out_proj.weight"].T, n_heads,
                                      mask=attend_mask, b_q=b_q, b_k=b_k, b_v=b_v,
                                      b_o=p["self_attn.out_proj.bias"])
        return out

    def mlp(x):
        return feed_forward(x, p, activation)

    def norm(x, k):
        return layer_norm(x, p[f"norm{k}.weight"], p[f"norm{k}.bias"], eps)

    if norm_first:
        X = X + attend(norm(X, 1))
        return X + mlp(norm(X, 2))
    X = norm(X + attend(X), 1)
    return norm(X + mlp(X), 2)
