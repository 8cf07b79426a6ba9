"""attncourse.plotting: every figure helper returns a Figure that shows what it was given."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from attncourse.plotting import annotated_heatmap, attention_panels, scaling_panels


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
