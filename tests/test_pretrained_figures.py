"""attncourse.pretrained_figures: each figure shows exactly what it was given."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from attncourse.pretrained_figures import attention_grid, token_bars


def test_attention_grid_draws_one_panel_per_map_with_its_tokens():
    maps = np.random.default_rng(0).random((3, 4, 4))  # (n_panels, seq, seq)
    tokens = ["[CLS]", "a", "cat", "[SEP]"]
    fig = attention_grid(maps, tokens, ["h0", "h1", "h2"], columns=2)
    assert isinstance(fig, Figure)
    panels = [ax for ax in fig.axes if ax.images and ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["h0", "h1", "h2"]
    np.testing.assert_array_equal(panels[2].images[0].get_array(), maps[2])
    assert [t.get_text() for t in panels[0].get_xticklabels()] == tokens
    assert all(panel.images[0].get_clim() == (0.0, maps.max()) for panel in panels)  # one scale
    assert sum(not ax.get_visible() for ax in fig.axes) == 1  # the empty fourth slot
    colour_bars = [ax for ax in fig.axes if ax.get_visible() and not ax.images and ax.collections]
    assert len(colour_bars) == 1 and colour_bars[0].get_ylabel() == "attention weight"


def test_attention_grid_gives_maps_of_different_quantities_a_scale_and_a_bar_each():
    maps = np.stack([np.full((3, 3), 0.2), np.full((3, 3), 7.0)])  # (n_panels, seq, seq)
    fig = attention_grid(maps, ["a", "b", "c"], ["weights", "norms"], shared_scale=False)
    panels = [ax for ax in fig.axes if ax.images]
    assert [p.images[0].get_clim() for p in panels] == [(0.0, 0.2), (0.0, 7.0)]
    assert sum(1 for ax in fig.axes if not ax.images and ax.collections) == 2


def test_token_bars_draws_each_measure_over_the_tokens_and_marks_its_first():
    fig = token_bars(["a", "cat", "sat"], {"occlusion": [0.1, 0.5, 0.2], "attention": [3.0, 1.0, 2.0]})
    top, bottom = fig.axes
    assert top.get_title(loc="left") == "occlusion" and bottom.get_title(loc="left") == "attention"
    assert [t.get_text() for t in bottom.get_xticklabels()] == ["a", "cat", "sat"]
    heights = [bar.get_height() for bar in top.patches]
    assert heights[:3] == [0.1, 0.5, 0.2] and heights[3] == 0.5  # the highlighted first token
    with pytest.raises(ValueError, match="n = 3 tokens"):
        token_bars(["a", "b", "c"], {"x": [1.0, 2.0]})


def test_attention_grid_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="one title per panel"):
        attention_grid(np.zeros((2, 3, 3)), ["a", "b", "c"], ["only one"])
    with pytest.raises(ValueError, match="seq = 2 tokens"):
        attention_grid(np.zeros((1, 3, 3)), ["a", "b"], ["t"])
