"""attncourse.convolution_figures: the figures show the arrays they were given."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from attncourse.convolution import shift_weights, shifts
from attncourse.convolution_figures import head_weight_rows


def test_head_weight_rows_draws_one_curve_per_head_and_panel_per_alpha():
    alphas = [0.5, 50.0]
    rows = np.stack([shift_weights(5, 3, a)[:, 2] for a in alphas])  # (2, K, seq_padded)
    offsets = np.arange(7) - 3
    fig = head_weight_rows(rows, offsets, shifts(3), alphas)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    for ax, panel, alpha in zip(fig.axes, rows, alphas):
        assert ax.get_title() == f"alpha = {alpha:g}"
        assert len(ax.lines) == 3
        for line, weights in zip(ax.lines, panel):
            assert np.array_equal(line.get_xdata(), offsets)
            assert np.allclose(line.get_ydata(), weights)
    labels = [t.get_text() for t in fig.axes[-1].get_legend().get_texts()]
    assert labels == ["Δ = -1", "Δ = +0", "Δ = +1"]


def test_head_weight_rows_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="n_alphas, K, n_keys"):
        head_weight_rows(np.zeros((2, 3, 4)), np.arange(5), [-1, 0, 1], [1, 2])
