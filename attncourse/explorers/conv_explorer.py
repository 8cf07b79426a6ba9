"""The convolution explorer of chapter 6: K attention heads with positional scores, and
the convolution they tend to as alpha grows.

``ConvolutionExplorer`` is an anywidget: its JavaScript (conv_explorer.js) travels
inside the saved widget state and computes everything in the browser, so it works on the
static site with no kernel. It shows one query token's weight row in each head, the heads'
output against the convolution's at every token, and the largest error between them; the
reader moves alpha (a slider, or a number typed in) and the query token and edits the
kernel's taps. Given ``goal=`` (a tune exercise's ``attncourse.checks.tune.SettingGoal`` on
alpha), it shows the goal with a checkmark evaluated in the browser on every edit. In a live
kernel the edits sync back (``explorer.alpha``, ``explorer.kernel``) and the properties ``weights``,
``output`` and ``max_error`` recompute them with ``attncourse.convolution``.

One channel in and out: the sequence is ``(seq,)``, the kernel ``(K,)`` taps, K odd.
"""

from __future__ import annotations

import anywidget
import numpy as np
import traitlets

from attncourse.convolution import conv1d_as_attention, shift_weights
from attncourse.explorers.common import goal_trait
from attncourse.explorers.esm import bundle, stylesheet

__all__ = ["ConvolutionExplorer", "exact_convolution", "heads_output", "largest_error"]

ALPHA_RANGE = (0.0, 30.0)  # the slider's range
# What a goal on this explorer may name: its setting, its readout, the inputs it may fix.
GOAL_SETTING, GOAL_READOUT, GOAL_INPUTS = "alpha", "max_error", ("x", "kernel")


def _vector(values, name: str, layout: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype == object or not np.issubdtype(array.dtype, np.number):
        raise ValueError(f"{name} must be numeric, got dtype {array.dtype}")
    if array.ndim != 1 or len(array) == 0:
        raise ValueError(f"{name} must be a non-empty vector {layout}, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite, got {array.tolist()}")
    return array.astype(np.float64)


def _check_goal(goal, inputs: dict[str, np.ndarray]) -> None:
    """A goal must be on this explorer's alpha and largest error, fix only its x and
    kernel (at their sizes), and search for the smallest alpha within the slider's range."""
    if not callable(getattr(goal, "as_json", None)) or goal.as_json().get("kind") != "setting":
        raise ValueError(f"goal must be a SettingGoal from attncourse.checks.tune, got {type(goal).__name__}")
    if (goal.setting, goal.readout) != (GOAL_SETTING, GOAL_READOUT):
        raise ValueError(f"goal {goal.label}: this explorer sets {GOAL_SETTING!r} and reads out "
                         f"{GOAL_READOUT!r}, not {goal.setting!r} and {goal.readout!r}")
    unknown = sorted(set(goal.fixed) - set(GOAL_INPUTS))
    if unknown:
        raise ValueError(f"goal {goal.label}: fixes {unknown}; this explorer's inputs are {list(GOAL_INPUTS)}")
    for name, values in goal.fixed.items():
        if len(values) != len(inputs[name]):
            raise ValueError(f"goal {goal.label}: its {name} has {len(values)} entries, the explorer's "
                             f"{len(inputs[name])}")
    low, high = ALPHA_RANGE
    if not low <= goal.search[0] < goal.search[1] <= high:
        raise ValueError(f"goal {goal.label}: searches alpha in {goal.search}, outside the slider's "
                         f"[{low:g}, {high:g}]")


class ConvolutionExplorer(anywidget.AnyWidget):
    """``ConvolutionExplorer(x, kernel, alpha=1.0, query=None, goal=None)``: x (seq,),
    kernel (K,).

    ``query`` is the token whose weight rows are drawn (default: the middle one); ``goal``
    a tune exercise's goal on alpha (``attncourse.checks.tune.SettingGoal``).

    >>> e = ConvolutionExplorer([0.0, 1.0, 2.0, 3.0], [-1.0, 0.0, 1.0], alpha=30.0)
    >>> e.output.round(6).tolist()  # x[i+1] - x[i-1], zero-padded
    [1.0, 2.0, 2.0, -2.0]
    >>> e.max_error < 1e-12
    True
    """

    _esm = bundle("conv_explorer.js")
    # In dark mode it stays on the light panel the theme gives every widget, in that
    # panel's dark ink: its canvases draw for a light background.
    _css = stylesheet("goal.css")

    x = traitlets.List(traitlets.Float()).tag(sync=True)
    kernel = traitlets.List(traitlets.Float()).tag(sync=True)
    alpha = traitlets.Float(1.0).tag(sync=True)
    query = traitlets.Int(0).tag(sync=True)
    # A tune exercise's goal on alpha (attncourse.checks.tune.SettingGoal), shown above the views.
    goal = goal_trait()

    def __init__(self, x, kernel, alpha=1.0, query=None, goal=None):
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
        if goal is not None:
            _check_goal(goal, {"x": x, "kernel": kernel})
        super().__init__(x=x.tolist(), kernel=kernel.tolist(), alpha=float(alpha), query=int(query),
                         goal=goal)

    @property
    def weights(self) -> np.ndarray:
        """(K, seq, seq + 2 * (K//2)): each head's weights on the padded tokens."""
        return shift_weights(len(self.x), len(self.kernel), self.alpha)

    @property
    def output(self) -> np.ndarray:
        """(seq,): the heads' output."""
        return heads_output(self.x, self.kernel, self.alpha)

    @property
    def convolution(self) -> np.ndarray:
        """(seq,): F.conv1d with padding K//2, the heads' limit as alpha grows."""
        return exact_convolution(self.x, self.kernel)

    @property
    def max_error(self) -> float:
        """The largest |output - convolution| over the tokens: the explorer's readout."""
        return largest_error(self.x, self.kernel, self.alpha)


def heads_output(x, kernel, alpha: float) -> np.ndarray:
    """(seq,): the K heads' output on x (seq,) with the kernel's taps (K,) as value maps."""
    x = np.asarray(x, dtype=float)[:, None]  # (seq, c_in = 1)
    kernel = np.asarray(kernel, dtype=float)[None, None, :]  # (c_out = 1, c_in = 1, K)
    return conv1d_as_attention(x, kernel, alpha)[:, 0]


def exact_convolution(x, kernel) -> np.ndarray:
    """(seq,): torch's conv1d of x (seq,) with the taps (K,), padding K//2 (no flip)."""
    padded = np.pad(np.asarray(x, dtype=float), len(kernel) // 2)
    return np.correlate(padded, np.asarray(kernel, dtype=float), mode="valid")


def largest_error(x, kernel, alpha: float) -> float:
    """The explorer's readout: the largest |heads' output - convolution| over the tokens."""
    return float(np.abs(heads_output(x, kernel, alpha) - exact_convolution(x, kernel)).max())
