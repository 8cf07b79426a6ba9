"""attncourse.positions_figures: the figures show the arrays they were given."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from attncourse.positions import sinusoidal_dot_product
from attncourse.positions_figures import offset_curve_panels, similarity_by_offset


def test_offset_curve_panels_draws_every_curve_in_its_panel():
    k = np.arange(50)
    panels = [("base", {f"{b:g}": sinusoidal_dot_product(k, 16, b) for b in (100.0, 10000.0)}),
              ("width", {str(d): sinusoidal_dot_product(k, d) for d in (8, 16, 64)})]
    fig = offset_curve_panels(k, panels, "PE(p) . PE(p + k)")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    for ax, (title, series) in zip(fig.axes, panels):
        assert ax.get_title() == title
        lines = [line for line in ax.lines if len(line.get_xdata()) == len(k)]  # not the zero line
        assert [line.get_label() for line in lines] == list(series)
        for line, values in zip(lines, series.values()):
            assert np.array_equal(line.get_xdata(), k) and np.allclose(line.get_ydata(), values)
    assert fig.axes[0].get_ylabel() == "PE(p) . PE(p + k)"


def test_offset_curve_panels_refuses_curves_of_another_length():
    with pytest.raises(ValueError, match="curves of its length"):
        offset_curve_panels(np.arange(5), [("a", {"x": np.zeros(4)})], "y")
    with pytest.raises(ValueError, match="curves of its length"):
        offset_curve_panels(np.arange(5), [("a", {})], "y")


def test_similarity_by_offset_shows_the_matrix_and_the_curve():
    matrix = np.corrcoef(np.random.default_rng(0).standard_normal((6, 10)))
    by_offset = np.array([np.diagonal(matrix, k).mean() for k in range(6)])
    fig = similarity_by_offset(matrix, by_offset, np.arange(6), "positions")
    heat, curve, _colorbar = fig.axes
    assert np.allclose(heat.images[0].get_array(), matrix) and heat.get_title() == "positions"
    assert np.allclose(curve.lines[0].get_ydata(), by_offset)


def test_similarity_by_offset_numbers_its_axes_from_the_first_position():
    # chapter 8 shows MiniLM's positions 1..128: the heatmap's first row must read 1, not 0
    matrix = np.eye(4)
    heat = similarity_by_offset(matrix, np.zeros(4), np.arange(4), "t", first_position=1).axes[0]
    assert heat.get_xlim() == (0.5, 4.5) and heat.get_ylim() == (4.5, 0.5)
    default = similarity_by_offset(matrix, np.zeros(4), np.arange(4), "t").axes[0]
    assert default.get_xlim() == (-0.5, 3.5)


def test_similarity_by_offset_refuses_a_non_square_matrix():
    with pytest.raises(ValueError, match="square similarity matrix"):
        similarity_by_offset(np.zeros((2, 3)), np.zeros(2), np.arange(2), "t")
