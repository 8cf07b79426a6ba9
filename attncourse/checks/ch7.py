"""Checks of chapter 7's exercises: attention in a real model (all-MiniLM-L6-v2).

The predict exercise reads two weight matrices from the bundled safetensors file (numpy,
no torch); only the ablation check runs the model, and only when it is called: before the
learner's time budget starts, since loading torch and the model is the check's own work.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from attncourse.attention import scaled_dot_product_attention
from attncourse.checks.core import (
    CHECKS,
    Failed,
    NotImplementedYet,
    close,
    exercise,
    expect_array,
    expect_function,
    inputs,
    precision_problem,
    short_repr,
)
from attncourse.checks.predict import predict_exercise
from attncourse.multihead import split_heads
from attncourse.pretrained import (
    D_HEAD,
    D_MODEL,
    N_HEADS,
    N_LAYERS,
    bilinear_form,
    head_ablation_changes,
)

# ---------------------------------------------------------------------------------------
# ch7-predict-rank

PREVIOUS_TOKEN_HEAD = (0, 2)  # (layer, head)



def _previous_token_rank() -> float:
    """The rank of layer 0 head 2's M_h, from the bundled weights. Where attncourse is
    installed without the model (its optional ``pretrained`` extra and the weights), the
    checks must still import: the answer is then the bound d_head, which the weights attain
    (tests/test_checks_ch7.py)."""
    try:
        return float(np.linalg.matrix_rank(bilinear_form(*PREVIOUS_TOKEN_HEAD)))
    except ImportError:
        return float(D_HEAD)


predict_rank = predict_exercise(
    "ch7-predict-rank",
    answer=_previous_token_rank(),
    tolerance=0.5,
    hint=(
        "M_h is 384 × 384, but it is a product W_q^h W_k^{hT} of two thin matrices. "
        "How many columns does one head's W_q^h have? Chapter 4 bounded the rank by it."
    ),
    explanation=(
        f"M_h = W_q^h W_k^{{hT}} with W_q^h and W_k^h of shape ({D_MODEL}, {D_HEAD}): its rank "
        f"is at most d_head = {D_HEAD}, and it reaches it, as any generic product of such matrices does. "
        f"Each head scores pairs of tokens through a {D_HEAD}-dimensional window of the "
        f"{D_MODEL}-dimensional space."
    ),
)


# ---------------------------------------------------------------------------------------
# ch7-layer-attention


def _layer_cases(seed: int = 7) -> list[tuple[str, tuple[np.ndarray, ...], int]]:
    """(description, (X, W_q, b_q, W_k, b_k, W_v, b_v), n_heads): square weights (where a
    transposed W runs and gives wrong numbers) and a width unlike d_model. The check uses
    seed 7; its verdicts hold for any seed (tests/test_checks_ch7.py)."""
    rng = np.random.default_rng(seed)

    def problem(seq, d_model, n_heads, d_head):
        width = n_heads * d_head
        X = rng.standard_normal((seq, d_model))  # (seq, d_model)
        W_q, W_k, W_v = (rng.standard_normal((d_model, width)) for _ in range(3))
        b_q, b_k, b_v = (2.0 * rng.standard_normal(width) for _ in range(3))
        return X, W_q, b_q, W_k, b_k, W_v, b_v

    return [
        ("3 heads of width 4, seq 5, d_model 12", problem(5, 12, 3, 4), 3),
        ("2 heads of width 3, seq 4, d_model 5", problem(4, 5, 2, 3), 2),
        ("1 head of width 6, seq 3, d_model 6", problem(3, 6, 1, 6), 1),
    ]


def _weights(arrays, n_heads, *, biases=True, scale=None, transpose=False):
    """Every head's weights (n_heads, seq, seq), or a variant with one step done wrong."""
    X, W_q, b_q, W_k, b_k, W_v, b_v = arrays
    if transpose:
        W_q, W_k, W_v = W_q.T, W_k.T, W_v.T
    if not biases:
        b_q = b_k = b_v = 0.0
    Q, K, V = (split_heads(X @ W + b, n_heads) for W, b in ((W_q, b_q), (W_k, b_k), (W_v, b_v)))
    return scaled_dot_product_attention(Q, K, V, scale=scale)[1]  # (n_heads, seq, seq)


def _close(a, b) -> bool:
    return a.shape == b.shape and close(a, b)


@exercise("ch7-layer-attention", points=3)
def layer_attention(run, candidate) -> str:
    """Exercise ch7-layer-attention: ``layer_attention(X, W_q, b_q, W_k, b_k, W_v, b_v,
    n_heads)`` returns one layer's attention weights (n_heads, seq, seq); W (d_model,
    n_heads * d_head), rows are tokens: Q = X @ W_q + b_q. Diagnoses missing biases, a
    missing or wrong scale and weights used in PyTorch's transposed layout."""
    fn = expect_function(candidate, "layer_attention")
    cases = inputs(_layer_cases())  # one at a time when the grader counts the inputs right
    for description, arrays, n_heads in cases:
        given = [a.copy() for a in arrays]
        what = f"layer_attention on {description}"
        result = run(fn, *given, n_heads)
        if not all(np.array_equal(a, b) for a, b in zip(given, arrays)):
            raise Failed(f"{what} changed one of its inputs; work on new arrays.")
        seq = arrays[0].shape[0]
        weights = expect_array(result, (n_heads, seq, seq), what)
        expected = _weights(arrays, n_heads)
        if _close(weights, expected):
            continue
        d_head = arrays[1].shape[1] // n_heads
        variants = {
            "the biases are missing: a real layer computes X @ W_q + b_q (and the same for "
            "keys and values).": _weights(arrays, n_heads, biases=False),
            f"the scores are not scaled: divide them by sqrt(d_head) = sqrt({d_head}).":
                _weights(arrays, n_heads, scale=1.0),
            f"the scale uses the full width: divide by sqrt(d_head) = sqrt({d_head}), the width "
            "of one head.": _weights(arrays, n_heads, scale=1 / np.sqrt(arrays[1].shape[1])),
        }
        if arrays[1].shape[0] == arrays[1].shape[1]:
            variants["the weight matrices are used transposed: here W is (d_model, n_heads * "
                     "d_head) and multiplies X from the right, X @ W. (PyTorch's Linear stores "
                     "the transpose.)"] = _weights(arrays, n_heads, transpose=True)
        for hint, variant in variants.items():
            if _close(weights, variant):
                raise Failed(f"{what}: {hint}")
        if precision_problem(weights, expected):
            raise Failed(f"{what}: {precision_problem(weights, expected)}")
        raise Failed(f"{what}: the weights differ from the expected ones by up to "
                     f"{np.nanmax(np.abs(weights - expected)):.3g}. Hint: project with the biases, "
                     "split into heads, then use chapter 3's scaled_dot_product_attention.")
    return (f"your layer attention matches the course's on {len(cases)} layers, biases "
            "included; on the real model it reproduces the model's own weights.")


# ---------------------------------------------------------------------------------------
# ch7-most-important-head

ABLATION_PAIR = ("A man is playing a guitar.", "A woman is playing the violin.")


def _ablation_changes() -> np.ndarray:
    """(n_layers, n_heads): the exercise pair's similarity change per ablated head (cached
    by ``attncourse.pretrained`` once run)."""
    return head_ablation_changes(*ABLATION_PAIR)


@exercise("ch7-most-important-head", points=2)
def most_important_head(run, answer) -> str:
    """Exercise ch7-most-important-head: the (layer, head) whose zero ablation changes the
    cosine similarity of ``ABLATION_PAIR``'s embeddings most (in absolute value)."""
    if answer is None or answer is Ellipsis:
        raise NotImplementedYet("set most_important to a pair (layer, head).")
    if isinstance(answer, np.ndarray) and answer.shape == (2,) and np.issubdtype(answer.dtype, np.integer):
        answer = tuple(answer.tolist())  # np.array([5, 8]), as an argmax unravelled and stacked gives
    if (not isinstance(answer, (tuple, list)) or len(answer) != 2
            or not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                       for v in answer)):
        raise Failed(f"write the head as a pair of whole numbers (layer, head); got {short_repr(answer)}.")
    layer, head = (int(v) for v in answer)
    if not (0 <= layer < N_LAYERS and 0 <= head < N_HEADS):
        raise Failed(f"layers are numbered 0 to {N_LAYERS - 1} and heads 0 to {N_HEADS - 1}; "
                     f"got ({layer}, {head}).")
    changes = _ablation_changes()  # (n_layers, n_heads)
    best = np.unravel_index(int(np.argmax(np.abs(changes))), changes.shape)
    if (layer, head) != tuple(int(b) for b in best):
        raise Failed(f"without head ({layer}, {head}) the similarity changes by "
                     f"{changes[layer, head]:+.4f}; another head changes it more. Hint: ablate "
                     "every head in turn and compare the absolute changes.")
    return (f"without head ({layer}, {head}) the similarity changes by "
            f"{changes[layer, head]:+.4f}, more than without any other head.")


_budgeted_most_important_head = most_important_head


@functools.wraps(_budgeted_most_important_head)
def _warm_then_check(*answers, timeout: float | None = None) -> None:
    """The learner's check of ch7-most-important-head: the model is loaded and the ablation
    run first, outside the time budget (on a cold kernel loading torch and the model alone
    can spend the budget's 10 s of processor time, and a right answer was told it looped);
    the budgeted check then reads the cached changes. It runs no code of the learner's."""
    with contextlib.suppress(Exception):  # no model, no torch, a broken file: the budgeted check reports it
        _ablation_changes()
    _budgeted_most_important_head(*answers, timeout=timeout)


_warm_then_check.__wrapped__ = _budgeted_most_important_head.__wrapped__  # the grader judges the evaluate function itself
most_important_head = _warm_then_check
CHECKS["ch7-most-important-head"] = most_important_head
