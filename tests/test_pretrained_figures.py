"""attncourse.pretrained_figures: each figure shows exactly what it was given."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from attncourse.pretrained_figures import attention_grid


def test_attention_grid_draws_one_panel_per_map_with_its_tokens():
    maps = np.random.default_rng(0).random((3, 4, 4))  # (n_panels, seq, seq)
    tokens = ["[CLS]", "a", "cat", "[SEP]"]
    fig = attention_grid(maps, tokens, ["h0", "h1", "h2"], columns=2)
    assert isinstance(fig, Figure)
    panels = [ax for ax in fig.axes if ax.images and ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["h0", "h1", "h2"]
    np.testing.assert_array_equal(panels[2].images[0].get_array(), maps[2])
    assert [t.get_text() for t in panels[0].get_xticklabels()] == tokens
    assert panels[1].images[0].get_clim() == (0.0, maps[1].max())
    assert sum(not ax.get_visible() for ax in fig.axes) == 1  # the empty fourth slot


def test_attention_grid_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="one title per panel"):
        attention_grid(np.zeros((2, 3, 3)), ["a", "b", "c"], ["only one"])
    with pytest.raises(ValueError, match="seq = 2 tokens"):
        attention_grid(np.zeros((1, 3, 3)), ["a", "b"], ["t"])
