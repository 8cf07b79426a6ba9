"""Figures of chapter 4 (multi-head attention). Each function takes arrays and labels and
returns a Figure; it computes nothing the notebook has not already computed."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

__all__ = ["ablation_bars", "head_attention_rows"]


def head_attention_rows(weights, words, titles) -> Figure:
    """One query's attention in several sentences, one panel per head, stacked (for phones).

    weights (n_heads, n_sentences, seq): row s of panel h is head h's weights of the query
    in sentence s; words (n_sentences, seq): the tokens, written in the cells with the
    weight; titles: one per head.
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3 or np.shape(words) != weights.shape[1:] or len(titles) != len(weights):
        raise ValueError(
            f"need weights (n_heads, n_sentences, seq), words (n_sentences, seq) and one "
            f"title per head, got {weights.shape}, {np.shape(words)} and {len(titles)} titles"
        )
    n_heads, n_sentences, seq = weights.shape
    fig, axes = plt.subplots(n_heads, 1, squeeze=False, layout="constrained",
                             figsize=(1.4 + 0.55 * seq, n_heads * (0.9 + 0.45 * n_sentences)))
    for ax, head, title in zip(axes[:, 0], weights, titles):
        image = ax.imshow(head, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
        for (i, j), value in np.ndenumerate(head):
            ax.text(j, i, f"{words[i][j]}\n{value:.2f}", ha="center", va="center", fontsize=9,
                    color="white" if value > 0.5 else "black")
        ax.set_xticks(range(seq), labels=[str(j) for j in range(seq)])
        ax.set_xlabel("position")
        ax.set_yticks(range(n_sentences), labels=[f"sentence {i}" for i in range(n_sentences)])
        ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    plt.close(fig)
    return fig


def ablation_bars(losses, head_labels, intact, bound, title="") -> Figure:
    """The loss with each head ablated, grouped by head, against the intact model and a bound.

    losses: mapping from a kind of ablation (e.g. "zero", "mean") to an (n_heads,) array;
    head_labels: one per head; intact: the loss of the whole model; bound: a reference
    level drawn as a dashed line (e.g. the one-head lower bound).
    """
    series = {kind: np.asarray(values, dtype=float) for kind, values in losses.items()}
    if not series or any(v.shape != (len(head_labels),) for v in series.values()):
        raise ValueError(
            f"need one loss per head label ({len(head_labels)}) for every kind of ablation, "
            f"got { {kind: v.shape for kind, v in series.items()} }"
        )
    fig, ax = plt.subplots(figsize=(1.8 + 1.3 * len(head_labels), 3.4), layout="constrained")
    width = 0.8 / len(series)
    positions = np.arange(len(head_labels))
    for k, (kind, values) in enumerate(series.items()):
        bars = ax.bar(positions + (k - (len(series) - 1) / 2) * width, values, width, label=f"{kind} ablation")
        ax.bar_label(bars, fmt="%.3f", fontsize=9)
    ax.axhline(bound, color="0.3", linestyle="--", lw=1, label=f"one-head lower bound {bound:.3f}")
    ax.axhline(intact, color="tab:green", lw=1, label=f"all heads {intact:.3f}")
    ax.set_xticks(positions, labels=list(head_labels))
    ax.set(ylabel="mean squared error at the verb", title=title)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    plt.close(fig)
    return fig
