"""Issue 36, item 12: every check that compares arrays holds an answer computed in float32
to float32's precision (``attncourse.checks.core.close``), and still names every mistake it
names in float64.

Three kinds of test: learners' answers computed in float32 from start to end (numpy, and
torch's default dtype) pass; every mistake the chapters' check tests name, its result
rounded to float32, is still named; and the checks that draw their inputs from a seed keep
their verdicts, in float32, on 50 seeds. The mistakes are read from the parameters of each
chapter's own test (tests/test_checks_chN.py), so a mistake added there is tried here too.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from attncourse import checks
from attncourse.checks import ch4, ch5, ch6, ch7, ch9, core
from attncourse.checks.core import close, computed_in_float32, tolerance
from tests import (
    test_checks_ch1,
    test_checks_ch2,
    test_checks_ch3,
    test_checks_ch4,
    test_checks_ch5,
    test_checks_ch6,
    test_checks_ch7,
    test_checks_ch8,
    test_checks_ch9,
)
from tests.checks_feedback import (  # noqa: F401 (an autouse fixture)
    feedback,
    learner_mode,
    verdicts_hold_on_seeds,
)

F = np.float32


# --- the rule ------------------------------------------------------------------------------


def test_an_array_computed_in_float32_is_recognised_whatever_dtype_it_is_handed_back_in():
    weights = np.array([0.1, 0.2, 0.7])
    assert not computed_in_float32(weights)
    assert computed_in_float32(weights.astype(F))
    assert computed_in_float32(weights.astype(F).astype(np.float64))  # upcast after the work
    assert computed_in_float32(np.array([np.nan, np.inf, 0.5]))  # NaN and inf say nothing
    assert not computed_in_float32(np.array([1e300]))  # beyond float32's range


def test_float64_answers_keep_their_tolerance_and_float32_answers_get_float32s():
    expected = np.array([0.2, 0.3, 0.5])
    off = expected * (1 + 1e-5)  # a float64 answer 1e-5 off: wrong at float64's precision
    assert not close(off, expected)
    assert close(expected.astype(F), expected) and close(off.astype(F), expected)
    assert not close((expected + 1e-3).astype(F), expected)  # a real mistake, in float32
    assert tolerance(expected, expected) == {"rtol": core.RTOL, "atol": core.ATOL}
    scale = tolerance(expected.astype(F), 40 * expected)["atol"] / tolerance(expected.astype(F), expected)["atol"]
    assert scale == 20  # relative to the largest entry expected, 20 here, or to 1


def test_a_message_shows_how_far_an_answer_is_when_the_rounded_arrays_look_alike(capsys):
    def off(part):
        def attention_head(X, W_q, W_k, W_v, mask=None):
            output, weights = test_checks_ch3.reference_head(X, W_q, W_k, W_v, mask)
            return (output * (1 + 1e-5), weights) if part == "output" else (output, weights * (1 + 1e-5))
        return attention_head

    output_line = feedback(capsys, checks.attention_head, off("output"))
    assert "the weights are right but the output" in output_line and "(the largest difference is 1.3e-05)" in output_line
    weights_line = feedback(capsys, checks.attention_head, off("weights"))
    assert "sum to [1., 1., 1., 1.] (the largest difference is 1e-05)" in weights_line


# --- learners' answers computed in float32 ---------------------------------------------------


def _softmax(scores, axis=-1):
    """A float32 softmax: float32 in, float32 out."""
    shifted = scores - scores.max(axis=axis, keepdims=True)
    exponentials = np.exp(np.where(np.isnan(shifted), -np.inf, shifted))  # a row of -inf only
    return exponentials / exponentials.sum(axis=axis, keepdims=True)


def stable_softmax(scores):
    return _softmax(np.asarray(scores, F))


def stable_softmax_by_log_sum_exp(scores):
    """exp(s - logsumexp(s)): right, and in float32 the log-sum-exp of scores near 1000 is
    rounded to 6e-5, float32's spacing there."""
    scores = np.asarray(scores, F)
    top = scores.max(axis=-1, keepdims=True)
    return np.exp(scores - (top + np.log(np.exp(scores - top).sum(axis=-1, keepdims=True))))


def stationary_distribution(X):
    X = np.asarray(X, F)
    scores = X @ X.T  # (seq, seq)
    top = scores.max(axis=-1)
    return _softmax(top + np.log(np.exp(scores - top[:, None]).sum(axis=-1)))


def attention_head(X, W_q, W_k, W_v, mask=None):
    X, W_q, W_k, W_v = (np.asarray(a, F) for a in (X, W_q, W_k, W_v))
    Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (seq, d_k), (seq, d_k), (seq, d_v)
    scores = Q @ K.T / np.sqrt(F(Q.shape[-1]))
    weights = _softmax(scores if mask is None else np.where(mask, scores, F(-np.inf)))
    return weights @ V, weights


def attention_head_in_torch(X, W_q, W_k, W_v, mask=None):
    """torch's default dtype is float32: the tensors are made from float64 arrays with it."""
    X, W_q, W_k, W_v = (torch.tensor(a, dtype=torch.float32) for a in (X, W_q, W_k, W_v))
    attn_mask = None if mask is None else torch.tensor(mask)
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    output = torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask)
    scores = Q @ K.T / Q.shape[-1] ** 0.5
    weights = torch.softmax(scores if mask is None else scores.masked_fill(~attn_mask, float("-inf")), dim=-1)
    return output.numpy(), weights.numpy()


def my_multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=None):
    X, W_q, W_k, W_v, W_o = (np.asarray(a, F) for a in (X, W_q, W_k, W_v, W_o))
    *lead, seq, _ = X.shape
    d_head = W_q.shape[1] // n_heads

    def to_heads(M):  # (..., seq, n_heads * d_head) -> (..., n_heads, seq, d_head)
        return np.swapaxes(M.reshape(*lead, seq, n_heads, d_head), -2, -3)

    Q, K, V = (to_heads(X @ W) for W in (W_q, W_k, W_v))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(F(d_head))  # (..., n_heads, seq, seq)
    weights = _softmax(scores if mask is None else np.where(mask, scores, F(-np.inf)))
    joined = np.swapaxes(weights @ V, -2, -3).reshape(*lead, seq, n_heads * d_head)
    return joined @ W_o, weights


def attention_rollout(layer_weights, residual=0.5):
    layers = np.asarray(layer_weights, F)
    if layers.ndim == 4:
        layers = layers.mean(axis=1)  # (n_layers, seq, seq)
    seq = layers.shape[-1]
    mixed = F(residual) * np.eye(seq, dtype=F) + F(1 - residual) * layers
    mixed = mixed / mixed.sum(axis=-1, keepdims=True)
    result = np.eye(seq, dtype=F)
    for layer in mixed:
        result = layer @ result
    return result


def conv1d_as_attention(x, kernel, alpha):
    x, kernel = np.asarray(x, F), np.asarray(kernel, F)
    seq, K = len(x), kernel.shape[-1]
    half = K // 2
    padded = np.pad(x, ((half, half), (0, 0)))  # (seq + 2 half, c_in)
    offsets = np.arange(seq + 2 * half)[None, :] - (np.arange(seq) + half)[:, None]  # (seq, seq + 2 half)
    distances = (offsets[None] - (np.arange(K) - half)[:, None, None]) ** 2  # (K, seq, seq + 2 half)
    weights = _softmax(F(-alpha) * distances.astype(F))
    return sum(weights[h] @ padded @ kernel[:, :, h].T for h in range(K)), weights


def layer_attention(X, W_q, b_q, W_k, b_k, W_v, b_v, n_heads):
    X, W_q, b_q, W_k, b_k = (np.asarray(a, F) for a in (X, W_q, b_q, W_k, b_k))
    Q, K = (np.swapaxes((X @ W + b).reshape(len(X), n_heads, -1), 0, 1) for W, b in ((W_q, b_q), (W_k, b_k)))
    return _softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(F(Q.shape[-1])))


def rope(X, positions=None, base=10000.0):
    X = np.asarray(X, F)
    seq, d = X.shape[-2:]
    positions = np.arange(seq, dtype=F) if positions is None else np.asarray(positions, F)
    angle = positions[:, None] * F(base) ** (-np.arange(0, d, 2, dtype=F) / F(d))  # (seq, d/2)
    even, odd = X[..., 0::2], X[..., 1::2]
    out = np.empty_like(X)
    out[..., 0::2] = even * np.cos(angle) - odd * np.sin(angle)
    out[..., 1::2] = even * np.sin(angle) + odd * np.cos(angle)
    return out


def online_normaliser(blocks):
    m = total = None
    for block in blocks:
        block = np.asarray(block, F)
        if m is None:
            m, total = np.full(block.shape[:-1], -np.inf, F), np.zeros(block.shape[:-1], F)
        new_m = np.maximum(m, block.max(axis=-1))
        shift = np.where(np.isneginf(new_m), F(0), new_m)
        total = total * np.exp(m - shift) + np.exp(block - shift[..., None]).sum(axis=-1)
        m = new_m
    return m, total


FLOAT32_ANSWERS = [
    (checks.stable_softmax, stable_softmax),
    (checks.stable_softmax, stable_softmax_by_log_sum_exp),
    (checks.stationary_distribution, stationary_distribution),
    (checks.attention_head, attention_head),
    (checks.attention_head, attention_head_in_torch),
    (checks.multi_head_attention, my_multi_head_attention),
    (checks.attention_rollout, attention_rollout),
    (checks.conv1d_as_attention, conv1d_as_attention),
    (checks.layer_attention, layer_attention),
    (checks.rope, rope),
]


@pytest.mark.parametrize(("check", "answer"), FLOAT32_ANSWERS, ids=lambda v: getattr(v, "__name__", ""))
def test_an_answer_computed_in_float32_passes(capsys, check, answer):
    line = feedback(capsys, check, answer)
    assert "Passed." in line, line


def _handed_back_in_float64(value):
    """``value`` after a last float64 step (a scale by np.sqrt of an int, say): float32's
    rounding in numbers that float32 cannot hold, so nothing shows they were float32."""
    if isinstance(value, (np.ndarray, np.floating)) and value.dtype == F:
        return value.astype(np.float64) * (1 + 1e-12)
    if isinstance(value, torch.Tensor):
        return _handed_back_in_float64(value.numpy())
    if isinstance(value, (tuple, list)):
        return type(value)(_handed_back_in_float64(item) for item in value)
    return value


@pytest.mark.parametrize(("check", "answer"), FLOAT32_ANSWERS, ids=lambda v: getattr(v, "__name__", ""))
def test_an_answer_computed_partly_in_float32_passes_or_is_told_so_never_given_a_wrong_hint(capsys, check, answer):
    """Red team 13: a float32 attention head scaled by np.sqrt(d_k) (float64) was 5.2e-08
    off in a weight near 0, and read two matrices that look alike and a hint about softmax."""
    @functools.wraps(answer)
    def partly_in_float32(*args, **kwargs):
        return _handed_back_in_float64(answer(*args, **kwargs))

    line = feedback(capsys, check, partly_in_float32)
    assert "Passed." in line or "only to about float32's precision" in line, line


def test_a_float32_online_softmax_passes_every_input_float32_can_hold(capsys, monkeypatch):
    cases = ch9._normaliser_cases()
    for case in cases:  # one input at a time
        monkeypatch.setattr(ch9, "_normaliser_cases", lambda case=case: [case])
        line = feedback(capsys, checks.online_softmax, online_normaliser)
        if "1e300" not in case[0]:
            assert "Passed." in line, line
        else:  # float32 cannot hold 1e300, and the message says so, not a hint about the sum
            assert "Your answer was computed in float32, whose largest number is 3.4e+38" in line
            assert "1e+300: compute in float64" in line and "Hint" not in line


# --- the mistakes each check names, in float32 -----------------------------------------------


def in_float32(value):
    """What a float32 computation returns where ``value`` is float64: every float64 array
    or number in it rounded to float32 (tuples and lists keep their kind)."""
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return value.astype(F)
    if isinstance(value, np.float64):
        return F(value)
    if isinstance(value, (tuple, list)):
        return type(value)(in_float32(item) for item in value)
    return value


def float32_answer(answer):
    """``answer``, a function (its results in float32) or a value (in float32)."""
    if not callable(answer):
        return in_float32(answer)

    @functools.wraps(answer)
    def computed_in_float32(*args, **kwargs):
        return in_float32(answer(*args, **kwargs))

    return computed_in_float32


def _named(test) -> list[tuple]:
    """The (answer, words of the message) parameters of a chapter's test of its named mistakes."""
    (mark,) = [mark for mark in test.pytestmark if mark.name == "parametrize"]
    return [case for case in mark.args[1] if callable(case[0]) or isinstance(case[0], np.ndarray)]


NAMED_MISTAKES = [
    (checks.stable_softmax, test_checks_ch1.test_stable_softmax_names_the_mistake),
    (checks.stationary_distribution, test_checks_ch2.test_stationary_distribution_names_the_mistake),
    (checks.attention_head, test_checks_ch3.test_attention_head_names_the_mistake),
    (checks.multi_head_attention, test_checks_ch4.test_multi_head_attention_names_the_mistake),
    (checks.indispensable_head, test_checks_ch4.test_indispensable_head_names_the_mistake),
    (checks.attention_rollout, test_checks_ch5.test_attention_rollout_names_the_mistake),
    (checks.conv1d_as_attention, test_checks_ch6.test_conv1d_as_attention_names_the_mistake),
    (checks.layer_attention, test_checks_ch7.test_each_typical_mistake_is_named),
    (checks.rope, test_checks_ch8.test_rope_names_the_mistake),
    (checks.online_softmax, test_checks_ch9.test_typical_mistakes_are_named),
]
MISTAKE_CASES = [pytest.param(check, answer, words, id=f"{test.__name__}-{k}")
                 for check, test in NAMED_MISTAKES for k, (answer, words) in enumerate(_named(test))]


def _numbers_out(line: str) -> str:
    """A check's line with its numbers replaced by #: rounding to float32 may move a printed
    digit, or which of two equal weights a message quotes, and nothing else."""
    return re.sub(r"-?\d+(\.\d*)?(e[-+]?\d+)?", "#", line)


@pytest.fixture
def float32_inputs(monkeypatch):
    """Chapter 9's check without its input of 1e300, which no float32 answer can hold (its
    own test above): every other input is read as before."""
    cases = ch9._normaliser_cases
    monkeypatch.setattr(ch9, "_normaliser_cases", lambda: [case for case in cases() if "1e300" not in case[0]])


@pytest.mark.parametrize(("check", "answer", "words"), MISTAKE_CASES)
def test_every_named_mistake_is_still_named_in_float32(capsys, float32_inputs, check, answer, words):
    in_float64 = feedback(capsys, check, answer)
    line = feedback(capsys, check, float32_answer(answer))
    assert "Passed." not in in_float64 and _numbers_out(line) == _numbers_out(in_float64), (in_float64, line)


@pytest.mark.slow  # 50 seeds of inputs for each of four checks
@pytest.mark.parametrize(("module", "cases", "check", "right", "wrong"), [
    (ch4, "_attention_cases", checks.multi_head_attention, test_checks_ch4.per_head_loop,
     test_checks_ch4.MULTI_HEAD_WRONG),
    (ch5, "_rollout_cases", checks.attention_rollout, test_checks_ch5.reference, test_checks_ch5.ROLLOUT_WRONG),
    (ch6, "_conv_cases", checks.conv1d_as_attention, test_checks_ch6.reference,
     [test_checks_ch6.kernel_flipped, test_checks_ch6.shift_reversed, test_checks_ch6.no_padding]),
    (ch7, "_layer_cases", checks.layer_attention, test_checks_ch7.solution,
     [test_checks_ch7.no_biases, test_checks_ch7.unscaled, test_checks_ch7.transposed]),
], ids=["ch4", "ch5", "ch6", "ch7"])
def test_in_float32_the_verdicts_hold_on_50_seeds_of_inputs(capsys, monkeypatch, module, cases, check, right, wrong):
    verdicts_hold_on_seeds(capsys, monkeypatch, module, cases, check, float32_answer(right),
                           [float32_answer(answer) for answer in wrong])


def _hidden_tests(chapter: str, label: str) -> list[str]:
    import nbformat

    notebook = nbformat.read(Path(__file__).parents[1] / "chapters" / chapter, as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == "code" and f'hidden_test("{label}")' in cell.source]


def _mixed_online_normaliser(blocks):
    """float64 throughout but its exponentials, taken in float32 (red team 7)."""
    m = total = None
    for block in blocks:
        block = np.asarray(block, dtype=np.float64)
        block_max = block.max(axis=-1)
        new_m = block_max if m is None else np.maximum(m, block_max)
        with np.errstate(invalid="ignore"):
            rescale = np.where(np.isneginf(new_m), 0.0, np.exp((m - new_m).astype(np.float32))) if m is not None else 0.0
            here = np.exp((block - np.where(np.isneginf(new_m), 0.0, new_m)[..., None]).astype(np.float32)).sum(-1)
        total = here if total is None else total * rescale + here
        m = new_m
    return m, np.asarray(total, dtype=np.float64)


@pytest.mark.parametrize(("chapter", "label", "name", "answer"), [
    ("04_multi_head_attention.ipynb", "ch4-multi-head-attention", "my_multi_head_attention", my_multi_head_attention),
    ("09_attention_at_scale.ipynb", "ch9-online-softmax", "online_normaliser", online_normaliser),
    ("09_attention_at_scale.ipynb", "ch9-online-softmax", "online_normaliser", _mixed_online_normaliser),
])
def test_the_hidden_tests_hold_a_float32_answer_to_the_checks_precision(chapter, label, name, answer):
    """A float32 answer its own check passes failed a hidden test that asked float64's precision
    (np.allclose's defaults near zero, rtol=1e-12): red team 7."""
    class Check:
        @staticmethod
        def hidden_test(_label):
            return lambda test: test()  # run it now, as the grader runs it on the learner's answer

    (source,) = _hidden_tests(chapter, label)
    exec(source, {"np": np, "torch": torch, "check": Check, name: answer})  # noqa: S102 (the course's own cell)
