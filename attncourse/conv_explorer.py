"""The convolution explorer of chapter 6: K attention heads with positional scores, and
the convolution they tend to as alpha grows.

``ConvolutionExplorer`` is an anywidget: its JavaScript (static/conv_explorer.js) travels
inside the saved widget state and computes everything in the browser, so it works on the
static site with no kernel. It shows one query token's weight row in each head, the heads'
output against the convolution's at every token, and the largest error between them; the
reader moves alpha and the query token and edits the kernel's taps. In a live kernel the
edits sync back (``explorer.alpha``, ``explorer.kernel``) and the properties ``weights``,
``output`` and ``max_error`` recompute them with ``attncourse.convolution``.

One channel in and out: the sequence is ``(seq,)``, the kernel ``(K,)`` taps, K odd.
"""

from __future__ import annotations

import anywidget
import numpy as np
import traitlets

from attncourse.convolution import conv1d_as_attention, shift_weights
from attncourse.esm import bundle

__all__ = ["ConvolutionExplorer"]

ALPHA_RANGE = (0.0, 30.0)  # the slider's range


def _vector(values, name: str, layout: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype == object or not np.issubdtype(array.dtype, np.number):
        raise ValueError(f"{name} must be numeric, got dtype {array.dtype}")
    if array.ndim != 1 or len(array) == 0:
        raise ValueError(f"{name} must be a non-empty vector {layout}, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite, got {array.tolist()}")
    return array.astype(np.float64)


class ConvolutionExplorer(anywidget.AnyWidget):
    """``ConvolutionExplorer(x, kernel, alpha=1.0, query=None)``: x (seq,), kernel (K,).

    ``query`` is the token whose weight rows are drawn (default: the middle one).

    >>> e = ConvolutionExplorer([0.0, 1.0, 2.0, 3.0], [-1.0, 0.0, 1.0], alpha=30.0)
    >>> e.output.round(6).tolist()  # x[i+1] - x[i-1], zero-padded
    [1.0, 2.0, 2.0, -2.0]
    >>> e.max_error < 1e-12
    True
    """

    _esm = bundle("conv_explorer.js")

    x = traitlets.List(traitlets.Float()).tag(sync=True)
    kernel = traitlets.List(traitlets.Float()).tag(sync=True)
    alpha = traitlets.Float(1.0).tag(sync=True)
    query = traitlets.Int(0).tag(sync=True)

    def __init__(self, x, kernel, alpha=1.0, query=None):
        x = _vector(x, "x", "(seq,)")
        kernel = _vector(kernel, "kernel", "(K,) of taps")
        if len(kernel) % 2 == 0:
            raise ValueError(f"the kernel needs an odd number of taps, got K={len(kernel)}")
        low, high = ALPHA_RANGE
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.number)) or not (
                low <= alpha <= high):
            raise ValueError(f"alpha must be a number in [{low:g}, {high:g}], got {alpha!r}")
        query = len(x) // 2 if query is None else query
        if isinstance(query, bool) or not isinstance(query, (int, np.integer)) or not (
                0 <= query < len(x)):
            raise ValueError(f"query must be a token index in 0..{len(x) - 1}, got {query!r}")
        super().__init__(x=x.tolist(), kernel=kernel.tolist(), alpha=float(alpha), query=int(query))

    @property
    def weights(self) -> np.ndarray:
        """(K, seq, seq + 2 * (K//2)): each head's weights on the padded tokens."""
        return shift_weights(len(self.x), len(self.kernel), self.alpha)

    @property
    def output(self) -> np.ndarray:
        """(seq,): the heads' output."""
        x = np.asarray(self.x)[:, None]  # (seq, c_in = 1)
        kernel = np.asarray(self.kernel)[None, None, :]  # (c_out = 1, c_in = 1, K)
        return conv1d_as_attention(x, kernel, self.alpha)[:, 0]

    @property
    def convolution(self) -> np.ndarray:
        """(seq,): F.conv1d with padding K//2, the heads' limit as alpha grows."""
        padded = np.pad(np.asarray(self.x), len(self.kernel) // 2)
        return np.correlate(padded, np.asarray(self.kernel), mode="valid")

    @property
    def max_error(self) -> float:
        """The largest |output - convolution| over the tokens: the explorer's readout."""
        return float(np.abs(self.output - self.convolution).max())
