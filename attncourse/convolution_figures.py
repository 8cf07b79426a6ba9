"""Figures of chapter 6 (attention versus convolution). Each takes arrays, returns a Figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["head_weight_rows"]


def head_weight_rows(rows, offsets, deltas, alphas) -> Figure:
    """One query's weights in each of the K heads, one panel per alpha.

    rows (n_alphas, K, n_keys): ``rows[a, h]`` is head h's weight on each key at alpha
    ``alphas[a]``; offsets (n_keys,): each key's position relative to the query, j - i;
    deltas (K,): each head's shift. As alpha grows, the soft bumps become one-hot shifts.
    """
    rows = np.asarray(rows, dtype=float)
    offsets, deltas, alphas = (np.asarray(a) for a in (offsets, deltas, alphas))
    if rows.ndim != 3 or rows.shape != (len(alphas), len(deltas), len(offsets)):
        raise ValueError(
            f"rows must be (n_alphas, K, n_keys) = ({len(alphas)}, {len(deltas)}, "
            f"{len(offsets)}), got shape {rows.shape}"
        )
    fig, axes = plt.subplots(len(alphas), 1, squeeze=False, sharex=True, layout="constrained",
                             figsize=(4.6, 0.4 + 2.4 * len(alphas)))  # stacked for phones
    for ax, panel, alpha in zip(axes[:, 0], rows, alphas):
        for weights, delta in zip(panel, deltas):
            ax.plot(offsets, weights, marker="o", markersize=3, label=f"Δ = {delta:+d}")
        ax.set(title=f"alpha = {alpha:g}", ylabel="weight", ylim=(-0.05, 1.05))
        ax.set_xticks(offsets)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("key offset j - i")
    axes[-1, 0].legend(fontsize=9, loc="upper right")
    plt.close(fig)
    return fig
