"""Checks of chapter 5's exercises: attention as a graph."""

from __future__ import annotations

from typing import Any

import numpy as np

from attncourse.attention import dot_product_scores, softmax
from attncourse.checks.core import (
    Failed,
    NotImplementedYet,
    close,
    difference,
    exercise,
    expect_array,
    expect_function,
    inputs,
    precision_problem,
    show,
)
from attncourse.checks.predict import predict_exercise
from attncourse.checks.tune import Condition, CycleRatio, tune_goal
from attncourse.examples import tennis_sentence
from attncourse.graph import attention_rollout as reference_rollout
from attncourse.graph import cycle_ratio

# Three tokens' scores from separate queries and keys (the predict exercise's matrix).
_THREE_SCORES = np.array([[3.0, 2.0, 0.5], [1.5, 0.0, 1.0], [0.0, 0.5, -1.0]])

predict_cycle_ratio = predict_exercise(
    "ch5-predict-cycle-ratio",
    answer=cycle_ratio(softmax(_THREE_SCORES), [0, 1, 2]),
    tolerance=0.05,
    hint=(
        "write each weight as exp(S_ij) / Z_i. Going round the cycle, each token is the "
        "reader once, and coming back too: what happens to the Z's? Is the diagonal on "
        "the cycle?"
    ),
    explanation=(
        "The normalisers cancel, so the ratio is exp((S_01 + S_12 + S_20) - (S_10 + S_21 + "
        "S_02)) = exp((2 + 1 + 0) - (1.5 + 0.5 + 0.5)) = exp(0.5). The diagonal is not on "
        "the cycle."
    ),
)

_SENTENCE = tennis_sentence()
_CYCLE = CycleRatio(("He", "it", "ball"))  # He reads it, it reads ball, ball reads He

goal_cycle_above_two = tune_goal(
    "ch5-cycle-above-two",
    "Goal: the cycle He ⇝ it ⇝ ball (He reads it, it reads ball, ball reads He) has a "
    "ratio above 2. Every entry of W_q and W_k between -10 and 10, scale 1, no mask.",
    conditions=(Condition(_CYCLE, ">", 2.0),),
    bounds={"W_q": (-10.0, 10.0), "W_k": (-10.0, 10.0)},
)


@exercise("ch5-cycle-above-two", points=2)
def cycle_above_two(run, W_q, W_k=None) -> str:
    """Exercise ch5-cycle-above-two: W_q and W_k, (5, 5) with entries in [-10, 10], such
    that on the tennis sentence (scale 1, no mask) the cycle He ⇝ it ⇝ ball (He reads
    it, it reads ball, ball reads He) has a cycle ratio above 2.

    The log ratio is x_Heᵀ B x_it + x_itᵀ B x_ball + x_ballᵀ B x_He with B = M - Mᵀ,
    M = W_q W_kᵀ: only the antisymmetric part of M counts.
    """
    if W_k is None:
        raise Failed("pass both matrices: check.cycle_above_two(W_q, W_k).")
    goal = goal_cycle_above_two
    X = _SENTENCE.X
    d_model = X.shape[1]
    matrices = {}
    for name, value in (("W_q", W_q), ("W_k", W_k)):
        matrices[name] = expect_array(value, (d_model, d_model), name)
        if not np.isfinite(matrices[name]).all():
            raise Failed(f"{name} contains nan or inf: {show(matrices[name])}")
    outside = goal.out_of_bounds(matrices)
    if outside:
        low, high = goal.bounds[outside[0]]
        raise Failed(f"an entry of {outside[0]} is outside [{low:g}, {high:g}]; keep the matrices of a sensible size.")
    if all(np.array_equal(matrix, np.eye(d_model)) for matrix in matrices.values()):
        raise NotImplementedYet("W_q and W_k are still the identity: edit them.")
    queries, keys = (X @ matrix for matrix in matrices.values())  # (seq, d_k) each
    views = {"scores": dot_product_scores(queries, keys)}  # (seq, seq)
    above_two, = goal.conditions
    log_ratio, ratio = _CYCLE.log_value(_SENTENCE.tokens, views), _CYCLE.value(_SENTENCE.tokens, views)
    if above_two.holds(_SENTENCE.tokens, views):
        return (
            f"the cycle He ⇝ it ⇝ ball has ratio {ratio:.3g} (log {log_ratio:.3f}): going "
            "that way round is more than twice as likely as going back, which no symmetric "
            "score allows."
        )
    M = matrices["W_q"] @ matrices["W_k"].T  # (d_model, d_model)
    if np.allclose(M, M.T):
        same = " (W_q = W_k)" if np.allclose(matrices["W_q"], matrices["W_k"]) else ""
        raise Failed(
            f"M = W_q W_kᵀ is symmetric{same}, so the scores are symmetric and every cycle "
            f"ratio is 1 (yours: {ratio:.3f}). Hint: make M non-symmetric in a pair of "
            "coordinates that He, it and ball use."
        )
    if ratio < 0.5:
        raise Failed(
            f"the ratio is {ratio:.3f}: your cycle runs the other way (He ⇝ ball ⇝ it has "
            f"ratio {1 / ratio:.3g}). Hint: flip the sign of what you changed."
        )
    raise Failed(
        f"the ratio is {ratio:.3f}, not above 2. Hint: its logarithm is "
        "x_Heᵀ B x_it + x_itᵀ B x_ball + x_ballᵀ B x_He with B = M - Mᵀ; make it larger than "
        "log 2 = 0.693."
    )


def _rollout_cases(seed: int = 2027) -> list[tuple[str, np.ndarray, float | None]]:
    """The check's inputs (seed 2027), each (description, layers, residual); residual None
    calls the function without it (the default, 0.5). The tests try 50 other seeds."""
    rng = np.random.default_rng(seed)
    random_layers = softmax(2 * rng.standard_normal((3, 5, 5)))  # (n_layers, seq, seq)
    heads = softmax(2 * rng.standard_normal((2, 3, 4, 4)))  # (n_layers, n_heads, seq, seq)
    faint = softmax(2 * rng.standard_normal((4, 6, 6)))
    thresholded = np.where(faint > 0.15, faint, 0.0)  # rows sum to less than 1
    faint_heads = softmax(2 * rng.standard_normal((2, 4, 6, 6)))
    thresholded_heads = np.where(faint_heads > 0.15, faint_heads, 0.0)  # each head's rows, differently
    return [
        ("one layer in which every token reads token 1", np.array([[[0.0, 1.0], [0.0, 1.0]]]), None),
        ("three layers of 5 tokens", random_layers, None),
        ("two layers of three heads each, shape (2, 3, 4, 4)", heads, None),
        ("four thresholded layers (edges below 0.15 removed, rows sum to less than 1)",
         thresholded, None),
        ("two thresholded layers of four heads each, shape (2, 4, 6, 6)", thresholded_heads, None),
        ("two layers of a single token", np.ones((2, 1, 1)), None),
        ("the three layers of 5 tokens with residual=0.2", random_layers, 0.2),
        ("the three layers of 5 tokens with residual=0.9", random_layers, 0.9),
    ]


def _rollout_variant(layers, *, heads="mean", normalise="rows", transpose=False,
                     later_on_left=True, residual=0.5) -> np.ndarray:
    """Rollout computed with one of the mistakes the check diagnoses (``heads="last"``: each
    head mixed and renormalised, then the heads averaged)."""
    if layers.ndim == 4 and heads != "last":
        layers = layers.mean(axis=1) if heads == "mean" else layers.sum(axis=1)
    if transpose:
        layers = np.swapaxes(layers, -1, -2)
    seq = layers.shape[-1]
    mixed = residual * np.eye(seq) + (1 - residual) * layers  # (n_layers[, n_heads], seq, seq)
    if normalise == "rows":
        mixed = mixed / mixed.sum(axis=-1, keepdims=True)
    elif normalise == "columns":
        mixed = mixed / mixed.sum(axis=-2, keepdims=True)
    if mixed.ndim == 4:
        mixed = mixed.mean(axis=1)
    result = np.eye(seq)
    for layer in mixed:
        result = layer @ result if later_on_left else result @ layer
    return result


_ROLLOUT_MISTAKES: list[tuple[dict[str, Any], str]] = [
    (dict(normalise=None), "You did not renormalise: after r I + (1 - r) A, divide each row "
     "by its sum, so that it is a distribution again."),
    (dict(normalise="columns"), "You renormalised the columns: each ROW of a layer is one "
     "reader's distribution (sum over axis=-1)."),
    (dict(transpose=True), "The edge direction is reversed: you used each layer's transpose. "
     "weights[i, j] is the edge j -> i, row i is what reader i takes."),
    (dict(later_on_left=False), "The layers are multiplied in the wrong order: the first "
     "layer acts first, so it stands rightmost, A_hat_L ... A_hat_1."),
    (dict(heads="sum"), "Average the heads (mean over axis 1), do not add them."),
    (dict(heads="last"), "You mixed in the identity and renormalised each head, then averaged the heads: "
     "average the heads first, then mix and renormalise. The orders differ where a head's rows sum to "
     "less than 1."),
    (dict(residual=0.0), "The residual is missing: each layer is r I + (1 - r) A with r = "
     "residual (0.5 by default), not A alone."),
]


@exercise("ch5-attention-rollout", points=3)
def attention_rollout(run, candidate) -> str:
    """Exercise ch5-attention-rollout: ``attention_rollout(layer_weights, residual=0.5)``
    returns A_hat_L ... A_hat_1 with A_hat = r I + (1 - r) A (heads averaged), rows
    renormalised.

    Diagnoses: no renormalisation, columns instead of rows, edge direction reversed
    (layers or result transposed), layer order reversed, heads summed, residual missing,
    the argument residual ignored (0.5 used whatever it is).
    """
    fn = expect_function(candidate, "attention_rollout")
    cases = inputs(_rollout_cases())  # one at a time when the grader counts the inputs right
    for description, layers, residual in cases:
        given = layers.copy()
        what = f"attention_rollout on {description}"
        seq = layers.shape[-1]
        result = expect_array(run(fn, given, *([] if residual is None else [residual])), (seq, seq), what)
        if not np.array_equal(given, layers):
            raise Failed(f"{what} changed its input; work on new arrays.")
        residual = 0.5 if residual is None else residual
        expected = reference_rollout(layers, residual)
        if close(result, expected):
            continue
        if not np.isfinite(result).all():
            raise Failed(f"{what} gave {show(result)}: every entry should be a finite number.")
        if close(result, expected.T):
            raise Failed(
                f"{what}: you returned the transpose of the rollout, so the edge direction is "
                "reversed. Row i should be output token i's distribution over the input tokens."
            )
        if residual != 0.5 and close(result, reference_rollout(layers)):
            raise Failed(f"{what}: this is the rollout with residual 0.5. Use the argument "
                         "residual: each layer is r I + (1 - r) A with r = residual.")
        for mistake, hint in _ROLLOUT_MISTAKES:
            if close(result, _rollout_variant(layers, **{"residual": residual, **mistake})):
                raise Failed(f"{what}: {hint}")
        if precision_problem(result, expected):
            raise Failed(f"{what}: {precision_problem(result, expected)}")
        raise Failed(
            f"{what} gave {show(result)}; expected {show(expected)} ({difference(result, expected)}), "
            "whose rows sum to 1 "
            f"(yours: {show(result.sum(axis=-1))}). Hint: average the heads, mix in the "
            "identity, renormalise the rows, multiply with the later layer on the left."
        )
    return (
        f"Your rollout matches on {len(cases)} inputs: one layer, several, several heads, "
        "thresholded layers whose rows need renormalising, a single token, and residuals "
        "other than 0.5."
    )
