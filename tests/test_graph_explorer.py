"""attncourse.explorers.graph_explorer: the Python side, and its JavaScript maths against numpy."""

import json

import numpy as np
import pytest

from attncourse.explorers.graph_explorer import GraphExplorer, explorer_mask, graph_explorer_view
from attncourse.graph import attention_rollout, stacked_attention
from tests.node_module import call_in_node

TOKENS = ["He", "picked", "the", "ball", "it"]


def random_model(seed, seq=5, d_model=4, n_layers=3, d_k=2):
    rng = np.random.default_rng(seed)
    return dict(
        X=rng.standard_normal((seq, d_model)),
        W_q=rng.standard_normal((n_layers, d_model, d_k)),
        W_k=rng.standard_normal((n_layers, d_model, d_k)),
        W_v=rng.standard_normal((n_layers, d_model, d_model)) / np.sqrt(d_model),
        scale=float(rng.uniform(0.3, 2.0)),
    )


def test_view_is_the_graph_module_layer_by_layer():
    model = random_model(1)
    view = graph_explorer_view(**model, skip=False, causal=True)
    _, weights = stacked_attention(model["X"], model["W_q"], model["W_k"], model["W_v"],
                                   mask=np.tril(np.ones((5, 5), bool)), scale=model["scale"])
    np.testing.assert_allclose(view["weights"], weights)
    for layer in range(3):
        np.testing.assert_allclose(view["rollouts"][layer], attention_rollout(weights[: layer + 1]))
        np.testing.assert_allclose(view["read"][layer], weights[layer].sum(axis=0))
        assert view["cycles"][layer] is None  # causal: no 3-cycle


def test_tied_keys_make_every_layer_reversible():
    view = graph_explorer_view(**random_model(2), tied=True, window=True, window_radius=3)
    for ratio, _ in view["cycles"]:
        assert ratio == pytest.approx(1.0, abs=1e-12)
    untied = graph_explorer_view(**random_model(2))
    assert max(ratio for ratio, _ in untied["cycles"]) > 1.5


def test_masks_combine():
    both = explorer_mask(5, causal=True, window=True, window_radius=1)
    assert both.tolist() == (np.tril(np.ones((5, 5), bool)) & (np.eye(5, k=-1, dtype=bool)
                                                              | np.eye(5, dtype=bool))).tolist()
    assert explorer_mask(3, False, False, 1).all()


def test_explorer_state_is_the_numpy_reference():
    model = random_model(3)
    explorer = GraphExplorer(TOKENS, **model, threshold=0.2, causal=True)
    view = graph_explorer_view(**model, causal=True)
    np.testing.assert_array_equal(explorer.weights, view["weights"])
    np.testing.assert_array_equal(explorer.rollout, view["rollouts"][0])
    state = json.loads(json.dumps(explorer.get_state()))
    assert state["tokens"] == TOKENS and state["layer"] == 0 and state["causal"] is True
    assert np.shape(state["W_q"]) == (3, 4, 2)


def test_a_single_layer_and_the_default_scale():
    rng = np.random.default_rng(4)
    X, W_q, W_k, W_v = rng.standard_normal((3, 2)), rng.standard_normal((2, 4)), \
        rng.standard_normal((2, 4)), rng.standard_normal((2, 2))
    explorer = GraphExplorer(["a", "b", "c"], X, W_q, W_k, W_v)
    assert explorer.scale == pytest.approx(0.5) and np.shape(explorer.W_q) == (1, 2, 4)


def test_inputs_are_not_mutated():
    model = random_model(5)
    copies = {name: value.copy() for name, value in model.items() if isinstance(value, np.ndarray)}
    GraphExplorer(TOKENS, **model)
    for name, original in copies.items():
        assert np.array_equal(model[name], original), name


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(tokens=["a"]), "1 token labels for X with seq=5"),
        (dict(X=np.ones(5)), "non-empty \\(seq, d_model\\) matrix"),
        (dict(W_q=np.ones((3, 3, 2))), "W_q must have shape \\(n_layers, d_model=4, d\\)"),
        (dict(W_k=np.ones((3, 4, 3))), "W_q and W_k of one shape"),
        (dict(W_v=np.ones((3, 4, 2))), "W_v of shape \\(n_layers, d_model, d_model\\)"),
        (dict(threshold=1.5), "threshold must be between 0 and 1"),
        (dict(window_radius=-1), "radius must be a non-negative integer, got -1"),
    ],
)
def test_bad_input_names_what_is_wrong(change, message):
    arguments = {"tokens": TOKENS, **random_model(6), **change}
    with pytest.raises(ValueError, match=message):
        GraphExplorer(**arguments)


def run_graph_explorer_js(problems):
    """layersView() of graph_explorer.js in Node, on each problem."""
    return call_in_node("graph_explorer.js", "layersView", problems)


SETTINGS = [
    dict(skip=skip, causal=causal, window=window, window_radius=radius, tied=tied)
    for skip in (True, False) for causal in (False, True) for window, radius in
    ((False, 2), (True, 1), (True, 2)) for tied in (False, True)
]


def test_javascript_maths_agrees_with_numpy_to_1e9():
    problems = [random_model(seed, seq=4 + seed % 5) | settings
                for seed, settings in enumerate(SETTINGS)]
    results = run_graph_explorer_js(problems)
    assert len(results) == len(problems)
    for problem, js in zip(problems, results):
        view = graph_explorer_view(**problem)
        for key in ("weights", "rollouts", "read"):
            np.testing.assert_allclose(js[key], view[key], rtol=0, atol=1e-9, err_msg=key)
        for W, found, expected in zip(view["weights"], js["cycles"], view["cycles"]):
            if expected is None:
                assert found is None
                continue
            assert found["ratio"] == pytest.approx(expected[0], rel=1e-9)
            # The same cycle, unless another is within rounding of the largest ratio.
            if tuple(found["cycle"]) != expected[1]:
                a, b, c = found["cycle"]
                other = W[a, b] * W[b, c] * W[c, a] / (W[b, a] * W[c, b] * W[a, c])
                assert other == pytest.approx(expected[0], rel=1e-9)
