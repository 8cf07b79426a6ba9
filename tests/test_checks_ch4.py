"""The checks of chapter 4's exercises: right answers pass, each typical mistake is named,
stubs are "not implemented", and no answer crashes a check."""

from __future__ import annotations

import numpy as np
import pytest
import torch  # noqa: F401  chapter 4 imports it first too: the check's lazy import is then free
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attncourse import checks
from attncourse.attention import scaled_dot_product_attention
from attncourse.checks import ch4
from attncourse.multihead import multi_head_attention as reference
from attncourse.multihead import projection_shapes
from attncourse.verb_roles import ablation_losses, chapter_tasks, train_heads
from tests.checks_feedback import (  # noqa: F401 (an autouse fixture)
    feedback,
    learner_mode,
    verdicts_hold_on_seeds,
)

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# --- ch4-predict-parameter-count ---------------------------------------------------------


def test_the_parameter_count_is_that_of_the_shapes_and_of_a_model_built_with_them():
    shapes = projection_shapes(512, 8, 64, n_kv_heads=2)
    rng = np.random.default_rng(0)
    matrices = [rng.standard_normal(shape) for shape in shapes.values()]
    output, weights = reference(rng.standard_normal((3, 512)), *matrices, 8, n_kv_heads=2)
    assert output.shape == (3, 512) and weights.shape == (8, 3, 3)
    count = sum(matrix.size for matrix in matrices)
    assert count == 655_360  # 2 * 512**2 + 2 * 512 * 128, worked out by hand
    assert checks.predict.PREDICTIONS["ch4-predict-parameter-count"].answer == count


def test_predict_parameter_count_passes_the_count_and_hints_before_it_tells(capsys):
    assert "Passed." in feedback(capsys, checks.predict_parameter_count, 655_360)
    first = feedback(capsys, checks.predict_parameter_count, 1_048_576)
    assert "Hint: W_Q and W_O keep one block per query head" in first
    assert "655" not in first
    second = feedback(capsys, checks.predict_parameter_count, 1_048_576)
    assert "655,360" in second and "62.5%" in second


def test_predict_parameter_count_reports_no_prediction_as_not_implemented(capsys):
    assert "Not implemented yet." in feedback(capsys, checks.predict_parameter_count, None)


# --- ch4-multi-head-attention --------------------------------------------------------------


def per_head_loop(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    """A correct answer written differently from the reference: one head at a time."""
    d_head = W_q.shape[1] // n_heads
    heads, weights = [], []
    for h in range(n_heads):
        block = slice(h * d_head, (h + 1) * d_head)
        # a mask of 3 or more dimensions has a head axis (of size n_heads or 1) before (seq, seq)
        head_mask = mask if mask is None or np.ndim(mask) < 3 else mask[..., min(h, mask.shape[-3] - 1), :, :]
        out, w = scaled_dot_product_attention(X @ W_q[:, block], X @ W_k[:, block], X @ W_v[:, block], mask=head_mask)
        heads.append(out)
        weights.append(w)
    return np.concatenate(heads, axis=-1) @ W_o, np.stack(weights, axis=-3)


def variant(split="right", scale=None, merge="right", project=True, average=False, use_mask=True):
    """A multi-head attention with one of the typical mistakes."""

    def attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
        *lead, seq, _ = X.shape
        d_head = W_q.shape[1] // n_heads

        def to_heads(M):
            if split == "reshape alone":
                return M.reshape(*lead, n_heads, seq, d_head)
            return np.swapaxes(M.reshape(*lead, seq, n_heads, d_head), -2, -3)

        heads, weights = scaled_dot_product_attention(
            to_heads(X @ W_q), to_heads(X @ W_k), to_heads(X @ W_v), mask=mask if use_mask else None, scale=scale)
        if merge == "reshape alone":
            joined = heads.reshape(*lead, seq, n_heads * d_head)
        else:
            joined = np.swapaxes(heads, -2, -3).reshape(*lead, seq, n_heads * d_head)
        output = joined @ W_o if project else joined
        return output, weights.mean(axis=-3) if average else weights

    return attention


@pytest.mark.parametrize("answer", [reference, per_head_loop, variant(), lambda *a: tuple(x.tolist() for x in reference(*a))])
def test_multi_head_attention_passes_correct_answers(capsys, answer):
    line = feedback(capsys, checks.multi_head_attention, answer)
    assert line.startswith("[ch4-multi-head-attention] Passed. Your multi-head attention matches the course's on 7 inputs")
    assert "torch.nn.MultiheadAttention on a batch of 2 sentences" in line


def in_precision(dtype, w_o_dtype=None):
    """The reference computed with ``dtype`` arrays, but W_o in ``w_o_dtype`` (float32 heads
    times the given float64 W_o, say: the output is float64 with float32's errors)."""

    def attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
        return reference(*(a.astype(dtype) for a in (X, W_q, W_k, W_v)), W_o.astype(w_o_dtype or dtype),
                         n_heads, mask)

    return attention


@pytest.mark.parametrize(("answer", "said"), [
    (in_precision(np.float32, np.float64), "agree with the reference only to about float32's precision"),
    (in_precision(np.float16), "computed in float16, whose 11 bits"),
])
def test_an_answer_that_lost_precision_is_told_so_not_given_a_hint_about_w_o(capsys, answer, said):
    line = feedback(capsys, checks.multi_head_attention, answer)
    assert "Not right yet" in line and said in line and "multiply by W_o" not in line


def test_a_float64_answer_with_a_small_slip_is_not_told_only_that_it_ran_in_float32(capsys):
    """Second sceptic of chapter 4: a scale a little off (an epsilon under the square root,
    say), all in float64, agrees to about 1e-5; the message blamed float32 alone."""
    def my_multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
        return reference(X, W_q * (1 + 1e-4), W_k, W_v, W_o, n_heads, mask)  # scores 1e-4 too large

    line = feedback(capsys, checks.multi_head_attention, my_multi_head_attention)
    assert "Not right yet" in line and "a small step differs from the formula (an added epsilon" in line


def test_multi_head_attention_reports_the_stub_as_not_implemented(capsys):
    def my_multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
        raise NotImplementedError("write my_multi_head_attention")

    line = feedback(capsys, checks.multi_head_attention, my_multi_head_attention)
    assert "Not implemented yet. my_multi_head_attention() raised NotImplementedError" in line


def in_place(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    X *= 1.0
    W_q[0, 0] += 1.0
    return reference(X, W_q, W_k, W_v, W_o, n_heads, mask)


FIRST = "my_multi_head_attention on 2 heads of width 3, seq 4, d_model 5, d_out 4"


@pytest.mark.parametrize(
    "answer, expected",
    [
        (variant(split="reshape alone"), f"{FIRST}: you cut the projections into heads by a reshape alone"),
        (variant(merge="reshape alone"), "joining the heads by a reshape alone mixes them up"),
        (variant(scale=1 / np.sqrt(5)), "scale by 1/sqrt(d_head) = 1/sqrt(3), the width of one head, not by 1/sqrt(d_model) = 1/sqrt(5)"),
        (variant(scale=1 / np.sqrt(6)), "not of all heads together (6)"),
        (variant(scale=1.0), "the scores are not scaled"),
        (variant(scale=1 / 3), "divide the scores by sqrt(d_head), not by d_head"),
        (variant(project=False), "returned an output of shape (4, 6), the width of the concatenated heads. It is the concatenated heads, before W_o. Multiply by W_o"),
        (variant(average=True), "returned weights of shape (4, 4), one map for all heads. They are the heads' maps averaged"),
        (variant(use_mask=False), "with the causal mask: the mask was ignored"),
        (lambda *a: reference(*a)[::-1], f"{FIRST} returned (weights, output); return (output, weights)"),
        (lambda *a: reference(*a)[0], "it should return the pair (output, weights)"),
        (lambda *a: None, "returned None: did you forget `return`?"),
        (lambda *a: (reference(*a)[0], "w"), "(the weights, its second item) returned a str"),
        (lambda *a: (reference(*a)[0] * 2, reference(*a)[1]), "the weights are right but the output"),
        (in_place, f"{FIRST} changed one of its inputs"),
        (lambda X, W_q, W_k, W_v, W_o: reference(X, W_q, W_k, W_v, W_o, 2), "raised TypeError"),
        ("multi_head_attention", "expected the function my_multi_head_attention, got a str"),
    ],
)
def test_multi_head_attention_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.multi_head_attention, answer)
    assert line.startswith("[ch4-multi-head-attention] Not right yet. ")
    assert expected in line


def pairs_masks_with_sentences(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    """Right for a (seq, seq) mask; a (n_heads, seq, seq) one it gives to the sentences."""
    if mask is not None and mask.ndim == 3:
        mask = mask[:, None]  # (batch, 1, seq, seq)
    return variant()(X, W_q, W_k, W_v, W_o, n_heads, mask)


def test_an_answer_that_pairs_a_per_head_mask_with_the_sentences_fails_and_is_told_so(capsys):
    """Issue 36 item 13: with only (seq, seq) masks in the visible check, this answer passed."""
    line = feedback(capsys, checks.multi_head_attention, pairs_masks_with_sentences)
    assert line.startswith("[ch4-multi-head-attention] Not right yet. ")
    assert "a mask per head" in line and "mask[0] went to the first sentence" in line


def test_the_attention_cases_include_what_the_exercise_is_about():
    cases = ch4._attention_cases()
    widths = [(X.shape[-1], W_q.shape[1], W_o.shape[1]) for _, (X, W_q, _, _, W_o), _, _ in cases]
    d_heads = [W_q.shape[1] // n for _, (_, W_q, *_), n, _ in cases]
    assert any(len({*w, d}) == 4 for w, d in zip(widths, d_heads))  # d_model, width, d_out, d_head
    assert any(X.ndim == 3 for _, (X, *_), _, _ in cases)  # a batch
    assert any(mask is not None for *_, mask in cases)
    per_head = [(X, n, mask) for _, (X, *_), n, mask in cases if mask is not None and mask.ndim == 3]
    assert any(X.ndim == 3 and len(X) == n == len(mask) for X, n, mask in per_head)  # pairing shows
    assert any(n == 1 for _, _, n, _ in cases) and any(X.shape[-2] == 1 for _, (X, *_), _, _ in cases)
    # the reshape bug changes the answer in the first case (it cannot in one head or one token)
    _, arrays, n_heads, _ = cases[0]
    assert not np.allclose(variant(split="reshape alone")(*arrays, n_heads)[1], reference(*arrays, n_heads)[1])


@FUZZ
@given(
    output=st.none() | st.floats() | hnp.arrays(np.float64, (4, 4)) | hnp.arrays(np.float64, (4, 6)),
    weights=st.none() | st.text(max_size=3) | hnp.arrays(np.float64, (2, 4, 4)) | hnp.arrays(np.float64, (4, 4)),
)
def test_arbitrary_results_never_crash_the_multi_head_check(capsys, output, weights):
    line = feedback(capsys, checks.multi_head_attention, lambda *args: (output, weights))
    assert line.startswith("[ch4-multi-head-attention] Not right yet. ")
    assert "the check itself hit an error" not in line


# --- ch4-indispensable-head ----------------------------------------------------------------


@pytest.mark.slow  # trains the model twice: once here, once for the check
def test_the_exercise_model_is_the_one_the_chapter_trains():
    train_task, test_task = chapter_tasks()
    model = train_heads(train_task, **ch4.EXERCISE_MODEL)
    assert np.array_equal(ablation_losses(test_task, model), ch4._exercise_ablation()[1])


def test_indispensable_head_passes_the_three_zero_ablated_losses(capsys):
    losses = ch4._exercise_ablation()[1]
    for answer in (losses, list(losses), losses * (1 + 1e-9)):
        line = feedback(capsys, checks.indispensable_head, answer)
        assert line.startswith("[ch4-indispensable-head] Passed. without head")
        assert f"without head {int(np.argmax(losses))} " in line


def test_each_common_mistake_is_named_and_none_passes(capsys):
    mistakes = ch4._ablation_mistakes()
    expected = ch4._exercise_ablation()[1]
    for wrong, hint in mistakes:
        assert not np.allclose(wrong, expected, rtol=1e-6, atol=1e-9)  # far enough to tell apart
        line = feedback(capsys, checks.indispensable_head, wrong)
        assert line.startswith("[ch4-indispensable-head] Not right yet. ") and hint[:40] in line
    reordered = expected[::-1]
    assert "in another order" in feedback(capsys, checks.indispensable_head, reordered)
    line = feedback(capsys, checks.indispensable_head, expected + 0.01)
    assert "Hint: [verb_loss(test_task, three_heads, ablate=h)" in line
    assert f"{expected.max():.3f}" not in line  # the hint does not give the answer away


def test_a_head_number_is_no_longer_an_answer(capsys):
    """One head out of three can be guessed one time in three: the answer is the losses."""
    for head in range(3):
        line = feedback(capsys, checks.indispensable_head, head)
        assert "give the 3 held-out losses instead" in line and "Passed" not in line


@pytest.mark.parametrize(
    "answer, expected",
    [
        (None, "Not implemented yet. set without to the 3 held-out losses"),
        ([0.1, 0.2], "without"),
        ("0.1", "without"),
        ([np.nan, 0.1, 0.2], "nan or inf"),
        (True, "give the 3 held-out losses instead"),
    ],
)
def test_indispensable_head_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.indispensable_head, answer)
    assert expected in line and "the check itself hit an error" not in line


MULTI_HEAD_WRONG = [variant(split="reshape alone"), variant(merge="reshape alone"),
                    variant(scale=1.0), variant(project=False), variant(average=True),
                    variant(use_mask=False), lambda *a: (reference(*a)[0] * 2, reference(*a)[1]),
                    pairs_masks_with_sentences]


@pytest.mark.slow  # 400 runs of the check, torch's module included
def test_on_50_seeds_of_inputs_the_reference_passes_and_every_mistake_fails(capsys, monkeypatch):
    """Issue #21 item 13: the verdict does not rest on the check's one draw (seed 4)."""
    verdicts_hold_on_seeds(capsys, monkeypatch, ch4, "_attention_cases", checks.multi_head_attention,
                           per_head_loop, MULTI_HEAD_WRONG)
