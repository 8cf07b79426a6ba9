"""Checks of chapter 3's exercises: queries, keys and values."""

from __future__ import annotations

import numpy as np

from attncourse.attention import (
    causal_mask,
    dot_product_scores,
    scaled_dot_product_attention,
    softmax,
)
from attncourse.checks.ch2 import _BALL, _IT, _SENTENCE
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
    type_name,
)
from attncourse.checks.predict import predict_exercise
from attncourse.checks.pure import run_on_copies
from attncourse.checks.tune import Cell, Condition, tune_goal
from attncourse.examples import keys_and_locks


def _head_cases() -> list[tuple[str, tuple[np.ndarray, ...], np.ndarray | None]]:
    """(description, (X, W_q, W_k, W_v), mask) with d_model, d_k and d_v all different."""
    rng = np.random.default_rng(2026)

    def head(seq, d_model, d_k, d_v, size=1.0):
        X = size * rng.standard_normal((seq, d_model))  # (seq, d_model)
        return (X, *(rng.standard_normal((d_model, d)) for d in (d_k, d_k, d_v)))

    one_head = head(4, 6, 3, 2)
    looks_ahead = np.triu(np.ones((4, 4), dtype=bool), k=1)  # each word sees the later ones
    looks_ahead[-1, -1] = True  # and the last word itself
    return [
        ("a head with seq 4, d_model 6, d_k 3, d_v 2", one_head, None),
        ("the same head with the causal mask", one_head, causal_mask(4)),
        ("the same head with a mask that lets each word see only later words", one_head, looks_ahead),
        ("a single token", head(1, 5, 2, 3), None),
        ("a head with d_k = 1 and the causal mask", head(3, 4, 1, 2), causal_mask(3)),
        ("a head whose scores reach about ±1000", head(5, 4, 2, 3, size=9.0), None),
        ("a head with the causal mask whose first word scores itself about -3000 (a finite fill for "
         "the masked scores, -1000 say, outweighs it)", _far_below_any_fill(), causal_mask(5)),
    ]


def _far_below_any_fill() -> tuple[np.ndarray, ...]:
    """(X, W_q, W_k, W_v): seq 5, d_model 4, d_k 2, d_v 3, drawn (seed 26) so that under the
    causal mask the first word's one allowed score is about -3092: masked scores filled
    with a finite number above it take the weight that -inf would give none."""
    rng = np.random.default_rng(26)
    X = 9.0 * rng.standard_normal((5, 4))  # (seq, d_model)
    return (X, *(rng.standard_normal((4, d)) for d in (2, 2, 3)))


@exercise("ch3-attention-head", points=3)
def attention_head(run, candidate) -> str:
    """Exercise ch3-attention-head: ``attention_head(X, W_q, W_k, W_v, mask=None)`` returns
    ``(output, weights)``: project, score, scale by 1/sqrt(d_k), mask, softmax, mix.

    Compared with scaled_dot_product_attention on heads where d_model, d_k and d_v differ
    (so a scale by the wrong width shows), with no mask, the causal mask and a mask that is
    not causal, a single token and scores of about ±1000 (where exp overflows). Inputs
    must be left unchanged.
    """
    fn = expect_function(candidate, "attention_head")
    cases = inputs(_head_cases())  # one at a time when the grader counts the inputs right
    for description, arrays, mask in cases:
        what = f"attention_head on {description}"
        result = run_on_copies(run, fn, [*arrays] + ([] if mask is None else [mask]), what)
        output, weights = _head_result(result, arrays, what)
        _check_head_weights(weights, arrays, mask, what)
        X, _, _, W_v = arrays
        expected = weights @ (X @ W_v)  # (seq, d_v)
        if not close(output, expected):
            if precision_problem(output, expected):
                raise Failed(f"{what}: the weights are right but the output is off: {precision_problem(output, expected)}")
            raise Failed(
                f"{what}: the weights are right but the output {show(output)} is not "
                f"{show(expected)} ({difference(output, expected)}). Hint: output = weights @ V, "
                "with the values V = X @ W_v."
            )
    return (
        f"Your head matches scaled_dot_product_attention on {len(cases)} inputs: with and "
        "without masks (causal or not), d_model, d_k and d_v all different, a single token, "
        "and scores of about ±1000."
    )


def _head_result(result, arrays, what: str) -> tuple[np.ndarray, np.ndarray]:
    X, _, _, W_v = arrays
    seq, d_v = len(X), W_v.shape[1]
    if result is None:
        raise Failed(f"{what} returned None: did you forget `return`? Return the pair (output, weights).")
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        got = f"a {type(result).__name__} of {len(result)} items" if isinstance(result, (tuple, list)) else type_name(result)
        raise Failed(f"{what} returned {got}; it should return the pair (output, weights).")
    first, second = (np.shape(item) if isinstance(item, np.ndarray) else None for item in result)
    if first == (seq, seq) and second == (seq, d_v) and seq != d_v:
        raise Failed(f"{what} returned (weights, output); return (output, weights), in that order.")
    weights = expect_array(result[1], (seq, seq), f"{what} (the weights, its second item)")
    output = expect_array(result[0], (seq, d_v), f"{what} (the output, its first item)")
    return output, weights


def _check_head_weights(weights, arrays, mask, what: str) -> None:
    X, W_q, W_k, W_v = arrays
    Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (seq, d_k), (seq, d_k), (seq, d_v)
    d_model, d_k, d_v = W_q.shape[0], W_q.shape[1], W_v.shape[1]
    _, expected = scaled_dot_product_attention(Q, K, V, mask=mask)
    if not np.isfinite(weights).all():
        scores = Q @ K.T / np.sqrt(d_k)
        hint = (
            "np.exp of scores near 1000 overflows. Hint: subtract each row's maximum "
            "before exp, or use the course's softmax."
            if np.abs(scores).max() > 700
            else "Every weight should be a finite number."
        )
        raise Failed(f"{what} gave the weights {show(weights)}. {hint}")
    if mask is not None and not close(weights[~mask], 0.0, like=weights):
        raise Failed(f"{what}: {_mask_hint(weights, Q, K, V, mask)}")
    sums = weights.sum(axis=-1)
    if not close(sums, 1.0, like=weights):
        hint = (
            "You normalised the columns: the softmax runs along each query's row (axis=-1)."
            if close(weights.sum(axis=0), 1.0, like=weights)
            else "Each query's weights must sum to 1: mask the scores before the softmax, not the weights after it."
        )
        raise Failed(f"{what}: the rows of the weights sum to {show(sums)} ({difference(sums, 1.0)}). {hint}")
    if close(weights, expected):
        return
    if mask is None and close(weights, scaled_dot_product_attention(Q, K, V, mask=causal_mask(len(X)))[1]):
        raise Failed(f"{what}: you applied the causal mask, but mask is None here: every query may attend to every key.")
    wrong_scales = {
        1.0: "You did not scale the scores: divide them by sqrt(d_k).",
        1.0 / d_k: "Divide the scores by sqrt(d_k), not by d_k.",
        1.0 / np.sqrt(d_model): f"Scale by 1/sqrt(d_k), the width of the queries and keys ({d_k} here), not of X ({d_model}).",
        1.0 / np.sqrt(d_v): f"Scale by 1/sqrt(d_k), the width of the queries and keys ({d_k} here), not of the values ({d_v}).",
    }
    for scale, hint in wrong_scales.items():
        if close(weights, scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)[1]):
            raise Failed(f"{what}: {hint}")
    if precision_problem(weights, expected):
        raise Failed(f"{what}: {precision_problem(weights, expected)}")
    raise Failed(
        f"{what} gave the weights {show(weights)}; expected {show(expected)} "
        f"({difference(weights, expected)}). Hint: weights = softmax(Q Kᵀ / sqrt(d_k)) by rows, "
        "with Q = X W_q and K = X W_k."
    )


def _mask_hint(weights, Q, K, V, mask) -> str:
    query, key = np.unravel_index(np.argmax(np.where(mask, 0.0, np.abs(weights))), mask.shape)
    pair = f"query {query} gives key {key} the weight {weights[query, key]:.3g}, but the mask forbids it"
    unmasked = scaled_dot_product_attention(Q, K, V)[1]
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if close(weights, unmasked):
        return f"{pair}: the mask was ignored."
    if close(weights, scaled_dot_product_attention(Q, K, V, mask=causal_mask(len(Q)))[1]):
        return f"{pair}: you applied the causal mask, not the mask given."
    if np.abs(weights[~mask]).sum() > np.abs(weights[mask]).sum():
        return f"{pair}, and most of the weight goes to forbidden pairs: the mask is True where a query MAY attend."
    if close(weights, softmax(np.where(mask, scores, 0.0))):
        return f"{pair}. A masked score of 0 (or any finite fill, -1000 say) still gets the weight e^fill / Z, which counts when the allowed scores are as low: use -inf, np.where(mask, scores, -np.inf)."
    return f"{pair}. Hint: set the masked scores to -inf before the softmax."


goal_it_attends_to_ball = tune_goal(
    "ch3-it-attends-to-ball",
    "Goal: it attends to ball (at least 0.5), while ball scores it at most 0 and gives it "
    "at most 0.05 of its attention. Scale 1, no mask.",
    conditions=(
        Condition(Cell("weights", "it", "ball"), ">=", 0.5),
        Condition(Cell("scores", "ball", "it"), "<=", 0.0),
        Condition(Cell("weights", "ball", "it"), "<=", 0.05),
    ),
)


@exercise("ch3-it-attends-to-ball", points=2)
def it_attends_to_ball(run, W_q, W_k=None) -> str:
    """Exercise ch3-it-attends-to-ball: W_q and W_k, (d_model, d_k) = (5, 5) as in the
    explorer, such that on the tennis sentence with scores (X W_q)(X W_k)ᵀ, scale 1, no mask:

    1. "it" attends to "ball": A[it, ball] >= 0.5;
    2. "ball" does not attend to "it": its score on it is at most 0, no more than it
       scores the empty word "and" (whose embedding is 0), and A[ball, it] <= 0.05.

    Condition 2 asks for the score because weights alone can be lopsided with symmetric
    scores (chapter 2's normalisers). Takes the two matrices, or the explorer itself.
    """
    if W_k is None:
        if not (hasattr(W_q, "W_q") and hasattr(W_q, "W_k")):
            raise Failed(
                "pass both matrices, check.it_attends_to_ball(W_q, W_k), or the explorer, "
                "check.it_attends_to_ball(explorer)."
            )
        W_q, W_k = W_q.W_q, W_q.W_k
    d_model = _SENTENCE.X.shape[1]
    matrices = [_projection_matrix(value, name, d_model) for name, value in (("W_q", W_q), ("W_k", W_k))]
    if all(np.array_equal(matrix, np.eye(d_model)) for matrix in matrices):
        raise NotImplementedYet("W_q and W_k are still the identity: edit them.")
    X = _SENTENCE.X
    with np.errstate(all="ignore"):
        scores = (X @ matrices[0]) @ (X @ matrices[1]).T  # (seq_q, seq_k)
    if not np.isfinite(scores).all():
        raise Failed("the scores overflow to inf: keep the entries of W_q and W_k smaller.")
    weights = softmax(scores)
    views = {"scores": scores, "weights": weights}
    attends, scores_nothing, gives_little = goal_it_attends_to_ball.conditions
    looks, looked_back = weights[_IT, _BALL], weights[_BALL, _IT]
    if not attends.holds(_SENTENCE.tokens, views):
        raise Failed(
            f"it gives ball {looks:.3f} of its attention, less than {attends.right:g} (its score "
            f"on ball is {scores[_IT, _BALL]:.2f}). Hint: let the query of a pronoun (x2) ask "
            "for what the key of a thing (x0) offers."
        )
    if not scores_nothing.holds(_SENTENCE.tokens, views):
        symmetric = np.isclose(scores[_BALL, _IT], scores[_IT, _BALL])
        raise Failed(
            f"ball scores it {scores[_BALL, _IT]:.2f}, more than the 0 it scores the empty "
            "word 'and'"
            + (", exactly as much as it scores ball: symmetric scores, as in chapter 2." if symmetric else ".")
            + " Hint: ball and it are both things (x0), so ball's query must not ask for things."
        )
    if not gives_little.holds(_SENTENCE.tokens, views):
        raise Failed(
            f"ball still gives it {looked_back:.3f} of its attention (at most {gives_little.right:g}): "
            "with no high score anywhere, ball spreads its attention evenly. Hint: give ball's "
            "query something else to look for, such as its sport (x3)."
        )
    return (
        f"it gives ball {looks:.3f} and ball gives it {looked_back:.3f}; the score of it on "
        f"ball is {scores[_IT, _BALL]:.2f}, that of ball on it {scores[_BALL, _IT]:.2f}: "
        "no symmetric form gives that."
    )


def _projection_matrix(value, name: str, d_model: int) -> np.ndarray:
    try:
        shape = np.shape(value)
    except Exception:  # a ragged list, or an object numpy cannot measure
        shape = None
    if shape is not None and len(shape) == 2 and shape != (d_model, d_model):
        raise Failed(
            f"{name} has shape {shape}; edit the explorer's {d_model} × {d_model} matrices, "
            f"which start as np.eye({d_model})."
        )
    matrix = expect_array(value, (d_model, d_model), name)
    if not np.isfinite(matrix).all():
        raise Failed(f"{name} contains nan or inf: {show(matrix)}")
    return matrix


_QUARTER_TURN = np.array([[0.0, -1.0], [1.0, 0.0]])  # turns a 2-D vector by 90 degrees


def _turned_scores() -> np.ndarray:
    W_Q, _ = keys_and_locks()
    return dot_product_scores(_SENTENCE.X @ W_Q, _SENTENCE.X @ W_Q @ _QUARTER_TURN)  # (seq, seq)


predict_rotation = predict_exercise(
    "ch3-predict-rotation",
    answer=float(_turned_scores()[_BALL, _IT]),
    tolerance=0.05,
    hint=(
        "Write M = W_Q W_Kᵀ = W_Q Rᵀ W_Qᵀ. Compute Rᵀ and compare it with R. "
        "What does that make Mᵀ?"
    ),
    explanation=(
        "M = W_Q Rᵀ W_Qᵀ and Rᵀ = -R make Mᵀ = -M, whatever W_Q is: the scores are "
        f"antisymmetric, S[ball, it] = -S[it, ball] = {_turned_scores()[_BALL, _IT]:.1f}, "
        "and every word scores itself 0."
    ),
)
