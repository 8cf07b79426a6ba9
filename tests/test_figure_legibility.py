"""Issue #23 item 6: every text of every chapter figure is >= 9 CSS px on a phone.

The figure functions are called with inputs shaped as in the chapters (synthetic values:
chapter 7's real model is not loaded); tools/figure_legibility.py measures each text as
the book shows it, a tight PNG scaled down to a 358 px column.
"""

import numpy as np
import pytest

from attncourse import (
    convolution_figures,
    flash_figures,
    graph_figures,
    multihead_figures,
    plotting,
    positions_figures,
    pretrained_figures,
)
from tools.figure_legibility import LEGIBLE_PX, smallest_text_px

RNG = np.random.default_rng(0)
TOKENS = ["the", "cat", "sat", "on", "the", "mat"]          # chapters 1-5: six tokens
MODEL_TOKENS = ["[CLS]", "the", "trophy", "didn", "'", "t", "fit", "in", "the",
                "suitcase", "because", "it", "was", "too", "big", "[SEP]"]  # chapter 7


def _rows(*shape):
    weights = RNG.random(shape)
    return weights / weights.sum(-1, keepdims=True)


def _words(n_sentences, seq):
    return [[f"w{i}{j}" for j in range(seq)] for i in range(n_sentences)]


CASES = {
    "annotated_heatmap": lambda: plotting.annotated_heatmap(
        RNG.normal(size=(6, 6)), TOKENS, TOKENS, title="similarity scores  S = X Xᵀ"),
    "attention_panels": lambda: plotting.attention_panels(
        RNG.normal(size=(6, 6)), _rows(6, 6), RNG.normal(size=(6, 5)), TOKENS,
        dims=["thing", "person", "pronoun", "sport", "action"]),  # chapter 1's names
    "scaling_panels": lambda: plotting.scaling_panels(
        *(np.geomspace(1, 512, 10) for _ in range(3)), np.linspace(0.2, 1, 10),
        np.linspace(0.2, 0.4, 10)),
    "line_chart": lambda: plotting.line_chart(
        np.arange(200), {"separate W_Q, W_K": RNG.random(200), "tied W_Q = W_K": RNG.random(200)},
        xlabel="step", ylabel="mean cross-entropy", title="training loss"),
    "embedding_arrows": lambda: plotting.embedding_arrows(
        [RNG.normal(size=(6, 2)) for _ in range(2)], ["hot", "cold", "warm", "ice", "sun", "day"],
        ["before: hot and cold opposite", "after 100 steps: both near temperature"],
        highlight=("hot", "cold")),
    "heatmap_panels": lambda: plotting.heatmap_panels(
        [RNG.normal(size=(6, 6)) for _ in range(2)], TOKENS, TOKENS,
        ["W_Q = W_K: symmetric scores", "keys and locks: W_Q ≠ W_K"], cmap="RdBu_r", vmin=-3, vmax=3),
    "heatmap_panels_unlabelled": lambda: plotting.heatmap_panels(
        [RNG.random((16, 16)) > 0.5 for _ in range(4)], range(16), range(16),
        ["attention", "causal", "conv k=3", "conv k=5"], cmap="Greys", decimals=None,
        vmin=0, vmax=1, ncols=2),
    "attention_vs_intended": lambda: plotting.attention_vs_intended(
        _rows(6, 6), RNG.integers(0, 6, 6), _words(6, 6), title="the pronoun's attention"),
    "head_attention_rows": lambda: multihead_figures.head_attention_rows(
        _rows(3, 5, 6), _words(5, 6), ["one head", "two heads: head 0", "two heads: head 1"]),
    "ablation_bars": lambda: multihead_figures.ablation_bars(
        {"zero": [0.9, 0.8], "mean": [0.7, 0.6]}, ["head 0", "head 1"], intact=0.1, bound=0.5,
        title="ablating one head"),
    "attention_graph_panels": lambda: graph_figures.attention_graph_panels(
        [_rows(6, 6) for _ in range(2)], TOKENS, ["similarity, softmax(X Xᵀ)", "keys and locks"]),
    "attention_graph_panels_alibi": lambda: graph_figures.attention_graph_panels(
        [_rows(8, 8) for _ in range(4)], TOKENS + ["and", "slept"],
        [f"head {h}: slope {2.0 ** -h:g}" for h in range(4)], threshold=0.01),
    "eigenvalue_panels": lambda: graph_figures.eigenvalue_panels(
        [RNG.normal(size=6), RNG.normal(size=6) + 1j * RNG.normal(size=6)],
        ["similarity: all real", "keys and locks: a complex pair"]),
    "paired_bars": lambda: graph_figures.paired_bars(
        RNG.random(6), RNG.random(6), TOKENS, ["how much it is read", "how much it contributes"],
        ylabel="sum", title="read versus contributed"),
    "head_weight_rows": lambda: convolution_figures.head_weight_rows(
        _rows(3, 3, 7), np.arange(-3, 4), np.array([-1, 0, 1]), [1, 5, 50]),
    "attention_grid": lambda: pretrained_figures.attention_grid(
        _rows(12, 16, 16), MODEL_TOKENS, [f"layer 0, head {h}" for h in range(12)]),
    "attention_grid_pair": lambda: pretrained_figures.attention_grid(
        _rows(2, 16, 16), MODEL_TOKENS, ["weights", "value-weighted norms"],
        label="layer 3, head 5", shared_scale=False),
    "token_bars": lambda: pretrained_figures.token_bars(
        MODEL_TOKENS[1:-1], {"occlusion": RNG.random(14), "last layer's attention": RNG.random(14)}),
    "offset_curve_panels": lambda: positions_figures.offset_curve_panels(
        np.arange(64), [(f"panel {p}", {"d = 64": RNG.random(64), "d = 512": RNG.random(64)})
                        for p in range(2)], "PE(p) · PE(p + k) / (d_model / 2)"),
    "similarity_by_offset": lambda: positions_figures.similarity_by_offset(
        RNG.random((128, 128)), RNG.random(5), np.array([1, 2, 4, 8, 16]),
        "MiniLM's positions 1-128: cosine", first_position=1),
    "tile_schedule": lambda: flash_figures.tile_schedule(
        [(i, j) for i in range(3) for j in range(4) if j <= i + 1], 12, 12, block_q=4, block_k=3,
        title="causal attention, 12 tokens in tiles of 4 x 3"),
    "memory_bars": lambda: flash_figures.memory_bars(
        {"direct": 4.0e8, "tiled": 3.0e6, "torch SDPA": 1.0e8}, title="peak memory at 4,096 tokens"),
    "traffic_lines": lambda: flash_figures.traffic_lines(
        np.array([256, 1024, 4096, 16384]), {"direct: 4Nd + 4N²": np.array([1e6, 1e7, 1e8, 1e9]),
                                             "tiled, 64 kB (B_q = 32)": np.array([1e5, 1e6, 1e7, 1e8])},
        title="values moved"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_text_is_legible_on_a_phone(name):
    px, text = smallest_text_px(CASES[name]())
    assert px >= LEGIBLE_PX, f"{name}: {text!r} is {px:.1f} px at a 358 px column"
