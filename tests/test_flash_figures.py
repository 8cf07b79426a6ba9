"""attncourse.flash_figures: each figure shows exactly what it was given."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from attncourse.flash_figures import memory_bars, tile_schedule, traffic_lines


def test_traffic_lines_draw_one_log_log_curve_per_series():
    seqs = [1024, 2048, 4096]
    fig = traffic_lines(seqs, {"direct": [4.0e6, 1.6e7, 6.4e7], "tiled": [1.0e6, 4.0e6, 1.6e7]}, title="t")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [line.get_label() for line in ax.lines] == ["direct", "tiled"]
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), [1.0e6, 4.0e6, 1.6e7])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1,024", "2,048", "4,096"]


def test_memory_bars_label_each_bar_in_megabytes():
    fig = memory_bars({"direct": 402_800_000, "tiled": 2_900_000})
    ax = fig.axes[0]
    assert [patch.get_width() for patch in ax.patches] == [402.8, 2.9]
    assert [t.get_text() for t in ax.texts] == [" 402.8 MB", " 2.9 MB"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["direct", "tiled"]


def test_tile_schedule_numbers_the_visited_tiles_in_order_and_leaves_the_rest_blank():
    visits = [(0, 0), (1, 0), (1, 1)]
    fig = tile_schedule(visits, seq_q=5, seq_k=5, block_q=3, block_k=3)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["1", "2", "3"]
    corners = [(patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()) for patch in ax.patches]
    assert corners == [(0, 0, 3, 3), (0, 3, 3, 2), (3, 3, 2, 2)]  # the last blocks are shorter


@pytest.mark.parametrize(("call", "message"), [
    (lambda: traffic_lines([1, 2], {"a": [1.0]}), "one count per length"),
    (lambda: traffic_lines([1, 2], {}), "one count per length"),
    (lambda: memory_bars({}), "at least one non-negative peak"),
    (lambda: memory_bars({"a": -1.0}), "at least one non-negative peak"),
    (lambda: tile_schedule([(2, 0)], 4, 4, 2, 2), r"outside the 2 x 2 grid"),
])
def test_bad_input_is_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()
