"""Figures for chapter 8, positions. Every function takes arrays and labels and returns a
Figure; none computes anything the chapter has not computed already."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attncourse.plotting import PHONE_WIDTH_IN

__all__ = ["offset_curve_panels", "similarity_by_offset"]


def offset_curve_panels(offsets, panels, ylabel: str, sharey: bool = True) -> Figure:
    """Curves against the offset, one panel per (title, {legend label: values (n,)}),
    stacked (a phone shows a row of them too small): e.g. the sinusoidal dot product for several bases, then several widths.

    offsets (n,); every curve has n values.
    """
    x = np.asarray(offsets, dtype=float)
    curves = [(title, {label: np.asarray(y, dtype=float) for label, y in series.items()})
              for title, series in panels]
    if x.ndim != 1 or not curves or any(not series or any(y.shape != x.shape for y in series.values())
                                        for _, series in curves):
        raise ValueError(
            f"need a 1-D offsets and, in every panel, curves of its length; got offsets "
            f"{x.shape} and {[{label: y.shape for label, y in series.items()} for _, series in curves]}"
        )
    fig, axes = plt.subplots(len(curves), 1, squeeze=False, sharey=sharey, layout="constrained",
                             figsize=(PHONE_WIDTH_IN, 3.2 * len(curves)))
    for ax, (title, series) in zip(axes[:, 0], curves):
        ax.set_ylabel(ylabel)
        for label, y in series.items():
            ax.plot(x, y, label=label, lw=1.4)
        ax.set(xlabel="offset k", title=title)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.axhline(0, color="0.6", lw=0.8)
        ax.legend(fontsize=9)
    plt.close(fig)
    return fig


def similarity_by_offset(similarity, by_offset, offsets, title: str, first_position: int = 0) -> Figure:
    """Two panels: a (n, n) similarity matrix of positions as a heatmap, and below it its
    mean over each diagonal (by_offset (m,), at offsets (m,)) as a curve. Row and column 0
    of the matrix are position ``first_position``, and the heatmap's axes say so."""
    matrix = np.asarray(similarity, dtype=float)
    means, x = np.asarray(by_offset, dtype=float), np.asarray(offsets, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or means.shape != x.shape or means.ndim != 1:
        raise ValueError(
            f"need a square similarity matrix and by_offset and offsets of one length; got "
            f"{matrix.shape}, {means.shape} and {x.shape}"
        )
    fig, (left, right) = plt.subplots(2, 1, layout="constrained",  # stacked for phones
                                      figsize=(PHONE_WIDTH_IN, 7.6))
    # nearest: one block per position pair (a smoothed map is twice the bytes and no clearer)
    last = first_position + len(matrix) - 0.5  # the axes count positions, not rows
    image = left.imshow(matrix, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest",
                        extent=(first_position - 0.5, last, last, first_position - 0.5))
    left.set(xlabel="position j", ylabel="position i", title=title)
    fig.colorbar(image, ax=left, shrink=0.8)
    right.plot(x, means, lw=1.4)
    right.set(xlabel="offset |i - j|", ylabel="mean cosine similarity", title="averaged by offset")
    right.grid(alpha=0.3)
    right.axhline(0, color="0.6", lw=0.8)
    plt.close(fig)
    return fig
