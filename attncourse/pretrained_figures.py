"""Figures of chapter 7 (attention in a real model). Each function takes arrays and labels
and returns a Figure; it computes nothing the notebook has not already computed."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from attncourse.plotting import PHONE_WIDTH_IN

__all__ = ["attention_grid", "token_bars"]


def attention_grid(maps, tokens, titles, columns: int = 6, label: str = "attention weight",
                   shared_scale: bool = True) -> Figure:
    """Several (seq, seq) maps of one sentence, one panel each, rows are queries.

    maps (n_panels, seq, seq); tokens: the seq token strings; titles: one per panel; at
    most ``columns`` panels per row, fewer where the row would be wider than a phone shows
    legibly (9 pt token labels need about 0.16 inch per token).
    ``shared_scale=True``: one colour scale, from 0 to the largest entry of all panels, and
    one colour bar, so that equal colours are equal numbers in every panel. False, for maps
    of different quantities: each panel its own scale, from 0 to its largest entry, and its
    own colour bar.
    """
    maps = np.asarray(maps, dtype=float)
    if maps.ndim != 3 or maps.shape[1:] != (len(tokens), len(tokens)) or len(titles) != len(maps):
        raise ValueError(
            f"need maps (n_panels, seq, seq) with seq = {len(tokens)} tokens and one title "
            f"per panel, got maps {maps.shape} and {len(titles)} titles"
        )
    size = 0.3 + 0.16 * len(tokens)
    columns = max(1, min(columns, len(maps), int((PHONE_WIDTH_IN - 1.2) // (size + 0.7))))
    rows = -(-len(maps) // columns)
    fig, axes = plt.subplots(rows, columns, squeeze=False, layout="constrained",
                             figsize=(0.6 + columns * (size + 0.7) + (0.6 if shared_scale else 0.6 * columns),
                                      0.4 + rows * (size + 0.7)))  # + 0.7: room for the token labels
    for ax in axes.flat[len(maps):]:
        ax.set_visible(False)
    top = max(float(maps.max()), 1e-12)
    for ax, panel, title in zip(axes.flat, maps, titles):
        image = ax.imshow(panel, cmap="Blues", vmin=0.0,
                          vmax=top if shared_scale else max(float(panel.max()), 1e-12))
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(len(tokens)), labels=tokens, rotation=90, fontsize=9)
        ax.set_yticks(range(len(tokens)), labels=tokens, fontsize=9)
        if not shared_scale:
            fig.colorbar(image, ax=ax, shrink=0.8).ax.tick_params(labelsize=9)
    if shared_scale:
        bar = fig.colorbar(image, ax=axes[:, :].ravel().tolist(), shrink=0.8)
        bar.ax.tick_params(labelsize=9)
        bar.set_label(label, fontsize=10)
    fig.suptitle(f"{label}: rows are queries, columns keys", fontsize=10)
    plt.close(fig)
    return fig


def token_bars(tokens, measures: dict) -> Figure:
    """One panel per measure, one bar per token: how several accounts rank the same tokens.

    tokens: n token strings; measures: {title: (n,) values}, drawn in order, each on its
    own axis (the measures are in different units; what the figure compares is their order).
    """
    tokens = list(tokens)
    values = [np.asarray(v, dtype=float) for v in measures.values()]
    if not values or any(v.shape != (len(tokens),) for v in values):
        raise ValueError(
            f"need one (n,) array per measure with n = {len(tokens)} tokens, got shapes "
            f"{[v.shape for v in values]}"
        )
    fig, axes = plt.subplots(len(values), 1, squeeze=False, sharex=True, layout="constrained",
                             figsize=(min(0.8 + 0.3 * len(tokens), PHONE_WIDTH_IN), 0.8 + 1.4 * len(values)))
    for ax, title, v in zip(axes[:, 0], measures, values):
        ax.bar(range(len(tokens)), v, color="tab:blue")
        ax.bar(int(np.argmax(v)), v.max(), color="tab:orange")  # the token this measure puts first
        ax.set_title(title, fontsize=9, loc="left")
        ax.tick_params(labelsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[-1, 0].set_xticks(range(len(tokens)), labels=tokens, rotation=90, fontsize=9)
    plt.close(fig)
    return fig
