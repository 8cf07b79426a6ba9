"""attncourse.explorers.conv_explorer: the explorer's state, and its JavaScript maths against numpy."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attncourse.convolution import shift_weights
from attncourse.explorers.conv_explorer import ConvolutionExplorer
from tests.node_module import call_in_node

TOLERANCE = 1e-9  # the JavaScript against the numpy reference


def problem(seed, seq=32, K=5, alpha=1.0):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(seq).round(2).tolist(),
                "kernel": rng.standard_normal(K).round(2).tolist(), "alpha": alpha}


def test_the_properties_follow_the_synced_inputs_and_torch():
    explorer = ConvolutionExplorer(**problem(0))
    assert explorer.query == 16 and explorer.weights.shape == (5, 32, 36)
    explorer.alpha = 30.0  # what a slider in the browser syncs back
    x, kernel = (torch.tensor(explorer.x)[None, None], torch.tensor(explorer.kernel)[None, None])
    reference = F.conv1d(x.double(), kernel.double(), padding=2)[0, 0].numpy()
    assert np.allclose(explorer.convolution, reference, atol=1e-12)
    assert explorer.max_error < 1e-10
    explorer.alpha = 1.0
    assert explorer.max_error > 0.1
    explorer.kernel = [0.0, 0.0, 1.0, 0.0, 0.0]  # an edited kernel: the identity
    assert np.allclose(explorer.convolution, explorer.x)


def test_the_javascript_travels_in_the_state():
    state = ConvolutionExplorer(**problem(1)).get_state()
    assert "export function construct" in state["_esm"]
    assert "innerHTML" not in state["_esm"]  # labels are text, never HTML
    assert state["alpha"] == 1.0 and len(state["kernel"]) == 5


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"x": [1.0, 2.0], "kernel": [1.0, 2.0]}, "odd number of taps"),
        ({"x": [[1.0]], "kernel": [1.0]}, r"x must be a non-empty vector \(seq,\)"),
        ({"x": [], "kernel": [1.0]}, "non-empty"),
        ({"x": [1.0], "kernel": [np.nan]}, "finite"),
        ({"x": ["a"], "kernel": [1.0]}, "numeric"),
        ({"x": [1.0], "kernel": [1.0], "alpha": 40.0}, r"alpha must be a number in \[0, 30\]"),
        ({"x": [1.0], "kernel": [1.0], "alpha": True}, "alpha"),
        ({"x": [1.0, 2.0], "kernel": [1.0], "query": 2}, r"query must be a token index in 0..1"),
    ],
)
def test_bad_input_names_the_fault(arguments, message):
    with pytest.raises(ValueError, match=message):
        ConvolutionExplorer(**arguments)


def run_construct_js(problems):
    """construct() of conv_explorer.js in Node, on each problem."""
    return call_in_node("conv_explorer.js", "construct", problems)


def test_javascript_maths_agrees_with_numpy_to_1e9():
    problems = [problem(seed, seq, K, alpha)
                for seed, (seq, K, alpha) in enumerate(
                    [(s, k, a) for s in (1, 4, 32) for k in (1, 3, 5, 7) for a in (0.0, 0.7, 6.0, 30.0)])]
    results = run_construct_js(problems)
    assert len(results) == len(problems)
    for p, js in zip(problems, results):
        explorer = ConvolutionExplorer(**p)
        np.testing.assert_allclose(js["weights"], explorer.weights, rtol=0, atol=TOLERANCE)
        np.testing.assert_allclose(js["output"], explorer.output, rtol=0, atol=TOLERANCE)
        np.testing.assert_allclose(js["convolution"], explorer.convolution, rtol=0, atol=TOLERANCE)
        assert abs(js["maxError"] - explorer.max_error) < TOLERANCE


def test_the_javascript_weights_are_the_construction_not_a_copy_of_it():
    """A reversed shift in the JavaScript would still give row sums of 1: compare shapes
    that tell the heads apart."""
    (js,) = run_construct_js([problem(9, seq=6, K=3, alpha=30.0)])
    weights = np.array(js["weights"])  # (K, seq, seq + 2)
    assert np.allclose(weights, shift_weights(6, 3, 30.0), atol=TOLERANCE)
    assert weights[0, 3].argmax() == 3  # the head of Delta = -1 takes token 2 (padded key 3)
