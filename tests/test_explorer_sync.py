"""One synchronisation pattern for every explorer: change any input trait from Python and
what the explorer shows equals the chapter module's function on the new inputs; nothing
Python computes is synced (the browser computes its own copy, and never sends one up)."""

import numpy as np
import pytest

from attncourse import convolution, graph, pretrained
from attncourse.attention import dot_product_scores
from attncourse.explorers import (
    AttentionExplorer,
    ConvolutionExplorer,
    GraphExplorer,
    InvalidExplorerInput,
    ModelExplorer,
)
from attncourse.multihead import attention_heads, merge_heads, split_heads

RNG = np.random.default_rng(24)
TOKENS = ["a", "b", "c", "d"]


def normal(*shape):
    return RNG.standard_normal(shape)


# --- the attention explorer: attncourse.attention and attncourse.multihead ---------------


def attention_explorer():
    return AttentionExplorer(
        TOKENS, normal(4, 4), W_q=normal(4, 4), W_k=normal(4, 4), W_v=normal(4, 4),
        W_o=normal(4, 3), mask=np.tril(np.ones((4, 4), bool)), n_heads=2, heads_on=[True, True],
        scale=0.7)


def attention_expected(e):
    """Scores, weights and output from the chapter modules, on the explorer's inputs."""
    Q, K = (split_heads(e.X @ W, e.n_heads) for W in (e.W_q, e.W_k))  # (n_heads, seq, d_head)
    heads, weights = attention_heads(e.X, e.W_q, e.W_k, e.W_v, e.n_heads, mask=e.mask,
                                     scale=e.scale)  # (n_heads, seq, d_head), (n_heads, seq, seq)
    heads = heads * np.asarray(e.heads_on or [True] * e.n_heads, float)[:, None, None]
    output = heads.sum(axis=0) if e.combine == "sum" else merge_heads(heads) @ e.W_o
    scores = dot_product_scores(Q, K)
    if e.n_heads == 1:
        scores, weights = scores[0], weights[0]
    return {"scores": scores, "weights": weights, "output": output}


ATTENTION_CHANGES = {
    "X": {"X": normal(4, 4)},
    "W_q": {"W_q": normal(4, 4)},
    "W_k": {"W_k": normal(4, 4)},
    "W_v": {"W_v": normal(4, 4)},
    "W_o": {"W_o": normal(4, 2)},
    "mask": {"mask": np.eye(4, dtype=bool) | np.eye(4, k=1, dtype=bool)},
    "scale": {"scale": 2.5},
    "n_heads": {"n_heads": 1, "heads_on": [True]},
    "heads_on": {"heads_on": [False, True]},
    "combine": {"combine": "sum"},
}

# --- the graph explorer: attncourse.graph -------------------------------------------------


def graph_explorer():
    return GraphExplorer(TOKENS, normal(4, 3), normal(2, 3, 2), normal(2, 3, 2),
                         normal(2, 3, 3) / 2, scale=0.8)


def graph_expected(e):
    mask = np.ones((4, 4), bool)
    if e.causal:
        mask &= np.tril(mask)
    if e.window:
        mask &= graph.window_mask(4, e.window_radius)
    _, weights = graph.stacked_attention(e.X, e.W_q, e.W_q if e.tied else e.W_k, e.W_v,
                                         skip=e.skip, mask=mask, scale=e.scale)
    return {"weights": weights, "rollout": graph.attention_rollout(weights[: e.layer + 1])}


GRAPH_CHANGES = {
    "X": {"X": normal(4, 3)},
    "W_q": {"W_q": normal(2, 3, 2)},
    "W_k": {"W_k": normal(2, 3, 2)},
    "W_v": {"W_v": normal(2, 3, 3)},
    "scale": {"scale": 1.9},
    "skip": {"skip": False},
    "causal": {"causal": True},  # the bug of issue 24: the weights stayed as they were
    "window": {"window": True},
    "window_radius": {"window": True, "window_radius": 1},
    "tied": {"tied": True},
    "layer": {"layer": 1},
    "fewer layers": {"W_q": normal(1, 3, 2), "W_k": normal(1, 3, 2), "W_v": normal(1, 3, 3)},
}

# --- the convolution explorer: attncourse.convolution -------------------------------------


def conv_explorer():
    return ConvolutionExplorer(normal(9).round(2), normal(3).round(2), alpha=2.0)


def conv_expected(e):
    x, kernel = np.array(e.x)[:, None], np.array(e.kernel)[None, None]  # (seq, 1), (1, 1, K)
    output = convolution.conv1d_as_attention(x, kernel, e.alpha)[:, 0]
    reference = convolution.conv1d_reference(x, kernel)[:, 0]
    return {"weights": convolution.shift_weights(len(e.x), len(e.kernel), e.alpha),
            "output": output, "convolution": reference,
            "max_error": np.abs(output - reference).max()}


CONV_CHANGES = {
    "x": {"x": normal(9).tolist()},
    "kernel": {"kernel": normal(5).tolist()},
    "alpha": {"alpha": 17.5},
    "query": {"query": 0},
    "fewer tokens": {"x": normal(3).tolist(), "query": 1},
}

EXPLORERS = {
    "attention": (attention_explorer, attention_expected, ATTENTION_CHANGES),
    "graph": (graph_explorer, graph_expected, GRAPH_CHANGES),
    "convolution": (conv_explorer, conv_expected, CONV_CHANGES),
}
CASES = [(kind, change) for kind, (_, _, changes) in EXPLORERS.items() for change in changes]


def assign(explorer, values):
    with explorer.hold_trait_notifications():
        for name, value in values.items():
            setattr(explorer, name, value)


def assert_shows(explorer, expected):
    for name, value in expected.items():
        np.testing.assert_allclose(getattr(explorer, name), value, rtol=0, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize(("kind", "change"), CASES)
def test_an_input_changed_from_python_is_shown_as_the_chapter_module_computes_it(kind, change):
    make, expected, changes = EXPLORERS[kind]
    explorer = make()
    assert_shows(explorer, expected(explorer))
    before = {name: np.array(getattr(explorer, name)) for name in expected(explorer)}
    assign(explorer, changes[change])
    for name, value in changes[change].items():
        np.testing.assert_array_equal(np.asarray(getattr(explorer, name)), np.asarray(value))
    assert_shows(explorer, expected(explorer))
    if change != "query":  # the query token changes what is drawn, not what is computed
        assert any(np.shape(before[n]) != np.shape(getattr(explorer, n))
                   or not np.allclose(before[n], getattr(explorer, n)) for n in before), \
            "the change should show"


@pytest.mark.parametrize("kind", EXPLORERS)
def test_nothing_computed_is_synced(kind):
    make, expected, _ = EXPLORERS[kind]
    explorer = make()
    state = explorer.get_state()
    assert not set(expected(explorer)) & set(state), "a result is in the synced state"
    for name in expected(explorer):
        assert not explorer.trait_metadata(name, "sync")


@pytest.mark.parametrize(("kind", "values"), [
    ("attention", {"W_q": np.ones((3, 4))}),
    ("graph", {"layer": 5}),
    ("graph", {"window_radius": -1}),
    ("graph", {"X": np.ones((5, 3))}),
    ("convolution", {"kernel": [1.0, 2.0]}),
    ("convolution", {"alpha": 99.0}),
])
def test_a_refused_assignment_changes_nothing(kind, values):
    make, expected, _ = EXPLORERS[kind]
    explorer = make()
    shown = expected(explorer)
    with pytest.raises(InvalidExplorerInput):
        assign(explorer, values)
    assert_shows(explorer, shown)


@pytest.mark.slow  # loads the real model
@pytest.mark.parametrize("values", [{"sentence": 1}, {"layer": 4}, {"ablated": [[5, 3], [0, 1]]},
                                    {"sentence": 2, "ablated": [[1, 1]]}])
def test_the_model_explorer_follows_every_input_as_pretrained_computes_it(values):
    explorer = ModelExplorer([("A cat sat.", "A dog ran."), ("Birds fly south.", "It rains.")])
    assign(explorer, values)
    ablate = tuple(tuple(pair) for pair in explorer.ablated)
    text = explorer.texts[explorer.sentence]
    first = 2 * (explorer.sentence // 2)
    np.testing.assert_allclose(explorer.weights,
                               pretrained.run_model(text, ablate).weights[explorer.layer],
                               rtol=0, atol=1e-12)
    assert explorer.cosine == pytest.approx(
        pretrained.similarity(explorer.texts[first], explorer.texts[first + 1], ablate=ablate),
        abs=1e-12)
    assert not {"weights", "cosine"} & set(explorer.get_state())
