"""Figures of chapter 7 (attention in a real model). Each function takes arrays and labels
and returns a Figure; it computes nothing the notebook has not already computed."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["attention_grid"]


def attention_grid(maps, tokens, titles, columns: int = 6, label: str = "attention weight") -> Figure:
    """Several (seq, seq) maps of one sentence, one panel each, rows are queries.

    maps (n_panels, seq, seq); tokens: the seq token strings; titles: one per panel.
    Each panel has its own colour scale from 0 to its largest entry.
    """
    maps = np.asarray(maps, dtype=float)
    if maps.ndim != 3 or maps.shape[1:] != (len(tokens), len(tokens)) or len(titles) != len(maps):
        raise ValueError(
            f"need maps (n_panels, seq, seq) with seq = {len(tokens)} tokens and one title "
            f"per panel, got maps {maps.shape} and {len(titles)} titles"
        )
    rows = -(-len(maps) // columns)
    columns = min(columns, len(maps))
    size = 0.5 + 0.17 * len(tokens)
    fig, axes = plt.subplots(rows, columns, squeeze=False, layout="constrained",
                             figsize=(0.8 + columns * size, 0.4 + rows * size))
    for ax in axes.flat[len(maps):]:
        ax.set_visible(False)
    for ax, panel, title in zip(axes.flat, maps, titles):
        ax.imshow(panel, cmap="Blues", vmin=0.0, vmax=max(float(panel.max()), 1e-12))
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(len(tokens)), labels=tokens, rotation=90, fontsize=6)
        ax.set_yticks(range(len(tokens)), labels=tokens, fontsize=6)
    fig.suptitle(f"{label}: rows are queries, columns keys", fontsize=9)
    plt.close(fig)
    return fig
