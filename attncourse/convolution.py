"""Convolution as multi-head self-attention (Cordonnier, Loukas & Jaggi, ICLR 2020).

A convolution with a kernel of K taps applies one matrix per relative position. Attention
with purely positional scores can do the same with K heads, one per shift Delta:

* the queries and keys carry no content (W_q = W_k = 0), so the score of query i on key j
  is positional only: ``-alpha (j - i - Delta)**2``, largest at j = i + Delta;
* a row softmax turns it into weights that tend to a one-hot shift as alpha grows;
* each head's value map is the kernel's slice for its shift, ``kernel[:, :, Delta + K//2]``
  transposed to (c_in, c_out); the output maps are identities, so the heads are summed.

The input is padded with K//2 zero tokens on each side, as ``F.conv1d(..., padding=K//2)``
pads it, and the output keeps the rows of the original tokens (the crop). As alpha grows,
the result tends to torch's convolution, which is a cross-correlation: tap k of the kernel
multiplies the token k - K//2 places away, with no flip.

``conv1d_reference`` and ``conv2d_reference`` are that convolution itself, in numpy: the
one reference every comparison in the course uses (the chapter, its checks, the explorer),
equal to torch's ``F.conv1d`` / ``F.conv2d`` with ``padding=K//2`` (tests/test_convolution.py).

Rows are tokens: a sequence is ``(seq, c_in)``, an image ``(height, width, c_in)``; the
kernels are in torch's layouts, ``(c_out, c_in, K)`` and ``(c_out, c_in, K, K)``. Bad
input is refused through ``attncourse.validation``: ``TypeError`` for the wrong kind of
thing (complex input too: a real convolution would drop its imaginary part), ``ValueError``
naming the value at fault.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float

from attncourse.attention import softmax
from attncourse.validation import flag, integer, number, real_array

__all__ = [
    "conv1d_as_attention",
    "conv1d_reference",
    "conv2d_as_attention",
    "conv2d_reference",
    "largest_error",
    "shift_weights",
    "shifts",
]


def _kernel_size(kernel_size, name: str = "kernel_size") -> int:
    size = integer(kernel_size, name, minimum=1)
    if size % 2 == 0:
        raise ValueError(
            f"{name} must be odd and positive (one centre tap, K//2 on each side), got K={size}"
        )
    return size


def _alpha(alpha) -> float:
    return number(alpha, "alpha", minimum=0)


def _numeric(array, name: str, ndim: int, layout: str) -> np.ndarray:
    values = real_array(array, name, ndim=ndim, layout=layout, non_empty=True)
    return values.astype(np.float64, copy=False)


def shifts(kernel_size: int) -> np.ndarray:
    """The shifts Delta = -(K//2) .. K//2 of a kernel of K taps: tap k has Delta = k - K//2.

    >>> shifts(5).tolist()
    [-2, -1, 0, 1, 2]
    """
    half = _kernel_size(kernel_size) // 2
    return np.arange(-half, half + 1)


def shift_weights(
    seq: int, kernel_size: int, alpha: float, padding: bool = True
) -> Float[np.ndarray, "K seq seq_padded"]:
    """The attention weights of the K heads on the padded sequence.

    Query i (an original token, at padded position i + K//2) scores padded key j with
    ``-alpha (j - (i + K//2) - Delta)**2``; each row is a softmax. Returns an array of shape
    ``(K, seq, seq + 2 * (K//2))``: ``weights[h, i, j]`` is how much head h (shift
    ``shifts(K)[h]``) at token i takes from padded token j. With ``padding=False`` the keys
    are the original tokens only, ``(K, seq, seq)``: what goes wrong at the borders.

    >>> shift_weights(3, 3, 50.0).round(3)[0].tolist()  # Delta = -1: the previous token
    [[1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0]]
    """
    seq = integer(seq, "seq", minimum=1)
    deltas = shifts(kernel_size)
    half = len(deltas) // 2 if flag(padding, "padding") else 0
    queries = np.arange(seq) + half  # padded positions of the original tokens
    keys = np.arange(seq + 2 * half)
    offsets = keys[None, :] - queries[:, None]  # (seq, seq_padded): j - i
    scores = -_alpha(alpha) * (offsets[None] - deltas[:, None, None]) ** 2  # (K, seq, seq_padded)
    return softmax(scores, axis=-1)


def _checked_conv(values, kernel, name: str, layout: str, kernel_layout: str):
    """``(values, kernel, K//2)`` as float arrays once their channels agree and K is odd."""
    ndim = layout.count(",") + 1
    values = _numeric(values, name, ndim, layout)
    taps = _numeric(kernel, "kernel", ndim + 1, kernel_layout)
    if taps.shape[1] != values.shape[-1]:
        raise ValueError(
            f"the kernel {taps.shape} expects c_in={taps.shape[1]} channels but {name} "
            f"{values.shape} has {values.shape[-1]}"
        )
    if ndim == 3 and taps.shape[2] != taps.shape[3]:
        raise ValueError(f"the kernel must be square, {kernel_layout}; got {taps.shape}")
    return values, taps, _kernel_size(taps.shape[-1], "the kernel's size K") // 2


def conv1d_reference(
    x: Float[np.ndarray, "seq c_in"], kernel: Float[np.ndarray, "c_out c_in K"]
) -> Float[np.ndarray, "seq c_out"]:
    """torch's ``F.conv1d(x.T[None], kernel, padding=K//2)[0].T``, in numpy.

    x (seq, c_in); kernel (c_out, c_in, K), K odd. A cross-correlation (no flip): output
    token i is ``sum_k kernel[:, :, k] @ x[i + k - K//2]``, with zero tokens past the ends.

    >>> conv1d_reference(np.arange(4.0)[:, None], np.array([[[-1.0, 0.0, 1.0]]])).ravel().tolist()
    [1.0, 2.0, 2.0, -2.0]
    """
    tokens, taps, half = _checked_conv(x, kernel, "x", "(seq, c_in)", "(c_out, c_in, K)")
    padded = np.pad(tokens, ((half, half), (0, 0)))  # (seq + 2 * half, c_in)
    windows = np.lib.stride_tricks.sliding_window_view(padded, taps.shape[-1], axis=0)  # (seq, c_in, K)
    return np.einsum("sck,ock->so", windows, taps)  # (seq, c_out)


def conv2d_reference(
    image: Float[np.ndarray, "height width c_in"], kernel: Float[np.ndarray, "c_out c_in K K"]
) -> Float[np.ndarray, "height width c_out"]:
    """torch's ``F.conv2d(image, kernel, padding=K//2)``, in numpy, rows are pixels' rows.

    image (height, width, c_in); kernel (c_out, c_in, K, K), K odd. A cross-correlation:
    pixel (r, c) is ``sum_{a,b} kernel[:, :, a, b] @ image[r + a - K//2, c + b - K//2]``,
    with zero pixels outside the image.
    """
    pixels, taps, half = _checked_conv(image, kernel, "image", "(height, width, c_in)",
                                       "(c_out, c_in, K, K)")
    padded = np.pad(pixels, ((half, half), (half, half), (0, 0)))  # (height + 2 half, width + 2 half, c_in)
    size = taps.shape[-1]
    windows = np.lib.stride_tricks.sliding_window_view(
        padded, (size, size), axis=(0, 1))  # (height, width, c_in, K, K)
    return np.einsum("hwcab,ocab->hwo", windows, taps)  # (height, width, c_out)


def _heads_summed(weights, tokens, value_maps) -> np.ndarray:
    """Multi-head attention with identity output maps: sum_h weights_h tokens value_map_h.

    weights (n_heads, seq, seq_padded), tokens (seq_padded, c_in),
    value_maps (n_heads, c_in, c_out) -> (seq, c_out).
    """
    values = tokens @ value_maps  # (n_heads, seq_padded, c_out)
    heads = weights @ values  # (n_heads, seq, c_out)
    n_heads, seq, c_out = heads.shape
    concatenated = heads.transpose(1, 0, 2).reshape(seq, n_heads * c_out)  # (seq, n_heads * c_out)
    output_map = np.tile(np.eye(c_out), (n_heads, 1))  # (n_heads * c_out, c_out): W_O
    return concatenated @ output_map  # (seq, c_out)


def conv1d_as_attention(
    x: Float[np.ndarray, "seq c_in"],
    kernel: Float[np.ndarray, "c_out c_in K"],
    alpha: float,
    padding: bool = True,
) -> Float[np.ndarray, "seq c_out"]:
    """A kernel-K ``conv1d`` built as K attention heads with positional scores.

    x (seq, c_in); kernel (c_out, c_in, K) in ``torch.nn.functional.conv1d``'s layout, K odd.
    Returns (seq, c_out), which tends to ``F.conv1d(x.T[None], kernel, padding=K//2)[0].T``
    as alpha grows (the error falls like e^-alpha). ``padding=False`` leaves out the K//2
    zero tokens on each side: the heads at the borders then find no token at their shift
    and settle on the nearest one, so the border rows never converge.

    >>> x = np.arange(4.0)[:, None]  # (seq, c_in) = (4, 1)
    >>> difference = np.array([[[-1.0, 0.0, 1.0]]])  # x[i+1] - x[i-1]
    >>> conv1d_as_attention(x, difference, alpha=50.0).round(6).ravel().tolist()
    [1.0, 2.0, 2.0, -2.0]
    """
    tokens, taps, half = _checked_conv(x, kernel, "x", "(seq, c_in)", "(c_out, c_in, K)")
    half = half if flag(padding, "padding") else 0
    weights = shift_weights(len(tokens), taps.shape[-1], alpha, padding)  # (K, seq, seq_padded)
    padded = np.pad(tokens, ((half, half), (0, 0)))  # (seq_padded, c_in)
    value_maps = taps.transpose(2, 1, 0)  # (K, c_in, c_out): head h maps with tap h
    return _heads_summed(weights, padded, value_maps)


def largest_error(
    x: Float[np.ndarray, "seq c_in"], kernel: Float[np.ndarray, "c_out c_in K"], alpha: float
) -> float:
    """How far the K heads are from the convolution: max |conv1d_as_attention -
    conv1d_reference| over every token and channel (the convolution explorer's readout,
    and what chapter 6's tune exercise asks to bring below a target).

    >>> largest_error(np.arange(4.0)[:, None], np.array([[[-1.0, 0.0, 1.0]]]), 50.0) < 1e-15
    True
    """
    return float(np.abs(conv1d_as_attention(x, kernel, alpha) - conv1d_reference(x, kernel)).max())


def conv2d_as_attention(
    image: Float[np.ndarray, "height width c_in"],
    kernel: Float[np.ndarray, "c_out c_in K K"],
    alpha: float,
    dilation: int = 1,
) -> Float[np.ndarray, "height width c_out"]:
    """A K x K ``conv2d`` built as K**2 attention heads with the quadratic encoding.

    image (height, width, c_in); kernel (c_out, c_in, K, K) in ``F.conv2d``'s layout, K odd.
    Every pixel is a token. The head of shift Delta = (Delta_1, Delta_2) scores pixel q on
    pixel k with ``-alpha ||(k - q) - Delta||**2``. With ``dilation`` d the taps sit d pixels
    apart: still K**2 heads, with shifts d * Delta, and d * (K//2) zero pixels of padding.
    Returns (height, width, c_out), which tends to
    ``F.conv2d(..., padding=dilation * (K//2), dilation=dilation)`` as alpha grows.
    """
    pixels, taps, _ = _checked_conv(image, kernel, "image", "(height, width, c_in)",
                                    "(c_out, c_in, K, K)")
    c_out, c_in, kernel_size, _ = taps.shape
    dilation = integer(dilation, "dilation", minimum=1)
    deltas = dilation * shifts(kernel_size)  # (K,): the taps' offsets along one axis
    half = int(deltas[-1])  # the padding: the farthest tap
    height, width, _ = pixels.shape
    padded = np.pad(pixels, ((half, half), (half, half), (0, 0)))
    tokens = padded.reshape(-1, c_in)  # (n_padded, c_in), row-major pixels
    rows, cols = np.divmod(np.arange(len(tokens)), width + 2 * half)
    inside = (rows >= half) & (rows < height + half) & (cols >= half) & (cols < width + half)
    offsets = np.stack([rows[None, :] - rows[inside, None],
                        cols[None, :] - cols[inside, None]], axis=-1)  # (n_pixels, n_padded, 2)
    head_shifts = np.stack(np.meshgrid(deltas, deltas, indexing="ij"), -1).reshape(-1, 2)  # (K*K, 2)
    distances = ((offsets[None] - head_shifts[:, None, None]) ** 2).sum(-1)  # (K*K, n_pixels, n_padded)
    weights = softmax(-_alpha(alpha) * distances, axis=-1)
    value_maps = taps.reshape(c_out, c_in, -1).transpose(2, 1, 0)  # (K*K, c_in, c_out)
    output = _heads_summed(weights, tokens, value_maps)  # (n_pixels, c_out)
    return output.reshape(height, width, c_out)  # (height, width, c_out)
