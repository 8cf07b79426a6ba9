"""Checks of chapter 4's exercises: multi-head attention."""

from __future__ import annotations

import functools

import numpy as np

from attncourse import multihead
from attncourse.attention import causal_mask, scaled_dot_product_attention
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
from attncourse.multihead import merge_heads, projection_shapes, split_heads
from attncourse.verb_roles import (
    TrainedHeads,
    ablation_losses,
    chapter_tasks,
    train_heads,
    verb_loss,
)

# ---------------------------------------------------------------------------------------
# ch4-predict-parameter-count

_GQA = {"d_model": 512, "n_heads": 8, "d_head": 64, "n_kv_heads": 2}
_GQA_SHAPES = projection_shapes(**_GQA)
_GQA_SIZES = {name: rows * cols for name, (rows, cols) in _GQA_SHAPES.items()}
_FULL_COUNT = sum(rows * cols for rows, cols in projection_shapes(512, 8, 64).values())

predict_parameter_count = predict_exercise(
    "ch4-predict-parameter-count",
    answer=float(sum(_GQA_SIZES.values())),
    tolerance=0.5,
    hint=(
        "W_Q and W_O keep one block per query head; W_K and W_V have one block of d_head "
        "columns per key/value head only. Write down the four shapes, then multiply."
    ),
    explanation=(
        f"W_Q is {_GQA_SHAPES['W_q'][0]} × {_GQA_SHAPES['W_q'][1]} and W_O "
        f"{_GQA_SHAPES['W_o'][0]} × {_GQA_SHAPES['W_o'][1]} ({_GQA_SIZES['W_q']:,} each); W_K "
        f"and W_V are {_GQA_SHAPES['W_k'][0]} × {_GQA_SHAPES['W_k'][1]}, "
        f"{_GQA['n_kv_heads']} heads of {_GQA['d_head']} ({_GQA_SIZES['W_k']:,} each). "
        f"Together {sum(_GQA_SIZES.values()):,}, "
        f"{sum(_GQA_SIZES.values()) / _FULL_COUNT:.1%} of the {_FULL_COUNT:,} of full "
        f"multi-head attention: the KV cache shrinks {_GQA['n_heads'] // _GQA['n_kv_heads']} "
        "times, the parameters far less."
    ),
)


# ---------------------------------------------------------------------------------------
# ch4-multi-head-attention


def _attention_cases(seed: int = 4) -> list[tuple[str, tuple[np.ndarray, ...], int, np.ndarray | None]]:
    """(description, (X, W_q, W_k, W_v, W_o), n_heads, mask): d_model, d_head, the heads'
    total width and d_out all differ, so a scale by the wrong width and a missing W_O show.
    The check uses seed 4; the tests try 50 others, so that no verdict rests on one draw."""
    rng = np.random.default_rng(seed)

    def problem(lead, seq, d_model, n_heads, d_head, d_out):
        X = rng.standard_normal((*lead, seq, d_model))  # (..., seq, d_model)
        widths = (n_heads * d_head,) * 3
        W_q, W_k, W_v = (rng.standard_normal((d_model, w)) for w in widths)
        return X, W_q, W_k, W_v, rng.standard_normal((n_heads * d_head, d_out))

    two_heads = problem((), 4, 5, 2, 3, 4)
    per_head_mask = np.stack([causal_mask(4), causal_mask(4).T])  # (n_heads, seq, seq)
    batched = problem((2,), 5, 6, 3, 2, 6)
    return [
        ("2 heads of width 3, seq 4, d_model 5, d_out 4", two_heads, 2, None),
        ("the same heads with the causal mask", two_heads, 2, causal_mask(4)),
        ("a batch of 2 sentences, 3 heads of width 2, d_model = d_out = 6", batched, 3, None),
        ("the batch with the causal mask", batched, 3, causal_mask(5)),
        ("a single head of width 3, seq 3, d_model 4, d_out 2", problem((), 3, 4, 1, 3, 2), 1, None),
        ("a single token, 2 heads", problem((), 1, 4, 2, 1, 2), 2, None),
        ("a batch of 2 sentences, 2 heads, a mask per head (causal for head 0, its mirror "
         "for head 1), shape (2, 4, 4)", problem((2,), 4, 5, 2, 3, 4), 2, per_head_mask),
    ]


def _by_reshape_alone(M, n_heads):
    """The bug: (..., seq, n_heads * d_head) read straight into (..., n_heads, seq, d_head)."""
    *lead, seq, width = M.shape
    return M.reshape(*lead, n_heads, seq, width // n_heads)  # (..., n_heads, seq, d_head)


def _merge_by_reshape_alone(H):
    *lead, n_heads, seq, d_head = H.shape
    return H.reshape(*lead, seq, n_heads * d_head)  # (..., seq, n_heads * d_head)


def _variant(arrays, n_heads, mask, scale=None, split=split_heads, merge=merge_heads):
    """Multi-head attention with one step done some other way: (output, weights)."""
    X, W_q, W_k, W_v, W_o = arrays
    Q, K, V = (split(X @ W, n_heads) for W in (W_q, W_k, W_v))  # (..., n_heads, seq, d_head)
    heads, weights = scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)
    return merge(heads) @ W_o, weights  # (..., seq, d_out)


def _reference(arrays, n_heads, mask):
    X, W_q, W_k, W_v, W_o = arrays
    return multihead.multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=mask)


def _close(a, b) -> bool:
    """``a`` (anything a learner returned) agrees with the array ``b`` (core.close); never raises."""
    try:
        a = np.asarray(a, dtype=float)
        return a.shape == b.shape and close(a, b)
    except Exception:  # noqa: BLE001  a learner's object may refuse conversion
        return False


@exercise("ch4-multi-head-attention", points=3)
def multi_head_attention(run, candidate) -> str:
    """Exercise ch4-multi-head-attention: ``my_multi_head_attention(X, W_q, W_k, W_v, W_o,
    n_heads, mask=None)`` (named so as not to shadow the course's imported function) returns ``(output, weights)``, output (..., seq, d_out) and
    weights (..., n_heads, seq, seq), built from chapter 3's attention alone.

    Compared with the course's function (itself equal to torch's to 1e-6) and, where
    X is 3-D and d_model = n_heads * d_head = d_out, with torch.nn.MultiheadAttention, on one sentence
    and a batch, with and without the causal mask, one head and one token, and a batch with
    a different mask per head. Diagnoses a reshape without transpose, a scale by the wrong
    width, a missing W_O, weights averaged over the heads, per-head masks paired with the
    sentences and changed inputs.
    """
    fn = expect_function(candidate, "my_multi_head_attention")
    cases = inputs(_attention_cases())  # one at a time when the grader counts the inputs right
    for description, arrays, n_heads, mask in cases:
        given = [a.copy() for a in arrays] + [n_heads] + ([] if mask is None else [mask.copy()])
        what = f"my_multi_head_attention on {description}"
        result = run(fn, *given)
        if not all(np.array_equal(a, b) for a, b in zip(given[:5], arrays)) or (
                mask is not None and not np.array_equal(given[-1], mask)):
            raise Failed(f"{what} changed one of its inputs; work on new arrays.")
        output, weights = _attention_result(result, arrays, n_heads, mask, what)
        expected_output, expected_weights = _reference(arrays, n_heads, mask)
        if not _close(weights, expected_weights):
            hint = precision_problem(weights, expected_weights) or _weights_hint(
                weights, expected_weights, arrays, n_heads, mask)
            raise Failed(f"{what}: {hint}")
        if not _close(output, expected_output):
            if precision_problem(output, expected_output):
                hint = f"the weights are right, but {precision_problem(output, expected_output)}"
            elif _close(output, _variant(arrays, n_heads, mask, merge=_merge_by_reshape_alone)[0]):
                hint = ("the weights are right, but joining the heads by a reshape alone mixes "
                        "them up: swap the head and seq axes back first, then reshape to "
                        "(..., seq, n_heads * d_head).")
            else:
                hint = (f"the weights are right but the output {show(output)} is not "
                        f"{show(expected_output)} ({difference(output, expected_output)}). Hint: "
                        "concatenate the heads' outputs token by token, then multiply by W_o.")
            raise Failed(f"{what}: {hint}")
    compared = _compare_with_torch(fn, run, cases)
    return (
        f"Your multi-head attention matches the course's on {len(cases)} inputs (one "
        "sentence and a batch, with and without the causal mask, one head, one token, a mask "
        "per head)"
        + (f" and torch.nn.MultiheadAttention on {compared}." if compared else ".")
    )


def _attention_result(result, arrays, n_heads, mask, what) -> tuple[np.ndarray, np.ndarray]:
    X, W_q, _, _, W_o = arrays
    *lead, seq, _ = X.shape
    width, d_out = W_q.shape[1], W_o.shape[1]
    output_shape, weights_shape = (*lead, seq, d_out), (*lead, n_heads, seq, seq)
    if result is None:
        raise Failed(f"{what} returned None: did you forget `return`? Return the pair (output, weights).")
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        got = (f"a {type(result).__name__} of {len(result)} items" if isinstance(result, (tuple, list))
               else type_name(result))
        raise Failed(f"{what} returned {got}; it should return the pair (output, weights).")
    shapes = [np.shape(item) if isinstance(item, np.ndarray) else None for item in result]
    if shapes == [weights_shape, output_shape] and weights_shape != output_shape:
        raise Failed(f"{what} returned (weights, output); return (output, weights), in that order.")
    if shapes[1] == (*lead, seq, seq) and n_heads > 1:
        averaged = np.mean(_reference(arrays, n_heads, mask)[1], axis=-3)
        why = (" They are the heads' maps averaged, as torch's average_attn_weights=True gives."
               if _close(result[1], averaged) else "")
        raise Failed(f"{what} returned weights of shape {shapes[1]}, one map for all heads.{why} "
                     f"Return one map per head: shape {weights_shape}.")
    if shapes[0] == (*lead, seq, width) and width != d_out:
        X, W_q, W_k, W_v, _ = arrays
        concatenated = merge_heads(multihead.attention_heads(X, W_q, W_k, W_v, n_heads, mask=mask)[0])
        why = (" It is the concatenated heads, before W_o."
               if _close(result[0], concatenated) else "")
        raise Failed(f"{what} returned an output of shape {shapes[0]}, the width of the "
                     f"concatenated heads.{why} Multiply by W_o (shape {W_o.shape}) to get "
                     f"shape {output_shape}.")
    output = expect_array(result[0], output_shape, f"{what} (the output, its first item)")
    weights = expect_array(result[1], weights_shape, f"{what} (the weights, its second item)")
    return output, weights


def _weights_hint(weights, expected, arrays, n_heads, mask) -> str:
    X, W_q, _, _, _ = arrays
    d_model, width = X.shape[-1], W_q.shape[1]
    d_head = width // n_heads
    if not np.isfinite(weights).all():
        return f"the weights {show(weights)} are not all finite numbers."
    if _close(weights, _variant(arrays, n_heads, mask, split=_by_reshape_alone)[1]):
        return ("you cut the projections into heads by a reshape alone, which gives the "
                "right shape with the wrong numbers: reshape to (..., seq, n_heads, d_head), "
                "then swap the seq and head axes.")
    wrong_scales = {
        1.0 / np.sqrt(d_model): f"scale by 1/sqrt(d_head) = 1/sqrt({d_head}), the width of one head, not by 1/sqrt(d_model) = 1/sqrt({d_model}).",
        1.0 / np.sqrt(width): f"scale by 1/sqrt(d_head) = 1/sqrt({d_head}), the width of one head, not of all heads together ({width}).",
        1.0: "the scores are not scaled: divide them by sqrt(d_head).",
        1.0 / d_head: "divide the scores by sqrt(d_head), not by d_head.",
    }
    for scale, hint in wrong_scales.items():
        if _close(weights, _variant(arrays, n_heads, mask, scale=scale)[1]):
            return hint
    if mask is not None and _close(weights, _variant(arrays, n_heads, None)[1]):
        return "the mask was ignored: masked scores must become -inf before the softmax."
    if mask is not None and mask.ndim == 3 and _close(weights, _variant(arrays, n_heads, mask[:, None])[1]):
        return ("mask[0] went to the first sentence and mask[1] to the second: a mask of shape "
                "(n_heads, seq, seq) is one per head. Pass the mask as it is, it broadcasts "
                "against (..., n_heads, seq, seq); a padding mask per sentence comes as "
                "(batch, 1, seq, seq).")
    return (f"the weights {show(weights)} are not {show(expected)} ({difference(weights, expected)}). Hint: per head, "
            "softmax(Q_h K_hᵀ / sqrt(d_head)) by rows, with Q_h the head's block of X W_q.")


def _compare_with_torch(fn, run, cases) -> str:
    """Run ``fn`` where torch.nn.MultiheadAttention applies (3-D X, d_model = width = d_out)."""
    try:
        import torch
    except ImportError:  # torch is optional for the numpy chapters
        return ""
    compared = []
    for description, (X, W_q, W_k, W_v, W_o), n_heads, mask in cases:
        if not X.shape[-1] == W_q.shape[1] == W_o.shape[1] or X.ndim != 3 or (mask is not None and mask.ndim != 2):
            continue  # torch's 3-D attn_mask is (batch * n_heads, seq, seq), not ours
        module = torch.nn.MultiheadAttention(X.shape[-1], n_heads, bias=False, batch_first=True,
                                             dtype=torch.float64)
        with torch.no_grad():
            module.in_proj_weight.copy_(torch.tensor(np.concatenate([W_q.T, W_k.T, W_v.T])))
            module.out_proj.weight.copy_(torch.tensor(W_o.T))
            X_t = torch.tensor(X)
            blocked = None if mask is None else torch.tensor(~mask)  # torch: True = blocked
            expected = module(X_t, X_t, X_t, attn_mask=blocked, need_weights=False)[0].numpy()
        arguments = [X.copy(), W_q.copy(), W_k.copy(), W_v.copy(), W_o.copy(), n_heads]
        output = np.asarray(run(fn, *arguments, *([] if mask is None else [mask.copy()]))[0], dtype=float)
        if not _close(output, expected):
            raise Failed(f"my_multi_head_attention on {description} differs from torch.nn.MultiheadAttention.")
        compared.append(description)
    return " and ".join(compared)


# ---------------------------------------------------------------------------------------
# ch4-indispensable-head

EXERCISE_MODEL = {"n_heads": 3, "d_head": 2, "seed": 0}


@functools.cache
def exercise_model() -> TrainedHeads:
    """The exercise's three-head model, trained once per kernel (check and hidden test)."""
    train_task, _ = chapter_tasks()
    return train_heads(train_task, n_heads=EXERCISE_MODEL["n_heads"],
                       d_head=EXERCISE_MODEL["d_head"], seed=EXERCISE_MODEL["seed"])


def _exercise_ablation() -> tuple[float, np.ndarray]:
    """The held-out loss of the exercise's model, intact and without each head."""
    _, test_task = chapter_tasks()
    return verb_loss(test_task, exercise_model()), ablation_losses(test_task, exercise_model())


def _ablation_mistakes() -> list[tuple[np.ndarray, str]]:
    """What common mistakes give instead of the zero-ablated held-out losses, with a hint."""
    train_task, test_task = chapter_tasks()
    model = exercise_model()
    intact = verb_loss(test_task, model)
    return [
        (ablation_losses(test_task, model, how="mean"),
         "these are the losses with each head replaced by its MEAN output (mean ablation). The "
         "exercise asks for zero ablation: verb_loss(test_task, three_heads, ablate=h), whose "
         "default is how=\"zero\"."),
        (ablation_losses(train_task, model),
         "these are the losses on the training sentences. Ablate on the held-out ones: "
         "test_task, not train_task."),
        (np.full(EXERCISE_MODEL["n_heads"], intact),
         "that is the loss with all three heads, three times. Pass ablate=h to remove head h."),
    ]


def _close_losses(a: np.ndarray, b: np.ndarray) -> bool:
    return close(a, b)


@exercise("ch4-indispensable-head", points=2)
def indispensable_head(run, without) -> str:
    """Exercise ch4-indispensable-head: ``without``, shape (3,), the held-out loss of the
    three-head model trained on chapter 4's task (train_heads(train_task, n_heads=3,
    d_head=2, seed=0)) with head 0, 1, 2 zero-ablated in turn.

    The answer is three measured numbers, so it cannot be guessed, and the check's model
    is fixed, so the verdict on an answer does not depend on a seed. Diagnoses a head
    number given instead of the losses, mean ablation, the training sentences, the intact
    loss repeated, and the right losses in another order.
    """
    n_heads = EXERCISE_MODEL["n_heads"]
    if without is None or without is Ellipsis:
        raise NotImplementedYet(f"set without to the {n_heads} held-out losses, one per ablated head.")
    if isinstance(without, (bool, np.bool_, int, np.integer)):
        raise Failed(
            f"without is the number {int(without)}; give the {n_heads} held-out losses instead, "
            "[loss without head 0, without head 1, without head 2], and read the head off them."
        )
    losses = expect_array(without, (n_heads,), "without")
    if not np.isfinite(losses).all():
        raise Failed(f"without contains nan or inf: {show(losses)}")
    intact, expected = _exercise_ablation()
    answer = int(np.argmax(expected))
    if not _close_losses(losses, expected):
        for wrong, hint in _ablation_mistakes():
            if _close_losses(losses, wrong):
                raise Failed(hint)
        if _close_losses(np.sort(losses), np.sort(expected)):
            raise Failed("the right three losses in another order: entry h is the loss without head h.")
        raise Failed(
            f"without = {show(losses)} is not what zero ablation gives on the held-out sentences "
            f"(with all heads the loss is {intact:.1e}). Hint: "
            "[verb_loss(test_task, three_heads, ablate=h) for h in range(3)]."
        )
    others = ", ".join(f"head {h} {loss:.3f}" for h, loss in enumerate(expected) if h != answer)
    return (
        f"without head {answer} the held-out loss rises from {intact:.1e} to "
        f"{expected[answer]:.3f}, the most; without the others it rises less ({others})."
    )
