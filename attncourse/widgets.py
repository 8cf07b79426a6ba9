"""Attention explorers: edit the matrices, watch scores, weights, outputs and the graph change.

``AttentionExplorer`` is an anywidget: its JavaScript (static/explorer.js) travels inside
the saved widget state, so the same explorer works on the static site with no kernel and
live in Jupyter, Binder or Colab. In a live kernel the edited matrices and the weights
the browser computed sync back as numpy arrays (``explorer.W_q``, ``explorer.weights``),
and assigning a matrix from Python (``explorer.X = ...``) redraws the explorer.

Conventions follow ``attncourse.attention``: rows are tokens, Q = X W_q, K = X W_k,
V = X W_v (an omitted W means the identity). With ``n_heads`` > 1 the columns of Q, K
and V are split into ``n_heads`` equal blocks, one per head, and the output is the heads'
outputs side by side (no output projection).
"""

from __future__ import annotations

import pathlib

import anywidget
import ipywidgets
import numpy as np
import traitlets

from attncourse.attention import dot_product_scores, scaled_dot_product_attention

__all__ = ["AttentionExplorer", "explorer_view", "with_scale_slider"]

_STATIC = pathlib.Path(__file__).parent / "static"
_PROJECTIONS = ("W_q", "W_k", "W_v")
VIEWS = ("scores", "weights", "output", "graph", "mask")
EDITABLE = ("X", "W_q", "W_k", "W_v", "mask")


def _split_heads(M, n_heads):
    """(seq, n_heads * d_head) -> (n_heads, seq, d_head)."""
    seq, width = M.shape
    return M.reshape(seq, n_heads, width // n_heads).transpose(1, 0, 2)  # (n_heads, seq, d_head)


def explorer_view(X, W_q=None, W_k=None, W_v=None, scale=None, mask=None, n_heads=1):
    """What the explorer shows, computed with the numpy reference.

    X (seq, d_model); W_q, W_k (d_model, n_heads * d_head); W_v (d_model, n_heads * d_head_v);
    mask (seq, seq) bool, True = may attend; scale defaults to 1/sqrt(d_head).
    Returns ``(scores, weights, output)``: scores = Q_h K_h^T before scaling and weights =
    softmax(scale * scores, masked), both (seq, seq) for one head and
    (n_heads, seq, seq) for several; output (seq, n_heads * d_head_v).
    """
    X = np.asarray(X, dtype=float)
    Q, K, V = (X if W is None else X @ np.asarray(W, dtype=float) for W in (W_q, W_k, W_v))
    Q, K, V = (_split_heads(M, n_heads) for M in (Q, K, V))  # (n_heads, seq, d_head)
    if scale is None:
        scale = 1.0 / np.sqrt(Q.shape[-1])
    scores = dot_product_scores(Q, K)  # (n_heads, seq, seq)
    heads_out, weights = scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)
    seq = X.shape[0]
    output = heads_out.transpose(1, 0, 2).reshape(seq, -1)  # (seq, n_heads * d_head_v)
    if n_heads == 1:
        return scores[0], weights[0], output
    return scores, weights, output


def _check_inputs(tokens, X, projections, mask, n_heads):
    if X.ndim != 2:
        raise ValueError(f"X must be a (seq, d_model) matrix, got shape {X.shape}")
    seq, d_model = X.shape
    if seq == 0 or d_model == 0:
        raise ValueError(f"X must have at least one token and one dimension, got shape {X.shape}")
    if len(tokens) != seq:
        raise ValueError(f"{len(tokens)} token labels for X with seq={seq} rows {X.shape}")
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    widths = {}
    for name, W in projections.items():
        if W is not None and (W.ndim != 2 or W.shape[0] != d_model):
            raise ValueError(f"{name} must have shape (d_model={d_model}, d), got {W.shape}")
        widths[name] = d_model if W is None else W.shape[1]
        if widths[name] % n_heads:
            raise ValueError(
                f"{name} gives {widths[name]} columns, not divisible into n_heads={n_heads}"
            )
    if widths["W_q"] != widths["W_k"]:
        raise ValueError(
            f"W_q gives d_k={widths['W_q']} but W_k gives d_k={widths['W_k']}: "
            "queries and keys must live in the same space"
        )
    if mask is not None:
        if mask.shape != (seq, seq):
            raise ValueError(f"mask must have shape (seq, seq)={(seq, seq)}, got {mask.shape}")
        if not mask.any(axis=-1).all():
            rows = np.flatnonzero(~mask.any(axis=-1)).tolist()
            raise ValueError(f"mask rows {rows} allow nothing: every token must see one token")


def _matrix_trait(dtype=float):
    """A numpy array in Python, nested lists (empty for None) in the browser."""
    return traitlets.Any(None, allow_none=True).tag(
        sync=True,
        to_json=lambda value, widget: [] if value is None else np.asarray(value, dtype).tolist(),
        from_json=lambda value, widget: None if not value else np.asarray(value, dtype=dtype),
    )


class AttentionExplorer(anywidget.AnyWidget):
    """Editable attention that runs in the browser.

    ``AttentionExplorer(tokens, X, W_q=None, W_k=None, W_v=None, scale=None, mask=None,
    n_heads=1, editable=("X",), views=("scores", "weights", "output"), dims=None,
    decimals=2)``

    ``editable`` names the inputs the reader may edit (any of X, W_q, W_k, W_v, mask);
    ``views`` what is shown (any of scores, weights, output, graph, mask); ``dims``
    names the d_model columns of X (and so the rows of each W), default x0, x1, ...
    Scores, weights and output are heatmaps that print their numbers (``decimals``
    places) for up to 12 tokens; past that they are colour only, each value on hover.

    >>> e = AttentionExplorer(["a", "b"], [[1.0, 0.0], [0.0, 1.0]], scale=np.log(3.0))
    >>> e.weights.round(2).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """

    _esm = _STATIC / "explorer.js"
    _css = _STATIC / "explorer.css"

    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    X = _matrix_trait()
    W_q = _matrix_trait()
    W_k = _matrix_trait()
    W_v = _matrix_trait()
    mask = _matrix_trait(bool)
    scale = traitlets.Float(1.0).tag(sync=True)
    n_heads = traitlets.Int(1).tag(sync=True)
    editable = traitlets.List(traitlets.Unicode()).tag(sync=True)
    views = traitlets.List(traitlets.Unicode()).tag(sync=True)
    dims = traitlets.List(traitlets.Unicode()).tag(sync=True)
    decimals = traitlets.Int(2).tag(sync=True)
    scores = _matrix_trait()
    weights = _matrix_trait()
    output = _matrix_trait()

    def __init__(self, tokens, X, W_q=None, W_k=None, W_v=None, scale=None, mask=None,
                 n_heads=1, editable=("X",), views=("scores", "weights", "output"),
                 dims=None, decimals=2):
        tokens = [str(t) for t in tokens]
        X = np.asarray(X, dtype=float)
        projections = {
            name: None if W is None else np.asarray(W, dtype=float)
            for name, W in zip(_PROJECTIONS, (W_q, W_k, W_v))
        }
        mask = None if mask is None else np.asarray(mask, dtype=bool)
        _check_inputs(tokens, X, projections, mask, n_heads)
        for name in editable:
            if name not in EDITABLE:
                raise ValueError(f"cannot edit {name!r}: choose from {EDITABLE}")
            if name != "X" and (projections | {"mask": mask}).get(name) is None:
                raise ValueError(f"cannot make {name!r} editable: it was not given")
        dims = [f"x{k}" for k in range(X.shape[1])] if dims is None else [str(d) for d in dims]
        if len(dims) != X.shape[1]:
            raise ValueError(f"{len(dims)} dims labels for X with d_model={X.shape[1]} columns")
        unknown = sorted(set(views) - set(VIEWS))
        if unknown:
            raise ValueError(f"unknown views {unknown}: choose from {VIEWS}")
        if scale is None:
            W = projections["W_q"]
            d_k = X.shape[1] if W is None else W.shape[1]
            scale = 1.0 / np.sqrt(d_k // n_heads)
        scores, weights, output = explorer_view(
            X, **projections, scale=scale, mask=mask, n_heads=n_heads
        )
        super().__init__(
            tokens=tokens, X=X, **projections, scale=float(scale), mask=mask,
            n_heads=int(n_heads), editable=list(editable), views=list(views), dims=dims,
            decimals=decimals, scores=scores, weights=weights, output=output,
        )


def with_scale_slider(explorer, minimum=0.0, maximum=10.0, step=0.1, description="scale"):
    """The explorer under a slider for its ``scale``, linked in the browser (jslink),
    so the slider keeps working on the static site where there is no kernel."""
    slider = ipywidgets.FloatSlider(
        value=explorer.scale, min=minimum, max=maximum, step=step,
        description=description, continuous_update=True, readout_format=".2f",
    )
    ipywidgets.jslink((slider, "value"), (explorer, "scale"))
    return ipywidgets.VBox([slider, explorer])
