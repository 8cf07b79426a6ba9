"""attncourse.explorers.position_explorer: the explorer's state, its Python outputs against
attncourse.positions, and its JavaScript maths against the Python."""

import numpy as np
import pytest

from attncourse.attention import causal_mask, softmax
from attncourse.explorers.common import InvalidExplorerInput
from attncourse.explorers.position_explorer import PositionExplorer, position_view
from attncourse.positions import alibi_bias, rope, sinusoidal_positions
from tests.node_module import call_in_node

TOLERANCE = 1e-9  # the JavaScript against the numpy reference
SENTENCE = "the dog that bit the man ran away"


def test_the_outputs_follow_every_input_change():
    explorer = PositionExplorer(SENTENCE, encoding="rope", offset=-1, scale=40.0)
    assert np.diagonal(explorer.weights, -1).min() > 0.99  # a previous-token head
    explorer.offset = 2
    assert np.diagonal(explorer.weights, 2).min() > 0.99
    explorer.encoding = "alibi"
    explorer.offset = 0
    np.testing.assert_allclose(explorer.scores, alibi_bias(8, 8)[0], rtol=0, atol=0)
    explorer.causal = True
    np.testing.assert_allclose(explorer.weights, softmax(np.where(causal_mask(8), alibi_bias(8, 8)[0], -np.inf)))
    explorer.tokens = ["one", "two", "three"]
    assert explorer.weights.shape == (3, 3) and explorer.curve.shape == (5,)


def test_the_sinusoidal_head_compares_the_table_through_a_rotation():
    """Its score of i on j is P_{i + offset} . P_j: the table's rows, one moved by the offset."""
    offsets, curve, scores, _ = position_view("sinusoidal", 6, 16, 100.0, 0, 2, 1.0, False)
    table = sinusoidal_positions(12, 16, 100.0)
    for i in range(4):
        for j in range(6):
            assert scores[i, j] == pytest.approx(table[i + 2] @ table[j], abs=1e-12)
    assert offsets.tolist() == list(range(-5, 6)) and curve.argmax() == list(offsets).index(2)


def test_the_rope_head_is_rope_on_its_queries_and_keys():
    _, curve, scores, _ = position_view("rope", 5, 8, 10000.0, 0, -1, 2.0, False)
    key = np.ones(8)
    queries = rope(np.tile(rope(key[None], [-1.0])[0], (5, 1)))
    np.testing.assert_allclose(scores, 2.0 * queries @ rope(np.tile(key, (5, 1))).T, rtol=0, atol=1e-12)
    assert curve[list(range(-4, 5)).index(-1)] == pytest.approx(curve.max())


def test_the_javascript_travels_in_the_state():
    state = PositionExplorer(SENTENCE).get_state()
    assert "export function construct" in state["_esm"] and "import " not in state["_esm"]
    assert "innerHTML" not in state["_esm"]  # labels are text, never HTML
    assert state["tokens"] == SENTENCE.split() and state["encoding"] == "rope"


@pytest.mark.parametrize(("arguments", "message"), [
    ({"encoding": "learned"}, "encoding must be one of"),
    ({"d": 6}, "d must be one of"),
    ({"d": 8.0}, "d must be an integer"),
    ({"base": 1.0}, r"base must be in \[2, 1e\+06\]"),
    ({"base": np.nan}, "base must be a finite number"),
    ({"alibi_head": 8}, r"alibi_head must be 0 \.\. 7"),
    ({"offset": 8}, r"offset must be within ±7"),
    ({"scale": 60.0}, r"scale must be in \[0, 50\]"),
])
def test_bad_input_names_the_fault(arguments, message):
    with pytest.raises(ValueError, match=message):
        PositionExplorer(SENTENCE, **arguments)


def test_an_assignment_out_of_range_is_refused_and_changes_nothing():
    explorer = PositionExplorer(SENTENCE)
    before = explorer.weights.copy()
    with pytest.raises(InvalidExplorerInput, match="offset must be within"):
        explorer.offset = 20
    assert explorer.offset == 0 and np.array_equal(explorer.weights, before)
    with pytest.raises(InvalidExplorerInput, match="1 to 24 words"):
        explorer.tokens = []


def test_javascript_maths_agrees_with_numpy_to_1e9():
    problems = [{"encoding": encoding, "seq": seq, "d": d, "base": base, "alibi_head": head,
                 "offset": offset, "scale": scale, "causal": causal}
                for encoding in ("sinusoidal", "rope", "alibi")
                for seq, d, base, head, offset, scale, causal in [
                    (1, 4, 10000.0, 0, 0, 5.0, False), (6, 8, 100.0, 3, -2, 12.5, True),
                    (12, 64, 10000.0, 7, 4, 1.0, False), (9, 16, 2.0, 1, 0, 0.0, True)]]
    results = call_in_node("position_explorer.js", "construct", problems)
    for p, js in zip(problems, results):
        offsets, curve, scores, weights = position_view(p["encoding"], p["seq"], p["d"], p["base"],
                                                        p["alibi_head"], p["offset"], p["scale"], p["causal"])
        assert js["offsets"] == offsets.tolist()
        for name, expected in (("curve", curve), ("scores", scores), ("weights", weights)):
            np.testing.assert_allclose(js[name], expected, rtol=0, atol=TOLERANCE, err_msg=f"{p} {name}")
