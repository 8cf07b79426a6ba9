"""attncourse.graph_figures: each figure draws exactly what it was given."""

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from attncourse.graph_figures import (
    attention_graph_panels,
    eigenvalue_panels,
    paired_bars,
)

TOKENS = ["he", "ball", "it"]
WEIGHTS = np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.1, 0.6, 0.3]])


def arrows(ax):
    return [p for p in ax.patches if isinstance(p, FancyArrowPatch)]


def test_one_arrow_per_edge_above_the_threshold_from_source_to_reader():
    fig = attention_graph_panels([WEIGHTS], TOKENS, ["one head"], threshold=0.2)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    drawn = arrows(ax)
    assert len(drawn) == int((WEIGHTS > 0.2).sum()) == 5
    # Each arrow runs from x = 0 (the token read, at height -j) to x = 1 (the reader, -i).
    ends = sorted((a._posA_posB[0], a._posA_posB[1]) for a in drawn)
    expected = sorted(((0.0, -float(j)), (1.0, -float(i))) for i, j in zip(*np.nonzero(WEIGHTS > 0.2)))
    assert ends == expected
    assert ax.get_title() == "one head"


def test_sources_are_sized_by_how_much_they_are_read_and_labelled_outside():
    (ax,) = attention_graph_panels([WEIGHTS], TOKENS, ["h"]).axes
    sources, readers = ax.collections
    sizes = sources.get_sizes()
    read = WEIGHTS.sum(axis=0)
    assert np.allclose(sizes / sizes[0], read / read[0])
    assert np.allclose(readers.get_sizes(), readers.get_sizes()[0])
    labels = [(t.get_text(), t.get_position()[0]) for t in ax.texts if t.get_text() in TOKENS]
    assert sorted(labels) == sorted([(t, -0.08) for t in TOKENS] + [(t, 1.08) for t in TOKENS])
    assert all(t.get_ha() == ("right" if x < 0 else "left") for t in ax.texts
               for x in [t.get_position()[0]] if t.get_text() in TOKENS)


def test_panels_in_a_grid_hide_the_spare_axes():
    fig = attention_graph_panels([WEIGHTS] * 3, TOKENS, ["a", "b", "c"], ncols=2)
    assert [ax.get_visible() for ax in fig.axes] == [True, True, True, False]


def test_eigenvalues_are_split_into_real_and_complex():
    fig = eigenvalue_panels([np.array([1.0, 0.5]), np.array([1.0, 0.2 + 0.3j, 0.2 - 0.3j])],
                            ["symmetric", "not"])
    left, right = fig.axes
    assert len(left.collections[0].get_offsets()) == 2 and len(left.collections[1].get_offsets()) == 0
    assert np.allclose(right.collections[1].get_offsets(), [[0.2, 0.3], [0.2, -0.3]])
    assert right.get_title() == "not"


def test_paired_bars_draw_both_series():
    fig = paired_bars([1.0, 2.0], [0.5, 0.0], ["a", "b"], ["read", "contributes"], "amount")
    (ax,) = fig.axes
    heights = [p.get_height() for p in ax.patches]
    assert heights == [1.0, 2.0, 0.5, 0.0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["read", "contributes"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: attention_graph_panels([np.eye(2)], TOKENS, ["a"]), r"shape \(seq, seq\) = \(3, 3\)"),
        (lambda: attention_graph_panels([WEIGHTS], TOKENS, ["a", "b"]), "one title per matrix"),
        (lambda: eigenvalue_panels([np.eye(2)], ["a"]), "1-D array of eigenvalues"),
        (lambda: paired_bars([1.0], [1.0, 2.0], ["a"], ["x", "y"], "z"), "two 1-D arrays"),
        (lambda: paired_bars([1.0], [2.0], ["a"], ["x"], "z"), "two legend names"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
