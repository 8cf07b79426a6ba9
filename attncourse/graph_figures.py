"""Figures for chapter 5, attention as a graph. Every function takes arrays and labels
and returns a Figure; none computes anything the chapter has not computed already.

The attention graph is drawn in two columns, each token twice: on the left as a source
(a token being read), on the right as a reader. An edge j -> i is a line from j on the
left to i on the right, as thick and dark as ``weights[i, j]``, ending in an arrowhead at
the reader. Labels sit outside the columns, so no label ever covers an arrowhead.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

__all__ = ["attention_graph_panels", "eigenvalue_panels", "paired_bars"]


def attention_graph_panels(weight_matrices, tokens, titles, threshold=0.02, ncols=None) -> Figure:
    """One two-column graph per (seq, seq) weight matrix: edge j -> i for
    ``weights[i, j] > threshold``, drawn from source j (left) to reader i (right).

    A source's marker area is proportional to its column sum, how much the token is
    read; every reader's in-edges sum to 1, so readers are drawn alike.
    """
    matrices = [np.asarray(m, dtype=float) for m in weight_matrices]
    seq = len(tokens)
    if len(matrices) != len(titles) or any(m.shape != (seq, seq) for m in matrices):
        raise ValueError(
            f"need one title per matrix and matrices of shape (seq, seq) = ({seq}, {seq}), got "
            f"{len(titles)} titles and shapes {[m.shape for m in matrices]}"
        )
    ncols = 1 if ncols is None else ncols  # one graph per row: a row of two is too wide for a phone
    nrows = -(-len(matrices) // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(3.6 * ncols, 0.5 + 0.36 * seq * nrows))
    for ax, weights, title in zip(axes.flat, matrices, titles):
        _draw_bipartite(ax, weights, tokens, threshold)
        ax.set_title(title, fontsize=10)
    for ax in axes.flat[len(matrices):]:
        ax.set_visible(False)
    plt.close(fig)
    return fig


def _draw_bipartite(ax, weights, tokens, threshold):
    seq = len(tokens)
    y = -np.arange(seq, dtype=float)  # token 0 at the top
    read = weights.sum(axis=0)  # how much each token is read
    for i, j in zip(*np.nonzero(weights > threshold)):
        w = weights[i, j]
        ax.add_patch(FancyArrowPatch(
            (0.0, y[j]), (1.0, y[i]), arrowstyle="-|>", mutation_scale=6 + 6 * w,
            lw=0.4 + 3.0 * w, color=plt.cm.Blues(0.35 + 0.65 * w), alpha=0.35 + 0.65 * w,
            shrinkA=5, shrinkB=5, zorder=1 + w,
        ))
    ax.scatter(np.zeros(seq), y, s=40 * read / read.mean(), color="tab:orange", zorder=5,
               edgecolor="black", linewidth=0.5)
    ax.scatter(np.ones(seq), y, s=40, color="0.85", zorder=5, edgecolor="black", linewidth=0.5)
    for k, token in enumerate(tokens):
        ax.text(-0.08, y[k], str(token), ha="right", va="center", fontsize=9)
        ax.text(1.08, y[k], str(token), ha="left", va="center", fontsize=9)
    ax.text(0.0, 0.9, "read", ha="center", va="bottom", fontsize=9, color="0.3")
    ax.text(1.0, 0.9, "reader", ha="center", va="bottom", fontsize=9, color="0.3")
    ax.set(xlim=(-0.75, 1.75), ylim=(-seq + 0.4, 1.5))
    ax.axis("off")


def eigenvalue_panels(eigenvalue_sets, titles) -> Figure:
    """The eigenvalues of several matrices in the complex plane, with the unit circle.

    eigenvalue_sets: sequence of 1-D (complex or real) arrays, one per title.
    """
    sets = [np.asarray(e).astype(complex) for e in eigenvalue_sets]
    if len(sets) != len(titles) or any(e.ndim != 1 for e in sets):
        raise ValueError(
            f"need one 1-D array of eigenvalues per title, got {len(titles)} titles and "
            f"shapes {[e.shape for e in sets]}"
        )
    fig, axes = plt.subplots(len(sets), 1, squeeze=False, layout="constrained",
                             figsize=(3.6, 3.4 * len(sets)))  # stacked for phones
    circle = np.exp(1j * np.linspace(0, 2 * np.pi, 200))
    for ax, values, title in zip(axes[:, 0], sets, titles):
        ax.plot(circle.real, circle.imag, color="0.8", lw=1)
        ax.axhline(0, color="0.85", lw=0.8)
        ax.axvline(0, color="0.85", lw=0.8)
        real = np.abs(values.imag) < 1e-12
        ax.scatter(values.real[real], values.imag[real], color="tab:blue", label="real", zorder=3)
        ax.scatter(values.real[~real], values.imag[~real], color="tab:red", marker="D",
                   label="complex", zorder=3)
        ax.set(xlim=(-1.15, 1.15), ylim=(-1.15, 1.15), aspect="equal", title=title,
               xlabel="real part", ylabel="imaginary part")
        ax.legend(loc="lower left", fontsize=9)
    plt.close(fig)
    return fig


def paired_bars(first, second, labels, names, ylabel, title="") -> Figure:
    """Two quantities per label as side-by-side bars, e.g. how much each token is read
    and how much it contributes.

    first, second: (n,) arrays; labels: n strings; names: the two legend entries.
    """
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if first.ndim != 1 or first.shape != second.shape or len(labels) != len(first):
        raise ValueError(
            f"need two 1-D arrays and one label per entry, got shapes {first.shape} and "
            f"{second.shape} and {len(labels)} labels"
        )
    if len(names) != 2:
        raise ValueError(f"need two legend names, got {len(names)}")
    x = np.arange(len(first))
    fig, ax = plt.subplots(figsize=(1.2 + 0.62 * len(first), 3.4), layout="constrained")
    ax.bar(x - 0.2, first, width=0.4, label=names[0], color="tab:blue")
    ax.bar(x + 0.2, second, width=0.4, label=names[1], color="tab:orange")
    ax.set_xticks(x, labels=[str(label) for label in labels])
    ax.set(ylabel=ylabel, title=title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    plt.close(fig)
    return fig
