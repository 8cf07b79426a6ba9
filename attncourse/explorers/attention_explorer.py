"""Attention explorers: edit the matrices, watch scores, weights, outputs and the graph change.

``AttentionExplorer`` is an anywidget: its JavaScript (attention_explorer.js) travels inside
the saved widget state, so the same explorer works on the static site with no kernel and
live in Jupyter, Binder or Colab.

What syncs, and when:

* Python -> browser: every input (``tokens``, ``X``, ``W_q``, ``W_k``, ``W_v``, ``W_o``,
  ``mask``, ``scale``, ``n_heads``, ``heads_on``, ``combine``, ``editable``, ``views``,
  ``dims``, ``decimals``, ``goal``, ``input_name``, ``scale_slider``) when it is assigned
  and accepted; the browser redraws what depends on it.
* Browser -> Python (live kernel only): the reader's edits of the editable matrices, the
  head switches and the way heads are combined, and a ``scale`` moved on the explorer's
  scale slider, as they happen. Python checks them as it checks an
  assignment.
* ``scores``, ``weights`` and ``output`` are never synced: Python recomputes them with
  ``explorer_view`` (the numpy reference) whenever an input changes, from Python or from
  the browser, so they are right with no browser attached; the browser computes its own
  copy to draw. They are read-only.

Every assignment is checked against the other inputs as the constructor checks them
(``InvalidExplorerInput``, both a ``ValueError`` and a ``traitlets.TraitError``), and a
refused value leaves the explorer unchanged. Change several inputs that must agree (a new
number of tokens, a new d_model) together::

    with explorer.hold_trait_notifications():
        explorer.tokens = ["a", "b", "c"]
        explorer.X = X3

The saved state (what a built page carries) holds the inputs, not the results, so it grows
with seq x d_model, not with seq x seq; explorers take at most ``MAX_TOKENS`` tokens.

Conventions follow ``attncourse.attention`` and ``attncourse.multihead``: rows are tokens,
Q = X W_q, K = X W_k, V = X W_v (an omitted W means the identity). With ``n_heads`` > 1
the columns of Q, K and V are split into ``n_heads`` equal blocks, one per head. A head
switched off (``heads_on``) outputs zeros: zero ablation. With ``combine="concat"`` the
output is the heads' outputs side by side, times ``W_o`` when given; with
``combine="sum"`` it is the sum of the raw heads (``W_o`` unused), as in the first
version of the Transformer.
"""

from __future__ import annotations

import math

import anywidget
import numpy as np
import traitlets

from attncourse.attention import dot_product_scores, scaled_dot_product_attention
from attncourse.explorers.common import (
    InvalidExplorerInput,
    goal_trait,
    matrix_trait,
    result_trait,
)
from attncourse.explorers.esm import bundle, stylesheet
from attncourse.multihead import merge_heads, split_heads

__all__ = [
    "MAX_TOKENS",
    "AttentionExplorer",
    "InvalidExplorerInput",
    "explorer_view",
]

_PROJECTIONS = ("W_q", "W_k", "W_v")
VIEWS = ("scores", "weights", "output", "graph", "mask")
EDITABLE = ("X", "W_q", "W_k", "W_v", "W_o", "mask", "heads_on", "combine")
COMBINE = ("concat", "sum")
MAX_DECIMALS = 6
# Past this a heatmap is a blur of cells nobody reads, an edit takes longer than a frame to
# recompute and draw, and each view costs its page seq x seq canvas cells.
MAX_TOKENS = 64
# What explorer_view reads, and every input the constructor checks together.
_VIEW_INPUTS = ("X", "W_q", "W_k", "W_v", "scale", "mask", "n_heads", "W_o", "heads_on", "combine")
_INPUTS = ("tokens", *_VIEW_INPUTS, "editable", "views", "dims", "decimals", "goal", "input_name",
           "scale_slider")
# What a goal's cells can read (attncourse.checks.tune.GOAL_VIEWS, not imported: importing
# the checks would load every chapter's, torch included, wherever an explorer is shown).
_GOAL_VIEWS = ("scores", "weights")


def explorer_view(X, W_q=None, W_k=None, W_v=None, scale=None, mask=None, n_heads=1,
                  W_o=None, heads_on=None, combine="concat"):
    """What the explorer shows, computed with the numpy reference.

    X (seq, d_model); W_q, W_k (d_model, n_heads * d_head); W_v (d_model, n_heads * d_head_v);
    mask (seq, seq) bool, True = may attend; scale defaults to 1/sqrt(d_head); W_o
    (n_heads * d_head_v, d_out) or None; heads_on (n_heads,) bools, None for all on;
    combine "concat" or "sum".
    Returns ``(scores, weights, output)``: scores = Q_h K_h^T before scaling and weights =
    softmax(scale * scores, masked), both (seq, seq) for one head and
    (n_heads, seq, seq) for several; output (seq, n_heads * d_head_v) concatenated,
    (seq, d_out) concatenated times W_o, or (seq, d_head_v) summed.
    """
    X = np.asarray(X, dtype=float)
    Q, K, V = (X if W is None else X @ np.asarray(W, dtype=float) for W in (W_q, W_k, W_v))
    Q, K, V = (split_heads(M, n_heads) for M in (Q, K, V))  # (n_heads, seq, d_head)
    if scale is None:
        scale = 1.0 / np.sqrt(Q.shape[-1])
    scores = dot_product_scores(Q, K)  # (n_heads, seq, seq)
    heads_out, weights = scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)
    if heads_on is not None:
        heads_out = heads_out * np.asarray(heads_on, dtype=float)[:, None, None]  # zero ablation
    if combine == "sum":
        output = heads_out.sum(axis=0)  # (seq, d_head_v)
    else:
        output = merge_heads(heads_out)  # (seq, n_heads * d_head_v)
        if W_o is not None:
            output = output @ np.asarray(W_o, dtype=float)  # (seq, d_out)
    if n_heads == 1:
        return scores[0], weights[0], output
    return scores, weights, output


def _as_matrix(name, value):
    """None, or ``value`` as a 2-D array of finite floats."""
    if value is None:
        return None
    if np.iscomplexobj(value):
        raise InvalidExplorerInput(f"{name} must be real, got complex entries")
    try:
        matrix = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidExplorerInput(f"{name} must be a matrix of numbers, got {value!r}") from None
    if matrix.ndim != 2:
        shape = "(seq, d_model)" if name == "X" else "(d_model, d)"
        raise InvalidExplorerInput(f"{name} must be a {shape} matrix, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise InvalidExplorerInput(f"{name} has NaN or infinite entries")
    return matrix


def _as_mask(value):
    """None, or ``value`` as a boolean array: True/False, or the integers 1/0, only
    (``"False"``, 0.5 or NaN would all read as True)."""
    if value is None:
        return None
    mask = np.asarray(value)
    if mask.dtype == bool:
        return mask
    if np.issubdtype(mask.dtype, np.integer) and np.isin(mask, (0, 1)).all():
        return mask.astype(bool)
    odd = next((v for v in mask.ravel().tolist() if v not in (0, 1)), None)
    raise InvalidExplorerInput(
        f"mask must be boolean (True = may attend) or 0/1 integers, got dtype {mask.dtype}"
        + ("" if odd is None else f" with the entry {odd!r}")
    )


def _coerced(inputs):
    """Every input in the form the explorer keeps it (arrays for matrices)."""
    return inputs | {
        "X": _as_matrix("X", inputs["X"]),
        **{name: _as_matrix(name, inputs[name]) for name in _PROJECTIONS},
        "W_o": _as_matrix("W_o", inputs["W_o"]),
        "mask": _as_mask(inputs["mask"]),
        "heads_on": None if inputs["heads_on"] is None else list(inputs["heads_on"]),
        "tokens": [str(t) for t in inputs["tokens"]],
        "dims": [str(d) for d in inputs["dims"]],
        "scale_slider": _as_slider_range(inputs["scale_slider"]),
    }


def _as_slider_range(value):
    """``(minimum, maximum, step)`` of the scale slider as a list of floats; [] for none."""
    if value is None or len(value) == 0:
        return []
    try:
        numbers = [float(v) for v in value]
    except (TypeError, ValueError):
        numbers = []
    if len(numbers) != 3 or not all(math.isfinite(v) for v in numbers):
        raise InvalidExplorerInput(
            f"scale_slider must be (minimum, maximum, step), three finite numbers, got {value!r}")
    minimum, maximum, step = numbers
    if not minimum < maximum or not 0 < step <= maximum - minimum:
        raise InvalidExplorerInput(
            f"scale_slider (minimum, maximum, step) needs minimum < maximum and "
            f"0 < step <= maximum - minimum, got {tuple(numbers)}")
    return numbers


def _check(inputs):
    """Raise InvalidExplorerInput naming the first input that disagrees with the others."""
    X, tokens, n_heads, mask = inputs["X"], inputs["tokens"], inputs["n_heads"], inputs["mask"]
    if X is None:
        raise InvalidExplorerInput("X must be a (seq, d_model) matrix, got None")
    seq, d_model = X.shape
    if seq == 0 or d_model == 0:
        raise InvalidExplorerInput(
            f"X must have at least one token and one dimension, got shape {X.shape}")
    if seq > MAX_TOKENS:
        raise InvalidExplorerInput(
            f"X has seq={seq} tokens: an explorer shows at most MAX_TOKENS={MAX_TOKENS} "
            "(draw a larger attention matrix with attncourse.plotting)")
    if len(tokens) != seq:
        raise InvalidExplorerInput(f"{len(tokens)} token labels for X with seq={seq} rows {X.shape}")
    input_name = inputs["input_name"]
    if not isinstance(input_name, str) or not input_name.strip() or len(input_name) > 8:
        raise InvalidExplorerInput(
            f"input_name must be a short non-empty name like 'X' or 'A', got {input_name!r}")
    if len(inputs["dims"]) != d_model:
        raise InvalidExplorerInput(
            f"{len(inputs['dims'])} dims labels for X with d_model={d_model} columns")
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 1:
        raise InvalidExplorerInput(f"n_heads must be a positive integer, got {n_heads!r}")
    widths = {}
    for name in _PROJECTIONS:
        W = inputs[name]
        if W is not None and W.shape[0] != d_model:
            raise InvalidExplorerInput(f"{name} must have shape (d_model={d_model}, d), got {W.shape}")
        widths[name] = d_model if W is None else W.shape[1]
        if widths[name] % n_heads:
            raise InvalidExplorerInput(
                f"{name} gives {widths[name]} columns, not divisible into n_heads={n_heads}")
    if widths["W_q"] != widths["W_k"]:
        raise InvalidExplorerInput(
            f"W_q gives d_k={widths['W_q']} but W_k gives d_k={widths['W_k']}: "
            "queries and keys must live in the same space")
    W_o = inputs["W_o"]
    if W_o is not None and W_o.shape[0] != widths["W_v"]:
        raise InvalidExplorerInput(
            f"W_o must have one row per column of the heads' outputs, shape "
            f"(n_heads * d_head_v={widths['W_v']}, d_out), got {W_o.shape}")
    heads_on = inputs["heads_on"]
    if heads_on is not None and (len(heads_on) != n_heads
                                 or not all(isinstance(on, (bool, np.bool_)) for on in heads_on)):
        raise InvalidExplorerInput(
            f"heads_on must be {n_heads} booleans, one per head, got {heads_on!r}")
    if inputs["combine"] not in COMBINE:
        raise InvalidExplorerInput(f"combine must be one of {COMBINE}, got {inputs['combine']!r}")
    if mask is not None:
        if mask.shape != (seq, seq):
            raise InvalidExplorerInput(
                f"mask must have shape (seq, seq)={(seq, seq)}, got {mask.shape}")
        if not mask.any(axis=-1).all():
            rows = np.flatnonzero(~mask.any(axis=-1)).tolist()
            raise InvalidExplorerInput(
                f"mask rows {rows} allow nothing: every token must see one token")
    if not math.isfinite(inputs["scale"]):
        raise InvalidExplorerInput(f"scale must be a finite number, got {inputs['scale']}")
    if inputs["scale_slider"]:
        minimum, maximum, _ = inputs["scale_slider"]
        if not minimum <= inputs["scale"] <= maximum:
            raise InvalidExplorerInput(
                f"scale={inputs['scale']} is outside the scale slider's range "
                f"[{minimum}, {maximum}]")
    for name in inputs["editable"]:
        if name not in EDITABLE:
            raise InvalidExplorerInput(f"cannot edit {name!r}: choose from {EDITABLE}")
        if name in ("W_q", "W_k", "W_v", "W_o", "mask") and inputs[name] is None:
            raise InvalidExplorerInput(f"cannot make {name!r} editable: it was not given")
    unknown = sorted(set(inputs["views"]) - set(VIEWS))
    if unknown:
        raise InvalidExplorerInput(f"unknown views {unknown}: choose from {VIEWS}")
    if not 0 <= inputs["decimals"] <= MAX_DECIMALS:
        raise InvalidExplorerInput(
            f"decimals must be between 0 and {MAX_DECIMALS}, got {inputs['decimals']}")
    if inputs["goal"] is not None:
        _check_goal(inputs["goal"], inputs)


def _check_goal(goal, inputs):
    """A tune exercise's goal (attncourse.checks.tune.Goal) must name this explorer's
    tokens, views and inputs, and read a single head's (seq, seq) views."""
    if not callable(getattr(goal, "as_json", None)):
        raise InvalidExplorerInput(
            f"goal must be a Goal from attncourse.checks.tune, got {type(goal).__name__}")
    spec = goal.as_json()
    label = spec["label"]
    if inputs["n_heads"] != 1:
        raise InvalidExplorerInput(
            f"goal {label}: a goal reads one head's views, but n_heads={inputs['n_heads']}")
    cells = [side for c in spec["conditions"] for side in (c["left"], c["right"]) if "view" in side]
    cycles = [c["left"]["cycle"] for c in spec["conditions"] if "cycle" in c["left"]]
    named = ({t for cell in cells for t in (cell["row"], cell["col"])} | set(spec["fixed_rows"])
             | {t for cycle in cycles for t in cycle})
    unknown = sorted(named - set(inputs["tokens"]))
    if unknown:
        raise InvalidExplorerInput(
            f"goal {label}: unknown tokens {unknown}; the explorer's tokens are {inputs['tokens']}")
    unknown = sorted({cell["view"] for cell in cells} - set(_GOAL_VIEWS))
    if unknown:
        raise InvalidExplorerInput(f"goal {label}: unknown views {unknown}; choose from {_GOAL_VIEWS}")
    d_model = inputs["X"].shape[1]
    for token, row in spec["fixed_rows"].items():
        if len(row) != d_model:
            raise InvalidExplorerInput(
                f"goal {label}: the fixed row of {token!r} has {len(row)} entries, X has d_model={d_model}")
    for name in spec["bounds"]:
        if name not in ("X", *_PROJECTIONS, "W_o") or inputs[name] is None:
            raise InvalidExplorerInput(
                f"goal {label}: bounds on {name!r}, which is not one of the explorer's matrices")


class AttentionExplorer(anywidget.AnyWidget):
    """Editable attention that runs in the browser.

    ``AttentionExplorer(tokens, X, W_q=None, W_k=None, W_v=None, scale=None, mask=None,
    n_heads=1, editable=("X",), views=("scores", "weights", "output"), dims=None,
    decimals=2, W_o=None, heads_on=None, combine="concat", scale_slider=None)``

    ``editable`` names the inputs the reader may edit (any of X, W_q, W_k, W_v, W_o, mask,
    and ``heads_on`` for a switch per head, ``combine`` for concatenate-or-sum);
    ``W_o`` (n_heads * d_head_v, d_out) maps the concatenated heads; ``heads_on`` switches
    heads off (zero ablation; None: all on); ``combine`` is "concat" or "sum";
    ``goal`` a tune exercise's goal (``attncourse.checks.tune.Goal``), shown above the views
    with a checkmark evaluated in the browser on every edit;
    ``views`` what is shown (any of scores, weights, output, graph, mask); ``dims``
    names the d_model columns of X (and so the rows of each W), default x0, x1, ...;
    ``input_name`` is X's name in the chapter's notation (chapter 1 calls it A): the
    explorer labels its grid with it, and titles the scores "A Aᵀ" while there is no
    W_q or W_k.
    ``scale`` defaults to 1/sqrt(d_head) for the W_q given at construction;
    ``scale_slider=(minimum, maximum, step)`` shows a slider for it on the explorer (it
    works on the static site too), and ``scale`` must then stay in that range.
    Scores, weights and output are heatmaps that print their numbers (``decimals``
    places, 0 to 6) for up to 12 tokens; past that they are colour only, each value on
    hover. At most ``MAX_TOKENS`` tokens. See the module docstring for what syncs when.

    >>> e = AttentionExplorer(["a", "b"], [[1.0, 0.0], [0.0, 1.0]], scale=np.log(3.0))
    >>> e.weights.round(2).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    >>> e.scale = 0.0
    >>> e.weights.tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    """

    _esm = bundle("attention_explorer.js")
    _css = stylesheet("attention_explorer.css", "goal.css")

    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    X = matrix_trait()
    W_q = matrix_trait()
    W_k = matrix_trait()
    W_v = matrix_trait()
    W_o = matrix_trait()
    mask = matrix_trait(bool)
    heads_on = traitlets.List(traitlets.Bool(), allow_none=True, default_value=None).tag(sync=True)
    combine = traitlets.Unicode("concat").tag(sync=True)
    scale = traitlets.Float(1.0).tag(sync=True)
    n_heads = traitlets.Int(1).tag(sync=True)
    editable = traitlets.List(traitlets.Unicode()).tag(sync=True)
    views = traitlets.List(traitlets.Unicode()).tag(sync=True)
    dims = traitlets.List(traitlets.Unicode()).tag(sync=True)
    input_name = traitlets.Unicode("X").tag(sync=True)
    decimals = traitlets.Int(2).tag(sync=True)
    # A tune exercise's goal (attncourse.checks.tune.Goal), shown above the views.
    goal = goal_trait()
    scale_slider = traitlets.List(traitlets.Any()).tag(sync=True)  # [] or floats: _as_slider_range
    scores = result_trait()
    weights = result_trait()
    output = result_trait()

    def __init__(self, tokens, X, W_q=None, W_k=None, W_v=None, scale=None, mask=None,
                 n_heads=1, editable=("X",), views=("scores", "weights", "output"),
                 dims=None, decimals=2, W_o=None, heads_on=None, combine="concat", goal=None,
                 input_name="X", scale_slider=None):
        X, W = _as_matrix("X", X), _as_matrix("W_q", W_q)
        if dims is None and X is not None:
            dims = [f"x{k}" for k in range(X.shape[1])]
        if scale is None and X is not None:
            d_k = (X if W is None else W).shape[1]
            heads = n_heads if isinstance(n_heads, (int, np.integer)) and n_heads > 0 else 1
            scale = 1.0 / np.sqrt(max(d_k // heads, 1))  # n_heads is checked below
        super().__init__(
            tokens=list(tokens), X=X, W_q=W_q, W_k=W_k, W_v=W_v, scale=scale, mask=mask,
            n_heads=n_heads, editable=list(editable), views=list(views), dims=list(dims or []),
            decimals=decimals, W_o=W_o, heads_on=heads_on, combine=combine, goal=goal,
            input_name=input_name, scale_slider=() if scale_slider is None else scale_slider,
        )

    @traitlets.validate(*_INPUTS)
    def _validate_input(self, proposal):
        name = proposal["trait"].name
        inputs = _coerced({n: getattr(self, n) for n in _INPUTS} | {name: proposal["value"]})
        _check(inputs)
        return inputs[name]

    @traitlets.observe(*_VIEW_INPUTS)
    def _recompute(self, change=None):
        results = explorer_view(**{name: getattr(self, name) for name in _VIEW_INPUTS})
        for name, value in zip(("scores", "weights", "output"), results):
            self.set_trait(name, value)

