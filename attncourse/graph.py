"""Attention as a graph: edges, message passing, random walks and rollout (chapter 5).

Convention (the explorer's graph view uses it too): ``weights[i, j]`` is the weight of
the edge **j -> i**, "token i reads from token j". Row i holds the in-edges of node i and
sums to 1; column j holds the out-edges of node j, and its sum says how much token j is
read.

Read as a Markov chain, the same matrix is a random walk that steps from a token to a
token it reads: from i to j with probability ``weights[i, j]``, against the direction
in which the messages flow. ``stationary_distribution`` is where that walk spends its
time, ``cycle_ratio`` tests whether it is reversible (Kolmogorov's criterion), and
``attention_rollout`` composes the layers of a model (Abnar & Zuidema, 2020).

Every function takes numpy arrays (or lists) and never mutates them; bad input is refused
through ``attncourse.validation``: ``TypeError`` for the wrong kind of thing, ``ValueError``
naming the shapes or values at fault.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Bool, Float

from attncourse.attention import scaled_dot_product_attention
from attncourse.validation import flag, index_array, integer, number, real_array, same_size

__all__ = [
    "additive_scores",
    "attention_rollout",
    "cycle_ratio",
    "edge_list",
    "edge_softmax",
    "largest_cycle_ratio",
    "message_passing",
    "stacked_attention",
    "stationary_distribution",
    "token_residual",
    "window_mask",
]

_ROW_SUM_TOLERANCE = 1e-8


def _square_weights(weights, name: str = "weights") -> np.ndarray:
    """``weights`` as a finite float (seq, seq) array, or a TypeError or ValueError saying why not."""
    array = real_array(weights, name, ndim=2, layout="(seq, seq)")
    if array.shape[0] != array.shape[1] or array.shape[0] == 0:
        raise ValueError(
            f"{name} must be a square (seq, seq) matrix with seq >= 1 "
            f"(weights[i, j] is the edge j -> i), got shape {array.shape}"
        )
    return array


def _check_non_negative(array: np.ndarray, name: str = "weights") -> None:
    if (array < 0).any():
        where = tuple(int(k) for k in np.argwhere(array < 0)[0])
        raise ValueError(
            f"{name}[{', '.join(map(str, where))}] = {array[where]:.3g} is negative: "
            "attention weights are never negative (they come out of a softmax)"
        )


def _check_rows_sum_to_one(array: np.ndarray, name: str = "weights") -> None:
    sums = array.sum(axis=-1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > _ROW_SUM_TOLERANCE)
    if bad.size:
        raise ValueError(
            f"the rows of {name} must sum to 1 (each token's attention is a distribution), "
            f"but row {bad[0]} sums to {sums[bad[0]]:.6g} ({bad.size} row(s) off)"
        )


def edge_list(
    weights: Float[np.ndarray, "seq seq"], threshold: float = 0.0
) -> list[tuple[int, int, float]]:
    """Every edge of the attention graph heavier than ``threshold``.

    Returns ``(source j, target i, weight)`` for each ``weights[i, j] > threshold``,
    ordered by target, then source: token i reads from token j with that weight.

    >>> edge_list([[0.75, 0.25], [0.0, 1.0]])
    [(0, 0, 0.75), (1, 0, 0.25), (1, 1, 1.0)]
    >>> edge_list([[0.75, 0.25], [0.0, 1.0]], threshold=0.5)
    [(0, 0, 0.75), (1, 1, 1.0)]
    """
    array = _square_weights(weights)
    threshold = number(threshold, "threshold")
    targets, sources = np.nonzero(array > threshold)  # row-major: by target, then source
    return [
        (int(j), int(i), float(array[i, j])) for i, j in zip(targets, sources)
    ]


def message_passing(
    weights: Float[np.ndarray, "seq seq"], V: Float[np.ndarray, "seq d_v"]
) -> Float[np.ndarray, "seq d_v"]:
    """One round of message passing on the attention graph: each edge j -> i carries the
    message ``weights[i, j] * V[j]``, and each node i adds up the messages it receives.

    Computed edge by edge from :func:`edge_list`, as a graph library would (a
    scatter-add over the edges); the result equals ``weights @ V``.

    >>> message_passing([[0.5, 0.5], [0.0, 1.0]], [[2.0], [4.0]]).tolist()
    [[3.0], [4.0]]
    """
    array = _square_weights(weights)
    _check_non_negative(array)
    values = real_array(V, "V", ndim=2, layout="(seq, d_v)")
    same_size("seq", ("weights", array, 0), ("V", values, 0), "one value per token")
    edges = edge_list(array)
    received = np.zeros(values.shape, dtype=np.result_type(values, array))  # (seq, d_v)
    if edges:
        sources, targets, edge_weights = (np.array(column) for column in zip(*edges))
        messages = edge_weights[:, None] * values[sources]  # (n_edges, d_v)
        np.add.at(received, targets, messages)  # node i sums the messages on its in-edges
    return received


def edge_softmax(
    targets, edge_scores: Float[np.ndarray, " n_edges"], n_nodes: int
) -> Float[np.ndarray, " n_edges"]:
    """Softmax of edge scores over the in-edges of each node, as graph attention networks
    compute it: the weights of the edges into node i sum to 1.

    ``targets`` (n_edges,) holds the node each edge points to; subtracting each node's
    largest score first keeps exp from overflowing.

    >>> edge_softmax([0, 0, 1], [0.0, np.log(3.0), 5.0], 2).round(2).tolist()
    [0.25, 0.75, 1.0]
    """
    n_nodes = integer(n_nodes, "n_nodes", minimum=1)
    target = index_array(targets, "targets", size=n_nodes, layout="(n_edges,)")
    scores = real_array(edge_scores, "edge_scores", ndim=1, layout="(n_edges,)")
    same_size("n_edges", ("targets", target, 0), ("edge_scores", scores, 0), "one target per edge score")
    largest = np.full(n_nodes, -np.inf)
    np.maximum.at(largest, target, scores)  # each node's largest in-edge score
    exponentials = np.exp(scores - largest[target])  # (n_edges,)
    totals = np.zeros(n_nodes)
    np.add.at(totals, target, exponentials)
    return exponentials / totals[target]


def _closed_classes(array: np.ndarray) -> list[np.ndarray]:
    """The closed communicating classes of the walk i -> j (probability weights[i, j]):
    sets of tokens the walk can enter and never leave."""
    n = array.shape[0]
    reach = (array > 0) | np.eye(n, dtype=bool)  # reach[i, j]: one step (or none) from i to j
    for _ in range(max(1, int(np.ceil(np.log2(n))))):
        reach = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)  # doubling
    mutual = reach & reach.T  # i and j reach each other: the same class
    classes, seen = [], np.zeros(n, dtype=bool)
    for i in range(n):
        if seen[i]:
            continue
        members = np.flatnonzero(mutual[i])
        seen[members] = True
        if not reach[i][~mutual[i]].any():  # nothing outside the class is reachable
            classes.append(members)
    return classes


def stationary_distribution(weights: Float[np.ndarray, "seq seq"]) -> Float[np.ndarray, " seq"]:
    """The distribution pi over tokens with ``pi @ weights = pi``, pi >= 0, sum 1.

    pi is where the random walk "from a token to a token it reads" spends its time in
    the long run; pi_j = sum_i pi_i weights[i, j] says how much token j is read, counting
    each reader by its own pi. With symmetric scores S (A = softmax(S)), pi_i is
    proportional to the row normaliser Z_i (chapter 2).

    Raises ValueError if a weight is negative, if a row does not sum to 1, or if pi is
    not unique (the walk has several closed classes, e.g. a padding mask that cuts the
    graph in two).

    >>> stationary_distribution([[0.5, 0.5], [0.25, 0.75]]).round(4).tolist()
    [0.3333, 0.6667]
    """
    array = _square_weights(weights)
    _check_non_negative(array)
    _check_rows_sum_to_one(array)
    classes = _closed_classes(array)
    if len(classes) > 1:
        listed = "; ".join(str(c.tolist()) for c in classes)
        raise ValueError(
            f"the stationary distribution is not unique: the walk has {len(classes)} closed "
            f"classes of tokens it can never leave ({listed})"
        )
    closed = classes[0]  # the walk ends up here; every other token is transient
    pi = np.zeros(array.shape[0])
    pi[closed] = _irreducible_stationary(array[np.ix_(closed, closed)])
    return pi


def _irreducible_stationary(P: np.ndarray) -> np.ndarray:
    """pi of an irreducible stochastic matrix by the Grassmann-Taksar-Heyman algorithm:
    state reduction with no subtractions, so even a weight of 1e-11 comes out with
    nearly every digit right (a linear solve loses it to the matrix's condition number)."""
    P = P.copy()
    n = len(P)
    for k in range(n - 1, 0, -1):
        leaving = P[k, :k].sum()  # > 0: an irreducible walk leaves k towards 0..k-1
        P[:k, k] /= leaving
        P[:k, :k] += np.outer(P[:k, k], P[k, :k])  # censor state k: paths through it
    pi = np.zeros(n)
    pi[0] = 1.0
    for k in range(1, n):
        pi[k] = pi[:k] @ P[:k, k]
    return pi / pi.sum()


def cycle_ratio(weights: Float[np.ndarray, "seq seq"], cycle) -> float:
    """The product of the weights around ``cycle`` divided by the product the other way.

    For ``cycle = [a, b, c]`` and A = ``weights``: ``A[a, b] A[b, c] A[c, a] / (A[b, a] A[c, b] A[a, c])``,
    a reads from b, b from c, c from a, against the same walk reversed. Kolmogorov's
    criterion: the walk is reversible (detailed balance holds) exactly when every cycle
    has ratio 1. Around two tokens the ratio is always 1. Computed in logarithms, so
    tiny weights do not underflow.

    Raises ValueError for fewer than 2 tokens, an index out of range, or a cycle whose
    reverse uses an edge of weight 0 (the ratio is then undefined).

    >>> A = [[0.5, 0.4, 0.1], [0.1, 0.5, 0.4], [0.4, 0.1, 0.5]]
    >>> round(cycle_ratio(A, [0, 1, 2]), 6)
    64.0
    """
    array = _square_weights(weights)
    _check_non_negative(array)
    n = array.shape[0]
    nodes = index_array(cycle, "cycle", size=n, layout="(length,): token indices").tolist()
    if len(nodes) < 2:
        raise ValueError(f"a cycle needs at least 2 tokens, got cycle={nodes}")
    forward = [(a, b) for a, b in zip(nodes, nodes[1:] + nodes[:1])]  # a reads from b
    backward = [(b, a) for a, b in forward]
    missing = [(a, b) for a, b in backward if array[a, b] == 0]
    if missing:
        a, b = missing[0]
        raise ValueError(
            f"the reverse of cycle {nodes} needs weights[{a}, {b}] (token {a} reading "
            f"token {b}), which is 0: the ratio is undefined"
        )
    if any(array[a, b] == 0 for a, b in forward):
        return 0.0
    log_forward = sum(np.log(array[a, b]) for a, b in forward)
    log_backward = sum(np.log(array[a, b]) for a, b in backward)
    return float(np.exp(log_forward - log_backward))


def largest_cycle_ratio(
    weights: Float[np.ndarray, "seq seq"],
) -> tuple[float, tuple[int, int, int]] | None:
    """The most lopsided cycle through three tokens: ``(ratio, (a, b, c))`` with the
    largest :func:`cycle_ratio` among the cycles whose six weights are all positive
    (each cycle once, smallest index first; its reverse has ratio 1 / ratio, so the
    largest ratio is >= 1). None when there is no such cycle (fewer than three tokens,
    or a causal mask: a DAG has no cycle).

    >>> A = [[0.5, 0.4, 0.1], [0.1, 0.5, 0.4], [0.4, 0.1, 0.5]]
    >>> ratio, cycle = largest_cycle_ratio(A)
    >>> round(ratio, 6), cycle
    (64.0, (0, 1, 2))
    """
    array = _square_weights(weights)
    _check_non_negative(array)
    n = array.shape[0]
    with np.errstate(divide="ignore"):
        log_w = np.log(array)  # -inf for a missing edge
    a, b, c = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    forward = log_w[a, b] + log_w[b, c] + log_w[c, a]  # (n, n, n): a reads b, b c, c a
    backward = log_w[b, a] + log_w[c, b] + log_w[a, c]
    counted = (a < b) & (a < c) & (b != c) & np.isfinite(forward) & np.isfinite(backward)
    if not counted.any():
        return None
    with np.errstate(invalid="ignore"):  # -inf - -inf where an edge is missing
        log_ratio = np.where(counted, forward - backward, -np.inf)
    a_best, b_best, c_best = (int(k) for k in np.unravel_index(np.argmax(log_ratio), (n, n, n)))
    return float(np.exp(log_ratio[a_best, b_best, c_best])), (a_best, b_best, c_best)


def attention_rollout(
    layer_weights: Float[np.ndarray, "n_layers *n_heads seq seq"], residual: float = 0.5
) -> Float[np.ndarray, "seq seq"]:
    """Attention rollout (Abnar & Zuidema, 2020): how much each output token draws from
    each input token through all the layers, if attention were all that moves information.

    Each layer's weights (averaged over heads when ``layer_weights`` is
    (n_layers, n_heads, seq, seq)) become ``A_hat = residual * I + (1 - residual) * A``,
    rows renormalised to sum to 1 (the residual connection keeps part of each token);
    the rollout is ``A_hat_L @ ... @ A_hat_1``, first layer rightmost. Row i of the
    result is a distribution over the input tokens.

    >>> attention_rollout([[[0.0, 1.0], [0.0, 1.0]]]).tolist()
    [[0.5, 0.5], [0.0, 1.0]]
    """
    layers = real_array(layer_weights, "layer_weights")
    if layers.ndim not in (3, 4) or layers.shape[-1] != layers.shape[-2] or 0 in layers.shape:
        raise ValueError(
            "layer_weights must have shape (n_layers, seq, seq) or "
            f"(n_layers, n_heads, seq, seq), non-empty, got shape {layers.shape}"
        )
    residual = number(residual, "residual", minimum=0, maximum=1)
    _check_non_negative(layers, "layer_weights")
    if layers.ndim == 4:
        layers = layers.mean(axis=1)  # (n_layers, seq, seq): heads averaged
    seq = layers.shape[-1]
    mixed = residual * np.eye(seq) + (1 - residual) * layers  # (n_layers, seq, seq)
    sums = mixed.sum(axis=-1, keepdims=True)  # (n_layers, seq, 1)
    if (sums == 0).any():
        layer, row = np.argwhere(sums[..., 0] == 0)[0]
        raise ValueError(
            f"row {row} of layer {layer} is all zeros and residual is 0: nothing to "
            "renormalise"
        )
    mixed = mixed / sums
    rollout = mixed[0]
    for layer in mixed[1:]:
        rollout = layer @ rollout  # later layers act on what earlier ones produced
    return rollout


def window_mask(n: int, radius: int) -> Bool[np.ndarray, "seq seq"]:
    """Boolean (n, n) band, True where ``|i - j| <= radius``: token i sees its neighbours.

    As a graph: edges only between tokens at most ``radius`` apart, self-loops included.

    >>> window_mask(4, 1).astype(int).tolist()
    [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]
    """
    n, radius = integer(n, "n", minimum=1), integer(radius, "radius", minimum=0)
    positions = np.arange(n)
    return np.abs(positions[:, None] - positions[None, :]) <= radius


def additive_scores(
    H: Float[np.ndarray, "seq d_in"],
    W: Float[np.ndarray, "d_in d_out"],
    a: Float[np.ndarray, " two_d_out"],
    negative_slope: float = 0.2,
) -> Float[np.ndarray, "seq seq"]:
    """The scores of a graph attention network (GAT, Velickovic et al. 2018):

        e_ij = LeakyReLU(a . [h_i W || h_j W])

    for every pair (before the softmax over the neighbours j of node i). ``a`` splits into
    a part for the query node i and a part for the neighbour j, so
    e_ij = LeakyReLU(c_i + d_j): every node ranks its neighbours the same way, by d_j
    ("static" attention, Brody et al. 2022).

    >>> additive_scores([[1.0], [2.0]], [[1.0]], [1.0, -1.0]).tolist()
    [[0.0, -0.2], [1.0, 0.0]]
    """
    nodes = real_array(H, "H", ndim=2, layout="(seq, d_in)")
    projection = real_array(W, "W", ndim=2, layout="(d_in, d_out)")
    same_size("d_in", ("H", nodes, 1), ("W", projection, 0), "W projects the rows of H")
    d_out = projection.shape[1]
    # one half of a for the node, one for its neighbour
    attention_vector = real_array(a, "a", shape=(2 * d_out,), layout="(2 * d_out,)")
    negative_slope = number(negative_slope, "negative_slope")
    projected = nodes @ projection  # (seq, d_out)
    own = projected @ attention_vector[:d_out]  # (seq,): the part of node i
    neighbour = projected @ attention_vector[d_out:]  # (seq,): the part of neighbour j
    raw = own[:, None] + neighbour[None, :]  # (seq, seq)
    return np.where(raw > 0, raw, negative_slope * raw)


def stacked_attention(
    X: Float[np.ndarray, "seq d_model"],
    W_q: Float[np.ndarray, "n_layers d_model d_k"],
    W_k: Float[np.ndarray, "n_layers d_model d_k"],
    W_v: Float[np.ndarray, "n_layers d_model d_model"],
    skip: bool = False,
    mask: Bool[np.ndarray, "seq seq"] | None = None,
    scale: float | None = None,
) -> tuple[Float[np.ndarray, "n_layers_plus_1 seq d_model"], Float[np.ndarray, "n_layers seq seq"]]:
    """Single-head attention layers applied one after another, nothing else (no MLP, no
    normalisation): X_{l+1} = A_l X_l W_v[l], plus X_l itself when ``skip`` is True, with
    A_l = softmax(scale X_l W_q[l] (X_l W_k[l])^T, masked), scale 1/sqrt(d_k) by default.

    Returns ``(states, weights)``: states[l] is X_l (states[0] is X), weights[l] is A_l.

    >>> states, weights = stacked_attention(np.eye(2), *np.ones((3, 1, 2, 2)))
    >>> states[1].tolist(), weights[0].tolist()
    ([[1.0, 1.0], [1.0, 1.0]], [[0.5, 0.5], [0.5, 0.5]])
    """
    state = real_array(X, "X", ndim=2, non_empty=True, layout="(seq, d_model)")
    d_model = state.shape[1]
    W_q = real_array(W_q, "W_q", shape=(None, d_model, None), layout="(n_layers, d_model, d_k)")
    W_k = real_array(W_k, "W_k", shape=W_q.shape, layout="(n_layers, d_model, d_k)")  # W_q's shape
    # d_model columns for W_v: so that layers can follow one another
    W_v = real_array(W_v, "W_v", shape=(len(W_q), d_model, d_model), layout="(n_layers, d_model, d_model)")
    skip = flag(skip, "skip")
    states, weights = [state], []
    for W_q_layer, W_k_layer, W_v_layer in zip(W_q, W_k, W_v):
        mixed, layer_weights = scaled_dot_product_attention(
            state @ W_q_layer, state @ W_k_layer, state @ W_v_layer, mask=mask, scale=scale
        )  # (seq, d_model), (seq, seq)
        state = state + mixed if skip else mixed
        states.append(state)
        weights.append(layer_weights)
    seq = len(state)
    return np.stack(states), np.array(weights, dtype=float).reshape(len(W_q), seq, seq)


def token_residual(X: Float[np.ndarray, "seq d_model"]) -> float:
    """How far the tokens are from all being equal: ||X - 1 x^T||_F with x the mean row,
    the residual of Dong, Cordonnier & Loukas (2021) in the Frobenius norm.
    It is 0 exactly when every row of X is the same (rank collapse).

    >>> token_residual([[1.0, 0.0], [3.0, 0.0]])
    1.4142135623730951
    """
    array = real_array(X, "X", ndim=2, non_empty=True, layout="(seq, d_model)")
    return float(np.linalg.norm(array - array.mean(axis=0)))
