"""attncourse.explorers.attention_explorer: the Python side, and its JavaScript maths
against numpy."""

import json

import numpy as np
import pytest
import traitlets

from attncourse.attention import causal_mask, scaled_dot_product_attention, softmax
from attncourse.explorers.attention_explorer import (
    MAX_TOKENS,
    AttentionExplorer,
    InvalidExplorerInput,
    explorer_view,
)
from tests.node_module import call_in_node

TOKENS = ["he", "ball", "it", "wet"]


def random_problem(seed, seq=4, d_model=6, n_heads=1, projections=True, masked=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((seq, d_model))
    Ws = [rng.standard_normal((d_model, 2 * n_heads)) if projections else None for _ in range(3)]
    mask = None
    if masked:
        mask = rng.random((seq, seq)) < 0.5
        mask[np.arange(seq), np.arange(seq)] = True  # every token may see itself
    return dict(X=X, W_q=Ws[0], W_k=Ws[1], W_v=Ws[2], mask=mask, n_heads=n_heads,
                scale=float(rng.uniform(0.1, 2.0)))


def test_single_head_view_is_plain_attention():
    X = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    scores, weights, output = explorer_view(X, scale=0.5)
    assert np.allclose(scores, X @ X.T)
    assert np.allclose(weights, softmax(0.5 * X @ X.T))
    assert np.allclose(output, softmax(0.5 * X @ X.T) @ X)


def test_default_scale_is_one_over_sqrt_head_dimension():
    problem = random_problem(1, n_heads=2)
    problem.pop("scale")
    explorer = AttentionExplorer(TOKENS, **problem)
    assert explorer.scale == pytest.approx(1 / np.sqrt(2))  # d_head = 4 columns / 2 heads


def test_multi_head_view_slices_columns_per_head():
    p = random_problem(2, n_heads=2)
    scores, weights, output = explorer_view(**p)
    Q, K, V = p["X"] @ p["W_q"], p["X"] @ p["W_k"], p["X"] @ p["W_v"]
    for h, cols in enumerate((slice(0, 2), slice(2, 4))):
        out_h, w_h = scaled_dot_product_attention(Q[:, cols], K[:, cols], V[:, cols],
                                                  scale=p["scale"])
        assert np.allclose(weights[h], w_h)
        assert np.allclose(scores[h], Q[:, cols] @ K[:, cols].T)
        assert np.allclose(output[:, cols], out_h)


def test_explorer_initial_state_is_the_numpy_reference():
    p = random_problem(3, n_heads=2, masked=True)
    explorer = AttentionExplorer(TOKENS, **p, views=("weights", "graph"))
    scores, weights, output = explorer_view(**p)
    assert np.array_equal(explorer.weights, weights)
    assert np.array_equal(explorer.output, output)
    assert np.array_equal(explorer.scores, scores)
    assert explorer.weights[~np.broadcast_to(p["mask"], weights.shape)].max() == 0.0


def test_state_is_json_and_round_trips_what_the_browser_sends():
    p = random_problem(4)
    explorer = AttentionExplorer(TOKENS, **p, editable=("X", "W_q"))
    state = json.loads(json.dumps(explorer.get_state()))
    assert state["mask"] == [] and state["tokens"] == TOKENS
    edited_X = (p["X"] + 1.0).tolist()
    browser_weights = np.full((4, 4), 0.25).tolist()
    explorer.set_state({"X": edited_X, "weights": browser_weights})  # as a comm message does
    assert isinstance(explorer.X, np.ndarray) and np.array_equal(explorer.X, edited_X)
    # The browser's weights are not taken: Python recomputes them from the edited X.
    expected = explorer_view(**(p | {"X": np.array(edited_X)}))[1]
    assert np.array_equal(explorer.weights, expected)
    assert not np.allclose(explorer.weights, browser_weights)


def test_inputs_are_not_mutated():
    p = random_problem(5, masked=True)
    copies = {k: v.copy() for k, v in p.items() if isinstance(v, np.ndarray)}
    AttentionExplorer(TOKENS, **p)
    explorer_view(**p)
    for name, original in copies.items():
        assert np.array_equal(p[name], original), name


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(tokens=["a", "b"]), "2 token labels for X with seq=4"),
        (dict(W_q=np.ones((5, 2))), "W_q must have shape (d_model=6, d), got (5, 2)"),
        (dict(W_k=np.ones((6, 3))), "W_q gives d_k=2 but W_k gives d_k=3"),
        (dict(n_heads=3), "not divisible into n_heads=3"),
        (dict(n_heads=0), "n_heads must be a positive integer"),
        (dict(mask=np.ones((4, 3), bool)), "mask must have shape (seq, seq)=(4, 4)"),
        (dict(mask=np.eye(4, dtype=bool) & False), "mask rows [0, 1, 2, 3] allow nothing"),
        (dict(views=("weights", "pie")), "unknown views ['pie']"),
        (dict(editable=("W_v", "mask")), "cannot make 'mask' editable"),
        (dict(editable=("bias",)), "cannot edit 'bias'"),
        (dict(X=np.ones(4)), "X must be a (seq, d_model) matrix"),
        (dict(X=np.ones((0, 6)), tokens=[]), "at least one token and one dimension, got shape (0, 6)"),
        (dict(X=np.ones((4, 0))), "at least one token and one dimension, got shape (4, 0)"),
    ],
)
def test_bad_input_names_what_is_wrong(change, message):
    p = random_problem(6) | {"tokens": TOKENS} | change
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        AttentionExplorer(**p)


@pytest.mark.parametrize(("W_q", "message"), [
    ("junk", "W_q must be a matrix of numbers, got 'junk'"),
    (np.ones(6), r"W_q must be a \(d_model, d\) matrix, got shape \(6,\)"),
])
def test_the_default_scale_waits_for_a_valid_W_q(W_q, message):
    with pytest.raises(InvalidExplorerInput, match=message):
        AttentionExplorer(TOKENS, np.ones((4, 6)), W_q=W_q)


def test_a_value_of_the_wrong_type_is_named_by_its_trait():
    with pytest.raises(traitlets.TraitError, match="'n_heads' trait .* expected an int"):
        AttentionExplorer(TOKENS, **(random_problem(6) | {"n_heads": "2"}))


def test_the_scale_slider_range_is_saved_for_the_browser_and_bounds_the_scale():
    explorer = AttentionExplorer(TOKENS, **random_problem(7), scale_slider=(0, 5, 0.1))
    assert explorer.get_state()["scale_slider"] == [0.0, 5.0, 0.1]  # what explorer.js draws
    explorer.scale = 5.0  # the slider's end is in range
    with pytest.raises(InvalidExplorerInput, match=r"scale=5.5 is outside .* \[0.0, 5.0\]"):
        explorer.scale = 5.5
    assert explorer.scale == 5.0
    assert AttentionExplorer(TOKENS, **random_problem(7)).get_state()["scale_slider"] == []


def run_explorer_js(problems):
    """attend() of explorer.js in Node, on each problem."""
    return call_in_node("attention_explorer.js", "attend", problems)


def test_javascript_maths_agrees_with_numpy_to_1e9():
    problems = [
        random_problem(seed, seq=seq, n_heads=n_heads, projections=proj, masked=masked)
        for seed, (seq, n_heads, proj, masked) in enumerate(
            [(s, h, p, m) for s in (1, 3, 7) for h in (1, 2, 3) for p in (True, False)
             for m in (True, False)]
        )
    ]
    results = run_explorer_js(problems)
    assert len(results) == len(problems)
    for p, js in zip(problems, results):
        scores, weights, output = explorer_view(**p)
        heads = p["n_heads"]
        np.testing.assert_allclose(np.array(js["weights"]).reshape(weights.shape), weights,
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.array(js["scores"]).reshape(scores.shape), scores,
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(js["output"], output, rtol=0, atol=1e-9)
        assert len(js["weights"]) == heads


def test_dimension_labels_default_and_validation():
    p = random_problem(8)
    assert AttentionExplorer(TOKENS, **p).dims == [f"x{k}" for k in range(6)]
    named = AttentionExplorer(TOKENS, **p, dims=list("abcdef"))
    assert named.get_state()["dims"] == list("abcdef")
    with pytest.raises(ValueError, match="2 dims labels for X with d_model=6"):
        AttentionExplorer(TOKENS, **p, dims=["a", "b"])


# --- assignments are checked as the constructor checks, and results follow the inputs ----

ASSIGNMENTS_REFUSED = [
    ("X", np.ones((3, 6)), "3 rows for 4 tokens", "4 token labels for X with seq=3"),
    ("X", np.full((4, 6), np.nan), "NaN", "X has NaN or infinite entries"),
    ("X", np.ones((4, 6)) * 1j, "complex", "X must be real"),
    ("tokens", ["a", "b"], "too few labels", "2 token labels for X with seq=4"),
    ("n_heads", 3, "does not divide the columns", "not divisible into n_heads=3"),
    ("n_heads", 0, "zero heads", "n_heads must be a positive integer"),
    ("W_q", np.ones((5, 2)), "wrong rows", r"W_q must have shape \(d_model=6, d\)"),
    ("W_k", np.ones((6, 4)), "d_k differs from W_q's", "W_q gives d_k=2 but W_k gives d_k=4"),
    ("mask", np.full((4, 4), "False"), "strings", "mask must be boolean"),
    ("mask", np.full((4, 4), 0.5), "a half", "mask must be boolean .* 0.5"),
    ("mask", np.full((4, 4), np.nan), "NaN", "mask must be boolean .* nan"),
    ("mask", [[True] * 4] * 3, "wrong shape", r"mask must have shape \(seq, seq\)=\(4, 4\)"),
    ("mask", np.zeros((4, 4), bool), "rows that see nothing", "allow nothing"),
    ("decimals", 7, "too many decimals", "decimals must be between 0 and 6, got 7"),
    ("decimals", -1, "negative decimals", "decimals must be between 0 and 6, got -1"),
    ("scale", float("nan"), "NaN scale", "scale must be a finite number"),
    ("views", ["weights", "pie"], "unknown view", "unknown views"),
    ("editable", ["X", "mask"], "editing a mask not given", "cannot make 'mask' editable"),
    ("dims", ["a"], "too few dimension labels", "1 dims labels for X with d_model=6"),
    ("scale_slider", [0.0, 5.0], "a slider range without a step",
     r"scale_slider must be \(minimum, maximum, step\), three finite numbers, got \[0.0, 5.0\]"),
    ("scale_slider", [5.0, 0.0, 0.1], "a slider range upside down",
     r"needs minimum < maximum .* got \(5.0, 0.0, 0.1\)"),
    ("scale_slider", [0.0, 5.0, 0.0], "a slider step of zero", r"0 < step .* got \(0.0, 5.0, 0.0\)"),
    ("scale_slider", [0.0, 0.01, 0.001], "a slider range without the scale",
     r"scale=.* is outside the scale slider's range \[0.0, 0.01\]"),
]


@pytest.mark.parametrize(("name", "value", "why", "message"), ASSIGNMENTS_REFUSED,
                         ids=[case[2] for case in ASSIGNMENTS_REFUSED])
def test_an_assignment_is_checked_and_a_refused_one_changes_nothing(name, value, why, message):
    explorer = AttentionExplorer(TOKENS, **random_problem(9))
    before = json.dumps(explorer.get_state())
    weights = explorer.weights
    with pytest.raises(InvalidExplorerInput, match=message) as refused:
        setattr(explorer, name, value)
    assert isinstance(refused.value, traitlets.TraitError)
    assert isinstance(refused.value, ValueError)
    assert json.dumps(explorer.get_state()) == before, f"{why}: the state changed"
    assert explorer.weights is weights


def test_a_mask_of_zeros_and_ones_is_taken_as_boolean():
    explorer = AttentionExplorer(TOKENS, **random_problem(10))
    explorer.mask = causal_mask(4).astype(int)
    assert explorer.mask.dtype == bool and np.array_equal(explorer.mask, causal_mask(4))
    assert np.array_equal(explorer.weights == 0, ~causal_mask(4))


def test_inputs_that_must_agree_change_together():
    explorer = AttentionExplorer(TOKENS, **random_problem(11, projections=False))
    X3 = np.arange(18.0).reshape(3, 6) / 10
    with explorer.hold_trait_notifications():
        explorer.tokens = ["a", "b", "c"]
        explorer.X = X3
    assert explorer.weights.shape == (3, 3)
    np.testing.assert_array_equal(explorer.output, explorer_view(X3, scale=explorer.scale)[2])
    # Together or not at all: a refused pair leaves both as they were.
    with pytest.raises(InvalidExplorerInput), explorer.hold_trait_notifications():
        explorer.tokens = ["a", "b"]
        explorer.X = np.ones((4, 6))
    assert explorer.tokens == ["a", "b", "c"] and np.array_equal(explorer.X, X3)


def test_results_follow_every_input_with_no_browser():
    p = random_problem(12, n_heads=1, masked=True)
    explorer = AttentionExplorer(TOKENS, **p)
    rng = np.random.default_rng(13)
    changes = [
        ("X", rng.standard_normal((4, 6))),
        ("W_q", rng.standard_normal((6, 2))),
        ("W_k", rng.standard_normal((6, 2))),
        ("W_v", rng.standard_normal((6, 4))),
        ("mask", causal_mask(4)),
        ("scale", 0.3),
        ("n_heads", 2),
    ]
    for name, value in changes:
        before = explorer.weights, explorer.output
        setattr(explorer, name, value)
        p[name] = value
        for result, expected in zip(("scores", "weights", "output"), explorer_view(**p)):
            np.testing.assert_array_equal(getattr(explorer, result), expected,
                                          err_msg=f"{result} after assigning {name}")
        changed = [not np.array_equal(b, a) for b, a in zip(before, (explorer.weights,
                                                                    explorer.output))]
        assert any(changed), f"assigning {name} changed nothing"


def test_an_edit_from_the_browser_is_checked_and_recomputed():
    p = random_problem(14, masked=True)
    explorer = AttentionExplorer(TOKENS, **p, editable=("X", "mask"))
    edited = causal_mask(4).tolist()
    explorer.set_state({"mask": edited})  # as a comm message from the browser does
    assert np.array_equal(explorer.weights, explorer_view(**(p | {"mask": causal_mask(4)}))[1])
    with pytest.raises(InvalidExplorerInput, match="allow nothing"):
        explorer.set_state({"mask": [[False] * 4] * 4})
    assert np.array_equal(explorer.mask, causal_mask(4))


def test_results_are_read_only_and_never_saved():
    explorer = AttentionExplorer(TOKENS, **random_problem(15))
    with pytest.raises(traitlets.TraitError, match="read-only"):
        explorer.weights = np.zeros((4, 4))
    assert not {"scores", "weights", "output"} & set(explorer.get_state())


def saved_size(seq, d_model=32, n_heads=4):
    """Bytes of an explorer's saved state (as a built page holds it), without its JS and CSS."""
    rng = np.random.default_rng(seq)
    Ws = {name: rng.standard_normal((d_model, d_model)).round(2) for name in ("W_q", "W_k", "W_v")}
    explorer = AttentionExplorer([f"t{k}" for k in range(seq)],
                                 rng.standard_normal((seq, d_model)).round(2), **Ws,
                                 n_heads=n_heads)
    state = explorer.get_state()
    return len(json.dumps({k: v for k, v in state.items() if k not in ("_esm", "_css")}))


def test_saved_state_grows_with_the_inputs_not_with_seq_squared():
    # 16 -> 64 tokens adds 48 rows of X (about 48 x 32 numbers of 5 characters), no more.
    small, large = saved_size(16), saved_size(MAX_TOKENS)
    assert large - small < 48 * 32 * 8
    assert large < 40_000


def test_more_than_max_tokens_is_refused_with_the_cap_named():
    seq = MAX_TOKENS + 1
    with pytest.raises(InvalidExplorerInput, match=f"seq={seq} tokens: .* at most MAX_TOKENS=64"):
        AttentionExplorer([str(k) for k in range(seq)], np.ones((seq, 2)))


# --- several heads joined: W_O, head switches, concatenate or sum (chapter 4) -----------------


def heads_problem(seed, seq=4, d_model=6, n_heads=2, d_out=3):
    p = random_problem(seed, seq=seq, d_model=d_model, n_heads=n_heads)
    W_o = np.random.default_rng(seed + 100).standard_normal((2 * n_heads, d_out))
    return p | {"W_o": W_o}


def test_the_view_with_w_o_is_multi_head_attention():
    from attncourse.multihead import attention_heads, multi_head_attention

    p = heads_problem(20)
    arguments = [p[name] for name in ("X", "W_q", "W_k", "W_v", "W_o")]
    _, weights, output = explorer_view(**p)
    expected, expected_weights = multi_head_attention(*arguments, 2, scale=p["scale"])
    np.testing.assert_allclose(output, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights, rtol=0, atol=1e-12)
    heads, _ = attention_heads(*arguments[:4], 2, scale=p["scale"])  # (n_heads, seq, d_head)
    _, _, off = explorer_view(**p, heads_on=[True, False])
    np.testing.assert_allclose(off, heads[0] @ p["W_o"][:2], rtol=0, atol=1e-12)  # head 1 zeroed
    _, _, summed = explorer_view(**p, combine="sum")
    np.testing.assert_allclose(summed, heads.sum(axis=0), rtol=0, atol=1e-12)  # W_o unused
    _, _, summed_off = explorer_view(**p, combine="sum", heads_on=[False, True])
    np.testing.assert_allclose(summed_off, heads[1], rtol=0, atol=1e-12)


def test_head_switches_and_the_choice_of_combination_follow_assignments():
    p = heads_problem(21)
    explorer = AttentionExplorer(TOKENS, **p, editable=("W_o", "heads_on", "combine"))
    assert explorer.output.shape == (4, 3)
    weights = explorer.weights.copy()
    explorer.heads_on = [False, True]
    np.testing.assert_array_equal(explorer.output, explorer_view(**p, heads_on=[False, True])[2])
    np.testing.assert_array_equal(explorer.weights, weights)  # a switch changes no weight
    explorer.combine = "sum"
    assert explorer.output.shape == (4, 2)
    explorer.set_state({"combine": "concat", "heads_on": [True, True]})  # from the browser
    np.testing.assert_array_equal(explorer.output, explorer_view(**p)[2])
    state = explorer.get_state()
    assert state["heads_on"] == [True, True] and state["combine"] == "concat"
    assert json.loads(json.dumps(state["W_o"])) == p["W_o"].tolist()


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("heads_on", [True], r"heads_on must be 2 booleans, one per head, got \[True\]"),
        ("heads_on", [True, True, False], "heads_on must be 2 booleans"),
        ("combine", "add", r"combine must be one of \('concat', 'sum'\), got 'add'"),
        ("W_o", np.zeros((3, 3)), r"W_o must have one row per column of the heads' outputs, shape \(n_heads \* d_head_v=4, d_out\), got \(3, 3\)"),
        ("W_o", [[np.nan] * 3] * 4, "W_o has NaN or infinite entries"),
    ],
)
def test_a_bad_head_input_is_refused_and_changes_nothing(name, value, message):
    explorer = AttentionExplorer(TOKENS, **heads_problem(22), editable=("W_o", "heads_on"))
    before = explorer.get_state()
    with pytest.raises(InvalidExplorerInput, match=message):
        setattr(explorer, name, value)
    assert explorer.get_state() == before


@pytest.mark.parametrize("heads_on", [[0.5, 1], ["False", True], [np.nan, True], [2, 1]])
def test_heads_on_must_be_booleans(heads_on):
    with pytest.raises(traitlets.TraitError, match="expected a bool"):
        AttentionExplorer(TOKENS, **heads_problem(23), heads_on=heads_on)


def test_w_o_must_be_given_to_be_editable():
    p = random_problem(23, n_heads=2)
    with pytest.raises(InvalidExplorerInput, match="cannot make 'W_o' editable: it was not given"):
        AttentionExplorer(TOKENS, **p, editable=("W_o",))


def test_javascript_joins_heads_as_numpy_does():
    problems = [heads_problem(seed, n_heads=n_heads) | {"heads_on": on, "combine": combine}
                for seed, (n_heads, on, combine) in enumerate(
                    [(2, [True, True], "concat"), (2, [False, True], "concat"),
                     (3, [True, False, True], "sum"), (2, None, "sum"), (1, [False], "concat")])]
    problems.append(heads_problem(9) | {"W_o": None, "heads_on": [True, False]})
    for p, js in zip(problems, run_explorer_js(problems)):
        np.testing.assert_allclose(js["output"], explorer_view(**p)[2], rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["", "   ", "a very long name", 3])
def test_input_name_must_be_a_short_name(name):
    explorer = AttentionExplorer(["a", "b"], np.eye(2), input_name="A")
    with pytest.raises(traitlets.TraitError, match="input_name"):
        explorer.input_name = name
    assert explorer.input_name == "A"
    with pytest.raises(traitlets.TraitError, match="input_name"):
        AttentionExplorer(["a", "b"], np.eye(2), input_name=name)
