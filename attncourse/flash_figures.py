"""Figures of chapter 9 (attention at scale). Each function takes numbers the notebook has
computed and returns a Figure; it computes nothing of its own beyond laying them out."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from attncourse.plotting import PHONE_WIDTH_IN

__all__ = ["memory_bars", "tile_schedule", "traffic_lines"]


def traffic_lines(seqs, series, title="") -> Figure:
    """Values moved between slow and fast memory against the sequence length, log-log.

    seqs (n,): sequence lengths N; series: legend label -> (n,) counts of values moved.
    """
    seqs = np.asarray(seqs, dtype=float)
    curves = {label: np.asarray(y, dtype=float) for label, y in series.items()}
    if seqs.ndim != 1 or not curves or any(y.shape != seqs.shape for y in curves.values()):
        raise ValueError(f"need 1-D sequence lengths and one count per length for each curve, got "
                         f"{seqs.shape} and { {label: y.shape for label, y in curves.items()} }")
    fig, ax = plt.subplots(figsize=(PHONE_WIDTH_IN, 3.8), layout="constrained")
    for (label, y), style in zip(curves.items(), ("-o", "-s", "-^", "-v", "-d")):
        ax.plot(seqs, y, style, label=label, markersize=4)
    ax.set(xscale="log", yscale="log", xlabel="sequence length N",
           ylabel="values moved (slow <-> fast memory)", title=title)
    ax.set_xticks(seqs, labels=[f"{int(n):,}" for n in seqs])
    ax.minorticks_off()
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    plt.close(fig)
    return fig


def memory_bars(peaks, title="") -> Figure:
    """Peak traced memory of each computation, one labelled bar each, in MB (10^6 bytes).

    peaks: label -> peak bytes.
    """
    if not peaks or any(not np.isfinite(v) or v < 0 for v in peaks.values()):
        raise ValueError(f"need at least one non-negative peak in bytes, got {peaks!r}")
    labels = list(peaks)
    megabytes = [peaks[label] / 1e6 for label in labels]
    fig, ax = plt.subplots(figsize=(PHONE_WIDTH_IN, 0.6 + 0.55 * len(labels)), layout="constrained")
    ax.barh(range(len(labels)), megabytes, color="tab:blue")
    for i, value in enumerate(megabytes):
        ax.text(value, i, f" {value:.1f} MB", va="center", fontsize=10)
    ax.set_yticks(range(len(labels)), labels=labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.25 * max(megabytes))
    ax.set(xlabel="peak traced memory (MB)", title=title)
    plt.close(fig)
    return fig


def tile_schedule(visits, seq_q, seq_k, block_q, block_k, title="") -> Figure:
    """The (seq_q, seq_k) score matrix cut into tiles, each tile numbered in the order the loop
    computes it; tiles never computed stay blank. visits: list of (q_block, k_block) in order.
    """
    n_q, n_k = -(-seq_q // block_q), -(-seq_k // block_k)
    if any(not (0 <= i < n_q and 0 <= j < n_k) for i, j in visits):
        raise ValueError(f"a visit lies outside the {n_q} x {n_k} grid of tiles: {visits!r}")
    fig, ax = plt.subplots(figsize=(0.4 + 0.32 * seq_k, 0.4 + 0.32 * seq_q), layout="constrained")
    colours = plt.get_cmap("Blues")
    for order, (i, j) in enumerate(visits):
        top, left = i * block_q, j * block_k
        height, width = min(block_q, seq_q - top), min(block_k, seq_k - left)
        shade = colours(0.25 + 0.6 * order / max(len(visits) - 1, 1))
        ax.add_patch(Rectangle((left, top), width, height, facecolor=shade, edgecolor="black"))
        ax.text(left + width / 2, top + height / 2, str(order + 1), ha="center", va="center",
                fontsize=9, color="white" if order > 0.6 * len(visits) else "black")
    ax.set_xlim(0, seq_k)
    ax.set_ylim(seq_q, 0)
    ax.set_aspect("equal")
    ax.set_xticks(np.arange(0, seq_k + 1, block_k))
    ax.set_yticks(np.arange(0, seq_q + 1, block_q))
    ax.grid(alpha=0.4, linestyle=":")
    ax.set(xlabel="key j", ylabel="query i", title=title)
    plt.close(fig)
    return fig
