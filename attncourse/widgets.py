"""Attention explorers: edit the matrices, watch scores, weights and outputs change.

``AttentionExplorer`` is an anywidget: its JavaScript (static/explorer.js) travels inside
the saved widget state, so the same explorer works on the static site with no kernel and
live in Jupyter, Binder or Colab. In a live kernel the edited matrices and the weights
the browser computed sync back, as numpy arrays (``explorer.X``, ``explorer.weights``).

Conventions follow ``attncourse.attention``: rows are tokens, Q = X W_q, K = X W_k,
V = X W_v (an omitted W means the identity), weights = softmax(scale * Q K^T).
"""

from __future__ import annotations

import pathlib

import anywidget
import ipywidgets
import numpy as np
import traitlets

from attncourse.attention import dot_product_scores, softmax

__all__ = ["AttentionExplorer", "explorer_view", "with_scale_slider"]

_STATIC = pathlib.Path(__file__).parent / "static"
_PROJECTIONS = ("W_q", "W_k", "W_v")


def _to_json(value, widget):
    return [] if value is None else np.asarray(value, dtype=float).tolist()


def _from_json(value, widget):
    return None if value in (None, []) else np.asarray(value, dtype=float)


def _matrix_trait():
    return traitlets.Any(None, allow_none=True).tag(
        sync=True, to_json=_to_json, from_json=_from_json
    )


def explorer_view(X, W_q=None, W_k=None, W_v=None, scale=1.0, mask=None):
    """What the explorer shows, computed with the numpy reference.

    X (seq, d_model); W_q, W_k (d_model, d_k); W_v (d_model, d_v); mask (seq, seq) bool.
    Returns ``(scores, weights, output)``: scores = Q K^T (seq, seq) before scaling,
    weights = softmax(scale * scores, masked) (seq, seq), output = weights V (seq, d_v).
    """
    X = np.asarray(X, dtype=float)
    Q, K, V = (X if W is None else X @ np.asarray(W, dtype=float) for W in (W_q, W_k, W_v))
    scores = dot_product_scores(Q, K)  # (seq, seq)
    scaled = scale * scores
    if mask is not None:
        scaled = np.where(np.asarray(mask, dtype=bool), scaled, -np.inf)
    weights = softmax(scaled)  # (seq, seq)
    return scores, weights, weights @ V  # output: (seq, d_v)


def _check_inputs(tokens, X, projections, mask):
    if X.ndim != 2:
        raise ValueError(f"X must be a (seq, d_model) matrix, got shape {X.shape}")
    seq, d_model = X.shape
    if len(tokens) != seq:
        raise ValueError(f"{len(tokens)} token labels for X with seq={seq} rows {X.shape}")
    for name, W in projections.items():
        if W is not None and (W.ndim != 2 or W.shape[0] != d_model):
            raise ValueError(
                f"{name} must have shape (d_model={d_model}, d), got {W.shape}"
            )
    if projections["W_q"] is not None or projections["W_k"] is not None:
        d_q = d_model if projections["W_q"] is None else projections["W_q"].shape[1]
        d_k = d_model if projections["W_k"] is None else projections["W_k"].shape[1]
        if d_q != d_k:
            raise ValueError(f"W_q gives d_k={d_q} but W_k gives d_k={d_k}")
    if mask is not None and mask.shape != (seq, seq):
        raise ValueError(f"mask must have shape (seq, seq)={(seq, seq)}, got {mask.shape}")


class AttentionExplorer(anywidget.AnyWidget):
    """Editable attention: ``AttentionExplorer(tokens, X, W_q=..., scale=...)``.

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
    mask = traitlets.Any(None, allow_none=True).tag(
        sync=True,
        to_json=lambda m, w: [] if m is None else np.asarray(m, dtype=bool).tolist(),
        from_json=lambda m, w: None if not m else np.asarray(m, dtype=bool),
    )
    scale = traitlets.Float(1.0).tag(sync=True)
    editable = traitlets.List(traitlets.Unicode()).tag(sync=True)
    views = traitlets.List(traitlets.Unicode()).tag(sync=True)
    decimals = traitlets.Int(2).tag(sync=True)
    scores = _matrix_trait()
    weights = _matrix_trait()
    output = _matrix_trait()

    def __init__(
        self,
        tokens,
        X,
        W_q=None,
        W_k=None,
        W_v=None,
        scale=1.0,
        mask=None,
        editable=("X",),
        views=("scores", "weights", "output"),
        decimals=2,
    ):
        tokens = [str(t) for t in tokens]
        X = np.asarray(X, dtype=float)
        projections = {
            name: None if W is None else np.asarray(W, dtype=float)
            for name, W in zip(_PROJECTIONS, (W_q, W_k, W_v))
        }
        mask = None if mask is None else np.asarray(mask, dtype=bool)
        _check_inputs(tokens, X, projections, mask)
        for name in editable:
            if name != "X" and projections.get(name) is None:
                raise ValueError(f"cannot make {name!r} editable: it was not given")
        unknown = set(views) - {"scores", "weights", "output"}
        if unknown:
            raise ValueError(f"unknown views {sorted(unknown)}")
        scores, weights, output = explorer_view(X, **projections, scale=scale, mask=mask)
        super().__init__(
            tokens=tokens, X=X, **projections, scale=float(scale), mask=mask,
            editable=list(editable), views=list(views), decimals=decimals,
            scores=scores, weights=weights, output=output,
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
