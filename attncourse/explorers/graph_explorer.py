"""The graph explorer: a stack of attention layers drawn as graphs, in the browser.

``GraphExplorer`` is an anywidget (JavaScript in graph_explorer.js, carried in the
saved widget state), so it works on the static site with no kernel as well as live in
Jupyter. Its controls: a threshold below which edges are hidden, the causal and window
masks, "W_Q = W_K" (every layer's keys made with its query matrix), and a layer stepper.
For the layer shown it draws that layer's attention graph and the attention rollout of
layers 1 to that one, in the two-column layout of ``attncourse.graph_figures`` (each
token read on the left, sized by how much it is read; each reader on the right), and
names the layer's most lopsided cycle through three tokens.

``graph_explorer_view`` computes what the explorer shows with the course's numpy code;
the JavaScript must agree with it (tests/test_graph_explorer.py runs both).

What syncs, and when (the pattern of every explorer): every input (the matrices, scale,
skip, the masks, tied, the layer shown, the threshold) goes to the browser when it is
assigned and accepted, and the reader's controls send theirs back in a live kernel.
``weights`` and ``rollout`` are never synced: Python recomputes them whenever an input
changes, from Python or from the browser; the browser computes its own copy to draw.
Every assignment is checked as the constructor checks it (``InvalidExplorerInput``), and
a refused value leaves the explorer unchanged.
"""

from __future__ import annotations

import anywidget
import numpy as np
import traitlets

from attncourse.attention import causal_mask
from attncourse.explorers.common import InvalidExplorerInput, matrix_trait, result_trait
from attncourse.explorers.esm import bundle, stylesheet
from attncourse.graph import attention_rollout, largest_cycle_ratio, stacked_attention, window_mask

__all__ = ["GraphExplorer", "graph_explorer_view"]


def _layers(W, name: str, d_model: int) -> np.ndarray:
    """(d_model, d) or (n_layers, d_model, d) -> (n_layers, d_model, d)."""
    array = np.asarray(W, dtype=float)
    if array.ndim == 2:
        array = array[None]  # (1, d_model, d): a single layer
    if array.ndim != 3 or array.shape[1] != d_model or 0 in array.shape:
        raise InvalidExplorerInput(
            f"{name} must have shape (n_layers, d_model={d_model}, d) or (d_model, d), got "
            f"{np.shape(W)}"
        )
    return array


def explorer_mask(seq: int, causal: bool, window: bool, window_radius: int) -> np.ndarray:
    """The edge set the explorer uses: (seq, seq) bool, all True when no mask is on."""
    allowed = np.ones((seq, seq), dtype=bool)
    if causal:
        allowed &= causal_mask(seq)
    if window:
        allowed &= window_mask(seq, window_radius)
    return allowed


def graph_explorer_view(X, W_q, W_k, W_v, scale, skip=True, causal=False, window=False,
                        window_radius=2, tied=False):
    """What the graph explorer shows, for every layer.

    X (seq, d_model); W_q, W_k (n_layers, d_model, d_k); W_v (n_layers, d_model, d_model).
    With ``tied`` every layer uses W_q for its keys too. Returns a dict:

    * ``weights`` (n_layers, seq, seq): each layer's attention;
    * ``rollouts`` (n_layers, seq, seq): rollouts[l] is the rollout of layers 0..l;
    * ``read`` (n_layers, seq): each layer's column sums, how much each token is read;
    * ``cycles``: per layer, ``largest_cycle_ratio`` of its weights (or None).
    """
    X = np.asarray(X, dtype=float)
    W_q, W_k, W_v = (np.asarray(W, dtype=float) for W in (W_q, W_k, W_v))
    mask = explorer_mask(len(X), causal, window, window_radius)
    _, weights = stacked_attention(X, W_q, W_q if tied else W_k, W_v, skip=skip, mask=mask,
                                   scale=scale)  # (n_layers, seq, seq)
    return {
        "weights": weights,
        "rollouts": np.stack([attention_rollout(weights[: k + 1]) for k in range(len(weights))]),
        "read": weights.sum(axis=1),
        "cycles": [largest_cycle_ratio(layer) for layer in weights],
    }


# What graph_explorer_view reads; every input the constructor checks together.
_VIEW_INPUTS = ("X", "W_q", "W_k", "W_v", "scale", "skip", "causal", "window", "window_radius",
                "tied")
_INPUTS = ("tokens", *_VIEW_INPUTS, "threshold", "layer")


def _coerced(inputs: dict) -> dict:
    """Every input in the form the explorer keeps it, raising InvalidExplorerInput naming
    the first one that disagrees with the others."""
    tokens = [str(t) for t in inputs["tokens"]]
    try:
        X = np.asarray(inputs["X"], dtype=float)
    except (TypeError, ValueError):
        raise InvalidExplorerInput(f"X must be a matrix of numbers, got {inputs['X']!r}") from None
    if X.ndim != 2 or 0 in X.shape:
        raise InvalidExplorerInput(f"X must be a non-empty (seq, d_model) matrix, got shape {X.shape}")
    if len(tokens) != len(X):
        raise InvalidExplorerInput(f"{len(tokens)} token labels for X with seq={len(X)} rows {X.shape}")
    d_model = X.shape[1]
    W_q, W_k, W_v = (_layers(inputs[name], name, d_model) for name in ("W_q", "W_k", "W_v"))
    if W_k.shape != W_q.shape or W_v.shape != (len(W_q), d_model, d_model):
        raise InvalidExplorerInput(
            f"need W_q and W_k of one shape (n_layers, d_model, d_k) and W_v of shape "
            f"(n_layers, d_model, d_model) = {(len(W_q), d_model, d_model)}; got "
            f"{W_q.shape}, {W_k.shape} and {W_v.shape}"
        )
    if not all(np.isfinite(W).all() for W in (X, W_q, W_k, W_v)):
        raise InvalidExplorerInput("X, W_q, W_k and W_v must be finite (no NaN or infinity)")
    threshold, scale = inputs["threshold"], inputs["scale"]
    if not 0 <= threshold <= 1:
        raise InvalidExplorerInput(f"threshold must be between 0 and 1, got {threshold!r}")
    if not np.isfinite(scale):
        raise InvalidExplorerInput(f"scale must be a finite number, got {scale!r}")
    try:
        window_mask(len(X), inputs["window_radius"])  # a radius that is a whole number >= 0
    except (TypeError, ValueError) as error:
        raise InvalidExplorerInput(str(error)) from None
    layer = inputs["layer"]
    if isinstance(layer, bool) or not 0 <= layer < len(W_q):
        raise InvalidExplorerInput(f"layer must be from 0 to n_layers - 1 = {len(W_q) - 1}, got {layer!r}")
    return inputs | {"tokens": tokens, "X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v}


class GraphExplorer(anywidget.AnyWidget):
    """Attention layers as graphs, explored in the browser.

    ``GraphExplorer(tokens, X, W_q, W_k, W_v, scale=None, skip=True, threshold=0.1,
    causal=False, window=False, window_radius=2, tied=False)``

    X (seq, d_model); W_q, W_k (n_layers, d_model, d_k) (or one layer, (d_model, d_k));
    W_v (n_layers, d_model, d_model). Each layer is one head, X_{l+1} = A_l X_l W_v[l]
    (plus X_l with ``skip``), as ``attncourse.graph.stacked_attention``; ``scale``
    defaults to 1/sqrt(d_k). ``weights`` (n_layers, seq, seq) and ``rollout`` (seq, seq,
    for the layer shown) follow every input, assigned in Python or moved by the reader.

    >>> e = GraphExplorer(["a", "b"], np.eye(2), np.eye(2), np.eye(2), np.eye(2), scale=1.0)
    >>> e.weights.round(3).tolist()
    [[[0.731, 0.269], [0.269, 0.731]]]
    >>> e.causal = True
    >>> e.weights.round(3).tolist()
    [[[1.0, 0.0], [0.269, 0.731]]]
    """

    _esm = bundle("graph_explorer.js")
    _css = stylesheet("graph_explorer.css")

    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    X = matrix_trait()
    W_q = matrix_trait()
    W_k = matrix_trait()
    W_v = matrix_trait()
    scale = traitlets.Float(1.0).tag(sync=True)
    skip = traitlets.Bool(True).tag(sync=True)
    threshold = traitlets.Float(0.1).tag(sync=True)
    causal = traitlets.Bool(False).tag(sync=True)
    window = traitlets.Bool(False).tag(sync=True)
    window_radius = traitlets.Int(2).tag(sync=True)
    tied = traitlets.Bool(False).tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)  # 0-based; the page says "layer 1 of n"
    weights = result_trait()
    rollout = result_trait()

    def __init__(self, tokens, X, W_q, W_k, W_v, scale=None, skip=True, threshold=0.1,
                 causal=False, window=False, window_radius=2, tied=False):
        if scale is None:
            d_k = np.shape(W_q)[-1] if np.ndim(W_q) else 1
            scale = 1.0 / np.sqrt(max(d_k, 1))  # W_q itself is checked below
        inputs = _coerced({"tokens": tokens, "X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v,
                           "scale": scale, "skip": skip, "threshold": threshold, "causal": causal,
                           "window": window, "window_radius": window_radius, "tied": tied,
                           "layer": 0})
        super().__init__(**inputs | {  # numpy scalars as the traits' own types
            "scale": float(scale), "threshold": float(threshold), "window_radius": int(window_radius),
            **{name: bool(inputs[name]) for name in ("skip", "causal", "window", "tied")}})

    @traitlets.validate(*_INPUTS)
    def _validate_input(self, proposal):
        name = proposal["trait"].name
        return _coerced({n: getattr(self, n) for n in _INPUTS} | {name: proposal["value"]})[name]

    @traitlets.observe(*_VIEW_INPUTS, "layer")
    def _recompute(self, change=None):
        view = graph_explorer_view(*(getattr(self, name) for name in _VIEW_INPUTS))
        self.set_trait("weights", view["weights"])
        self.set_trait("rollout", view["rollouts"][min(self.layer, len(view["rollouts"]) - 1)])
