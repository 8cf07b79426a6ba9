"""attncourse.multihead_figures: each figure shows exactly what it was given."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from attncourse.multihead_figures import ablation_bars, head_attention_rows


def test_head_attention_rows_draws_one_panel_per_head_with_every_word_and_weight():
    weights = np.array([[[0.9, 0.1, 0.0]], [[0.2, 0.2, 0.6]]])  # (n_heads, n_sentences, seq)
    words = [["dog", "bit", "man"]]
    fig = head_attention_rows(weights, words, ["head 0", "head 1"])
    assert isinstance(fig, Figure)
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == ["head 0", "head 1"]
    assert [t.get_text() for t in panels[1].texts] == ["dog\n0.20", "bit\n0.20", "man\n0.60"]
    np.testing.assert_array_equal(panels[0].images[0].get_array(), weights[0])
    assert [t.get_color() for t in panels[0].texts] == ["white", "black", "black"]


def test_ablation_bars_labels_each_bar_with_its_loss_and_draws_both_levels():
    fig = ablation_bars({"zero": [0.5, 0.01], "mean": [0.49, 0.02]}, ["head 0", "head 1"],
                        intact=0.001, bound=0.45)
    ax = fig.axes[0]
    heights = [patch.get_height() for patch in ax.patches]
    assert heights == [0.5, 0.01, 0.49, 0.02]
    assert [t.get_text() for t in ax.texts] == ["0.500", "0.010", "0.490", "0.020"]
    assert sorted(line.get_ydata()[0] for line in ax.lines) == [0.001, 0.45]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["head 0", "head 1"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: head_attention_rows(np.ones((2, 3)), [["a"] * 3], ["h"]), r"need weights \(n_heads"),
        (lambda: head_attention_rows(np.ones((2, 1, 3)), [["a"] * 3], ["h"]), "2 titles|1 titles"),
        (lambda: ablation_bars({"zero": [1.0]}, ["a", "b"], 0.0, 0.5), "one loss per head label"),
        (lambda: ablation_bars({}, ["a"], 0.0, 0.5), "one loss per head label"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
