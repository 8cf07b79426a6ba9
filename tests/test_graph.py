"""Tests for ``attncourse.graph``. Expected values come from independent computations:
hand-worked small cases, the dense formulas the graph functions must equal (W @ V,
pi @ W = pi), a direct transcription of Abnar & Zuidema's rollout, and PyTorch
(index_add_ is the scatter-add graph libraries use; scaled_dot_product_attention)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attncourse.attention import causal_mask, softmax
from attncourse.graph import (
    additive_scores,
    attention_rollout,
    cycle_ratio,
    edge_list,
    edge_softmax,
    largest_cycle_ratio,
    message_passing,
    stacked_attention,
    stationary_distribution,
    token_residual,
    window_mask,
)
from attncourse.reciprocity import log_normalisers

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
FAST = settings(max_examples=60, deadline=None)


def random_weights(seed, seq=None, mask=None, scale=1.0):
    """A row-stochastic (seq, seq) attention matrix from random, non-symmetric scores."""
    rng = np.random.default_rng(seed)
    seq = seq or int(rng.integers(2, 8))
    scores = scale * rng.standard_normal((seq, seq))
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores)


def reading_mask(rng, seq, density=0.6):
    """A random (seq, seq) edge set in which every token reads at least one token."""
    mask = rng.random((seq, seq)) < density
    mask[np.arange(seq), rng.integers(0, seq, size=seq)] = True
    return mask


def symmetric_weights(seed):
    """softmax(X X^T) for a random X: symmetric scores, as in chapter 2."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((int(rng.integers(3, 8)), int(rng.integers(1, 5))))
    return X, softmax(X @ X.T)


# ------------------------------------------------------------------ edge_list


def test_edge_list_by_hand():
    weights = [[0.75, 0.25, 0.0], [0.0, 1.0, 0.0], [0.2, 0.3, 0.5]]
    assert edge_list(weights) == [
        (0, 0, 0.75), (1, 0, 0.25), (1, 1, 1.0), (0, 2, 0.2), (1, 2, 0.3), (2, 2, 0.5),
    ]
    assert edge_list(weights, threshold=0.3) == [(0, 0, 0.75), (1, 1, 1.0), (2, 2, 0.5)]
    assert all(type(k) is int for edge in edge_list(weights) for k in edge[:2])
    assert all(type(edge[2]) is float for edge in edge_list(weights))


@FAST
@given(SEEDS, st.floats(min_value=0.0, max_value=1.0))
def test_edge_list_holds_every_weight_above_the_threshold_and_nothing_else(seed, threshold):
    weights = random_weights(seed, seq=5, mask=reading_mask(np.random.default_rng(seed), 5, 0.7))
    edges = edge_list(weights, threshold)
    assert len(edges) == int((weights > threshold).sum())
    for source, target, weight in edges:
        assert weights[target, source] == weight > threshold  # target reads from source
    assert edges == sorted(edges, key=lambda edge: (edge[1], edge[0]))


def test_causal_mask_is_a_dag_with_self_loops():
    weights = random_weights(3, seq=6, mask=causal_mask(6))
    edges = edge_list(weights)
    assert all(source <= target for source, target, _ in edges)  # edges run forwards
    assert {(k, k) for k in range(6)} <= {(s, t) for s, t, _ in edges}
    strict = weights - np.diag(np.diag(weights))  # without the self-loops
    assert np.allclose(np.linalg.matrix_power(strict, 6), 0.0)  # nilpotent: no cycle


@pytest.mark.parametrize(
    ("weights", "threshold", "message", "error"),
    [
        (np.ones(3), 0.0, r"weights must have shape \(seq, seq\), got shape \(3,\)", ValueError),
        (np.ones((2, 3)), 0.0, r"got shape \(2, 3\)", ValueError),
        (np.zeros((0, 0)), 0.0, "seq >= 1", ValueError),
        ([[np.nan, 1.0], [1.0, 0.0]], 0.0, r"weights of shape \(2, 2\) contains NaN at index \(0, 0\)", ValueError),
        ([["a", "b"], ["c", "d"]], 0.0, "weights must be an array of real numbers", TypeError),
        (np.eye(2), float("nan"), "threshold must be a finite number, got nan", ValueError),
        (np.eye(2), "0.1", "threshold must be a finite number, got '0.1' of type str", TypeError),
    ],
)
def test_edge_list_rejects_bad_input(weights, threshold, message, error):
    with pytest.raises(error, match=message):
        edge_list(weights, threshold)


# ------------------------------------------------------------------ message passing


def test_message_passing_by_hand():
    weights = [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.25, 0.25, 0.5]]
    V = [[2.0, 0.0], [4.0, 1.0], [0.0, 8.0]]
    assert message_passing(weights, V).tolist() == [[3.0, 0.5], [4.0, 1.0], [1.5, 4.25]]


@FAST
@given(SEEDS)
def test_message_passing_equals_weights_times_values(seed):
    rng = np.random.default_rng(seed)
    seq = int(rng.integers(1, 8))
    weights = random_weights(seed, seq=seq, mask=reading_mask(rng, seq))
    V = rng.standard_normal((seq, int(rng.integers(1, 5))))
    copies = weights.copy(), V.copy()
    passed = message_passing(weights, V)
    np.testing.assert_allclose(passed, weights @ V, rtol=1e-12, atol=1e-12)
    assert np.array_equal(weights, copies[0]) and np.array_equal(V, copies[1])


def test_message_passing_is_the_scatter_add_of_a_graph_library():
    rng = np.random.default_rng(0)
    weights, V = random_weights(1, seq=7), rng.standard_normal((7, 3))
    sources, targets, edge_weights = map(np.array, zip(*edge_list(weights)))
    messages = torch.tensor(edge_weights[:, None] * V[sources])  # (n_edges, d_v)
    expected = torch.zeros(7, 3, dtype=torch.float64).index_add_(0, torch.tensor(targets), messages)
    np.testing.assert_allclose(message_passing(weights, V), expected.numpy(), rtol=0, atol=1e-12)


def test_message_passing_direction_matters():
    # Token 0 reads only token 1; token 1 reads only itself: the message flows 1 -> 0.
    weights = np.array([[0.0, 1.0], [0.0, 1.0]])
    V = np.array([[10.0], [20.0]])
    assert message_passing(weights, V).tolist() == [[20.0], [20.0]]


@pytest.mark.parametrize(
    ("weights", "V", "message", "error"),
    [
        (np.eye(2), np.ones((3, 2)), r"weights has seq=2 but V has seq=3 .*V shape \(3, 2\)", ValueError),
        (np.eye(2), np.ones(2), r"V must have shape \(seq, d_v\), got shape \(2,\)", ValueError),
        ([[1.5, -0.5], [0.0, 1.0]], np.ones((2, 1)), r"weights\[0, 1\] = -0.5 is negative", ValueError),
        (np.eye(2), [["a"], ["b"]], "V must be an array of real numbers", TypeError),
        (np.eye(2), [[np.nan], [1.0]], r"V of shape \(2, 1\) contains NaN at index \(0, 0\)", ValueError),
    ],
)
def test_message_passing_rejects_bad_input(weights, V, message, error):
    with pytest.raises(error, match=message):
        message_passing(weights, V)


@FAST
@given(SEEDS)
def test_edge_softmax_over_a_masked_graph_is_the_masked_row_softmax(seed):
    rng = np.random.default_rng(seed)
    seq = int(rng.integers(1, 7))
    mask = reading_mask(rng, seq)
    scores = 30 * rng.standard_normal((seq, seq))  # large: exp would overflow unshifted
    targets, sources = np.nonzero(mask)
    alpha = edge_softmax(targets, scores[targets, sources], seq)
    dense = np.zeros((seq, seq))
    dense[targets, sources] = alpha
    np.testing.assert_allclose(dense, softmax(np.where(mask, scores, -np.inf)), atol=1e-12)


def test_edge_softmax_rejects_bad_input():
    with pytest.raises(ValueError, match="one target per edge score"):
        edge_softmax([0, 1], [1.0], 2)
    with pytest.raises(ValueError, match=r"targets\[1\] = 2 is outside 0..1"):
        edge_softmax([0, 2], [1.0, 2.0], 2)
    with pytest.raises(ValueError, match=r"edge_scores of shape \(1,\) contains \+inf"):
        edge_softmax([0], [np.inf], 1)
    with pytest.raises(TypeError, match="targets must hold integer indices, got dtype float64"):
        edge_softmax([0.0, 1.0], [1.0, 2.0], 2)
    with pytest.raises(TypeError, match="n_nodes must be a positive integer, got '2'"):
        edge_softmax([0, 1], [1.0, 2.0], "2")


# ------------------------------------------------------------------ stationary distribution


@FAST
@given(SEEDS)
def test_stationary_distribution_is_a_fixed_point(seed):
    weights = random_weights(seed, scale=3.0)
    pi = stationary_distribution(weights)
    assert pi.shape == (len(weights),) and (pi >= 0).all()
    assert np.isclose(pi.sum(), 1.0)
    np.testing.assert_allclose(pi @ weights, pi, atol=1e-12)


@FAST
@given(SEEDS)
def test_symmetric_scores_give_detailed_balance_with_pi_proportional_to_z(seed):
    X, weights = symmetric_weights(seed)
    pi = stationary_distribution(weights)
    Z = np.exp(log_normalisers(X @ X.T))
    np.testing.assert_allclose(pi, Z / Z.sum(), rtol=1e-9)
    flow = pi[:, None] * weights  # flow[i, j] = pi_i W_ij
    np.testing.assert_allclose(flow, flow.T, atol=1e-14)  # detailed balance


def test_separate_queries_and_keys_break_detailed_balance():
    weights = random_weights(5, seq=5, scale=2.0)
    pi = stationary_distribution(weights)
    flow = pi[:, None] * weights
    assert np.abs(flow - flow.T).max() > 1e-3


def test_stationary_distribution_keeps_the_digits_of_tiny_weights():
    X = np.array([[5.0, 0.0], [0.0, 1.0], [0.5, -1.0], [-1.0, 0.5]])  # one loud token
    Z = np.exp(log_normalisers(X @ X.T))
    pi = stationary_distribution(softmax(X @ X.T))
    assert pi.min() < 1e-10
    np.testing.assert_allclose(pi, Z / Z.sum(), rtol=1e-12)


def test_stationary_distribution_by_hand():
    # Two states: pi_0 * 0.5 = pi_1 * 0.25 (the flow each way), so pi = (1/3, 2/3).
    np.testing.assert_allclose(stationary_distribution([[0.5, 0.5], [0.25, 0.75]]), [1 / 3, 2 / 3])


def test_causal_mask_sends_the_walk_to_the_first_token():
    weights = random_weights(2, seq=5, mask=causal_mask(5))
    assert stationary_distribution(weights).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]


def test_a_transient_token_gets_zero():
    # Token 2 reads tokens 0 and 1, nobody reads token 2: the walk leaves it for good.
    weights = [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.3, 0.3, 0.4]]
    np.testing.assert_allclose(stationary_distribution(weights), [0.5, 0.5, 0.0], atol=1e-15)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([[0.5, 0.4], [0.5, 0.5]], "row 0 sums to 0.9"),
        ([[1.0, 0.0], [0.0, 1.0]], r"not unique: the walk has 2 closed classes.*\(\[0\]; \[1\]\)"),
        ([[1.2, -0.2], [0.5, 0.5]], "is negative"),
        (np.ones((2, 2, 2)) / 2, r"weights must have shape \(seq, seq\), got shape \(2, 2, 2\)"),
    ],
)
def test_stationary_distribution_rejects_bad_input(weights, message):
    with pytest.raises(ValueError, match=message):
        stationary_distribution(weights)


def test_padding_splits_the_walk_and_is_refused():
    padded = np.zeros((4, 4))
    padded[:2, :2] = 0.5
    padded[2:, 2:] = 0.5  # two groups that never read each other
    with pytest.raises(ValueError, match="2 closed classes"):
        stationary_distribution(padded)


# ------------------------------------------------------------------ cycle ratios


def test_cycle_ratio_by_hand():
    weights = [[0.5, 0.4, 0.1], [0.1, 0.5, 0.4], [0.4, 0.1, 0.5]]
    assert cycle_ratio(weights, [0, 1, 2]) == pytest.approx(0.4**3 / 0.1**3)
    assert cycle_ratio(weights, [0, 2, 1]) == pytest.approx(0.1**3 / 0.4**3)
    assert cycle_ratio(weights, (1, 2, 0)) == pytest.approx(64.0)  # same cycle, rotated
    assert cycle_ratio(weights, [0, 1]) == 1.0  # two tokens: always 1


@FAST
@given(SEEDS)
def test_symmetric_scores_give_every_cycle_ratio_one(seed):
    _, weights = symmetric_weights(seed)
    for cycle in itertools.permutations(range(len(weights)), 3):
        assert cycle_ratio(weights, cycle) == pytest.approx(1.0, rel=1e-9)


@FAST
@given(SEEDS)
def test_cycle_ratio_is_the_exponential_of_the_scores_antisymmetric_part(seed):
    rng = np.random.default_rng(seed)
    scores = 3 * rng.standard_normal((5, 5))
    cycle = rng.permutation(5)[: int(rng.integers(3, 6))].tolist()
    around = sum(scores[a, b] - scores[b, a] for a, b in zip(cycle, cycle[1:] + cycle[:1]))
    ratio = cycle_ratio(softmax(scores), cycle)
    assert ratio == pytest.approx(np.exp(around), rel=1e-9)  # the normalisers cancel
    assert ratio * cycle_ratio(softmax(scores), cycle[::-1]) == pytest.approx(1.0)


def test_kolmogorov_criterion_on_a_non_reversible_chain():
    weights = random_weights(11, seq=4, scale=2.0)
    ratios = [cycle_ratio(weights, c) for c in itertools.permutations(range(4), 3)]
    assert max(abs(np.log(r)) for r in ratios) > 0.1


def test_cycle_ratio_survives_weights_whose_products_underflow():
    weights = np.full((3, 3), 1e-120)
    weights[0, 1] = 2e-120  # each product around the cycle is ~1e-360: 0 in float64
    np.fill_diagonal(weights, 1.0)
    weights /= weights.sum(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        naive = np.prod([weights[0, 1], weights[1, 2], weights[2, 0]]) / np.prod(
            [weights[1, 0], weights[2, 1], weights[0, 2]])
    assert np.isnan(naive)
    assert cycle_ratio(weights, [0, 1, 2]) == pytest.approx(2.0, rel=1e-9)


@FAST
@given(SEEDS, st.booleans())
def test_largest_cycle_ratio_is_the_maximum_over_every_cycle(seed, masked):
    rng = np.random.default_rng(seed)
    seq = int(rng.integers(3, 7))
    mask = reading_mask(rng, seq, density=0.7) if masked else None
    weights = random_weights(seed, seq=seq, mask=mask, scale=2.0)
    ratios = {}
    for cycle in itertools.permutations(range(seq), 3):
        if all(weights[a, b] > 0 and weights[b, a] > 0 for a, b in zip(cycle, cycle[1:] + cycle[:1])):
            ratios[cycle] = cycle_ratio(weights, cycle)
    found = largest_cycle_ratio(weights)
    if not ratios:
        assert found is None
        return
    ratio, cycle = found
    assert ratio == pytest.approx(max(ratios.values()), rel=1e-9) and ratio >= 1.0
    assert ratios[cycle] == pytest.approx(ratio, rel=1e-9) and cycle[0] == min(cycle)


def test_largest_cycle_ratio_without_cycles():
    assert largest_cycle_ratio(random_weights(1, seq=5, mask=causal_mask(5))) is None
    assert largest_cycle_ratio(np.eye(2)) is None
    _, symmetric = symmetric_weights(3)
    assert largest_cycle_ratio(symmetric)[0] == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize(
    ("cycle", "message", "error"),
    [
        ([0], "at least 2 tokens", ValueError),
        ([0, 1, 3], r"cycle\[2\] = 3 is outside 0..2", ValueError),
        ([0, -1, 2], r"cycle\[1\] = -1 is outside 0..2", ValueError),
        ([0, 1.5, 2], "cycle must hold integer indices", TypeError),
        ([0, 1.0, 2], "cycle must hold integer indices", TypeError),
        ("abc", "cycle must hold integer indices", TypeError),
        (None, "cycle must hold integer indices", TypeError),
    ],
)
def test_cycle_ratio_rejects_bad_cycles(cycle, message, error):
    with pytest.raises(error, match=message):
        cycle_ratio(np.full((3, 3), 1 / 3), cycle)


def test_cycle_ratio_through_a_missing_edge():
    mask = np.ones((3, 3), dtype=bool)
    mask[0, 1] = False  # token 0 may not read token 1
    weights = random_weights(4, seq=3, mask=mask)
    assert cycle_ratio(weights, [0, 1, 2]) == 0.0  # the missing edge is on the way round
    with pytest.raises(ValueError, match=r"needs weights\[0, 1\].*undefined"):
        cycle_ratio(weights, [0, 2, 1])  # ... and on the way back: 0 / 0
    with pytest.raises(ValueError, match="undefined"):
        cycle_ratio(random_weights(4, seq=3, mask=causal_mask(3)), [0, 1, 2])  # a DAG


# ------------------------------------------------------------------ rollout


def abnar_zuidema_rollout(layer_weights):
    """Their recipe, transcribed: average the heads, add the identity for the residual
    connection, renormalise each row, and multiply each layer onto the joint attention
    of the layers below it (joint_0 = A_0, joint_l = A_l @ joint_{l-1})."""
    att_mat = np.asarray(layer_weights)
    if att_mat.ndim == 4:
        att_mat = att_mat.mean(axis=1)
    aug_att_mat = att_mat + np.eye(att_mat.shape[-1])[None]
    aug_att_mat = aug_att_mat / aug_att_mat.sum(axis=-1)[..., None]
    joint = aug_att_mat[0]
    for layer in range(1, len(aug_att_mat)):
        joint = aug_att_mat[layer] @ joint
    return joint


@FAST
@given(SEEDS, st.booleans())
def test_rollout_matches_abnar_and_zuidema(seed, with_heads):
    rng = np.random.default_rng(seed)
    n_layers, n_heads, seq = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.integers(2, 7))
    shape = (n_layers, n_heads, seq, seq) if with_heads else (n_layers, seq, seq)
    layers = softmax(2 * rng.standard_normal(shape))
    copy = layers.copy()
    rollout = attention_rollout(layers)
    np.testing.assert_allclose(rollout, abnar_zuidema_rollout(layers), rtol=0, atol=1e-12)
    np.testing.assert_allclose(rollout.sum(axis=-1), 1.0)
    assert np.array_equal(layers, copy)


def test_rollout_by_hand():
    # One layer where everyone reads token 1; half of each token stays itself.
    assert attention_rollout([[[0.0, 1.0], [0.0, 1.0]]]).tolist() == [[0.5, 0.5], [0.0, 1.0]]
    # Two layers: the later layer multiplies from the left.
    first = np.array([[1.0, 0.0], [1.0, 0.0]])
    second = np.array([[0.0, 1.0], [0.0, 1.0]])
    rolled = attention_rollout([first, second], residual=0.0)
    assert rolled.tolist() == (second @ first).tolist() == [[1.0, 0.0], [1.0, 0.0]]


def test_rollout_extremes_of_the_residual():
    layers = softmax(np.random.default_rng(1).standard_normal((3, 4, 4)))
    np.testing.assert_allclose(attention_rollout(layers, residual=1.0), np.eye(4))
    np.testing.assert_allclose(attention_rollout(layers, residual=0.0),
                               layers[2] @ layers[1] @ layers[0])


def test_rollout_renormalises_rows_that_do_not_sum_to_one():
    raw = np.array([[[2.0, 2.0], [0.0, 1.0]]])  # row 0 sums to 4
    expected = np.array([[0.5 + 1.0, 1.0], [0.0, 1.0]])
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(attention_rollout(raw), expected)


@pytest.mark.parametrize(
    ("layers", "residual", "message", "error"),
    [
        (np.eye(3), 0.5, r"\(n_layers, seq, seq\)", ValueError),
        (np.ones((2, 3, 4)) / 4, 0.5, r"got shape \(2, 3, 4\)", ValueError),
        (np.zeros((0, 2, 2)), 0.5, "non-empty", ValueError),
        (np.full((1, 2, 2), np.nan), 0.5, r"layer_weights of shape \(1, 2, 2\) contains NaN", ValueError),
        (np.full((1, 2, 2), 0.5), 1.5, "residual must be a finite number from 0 to 1, got 1.5", ValueError),
        (np.full((1, 2, 2), 0.5), True, "residual must be a finite number from 0 to 1, got True", TypeError),
        (-np.ones((1, 2, 2)), 0.5, "negative", ValueError),
        (np.zeros((1, 2, 2)), 0.0, "all zeros", ValueError),
    ],
)
def test_rollout_rejects_bad_input(layers, residual, message, error):
    with pytest.raises(error, match=message):
        attention_rollout(layers, residual)


# ------------------------------------------------------------------ GAT scores


def test_additive_scores_follow_the_gat_formula_pair_by_pair():
    rng = np.random.default_rng(3)
    H, W, a = rng.standard_normal((5, 4)), rng.standard_normal((4, 3)), rng.standard_normal(6)
    scores = additive_scores(H, W, a, negative_slope=0.2)
    for i, j in itertools.product(range(5), repeat=2):
        concatenated = np.concatenate([H[i] @ W, H[j] @ W])  # [W h_i || W h_j]
        expected = torch.nn.functional.leaky_relu(torch.tensor(a @ concatenated), 0.2).item()
        assert scores[i, j] == pytest.approx(expected, rel=1e-12, abs=1e-12)


@FAST
@given(SEEDS)
def test_additive_attention_ranks_neighbours_the_same_for_every_node(seed):
    rng = np.random.default_rng(seed)
    H, W, a = rng.standard_normal((6, 4)), rng.standard_normal((4, 3)), rng.standard_normal(6)
    scores = additive_scores(H, W, a)
    neighbour_part = H @ W @ a[3:]
    for row in scores:  # LeakyReLU is increasing: the order is that of neighbour_part
        assert np.all(np.diff(row[np.argsort(neighbour_part)]) >= 0)


def test_additive_scores_reject_bad_shapes():
    with pytest.raises(ValueError, match=r"a must have shape \(2 \* d_out=6,\), got shape \(3,\)"):
        additive_scores(np.ones((2, 4)), np.ones((4, 3)), np.ones(3))
    with pytest.raises(ValueError, match="H has d_in=5 but W has d_in=4"):
        additive_scores(np.ones((2, 5)), np.ones((4, 3)), np.ones(6))
    with pytest.raises(TypeError, match="negative_slope must be a finite number"):
        additive_scores(np.ones((2, 4)), np.ones((4, 3)), np.ones(6), negative_slope="0.2")


# ------------------------------------------------------------------ layers, residual, masks


def test_stacked_attention_matches_torch_layer_by_layer():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((6, 4))
    W_q, W_k, W_v = (rng.standard_normal((3, 4, d)) for d in (2, 2, 4))
    for skip in (False, True):
        states, weights = stacked_attention(X, W_q, W_k, W_v, skip=skip, mask=causal_mask(6))
        state = torch.tensor(X)
        for layer in range(3):
            Q, K, V = (state @ torch.tensor(W[layer]) for W in (W_q, W_k, W_v))
            mixed = torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=True)
            state = state + mixed if skip else mixed
            np.testing.assert_allclose(states[layer + 1], state.numpy(), rtol=0, atol=1e-10)
        assert weights.shape == (3, 6, 6) and np.allclose(weights.sum(-1), 1.0)


def test_stacked_attention_takes_a_scale():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((4, 3))
    W_q, W_k, W_v = (rng.standard_normal((2, 3, 3)) for _ in range(3))
    _, weights = stacked_attention(X, W_q, W_k, W_v, scale=1.0)
    assert np.allclose(weights[0], softmax((X @ W_q[0]) @ (X @ W_k[0]).T))


def test_pure_attention_is_the_product_of_its_attention_matrices():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((5, 3))
    W_q, W_k, W_v = (rng.standard_normal((4, 3, 3)) for _ in range(3))
    states, weights = stacked_attention(X, W_q, W_k, W_v)
    product = attention_rollout(weights, residual=0.0)  # A_4 A_3 A_2 A_1
    np.testing.assert_allclose(states[-1], product @ X @ W_v[0] @ W_v[1] @ W_v[2] @ W_v[3],
                               atol=1e-10)


def test_stacked_attention_with_no_layers_and_bad_shapes():
    states, weights = stacked_attention(np.eye(3), *np.zeros((3, 0, 3, 3)))
    assert states.shape == (1, 3, 3) and weights.shape == (0, 3, 3)
    with pytest.raises(ValueError, match=r"W_v must have shape \(n_layers=2, d_model=3, d_model=3\), got shape \(2, 3, 2\)"):
        stacked_attention(np.eye(3), np.ones((2, 3, 2)), np.ones((2, 3, 2)), np.ones((2, 3, 2)))
    with pytest.raises(ValueError, match=r"W_k must have shape \(n_layers=2, d_model=3, d_k=2\), got shape \(2, 3, 1\)"):
        stacked_attention(np.eye(3), np.ones((2, 3, 2)), np.ones((2, 3, 1)), np.ones((2, 3, 3)))


def test_token_residual():
    assert token_residual([[1.0, 2.0], [1.0, 2.0]]) == 0.0
    X = np.random.default_rng(0).standard_normal((4, 3))
    centred = X - X.mean(axis=0)
    assert token_residual(X) == pytest.approx(np.sqrt((centred**2).sum()))
    # The mean row is the best single row: any other row is further away.
    assert token_residual(X) < np.linalg.norm(X - X[0])
    with pytest.raises(ValueError, match="seq, d_model"):
        token_residual(np.ones(3))


def test_window_mask_is_a_band():
    mask = window_mask(6, 2)
    assert mask.dtype == bool and mask.shape == (6, 6)
    for i, j in itertools.product(range(6), repeat=2):
        assert mask[i, j] == (abs(i - j) <= 2)
    assert window_mask(3, 0).tolist() == np.eye(3, dtype=bool).tolist()
    for bad, error, message in (((0, 1), ValueError, "n must be a positive integer"),
                                ((3, -1), ValueError, "radius must be a non-negative integer"),
                                ((3, 1.5), TypeError, "radius must be a non-negative integer"),
                                ((True, 1), TypeError, "n must be a positive integer")):
        with pytest.raises(error, match=message):
            window_mask(*bad)
