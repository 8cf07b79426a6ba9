"""Figures for the chapters. Every function takes arrays and labels and returns a Figure.

The functions draw; they compute nothing the reader has not already seen computed in
the notebook, so a figure can never disagree with the numbers next to it.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["annotated_heatmap", "attention_panels", "scaling_panels"]


def _draw_heatmap(ax, values, row_labels, col_labels, title, cmap, decimals, vmin, vmax):
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"a heatmap needs a 2-D array, got shape {values.shape}")
    if len(row_labels) != values.shape[0] or len(col_labels) != values.shape[1]:
        raise ValueError(
            f"{len(row_labels)} row labels and {len(col_labels)} column labels "
            f"for an array of shape {values.shape}"
        )
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(values.shape[1]), labels=[str(c) for c in col_labels])
    ax.set_yticks(range(values.shape[0]), labels=[str(r) for r in row_labels])
    ax.tick_params(top=True, labeltop=True, bottom=False, labelbottom=False)
    ax.set_title(title, pad=12)
    threshold = image.norm(values).mean() if values.size else 0.5
    for (i, j), value in np.ndenumerate(values):
        light = image.norm(value) > max(threshold, 0.5)
        ax.text(j, i, f"{value:.{decimals}f}", ha="center", va="center",
                color="white" if light else "black", fontsize=9)
    return image


def annotated_heatmap(values, row_labels, col_labels, title="", cmap="Blues",
                      decimals=2, vmin=None, vmax=None) -> Figure:
    """One matrix as a heatmap with its numbers written in the cells.

    values (n_rows, n_cols); row_labels, col_labels: sequences of the matching lengths.
    """
    values = np.asarray(values, dtype=float)
    fig, ax = plt.subplots(figsize=(1.0 + 0.8 * max(values.shape[-1], 2),
                                    0.8 + 0.6 * max(values.shape[0], 2)),
                           layout="constrained")
    image = _draw_heatmap(ax, values, row_labels, col_labels, title, cmap, decimals, vmin, vmax)
    fig.colorbar(image, ax=ax, shrink=0.8)
    plt.close(fig)
    return fig


def attention_panels(scores, weights, output, tokens, dims=None) -> Figure:
    """The three steps of attention side by side for one sequence.

    scores (seq, seq) and weights (seq, seq) labelled by tokens on both axes;
    output (seq, d_v) labelled by tokens and ``dims`` (default d0, d1, ...).
    """
    output = np.asarray(output, dtype=float)
    dims = dims if dims is not None else [f"d{k}" for k in range(output.shape[-1])]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), layout="constrained",
                             gridspec_kw={"width_ratios": [1, 1, max(len(dims), 3) / 3]})
    _draw_heatmap(axes[0], scores, tokens, tokens, "similarity scores", "Greys", 2, None, None)
    _draw_heatmap(axes[1], weights, tokens, tokens, "attention weights (rows sum to 1)",
                  "Blues", 2, 0.0, 1.0)
    _draw_heatmap(axes[2], output, tokens, dims, "context vectors", "Oranges", 2, None, None)
    axes[0].set_ylabel("query token")
    plt.close(fig)
    return fig


def scaling_panels(dims, raw_std, scaled_std, raw_max_weight, scaled_max_weight) -> Figure:
    """Why divide by sqrt(d): spread of dot products and the largest softmax weight vs d.

    All five arguments are 1-D arrays of the same length (one entry per dimension d).
    """
    arrays = [np.asarray(a, dtype=float) for a in
              (dims, raw_std, scaled_std, raw_max_weight, scaled_max_weight)]
    if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
        raise ValueError(f"expected 1-D arrays of one length, got {[a.shape for a in arrays]}")
    dims, raw_std, scaled_std, raw_max, scaled_max = arrays
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    left.plot(dims, raw_std, "o-", label=r"$q \cdot k$")
    left.plot(dims, scaled_std, "s-", label=r"$q \cdot k / \sqrt{d}$")
    left.set(xscale="log", yscale="log", xlabel="dimension d",
             ylabel="standard deviation of the score", title="spread of the scores")
    right.plot(dims, raw_max, "o-", label="unscaled")
    right.plot(dims, scaled_max, "s-", label="scaled")
    right.set(xscale="log", ylim=(0, 1.05), xlabel="dimension d",
              ylabel="largest weight in the row", title="how peaked the softmax is")
    for ax in (left, right):
        ax.legend()
        ax.grid(alpha=0.3)
    plt.close(fig)
    return fig
