"""attncourse.explorers.flash_explorer: Python recomputes the loop with attncourse.flash on
every change, and the explorer's JavaScript runs the same loop (in Node) to 1e-12."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.explorers.common import InvalidExplorerInput
from attncourse.explorers.flash_explorer import FlashExplorer, default_problem
from attncourse.flash import naive_traffic, tiled_attention, tiled_trace, tiled_traffic
from tests.node_module import call_in_node

TOLERANCE = 1e-12


def test_the_explorer_holds_the_loop_of_its_problem():
    explorer = FlashExplorer()
    problem = default_problem()
    assert explorer.steps == tiled_trace(problem["Q"], problem["K"], problem["V"], 4, 3, causal=True)
    np.testing.assert_array_equal(explorer.output, tiled_attention(problem["Q"], problem["K"], problem["V"], 4, 3,
                                                                   causal=True))
    assert explorer.traffic == tiled_traffic(12, 2, 4, 3, causal=True)
    assert explorer.naive == naive_traffic(12, 2)


@pytest.mark.parametrize("change", [{"block_q": 5}, {"block_k": 12}, {"causal": False},
                                    {"Q": np.ones((12, 2))}])
def test_python_recomputes_on_every_change(change):
    explorer = FlashExplorer()
    for name, value in change.items():
        setattr(explorer, name, value)
    Q, K, V = (np.asarray(getattr(explorer, name), dtype=float) for name in ("Q", "K", "V"))
    expected = tiled_trace(Q, K, V, explorer.block_q, explorer.block_k, causal=explorer.causal)
    assert explorer.steps == expected
    assert explorer.traffic == tiled_traffic(12, 2, explorer.block_q, explorer.block_k, explorer.causal)


@pytest.mark.parametrize("arguments, message", [
    ({"block_q": 0}, r"block_q must be in 1..32"),
    ({"block_k": 40}, r"block_k must be in 1..32"),
    ({"row": 12}, r"row must be a query in 0..11"),
    ({"step": -1}, r"step must be >= 0"),
    ({"Q": np.ones((3, 2))}, r"need Q and K of one shape"),
    ({"V": np.ones((12, 0))}, r"V must be \(seq, d\)"),
    ({"K": np.full((12, 2), np.nan)}, r"K must be finite"),
    ({"Q": np.ones((40, 2)), "K": np.ones((40, 2)), "V": np.ones((40, 2))}, r"1 <= seq <= 32"),
])
def test_bad_input_names_the_fault(arguments, message):
    with pytest.raises(InvalidExplorerInput, match=message):
        FlashExplorer(**arguments)


def test_a_bad_assignment_leaves_the_explorer_unchanged():
    explorer = FlashExplorer()
    before = explorer.steps
    with pytest.raises(InvalidExplorerInput):
        explorer.block_k = 0
    assert explorer.block_k == 3 and explorer.steps == before


PROBLEMS = [
    dict(default_problem(), block_q=4, block_k=3, causal=True),
    dict(default_problem(), block_q=5, block_k=7, causal=False),
    dict(default_problem(seq=9, d=3, seed=1), block_q=2, block_k=4, causal=True),
    dict(default_problem(seq=1, d=1, seed=2), block_q=3, block_k=3, causal=True),
    dict(Q=np.array([[30.0, 0.0], [0.0, 30.0]]), K=np.array([[30.0, 0.0], [0.0, 30.0]]),
         V=np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), block_q=1, block_k=1, causal=False),
]


def test_the_javascript_runs_the_same_loop():
    results = call_in_node("flash_explorer.js", "construct", PROBLEMS)
    for problem, js_steps in zip(PROBLEMS, results):
        steps = tiled_trace(problem["Q"], problem["K"], problem["V"], problem["block_q"], problem["block_k"],
                            causal=problem["causal"])
        assert len(js_steps) == len(steps)
        for js, py in zip(js_steps, steps):
            assert tuple(js["rows"]) == py["rows"] and tuple(js["cols"]) == py["cols"]
            assert (js["read"], js["written"]) == (py["read"], py["written"])
            for name in ("m", "l", "o"):
                np.testing.assert_allclose(js[name], py[name], rtol=TOLERANCE, atol=TOLERANCE)


def test_the_javascript_counts_the_direct_traffic_as_python_does():
    problems = [{"seq": 12, "d": 2}, {"seq": 4096, "d": 64}]
    script_results = call_in_node("flash_explorer.js", "naiveTrafficOf", problems)
    assert script_results == [naive_traffic(p["seq"], p["d"]) for p in problems]
