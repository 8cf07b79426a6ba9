"""attncourse.plotting: every figure helper returns a Figure that shows what it was given,
with the panels and marks it promises; bad shapes get a ValueError naming them."""

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from attncourse.plotting import (
    annotated_heatmap,
    attention_panels,
    attention_vs_intended,
    embedding_arrows,
    heatmap_panels,
    line_chart,
    scaling_panels,
)


def cell_texts(ax):
    return [t.get_text() for t in ax.texts]


def test_annotated_heatmap_writes_every_number_and_label():
    values = np.array([[0.31, 0.14, 0.30], [0.14, 0.31, 0.15]])
    fig = annotated_heatmap(values, ["pool", "beats"], ["a", "b", "c"], title="S")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert cell_texts(ax) == ["0.31", "0.14", "0.30", "0.14", "0.31", "0.15"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["pool", "beats"]
    assert ax.get_title() == "S"


def test_attention_panels_has_three_labelled_panels():
    weights = np.full((2, 2), 0.5)
    fig = attention_panels(np.eye(2), weights, np.ones((2, 3)), ["x", "y"])
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == 3
    assert [t.get_text() for t in heatmaps[2].get_xticklabels()] == ["d0", "d1", "d2"]
    assert len(cell_texts(heatmaps[2])) == 6


def test_scaling_panels_plots_each_series():
    dims = np.array([4, 16, 64])
    fig = scaling_panels(dims, np.sqrt(dims), np.ones(3), [0.4, 0.7, 0.9], [0.25] * 3)
    left, right = fig.axes
    assert len(left.lines) == 2 and len(right.lines) == 2
    assert np.array_equal(left.lines[0].get_ydata(), np.sqrt(dims))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: annotated_heatmap(np.ones(3), ["a"], ["b"]), "needs a 2-D array"),
        (lambda: annotated_heatmap(np.ones((2, 2)), ["a"], ["b", "c"]), "1 row labels"),
        (lambda: scaling_panels([1, 2], [1], [1, 2], [1, 2], [1, 2]), "1-D arrays of one length"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_numbers_stay_readable_on_a_diverging_colour_map():
    fig = annotated_heatmap([[-1.0, 0.0, 1.0]], ["r"], ["a", "b", "c"], cmap="RdBu_r",
                            vmin=-1, vmax=1)
    colours = [t.get_color() for t in fig.axes[0].texts]
    assert colours == ["white", "black", "white"]  # dark ends, light middle


def test_heatmap_panels_draws_one_panel_per_matrix_with_numbers():
    fig = heatmap_panels([np.eye(2), 2 * np.eye(2)], ["a", "b"], ["a", "b"], ["one", "two"])
    assert isinstance(fig, Figure)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["one", "two"]
    assert [t.get_text() for t in fig.axes[1].texts] == ["2.00", "0.00", "0.00", "2.00"]


def test_a_small_negative_number_prints_as_0_not_minus_0():
    # chapter 3's learned scores, printed with no decimals, have entries in (-0.5, 0)
    fig = heatmap_panels([[[-0.4, -0.6, 0.4]]], ["r"], ["a", "b", "c"], ["t"], decimals=0)
    assert [t.get_text() for t in fig.axes[0].texts] == ["0", "-1", "0"]


def test_heatmap_panels_write_dark_numbers_on_light_cells_of_a_diverging_map():
    fig = heatmap_panels([[[-9.0, 0.5, 9.0]]], ["r"], ["a", "b", "c"], ["t"], cmap="RdBu_r",
                         decimals=1, vmin=-9, vmax=9)
    assert [t.get_color() for t in fig.axes[0].texts] == ["white", "black", "white"]


def test_heatmap_panels_in_a_grid_label_rows_once_and_hide_spare_panels():
    fig = heatmap_panels([np.eye(2)] * 3, ["a", "b"], ["a", "b"], ["x", "y", "z"], ncols=2,
                         vmin=0, vmax=1)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["x", "y", "z"]
    assert [ax.yaxis.get_major_ticks()[0].label1.get_visible() for ax in panels] == [True, False, True]
    assert sum(not ax.get_visible() for ax in fig.axes) == 1  # the fourth cell of the grid
    assert any(ax.get_label() == "<colorbar>" for ax in fig.axes)


def test_heatmap_panels_without_numbers():
    fig = heatmap_panels([np.zeros((3, 3))], list("abc"), list("abc"), ["t"], decimals=None)
    assert len(fig.axes) == 1 and not fig.axes[0].texts
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["a", "b", "c"]


def test_heatmap_panels_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"shapes \[\(2, 2\), \(3, 3\)\]"):
        heatmap_panels([np.eye(2), np.eye(3)], ["a", "b"], ["a", "b"], ["x", "y"])


def test_embedding_arrows_labels_every_word_in_every_panel():
    before = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    fig = embedding_arrows([before, 2 * before], ["hot", "cold", "temperature"], ["before", "after"],
                           highlight=("hot",))
    assert [ax.get_title() for ax in fig.axes] == ["before", "after"]
    for ax in fig.axes:
        labels = [t.get_text().strip() for t in ax.texts if t.get_text()]
        assert labels == ["hot", "cold", "temperature"]
        assert [t.get_ha() for t in ax.texts if t.get_text()] == ["left", "right", "left"]
        assert ax.get_xlim() == ax.get_ylim()


def test_embedding_arrows_rejects_non_2d_embeddings():
    with pytest.raises(ValueError, match=r"\(vocab=2, 2\)"):
        embedding_arrows([np.zeros((2, 3))], ["a", "b"], ["t"])


def test_line_chart_draws_each_series():
    fig = line_chart([0, 1, 2], {"up": [0, 1, 2], "down": [2, 1, 0]}, "x", "y", yscale="linear")
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["up", "down"]
    assert np.array_equal(ax.get_lines()[1].get_ydata(), [2, 1, 0])


def test_line_chart_puts_integer_steps_on_whole_ticks():
    ax = line_chart(np.arange(5), {"spread": [5, 4, 3, 2, 1]}, "round", "y").axes[0]
    ticks = [t for t in ax.get_xticks() if 0 <= t <= 4]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_line_chart_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="curves of its length"):
        line_chart([0, 1, 2], {"short": [1, 2]}, "x", "y")


def test_attention_vs_intended_boxes_the_intended_cells():
    weights = np.array([[0.1, 0.9], [0.7, 0.3]])
    fig = attention_vs_intended(weights, [1, 0], [["a", "b"], ["c", "d"]])
    ax = fig.axes[0]
    boxes = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert [(b.get_x(), b.get_y()) for b in boxes] == [(0.5, -0.5), (-0.5, 0.5)]
    assert ax.texts[1].get_text() == "b\n0.90"


def test_attention_vs_intended_rejects_mismatched_words():
    with pytest.raises(ValueError, match=r"words \(n, seq\)"):
        attention_vs_intended(np.zeros((2, 3)), [0, 1], [["a", "b"], ["c", "d"]])
