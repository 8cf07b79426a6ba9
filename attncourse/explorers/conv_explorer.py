"""The convolution explorer of chapter 6: K attention heads with positional scores, and
the convolution they tend to as alpha grows.

``ConvolutionExplorer`` is an anywidget: its JavaScript (conv_explorer.js) travels
inside the saved widget state and computes everything in the browser, so it works on the
static site with no kernel. It shows one query token's weight row in each head, the heads'
output against the convolution's at every token, and the largest error between them; the
reader moves alpha (a slider, or a number typed in) and the query token and edits the
kernel's taps. Given ``goal=`` (a tune exercise's ``attncourse.checks.tune.SettingGoal`` on
alpha), it shows the goal with a checkmark evaluated in the browser on every edit.

What syncs, and when (the pattern of every explorer): the inputs (``x``, ``kernel``,
``alpha``, ``query``, ``goal``) go to the browser when assigned and accepted, and the
reader's edits come back in a live kernel. ``weights``, ``output``, ``convolution`` and
``max_error`` are never synced: Python recomputes them with ``attncourse.convolution``
whenever an input changes; the browser computes its own copy to draw. Every assignment is
checked as the constructor checks it (``InvalidExplorerInput``), and a refused value
leaves the explorer unchanged.

One channel in and out: the sequence is ``(seq,)``, the kernel ``(K,)`` taps, K odd.
"""

from __future__ import annotations

import anywidget
import numpy as np
import traitlets

from attncourse.convolution import (
    conv1d_as_attention,
    conv1d_reference,
    largest_error,
    shift_weights,
)
from attncourse.explorers.common import InvalidExplorerInput, finite_array, goal_trait, result_trait
from attncourse.explorers.esm import bundle, stylesheet

__all__ = ["ConvolutionExplorer"]

ALPHA_RANGE = (0.0, 30.0)  # the slider's range
# What a goal on this explorer may name: its setting, its readout, the inputs it may fix.
GOAL_SETTING, GOAL_READOUT, GOAL_INPUTS = "alpha", "max_error", ("x", "kernel")


def _vector(values, name: str, layout: str) -> np.ndarray:
    return finite_array(values, name, lambda shape: len(shape) == 1 and shape[0] > 0,
                        f"a non-empty vector {layout}")


def _check_goal(goal, inputs: dict[str, np.ndarray]) -> None:
    """A goal must be on this explorer's alpha and largest error, fix only its x and
    kernel (at their sizes), and search for the smallest alpha within the slider's range."""
    if not callable(getattr(goal, "as_json", None)) or goal.as_json().get("kind") != "setting":
        raise InvalidExplorerInput(f"goal must be a SettingGoal from attncourse.checks.tune, got {type(goal).__name__}")
    if (goal.setting, goal.readout) != (GOAL_SETTING, GOAL_READOUT):
        raise InvalidExplorerInput(f"goal {goal.label}: this explorer sets {GOAL_SETTING!r} and reads out "
                         f"{GOAL_READOUT!r}, not {goal.setting!r} and {goal.readout!r}")
    unknown = sorted(set(goal.fixed) - set(GOAL_INPUTS))
    if unknown:
        raise InvalidExplorerInput(f"goal {goal.label}: fixes {unknown}; this explorer's inputs are {list(GOAL_INPUTS)}")
    for name, values in goal.fixed.items():
        if len(values) != len(inputs[name]):
            raise InvalidExplorerInput(f"goal {goal.label}: its {name} has {len(values)} entries, the explorer's "
                             f"{len(inputs[name])}")
    low, high = ALPHA_RANGE
    if not low <= goal.search[0] < goal.search[1] <= high:
        raise InvalidExplorerInput(f"goal {goal.label}: searches alpha in {goal.search}, outside the slider's "
                         f"[{low:g}, {high:g}]")


def _coerced(inputs: dict) -> dict:
    """Every input in the form the explorer keeps it, raising InvalidExplorerInput naming
    the first one that disagrees with the others."""
    x = _vector(inputs["x"], "x", "(seq,)")
    kernel = _vector(inputs["kernel"], "kernel", "(K,) of taps")
    if len(kernel) % 2 == 0:
        raise InvalidExplorerInput(f"the kernel needs an odd number of taps, got K={len(kernel)}")
    alpha, query = inputs["alpha"], inputs["query"]
    low, high = ALPHA_RANGE
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.number)) or not (
            low <= alpha <= high):
        raise InvalidExplorerInput(f"alpha must be a number in [{low:g}, {high:g}], got {alpha!r}")
    if isinstance(query, bool) or not isinstance(query, (int, np.integer)) or not (
            0 <= query < len(x)):
        raise InvalidExplorerInput(f"query must be a token index in 0..{len(x) - 1}, got {query!r}")
    if inputs["goal"] is not None:
        _check_goal(inputs["goal"], {"x": x, "kernel": kernel})
    return inputs | {"x": x.tolist(), "kernel": kernel.tolist(), "alpha": float(alpha),
                     "query": int(query)}


_INPUTS = ("x", "kernel", "alpha", "query", "goal")


class ConvolutionExplorer(anywidget.AnyWidget):
    """``ConvolutionExplorer(x, kernel, alpha=1.0, query=None, goal=None)``: x (seq,),
    kernel (K,).

    ``query`` is the token whose weight rows are drawn (default: the middle one); ``goal``
    a tune exercise's goal on alpha (``attncourse.checks.tune.SettingGoal``). What it shows,
    recomputed whenever an input changes: ``weights`` (K, seq, seq + 2 * (K//2)), each
    head's weights on the padded tokens; ``output`` (seq,), the heads' output;
    ``convolution`` (seq,), ``conv1d_reference``, their limit as alpha grows; and
    ``max_error``, the largest |output - convolution|, the explorer's readout.

    >>> e = ConvolutionExplorer([0.0, 1.0, 2.0, 3.0], [-1.0, 0.0, 1.0], alpha=30.0)
    >>> e.output.round(6).tolist()  # x[i+1] - x[i-1], zero-padded
    [1.0, 2.0, 2.0, -2.0]
    >>> e.max_error < 1e-12
    True
    """

    _esm = bundle("conv_explorer.js")
    # In dark mode it stays on the light panel the theme gives every widget, in that
    # panel's dark ink: its canvases draw for a light background.
    _css = stylesheet("conv_explorer.css", "goal.css")

    x = traitlets.List(traitlets.Float()).tag(sync=True)
    kernel = traitlets.List(traitlets.Float()).tag(sync=True)
    alpha = traitlets.Float(1.0).tag(sync=True)
    query = traitlets.Int(0).tag(sync=True)
    # A tune exercise's goal on alpha (attncourse.checks.tune.SettingGoal), shown above the views.
    goal = goal_trait()
    weights = result_trait()
    output = result_trait()
    convolution = result_trait()
    max_error = result_trait()

    def __init__(self, x, kernel, alpha=1.0, query=None, goal=None):
        if query is None:
            query = len(x) // 2 if np.ndim(x) else 0  # x itself is checked below
        super().__init__(**_coerced({"x": x, "kernel": kernel, "alpha": alpha, "query": query,
                                     "goal": goal}))

    @traitlets.validate(*_INPUTS)
    def _validate_input(self, proposal):
        name = proposal["trait"].name
        return _coerced({n: getattr(self, n) for n in _INPUTS} | {name: proposal["value"]})[name]

    @traitlets.observe("x", "kernel", "alpha")
    def _recompute(self, change=None):
        x = np.asarray(self.x)[:, None]  # (seq, c_in = 1)
        kernel = np.asarray(self.kernel)[None, None, :]  # (c_out = 1, c_in = 1, K)
        self.set_trait("weights", shift_weights(len(self.x), len(self.kernel), self.alpha))
        self.set_trait("output", conv1d_as_attention(x, kernel, self.alpha)[:, 0])
        self.set_trait("convolution", conv1d_reference(x, kernel)[:, 0])
        self.set_trait("max_error", largest_error(x, kernel, self.alpha))
