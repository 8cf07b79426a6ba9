"""Checks of chapter 6's exercises: attention versus convolution."""

from __future__ import annotations

import numpy as np

from attncourse.checks.core import (
    Failed,
    NotImplementedYet,
    as_float,
    close,
    difference,
    exercise,
    expect_array,
    expect_function,
    inputs,
    is_real_number,
    precision_problem,
    show,
    type_name,
)
from attncourse.checks.predict import predict_exercise
from attncourse.checks.tune import tune_setting_goal
from attncourse.convolution import conv1d_as_attention as _reference
from attncourse.convolution import largest_error, shift_weights, shifts

predict_heads_for_5x5 = predict_exercise(
    "ch6-predict-heads-for-5x5",
    answer=float(len(shifts(5)) ** 2),
    tolerance=0.5,
    hint="Each head copies the token at one relative position; list the relative positions "
    "a 5 × 5 kernel multiplies by its own matrix.",
    explanation="Each head becomes one shift Delta = (Delta_1, Delta_2) with both in "
    "-2..2, and a 5 × 5 kernel has a matrix for each of those 25 shifts; by Theorem 1, "
    "n_heads heads give a sqrt(n_heads) × sqrt(n_heads) kernel.",
)


def _dilated_shifts(kernel_size: int, dilation: int) -> np.ndarray:
    """The distinct relative positions (Delta_1, Delta_2) a dilated K × K kernel reads."""
    one_axis = dilation * shifts(kernel_size)  # (K,)
    grid = np.stack(np.meshgrid(one_axis, one_axis, indexing="ij"), -1).reshape(-1, 2)  # (K², 2)
    return np.unique(grid, axis=0)


predict_heads_for_dilated_3x3 = predict_exercise(
    "ch6-predict-heads-for-dilated-3x3",
    answer=float(len(_dilated_shifts(3, 2))),
    tolerance=0.5,
    hint="A head is needed for each relative position the kernel has a matrix for, not for "
    "each pixel inside its footprint. Which positions does dilation 2 read?",
    explanation="With dilation 2 the taps sit at Delta in {-2, 0, 2} on each axis: 9 "
    "positions spread over a 5 × 5 window, one head each. The head count follows the taps, "
    "not the receptive field; only the shifts Delta of the scores change.",
)

def _conv_cases(seed: int = 606) -> list[tuple[str, np.ndarray, np.ndarray, float]]:
    """(description, x (seq, c_in), kernel (c_out, c_in, K), alpha), K and channels varied.
    The check uses seed 606; its verdicts hold for any seed (tests/test_checks_ch6.py)."""
    rng = np.random.default_rng(seed)

    def case(seq, c_in, c_out, K, alpha):
        x = rng.standard_normal((seq, c_in))  # (seq, c_in)
        kernel = rng.standard_normal((c_out, c_in, K))  # (c_out, c_in, K)
        return f"seq {seq}, c_in {c_in}, c_out {c_out}, K {K}, alpha {alpha:g}", x, kernel, alpha

    return [
        case(8, 1, 1, 3, 40.0),
        case(9, 2, 3, 5, 40.0),
        case(7, 3, 2, 3, 2.0),
        case(6, 2, 2, 7, 0.5),
        case(1, 1, 2, 3, 10.0),
    ]


@exercise("ch6-conv1d-as-attention", points=3)
def conv1d_as_attention(run, candidate) -> str:
    """Exercise ch6-conv1d-as-attention: ``conv1d_as_attention(x, kernel, alpha)`` returns
    ``(output (seq, c_out), weights (K, seq, seq + 2 * (K//2)))``: K heads with positional
    scores -alpha (j - i - Delta)², a row softmax, value maps the kernel's taps, summed.

    Compared with attncourse.convolution on kernels of 3, 5 and 7 taps, one to three
    channels, a single token, and at small alpha (where a plain convolution is wrong:
    it must be attention). The weights tell a reversed shift from a flipped kernel, which
    give the same output.
    """
    fn = expect_function(candidate, "conv1d_as_attention")
    cases = inputs(_conv_cases())  # one at a time when the grader counts the inputs right
    for description, x, kernel, alpha in cases:
        what = f"conv1d_as_attention on {description}"
        result = run(fn, x.copy(), kernel.copy(), alpha)
        output, weights = _conv_result(result, x, kernel, what)
        _check_weights(weights, x, kernel, alpha, what)
        expected = _reference(x, kernel, alpha)  # (seq, c_out)
        if not close(output, expected):
            raise Failed(f"{what}: {_output_hint(output, expected, x, kernel, alpha)}")
    return (
        f"Your heads match the course's construction on {len(cases)} problems: soft bumps at "
        "small alpha, the convolution at large alpha, every border padded."
    )


def _conv_result(result, x, kernel, what: str) -> tuple[np.ndarray, np.ndarray]:
    seq, (c_out, _, K) = len(x), kernel.shape
    padded = seq + 2 * (K // 2)
    if result is None:
        raise Failed(f"{what} returned None: did you forget `return`? Return (output, weights).")
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Failed(f"{what} returned {type_name(result)}; return the pair (output, weights).")
    if _shape(result[1]) == (K, seq, seq) and K > 1:
        raise Failed(
            f"{what}: the weights have shape {(K, seq, seq)}, so the keys are the {seq} tokens "
            f"alone. Pad x with K//2 = {K // 2} zero tokens on each side (np.pad) so that "
            f"the keys are {padded} tokens, as F.conv1d(..., padding=K//2) pads its input."
        )
    weights = expect_array(result[1], (K, seq, padded), f"{what} (the weights, its second item)")
    output = expect_array(result[0], (seq, c_out), f"{what} (the output, its first item)")
    return output, weights


def _shape(value) -> tuple[int, ...] | None:
    try:
        return np.shape(value)
    except Exception:  # a ragged list: expect_array names the problem
        return None


def _check_weights(weights, x, kernel, alpha, what: str) -> None:
    K = kernel.shape[-1]
    expected = shift_weights(len(x), K, alpha)  # (K, seq, seq_padded)
    if close(weights, expected):
        return
    if not np.isfinite(weights).all() or not close(weights.sum(-1), 1.0, like=weights):
        raise Failed(
            f"{what}: each head's rows should be a softmax summing to 1, got row sums "
            f"{show(weights.sum(-1))} ({difference(weights.sum(-1), 1.0)}). Hint: softmax(scores, "
            "axis=-1) over the keys."
        )
    if close(weights, expected[::-1]):
        raise Failed(
            f"{what}: the shift's sign is reversed: the head of Delta = -1 looks at token "
            "i + 1. The score is -alpha (j - i - Delta)², largest at key j = i + Delta, so "
            "Delta = -1 is the previous token."
        )
    if close(weights, shift_weights(len(x), K, 1.0)) and alpha != 1.0:
        raise Failed(f"{what}: the weights do not depend on alpha; multiply the scores by it.")
    if precision_problem(weights, expected):
        raise Failed(f"{what}: {precision_problem(weights, expected)}")
    raise Failed(
        f"{what}: the weights of head 0 (Delta = {-(K // 2)}) at token 0 are "
        f"{show(weights[0, 0])}; expected {show(expected[0, 0])} ({difference(weights, expected)}). "
        "Hint: query i sits at "
        "padded position i + K//2 and scores padded key j with -alpha (j - (i + K//2) - Delta)²."
    )


def _output_hint(output, expected, x, kernel, alpha) -> str:
    if precision_problem(output, expected):
        return f"the weights are right but the output is off: {precision_problem(output, expected)}"
    if close(output, _reference(x, kernel[..., ::-1], alpha)):
        return (
            "the weights are right but the kernel is flipped: you computed a true convolution. "
            "torch's conv1d is a cross-correlation: the head of Delta takes tap "
            "kernel[:, :, Delta + K//2], with no flip."
        )
    if close(output, _reference(x, kernel, 1e6)) and not close(expected, _reference(x, kernel, 1e6)):
        return (
            f"this is the exact convolution, but at alpha = {alpha:g} the heads are still soft "
            "bumps: the output must be the weights times the values, not F.conv1d."
        )
    return (
        f"the weights are right but the output {show(output)} is not {show(expected)} "
        f"({difference(output, expected)}). Hint: "
        "head h maps the padded tokens with kernel[:, :, h].T (c_in, c_out); sum the heads."
    )


def _tuning_signal_and_taps() -> tuple[np.ndarray, np.ndarray]:
    """The problem of exercise ch6-tune-alpha, one channel as the convolution explorer
    shows it: x (16,), kernel (5,), rounded to 2 places to read in the explorer's boxes."""
    rng = np.random.default_rng(6)
    return rng.standard_normal(16).round(2), rng.standard_normal(5).round(2)


_TUNE_X, _TUNE_KERNEL = _tuning_signal_and_taps()


def tuning_problem() -> tuple[np.ndarray, np.ndarray]:
    """The problem of exercise ch6-tune-alpha in the convolution module's layouts:
    x (seq = 16, c_in = 1), kernel (c_out = 1, c_in = 1, K = 5)."""
    return _TUNE_X[:, None].copy(), _TUNE_KERNEL[None, None, :].copy()


def construction_error(alpha: float) -> float:
    """The largest error of the construction against the convolution on the tuning problem:
    what the convolution explorer reads out as its largest error."""
    return largest_error(*tuning_problem(), alpha)


def score_gradient(alpha: float) -> float:
    """The softmax's slope: the largest derivative of a weight with respect to its own
    score, w (1 - w), over the heads and tokens of the tuning problem. Every gradient that
    reaches the scores in training is multiplied by such slopes."""
    x, kernel = tuning_problem()
    weights = shift_weights(len(x), kernel.shape[-1], alpha)  # (K, seq, seq_padded)
    return float((weights * (1 - weights)).max())


ERROR_TARGET = 1e-3
STARTING_ALPHA = 1.0  # the stub's value and the explorer's: untouched is "not implemented"

# Declared once: the check decides with it, the exercise's explorer shows it (its search
# is the explorer's alpha range, where the smallest alpha lies).
goal_sharp_enough = tune_setting_goal(
    "ch6-tune-alpha",
    "Goal: the largest error below 0.001, with alpha no more than 1 above the smallest alpha "
    "that gets it there. Only alpha changes: the signal and the taps are the exercise's.",
    setting="alpha", readout=("max_error", "largest error"), comparison="<", target=ERROR_TARGET,
    margin=1.0, search=(0.0, 30.0), fixed={"x": _TUNE_X, "kernel": _TUNE_KERNEL},
)


def smallest_alpha() -> float:
    """The smallest alpha whose error is below ERROR_TARGET (the goal's bisection; the
    error falls as alpha grows)."""
    return goal_sharp_enough.smallest(construction_error)


@exercise("ch6-tune-alpha", points=2)
def tune_alpha(run, alpha) -> str:
    """Exercise ch6-tune-alpha: an alpha at which the construction's error on the tuning
    problem is below 1e-3, but no more than 1 above the smallest such alpha (a teaching
    device: beyond it the softmax saturates and its slope w (1 - w), which multiplies every
    gradient reaching the scores, shrinks like e^-alpha). Decided by ``goal_sharp_enough``,
    the goal the exercise's explorer shows."""
    if alpha is None or alpha is Ellipsis:
        raise NotImplementedYet("set alpha to a number.")
    if not is_real_number(alpha):
        raise Failed(f"alpha should be one number, got {type_name(alpha)}.")
    alpha = as_float(alpha)
    if alpha == STARTING_ALPHA:
        raise NotImplementedYet(f"alpha is still the stub's {STARTING_ALPHA:g}: change it.")
    if not (np.isfinite(alpha) and alpha >= 0):
        raise Failed(f"alpha should be a finite number >= 0, got {alpha}.")
    goal = goal_sharp_enough
    error, gradient = construction_error(alpha), score_gradient(alpha)
    best = smallest_alpha()
    if goal.holds(alpha, goal.fixed, construction_error):
        return (
            f"at alpha = {alpha:g} the error is {_shown_beyond(error, 1e-3, below=True)} (the smallest alpha that gets below "
            f"1e-3 is {best:.2f}) and the softmax's largest slope w (1 - w) is still {gradient:.2g}. "
            "Both fall like e^-alpha: the sharper the heads, the less a training step can move them."
        )
    if not goal.meets(error):
        raise Failed(
            f"at alpha = {alpha:g} the largest error is {error:.2g}, not below 1e-3. "
            "Hint: the error falls about e-fold per unit of alpha; try larger values."
        )
    shrunk = (f"{score_gradient(best) / gradient:.2g} times less than at {best:.2f}" if gradient > 0
              else "exactly 0 in float64")
    raise Failed(
        f"at alpha = {alpha:g} the error is {_shown_beyond(error, 1e-3, below=True)}, below 1e-3, but alpha is "
        f"{_shown_beyond(alpha - best, 1.0)} above the smallest alpha that gets there ({best:.2f}), more than the 1 "
        f"the exercise allows: the softmax's largest slope w (1 - w) is {gradient:.2g}, {shrunk}, and "
        "the softmax is saturated. Find the smallest alpha (to within 1) that meets the target."
    )


def _shown_beyond(value: float, bound: float, below: bool = False) -> str:
    """``value`` (beyond ``bound``: above it, or below) with the digits that show it is:
    an error of 0.0009999, never 0.001, below 1e-3."""
    def beyond(text: str) -> bool:
        return float(text) < bound if below else float(text) > bound
    return next(text for digits in range(2, 18) if beyond(text := f"{value:.{digits}g}"))
