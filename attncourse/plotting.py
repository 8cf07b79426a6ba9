"""Figures for the chapters. Every function takes arrays and labels and returns a Figure.

The functions draw; they compute nothing the reader has not already seen computed in
the notebook, so a figure can never disagree with the numbers next to it.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

__all__ = [
    "annotated_heatmap",
    "attention_panels",
    "attention_vs_intended",
    "embedding_arrows",
    "heatmap_panels",
    "line_chart",
    "scaling_panels",
]

# A phone's content column is about 358 CSS px and the book scales a wider figure down to
# it: a figure wider than about 4.8 inches (at its own dpi) shrinks a 9 pt text below 9 px
# (9 pt * 358 px / (72 px/inch * 9 px) = 4.97 inches, less the tight bounding box's padding).
PHONE_WIDTH_IN = 4.6


def _check_labels(values, row_labels, col_labels):
    if values.ndim != 2:
        raise ValueError(f"a heatmap needs a 2-D array, got shape {values.shape}")
    if len(row_labels) != values.shape[0] or len(col_labels) != values.shape[1]:
        raise ValueError(
            f"{len(row_labels)} row labels and {len(col_labels)} column labels "
            f"for an array of shape {values.shape}"
        )


def _draw_heatmap(ax, values, row_labels, col_labels, title, cmap, decimals, vmin, vmax):
    values = np.asarray(values, dtype=float)
    _check_labels(values, row_labels, col_labels)
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(values.shape[1]), labels=[str(c) for c in col_labels])
    ax.set_yticks(range(values.shape[0]), labels=[str(r) for r in row_labels])
    ax.tick_params(top=True, labeltop=True, bottom=False, labelbottom=False)
    ax.set_title(title, pad=12)
    for (i, j), value in np.ndenumerate(values):
        # White on dark cells, black on light ones, judged by the cell's luminance, so
        # diverging colour maps (light in the middle) stay readable too.
        red, green, blue, _ = image.cmap(image.norm(value))
        dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
        # z: a small negative value rounds to "0", not "-0"
        ax.text(j, i, f"{value:z.{decimals}f}", ha="center", va="center",
                color="white" if dark else "black", fontsize=9)
    return image


def annotated_heatmap(values, row_labels, col_labels, title="", cmap="Blues",
                      decimals=2, vmin=None, vmax=None) -> Figure:
    """One matrix as a heatmap with its numbers written in the cells.

    values (n_rows, n_cols); row_labels, col_labels: sequences of the matching lengths.
    """
    values = np.asarray(values, dtype=float)
    fig, ax = plt.subplots(figsize=(1.0 + 0.6 * max(values.shape[-1], 2),
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
    # stacked, not side by side: a phone shows a figure no wider than about 5 inches legibly
    fig, axes = plt.subplots(3, 1, figsize=(4.6, 9.6), layout="constrained")
    _draw_heatmap(axes[0], scores, tokens, tokens, "similarity scores", "Greys", 2, None, None)
    _draw_heatmap(axes[1], weights, tokens, tokens, "attention weights (rows sum to 1)",
                  "Blues", 2, 0.0, 1.0)
    _draw_heatmap(axes[2], output, tokens, dims, "context vectors", "Oranges", 2, None, None)
    if max(len(str(d)) for d in dims) > 4:  # names wider than a cell would overlap
        axes[2].tick_params(axis="x", labelrotation=90)
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
    fig, (left, right) = plt.subplots(2, 1, figsize=(5.0, 7.0), layout="constrained")  # stacked for phones
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


def heatmap_panels(matrices, row_labels, col_labels, titles, cmap="Blues", decimals=2,
                   vmin=None, vmax=None, ncols=None) -> Figure:
    """Several matrices of one shape in a grid, e.g. before / after, or two cases.

    matrices: sequence of (n_rows, n_cols) arrays, one per title, at most ``ncols`` panels
    per row of the grid (default: all in one row), fewer where a row would be wider than
    a phone shows legibly (PHONE_WIDTH_IN). ``decimals=None`` leaves the numbers out
    (for large matrices). Given vmin and vmax, all panels share one colour scale and a
    colour bar. Row labels are written on the first panel of each grid row only.
    """
    matrices = [np.asarray(m, dtype=float) for m in matrices]
    if len(matrices) != len(titles) or len({m.shape for m in matrices}) != 1:
        raise ValueError(
            f"need one title per matrix and matrices of one shape, got {len(titles)} titles "
            f"and shapes {[m.shape for m in matrices]}"
        )
    n_rows, n_cols = matrices[0].shape
    cell = 0.2 if decimals is None else 0.5  # inches per cell: numbers need room
    fits = max(1, int((PHONE_WIDTH_IN - 1.2) // (0.3 + cell * n_cols)))
    ncols = min(len(matrices) if ncols is None else ncols, fits)
    nrows = -(-len(matrices) // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(1.2 + ncols * (0.3 + cell * n_cols),
                                      nrows * (1.0 + cell * n_rows)))
    for k, (ax, matrix, title) in enumerate(zip(axes.flat, matrices, titles)):
        if decimals is None:
            image = _draw_unlabelled(ax, matrix, row_labels, col_labels, title, cmap, vmin, vmax)
        else:
            image = _draw_heatmap(ax, matrix, row_labels, col_labels, title, cmap, decimals,
                                  vmin, vmax)
        if k % ncols:
            ax.tick_params(labelleft=False)
    for ax in axes.flat[len(matrices):]:
        ax.set_visible(False)
    if vmin is not None and vmax is not None:
        fig.colorbar(image, ax=axes, shrink=0.8)
    plt.close(fig)
    return fig


def _draw_unlabelled(ax, values, row_labels, col_labels, title, cmap, vmin, vmax):
    _check_labels(values, row_labels, col_labels)
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(values.shape[1]), labels=[str(c) for c in col_labels],
                  rotation=90, fontsize=9)
    ax.set_yticks(range(values.shape[0]), labels=[str(r) for r in row_labels], fontsize=9)
    ax.set_title(title, fontsize=10)
    return image


def embedding_arrows(snapshots, labels, titles, highlight=()) -> Figure:
    """2-D embeddings drawn as arrows from the origin, one panel per snapshot.

    snapshots: sequence of (vocab, 2) arrays; labels: the vocab words; titles: one per
    panel. Words in ``highlight`` are drawn in colour, the others in grey. All panels
    share their axes, so a move from one panel to the next is a move of the vector.
    """
    snapshots = [np.asarray(s, dtype=float) for s in snapshots]
    if len(snapshots) != len(titles) or any(s.shape != (len(labels), 2) for s in snapshots):
        raise ValueError(
            f"need one title per snapshot and snapshots of shape (vocab={len(labels)}, 2), "
            f"got {len(titles)} titles and shapes {[s.shape for s in snapshots]}"
        )
    reach = 1.15 * max(np.abs(s).max() for s in snapshots)
    colours = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    colour = {word: next(colours) if word in highlight else "0.6" for word in labels}
    fig, axes = plt.subplots(len(snapshots), 1, squeeze=False, layout="constrained",
                             figsize=(4.4, 4.2 * len(snapshots)))  # stacked for phones
    for ax, points, title in zip(axes[:, 0], snapshots, titles):
        for word, (x, y) in zip(labels, points):
            ax.annotate("", xy=(x, y), xytext=(0, 0),
                        arrowprops=dict(arrowstyle="->", color=colour[word], lw=2))
            left = x < -1e-9  # labels point away from the vertical axis, so pairs do not collide
            ax.text(x, y, f"{word} " if left else f" {word}", color=colour[word], fontsize=10,
                    va="bottom", ha="right" if left else "left")
        ax.set(xlim=(-reach, reach), ylim=(-reach, reach), aspect="equal", title=title)
        ax.axhline(0, color="0.85", lw=0.8)
        ax.axvline(0, color="0.85", lw=0.8)
    plt.close(fig)
    return fig


def line_chart(x, series, xlabel, ylabel, title="", yscale="linear") -> Figure:
    """One or more curves over a shared x axis.

    x (n,); series: mapping from legend label to a (n,) array.
    """
    x = np.asarray(x, dtype=float)
    curves = {label: np.asarray(y, dtype=float) for label, y in series.items()}
    if x.ndim != 1 or not curves or any(y.shape != x.shape for y in curves.values()):
        raise ValueError(
            f"need a 1-D x and curves of its length, got x {x.shape} and "
            f"{ {label: y.shape for label, y in curves.items()} }"
        )
    fig, ax = plt.subplots(figsize=(PHONE_WIDTH_IN, 3.4), layout="constrained")
    for label, y in curves.items():
        ax.plot(x, y, label=label)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title, yscale=yscale)
    if np.array_equal(x, np.round(x)):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps, rounds: no 0.5 ticks
    ax.grid(alpha=0.3)
    if len(curves) > 1:
        ax.legend()
    plt.close(fig)
    return fig


def attention_vs_intended(weights, intended, words, title="") -> Figure:
    """Learned attention of one query per sentence, against the position it should pick.

    weights (n_sentences, seq): each row one query's attention weights; intended
    (n_sentences,): the position it should attend to, outlined in red; words
    (n_sentences, seq): the tokens, written in the cells.
    """
    weights = np.asarray(weights, dtype=float)
    intended = np.asarray(intended)
    if weights.ndim != 2 or intended.shape != weights.shape[:1] or (
            np.shape(words) != weights.shape):
        raise ValueError(
            f"need weights (n, seq), intended (n,) and words (n, seq), got "
            f"{weights.shape}, {intended.shape} and {np.shape(words)}"
        )
    n_rows, seq = weights.shape
    fig, ax = plt.subplots(figsize=(1.4 + 0.55 * seq, 0.8 + 0.5 * n_rows), layout="constrained")
    image = ax.imshow(weights, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    for (i, j), value in np.ndenumerate(weights):
        ax.text(j, i, f"{words[i][j]}\n{value:.2f}", ha="center", va="center", fontsize=9,
                color="white" if value > 0.5 else "black")
    for i, j in enumerate(intended):
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", lw=2))
    ax.set_xticks(range(seq), labels=[str(j) for j in range(seq)])
    ax.set_xlabel("position")
    ax.set_yticks(range(n_rows), labels=[f"sentence {i}" for i in range(n_rows)])
    ax.set_title(title)
    fig.colorbar(image, ax=ax, shrink=0.8, label="attention weight")
    plt.close(fig)
    return fig
