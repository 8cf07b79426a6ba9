"""Feedback on the exercises: one check per exercise, called from the notebook.

    from attncourse import checks as check
    check.stable_softmax(stable_softmax)

A check runs the learner's answer on several fixed inputs, including the edge cases the
exercise is about, compares it with the reference and prints one short message:
``Passed.``, ``Not implemented yet.`` or ``Not right yet.`` followed by what is wrong
and a hint. It returns None (so a page shows no stray value) and never raises in the
default mode, whatever the answer is: the wrong type, the wrong shape, NaN, a function
that raises, or one that does not return within the time budget (it runs in a worker
thread, which the check stops when the budget is spent).

Three environment variables, read at every call:

* ``ATTNCOURSE_CHECK_MODE``: unset (the learner's mode) only prints. ``solved`` raises
  :class:`CheckError` unless the check passed (CI on the solved chapters). ``student``
  raises unless the check reported "not implemented" (CI on the student version: a stub
  that passes means a solution leaked into it).
* ``ATTNCOURSE_CHECK_LOG``: a file to which every result is appended as one JSON line
  ``{"exercise", "status", "message", "kind"}``; the grader reads it.
* ``ATTNCOURSE_CHECK_TIMEOUT``: the time budget of one check in seconds (default 10).

Adding the check of a new exercise (label ``chN-some-name`` in the notebook) is one
function, named like the label without its chapter prefix::

    @exercise("chN-some-name")
    def some_name(run, answer):
        '''What the exercise asks; what the check tries.'''
        fn = expect_function(answer, "some_name")
        value = run(fn, inputs)          # the learner's code, time-limited
        if wrong(value):
            raise Failed("what is wrong, and a hint")
        return "why this counts as a pass"

``run`` calls the learner's code safely; ``Failed`` and ``NotImplementedYet`` end the
check with that message; the returned string is the message of a pass. Instructors' hidden
tests use :func:`hidden_test`.
"""

from __future__ import annotations

import ctypes
import functools
import inspect
import json
import os
import threading
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

from attncourse.attention import causal_mask, dot_product_scores, scaled_dot_product_attention, softmax
from attncourse.examples import tennis_sentence
from attncourse.reciprocity import log_normalisers, repeated_attention

__all__ = [
    "CHECKS",
    "CheckError",
    "Failed",
    "NotImplementedYet",
    "Result",
    "attention_head",
    "ball_ignores_it",
    "exercise",
    "expect_array",
    "expect_function",
    "hidden_test",
    "it_attends_to_ball",
    "log_weight_ratio",
    "pool_prefers_badminton",
    "predict_doubling",
    "predict_he_and_ball",
    "predict_rotation",
    "stable_softmax",
]

PASSED, FAILED, NOT_IMPLEMENTED = "passed", "failed", "not implemented"
MODE_VARIABLE = "ATTNCOURSE_CHECK_MODE"
LOG_VARIABLE = "ATTNCOURSE_CHECK_LOG"
TIMEOUT_VARIABLE = "ATTNCOURSE_CHECK_TIMEOUT"
DEFAULT_TIMEOUT = 10.0
_HEADLINES = {PASSED: "Passed.", FAILED: "Not right yet.", NOT_IMPLEMENTED: "Not implemented yet."}
_EXPECTED_IN_MODE = {"solved": PASSED, "student": NOT_IMPLEMENTED}


@dataclass(frozen=True)
class Result:
    """The outcome of one check: ``status`` is passed, failed or not implemented."""

    exercise: str
    status: str
    message: str
    kind: str = "check"  # "check" (visible to learners) or "hidden" (instructor's test)


class Failed(Exception):
    """Ends a check: the answer is wrong. The message says how, with a hint."""


class NotImplementedYet(Exception):
    """Ends a check: the learner has not started (a stub, an unchanged starting value)."""


class CheckError(AssertionError):
    """Raised in the CI modes only, when a check's status is not the one the mode expects."""


class _Stop(BaseException):
    """Raised inside the learner's worker thread to stop it once the budget is spent."""


# Every exercise label -> its check. Filled once, at import, by @exercise.
CHECKS: dict[str, Callable[..., None]] = {}


def exercise(label: str):
    """Register ``evaluate(run, *answers) -> str`` as the check of exercise ``label``.

    The public check takes the answers (and an optional ``timeout=`` in seconds), prints
    its message, records it, applies the CI mode and returns None.
    """

    def register(evaluate):
        name = label.split("-", 1)[-1].replace("-", "_")
        if evaluate.__name__ != name:
            raise ValueError(f"the check of exercise {label!r} must be named {name!r}")
        if label in CHECKS:
            raise ValueError(f"exercise {label!r} already has a check")

        @functools.wraps(evaluate)
        def check(*answers, timeout: float | None = None) -> None:
            _report(_evaluate(label, "check", evaluate, answers, timeout))

        parameters = list(inspect.signature(evaluate).parameters.values())[1:]
        timeout_parameter = inspect.Parameter(
            "timeout", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="float | None"
        )
        check.__signature__ = inspect.Signature(
            [*parameters, timeout_parameter], return_annotation=None
        )
        CHECKS[label] = check
        return check

    return register


def hidden_test(label: str, *, timeout: float | None = None):
    """Run an instructor's hidden test of exercise ``label`` now, safely, and record it.

    Used as a decorator in a cell tagged ``hidden-test``; the test is plain code with
    asserts that calls the learner's names. It runs under the same time budget and
    never raises (except in the CI modes, like a check)::

        @check.hidden_test("ch1-stable-softmax")
        def _():
            assert stable_softmax([[1e308, 0.0]]).argmax() == 0, "huge finite scores"
    """

    def run_now(test: Callable[[], Any]) -> None:
        def evaluate(run):
            run(test, name="a hidden test")
            return "a hidden test passed"

        _report(_evaluate(label, "hidden", evaluate, (), timeout))

    return run_now


# ---------------------------------------------------------------------------------------
# Running the learner's code


def _evaluate(label, kind, evaluate, answers, timeout) -> Result:
    budget = _time_budget(timeout)
    deadline = time.monotonic() + budget

    def run(fn, *args, name=None):
        return _call_with_deadline(fn, args, deadline, budget, name or _name_of(fn))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the message explains; numpy's warnings only clutter
        try:
            message = evaluate(run, *answers)
            return Result(label, PASSED, message, kind)
        except NotImplementedYet as reason:
            return Result(label, NOT_IMPLEMENTED, str(reason), kind)
        except Failed as reason:
            return Result(label, FAILED, str(reason), kind)
        except Exception as bug:  # a bug in the check itself must not crash the notebook
            message = f"the check itself hit an error (please report it): {_describe(bug)}"
            return Result(label, FAILED, message, kind)


def _time_budget(timeout: float | None) -> float:
    if timeout is None:
        setting = os.environ.get(TIMEOUT_VARIABLE, "")
        try:
            timeout = float(setting) if setting else DEFAULT_TIMEOUT
        except ValueError:
            raise ValueError(f"{TIMEOUT_VARIABLE}={setting!r} is not a number of seconds") from None
    if not timeout > 0:
        raise ValueError(f"a check's time budget must be positive, got {timeout!r}")
    return float(timeout)


def _call_with_deadline(fn, args, deadline, budget, name):
    """Call ``fn(*args)`` in a daemon thread; give up (and stop it) at ``deadline``."""
    outcome = {}

    def target():
        try:
            with np.errstate(all="ignore"):  # numpy's error state is per thread
                outcome["value"] = fn(*args)
        except _Stop:
            pass
        except BaseException as error:  # learners' code may raise anything, SystemExit too
            outcome["error"] = error

    worker = threading.Thread(target=target, name=f"attncourse check: {name}", daemon=True)
    worker.start()
    try:
        worker.join(max(0.0, deadline - time.monotonic()))
    finally:
        if worker.is_alive():  # out of time, or the learner interrupted the kernel
            _stop(worker)
    if not outcome:
        still = (
            " It is still running in the background: restart the kernel to free the processor."
            if worker.is_alive()
            else ""
        )
        raise Failed(
            f"{name} did not return within the time budget of {budget:g} s "
            f"(an endless loop?).{still}"
        )
    if "error" in outcome:
        error = outcome["error"]
        if isinstance(error, NotImplementedError):
            raise NotImplementedYet(
                f"{name} raised NotImplementedError: replace the stub's `raise` with your code."
            )
        raise Failed(f"{name} raised {_describe(error)}")
    return outcome["value"]


def _stop(worker: threading.Thread) -> None:
    """Raise _Stop inside ``worker`` at its next bytecode, and give it a second to end.

    This ends a Python loop, though not a call stuck in C code: such a worker runs on as a
    daemon thread until the kernel stops.
    """
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(_Stop))
    worker.join(1.0)


def _name_of(fn) -> str:
    return f"{getattr(fn, '__name__', type(fn).__name__)}()"


def _describe(error: BaseException, limit: int = 200) -> str:
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    text = " ".join(text.split())  # a message is one line
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _show(values, decimals: int = 3) -> str:
    """``values`` rounded, on one line (a check's message is a single line)."""
    text = np.array2string(
        np.asarray(values), precision=decimals, suppress_small=True, threshold=20,
        edgeitems=2, separator=", ", max_line_width=10**6,
    )
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------
# Reporting


def _report(result: Result) -> None:
    """Print the message, append it to the log, and apply the CI mode."""
    mode = os.environ.get(MODE_VARIABLE, "")
    if mode not in ("", "learner", *_EXPECTED_IN_MODE):
        raise ValueError(
            f"{MODE_VARIABLE}={mode!r}: expected unset, 'learner', 'solved' or 'student'"
        )
    prefix = f"[{result.exercise}]" + (" hidden test:" if result.kind == "hidden" else "")
    print(" ".join(f"{prefix} {_HEADLINES[result.status]} {result.message}".split()))
    log = os.environ.get(LOG_VARIABLE)
    if log:
        with open(log, "a", encoding="utf-8") as file:
            file.write(json.dumps(asdict(result)) + "\n")
    expected = _EXPECTED_IN_MODE.get(mode)
    if expected and result.status != expected:
        hint = " A solution may have leaked into the student version." if mode == "student" else ""
        raise CheckError(
            f"{MODE_VARIABLE}={mode}: {result.exercise} should be '{expected}', "
            f"got '{result.status}': {result.message}{hint}"
        )


# ---------------------------------------------------------------------------------------
# Helpers for writing checks


def expect_function(answer, name: str):
    """Return ``answer`` if it is callable, else fail with a hint about how to pass it."""
    if callable(answer):
        return answer
    hint = (
        f" Pass the function itself: check.{name}({name}), with no parentheses after {name}."
        if isinstance(answer, (np.ndarray, list, tuple, float, int))
        else ""
    )
    raise Failed(f"expected the function {name}, got {_type_name(answer)}.{hint}")


def expect_array(value, shape: tuple[int, ...], what: str) -> np.ndarray:
    """``value`` as a float array of ``shape``, or fail saying what ``what`` gave instead."""
    if value is None:
        raise Failed(f"{what} returned None: did you forget `return`?")
    try:
        array = np.asarray(value)
        if np.iscomplexobj(array):
            raise TypeError("complex numbers")
        array = array.astype(np.float64)
    except Exception:
        raise Failed(f"{what} returned {_type_name(value)}, expected an array of numbers") from None
    if array.shape != tuple(shape):
        raise Failed(f"{what} returned an array of shape {array.shape}, expected shape {tuple(shape)}")
    return array


def _short_repr(value, limit: int = 60) -> str:
    try:
        text = " ".join(repr(value).split())
    except Exception:  # a learner's object may break even repr
        return _type_name(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_name(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    return f"a {type(value).__name__}"


# ---------------------------------------------------------------------------------------
# Chapter 1: dot-product similarity

# The embeddings of "pool beats badminton" (seed 003), the starting point of chapter 1.
_POOL, _BEATS, _BADMINTON = 0, 1, 2
_CH1_EMBEDDINGS = np.array([
    [0.5, 0.1, 0.1, 0.2],  # pool
    [0.1, 0.5, 0.2, 0.1],  # beats
    [0.5, 0.1, 0.2, 0.1],  # badminton
])
_CH1_TOKENS = ("pool", "beats", "badminton")


def _softmax_cases() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(2024)
    return [
        ("the scores [1, 2, 3]", np.array([1.0, 2.0, 3.0])),
        ("chapter 1's scores S = A Aᵀ", _CH1_EMBEDDINGS @ _CH1_EMBEDDINGS.T),
        ("a random batch of shape (2, 3, 5)", rng.standard_normal((2, 3, 5))),
        ("a single score [[4]]", np.array([[4.0]])),
        ("the large scores [1000, 999, 0]", np.array([1000.0, 999.0, 0.0])),
        ("the very negative scores [-1000, -1001]", np.array([-1000.0, -1001.0])),
        ("the rows [[1000, 0, -1000], [0.5, 0.5, 0.5]]", np.array([[1000.0, 0.0, -1000.0], [0.5, 0.5, 0.5]])),
    ]


@exercise("ch1-stable-softmax")
def stable_softmax(run, candidate) -> str:
    """Exercise ch1-stable-softmax: a softmax over the last axis that never overflows.

    Tries vectors, matrices and a batch, and scores of +-1000, where exp overflows to
    inf (inf / inf = nan) or underflows to 0 (0 / 0 = nan) unless the row maximum is
    subtracted first. Also checks that the input is left unchanged.
    """
    fn = expect_function(candidate, "stable_softmax")
    cases = _softmax_cases()
    for description, scores in cases:
        given = scores.copy()
        what = f"stable_softmax of {description}"
        weights = expect_array(run(fn, given), scores.shape, what)
        if not np.array_equal(given, scores):
            raise Failed(
                f"{what} changed its input. Work on a new array "
                "(scores = scores - ...) rather than in place (scores -= ...)."
            )
        if not np.isfinite(weights).all():
            raise Failed(f"{what} gave {_show(weights)}. {_overflow_hint(scores)}")
        if (weights < 0).any():
            raise Failed(f"{what} gave negative weights {_show(weights)}; exp is never negative.")
        sums = weights.sum(axis=-1)
        if not np.allclose(sums, 1.0, atol=1e-6):
            raise Failed(f"{what}: the rows sum to {_show(sums)}, not 1. {_axis_hint(weights)}")
        expected = softmax(scores)
        if not np.allclose(weights, expected, rtol=1e-6, atol=1e-9):
            raise Failed(f"{what} gave {_show(weights)}; expected {_show(expected)}.")
    return (
        f"Your softmax matches the reference on {len(cases)} inputs, including scores of "
        "±1000, where the textbook formula gives nan."
    )


def _overflow_hint(scores: np.ndarray) -> str:
    if scores.max() > 700:  # exp(710) is already inf in float64
        cause = "np.exp(1000) overflows to inf, and inf / inf is nan."
    elif scores.max() < -700:
        cause = "every np.exp(-1000) underflows to 0, and 0 / 0 is nan."
    else:
        return "Every weight should be a finite number."
    return (
        f"{cause} Hint: softmax(s) = softmax(s - c) for any constant c; "
        "subtract each row's maximum before taking exp."
    )


def _axis_hint(weights: np.ndarray) -> str:
    if np.isclose(weights.sum(), 1.0):
        return "You normalised the whole array at once: divide each row by its own sum (axis=-1, keepdims=True)."
    if weights.ndim > 1 and np.allclose(weights.sum(axis=0), 1.0):
        return "You normalised the columns: sum over the last axis (axis=-1, keepdims=True)."
    return "Divide each exponential by the sum of its row (axis=-1, keepdims=True)."


@exercise("ch1-pool-prefers-badminton")
def pool_prefers_badminton(run, A_tuned) -> str:
    """Exercise ch1-pool-prefers-badminton: edit badminton's embedding only, so that

    1. pool attends to badminton more than to itself, and
    2. beats still attends to itself most,

    with every entry between -1 and 1. The weights are softmax(A Aᵀ) by rows.
    """
    tuned = expect_array(A_tuned, _CH1_EMBEDDINGS.shape, "A_tuned")
    if not np.isfinite(tuned).all():
        raise Failed(f"A_tuned contains nan or inf: {_show(tuned)}")
    if np.array_equal(tuned, _CH1_EMBEDDINGS):
        raise NotImplementedYet("A_tuned is still the starting matrix A: edit badminton's row.")
    for row in (_POOL, _BEATS):
        if not np.allclose(tuned[row], _CH1_EMBEDDINGS[row]):
            raise Failed(
                f"you changed the row of {_CH1_TOKENS[row]} to {_show(tuned[row])}; "
                "only badminton's row (index 2) may change."
            )
    if np.abs(tuned).max() > 1:
        raise Failed(f"badminton's row {_show(tuned[_BADMINTON])} has an entry outside [-1, 1].")
    weights = softmax(tuned @ tuned.T)  # (seq, seq)
    pool = weights[_POOL]
    if not pool[_BADMINTON] > pool[_POOL]:
        raise Failed(
            f"pool gives itself {pool[_POOL]:.3f} and badminton {pool[_BADMINTON]:.3f}; "
            "badminton must score higher with pool than pool does with itself. "
            "Hint: a dot product grows with the length of the vectors, not only their direction."
        )
    if weights[_BEATS].argmax() != _BEATS:
        raise Failed(f"beats no longer attends to itself most (weights {_show(weights[_BEATS])}).")
    return (
        f"pool now gives badminton {pool[_BADMINTON]:.3f}, more than the {pool[_POOL]:.3f} it "
        "keeps for itself: a dot product rewards length as well as direction."
    )


_DOUBLING_ANSWERS = ("sharper", "flatter", "same")


@exercise("ch1-predict-doubling")
def predict_doubling(run, prediction) -> str:
    """Exercise ch1-predict-doubling: doubling every embedding makes pool's weights ...?

    The answer is "sharper": every score a_i . a_j is multiplied by 4, the same as a
    temperature of 1/4.
    """
    choice = _expect_choice(prediction, _DOUBLING_ANSWERS)
    before = softmax(_CH1_EMBEDDINGS @ _CH1_EMBEDDINGS.T)[_POOL]
    doubled = 2 * _CH1_EMBEDDINGS
    after = softmax(doubled @ doubled.T)[_POOL]
    why = (
        f"Doubling A multiplies every score by 4 (2a · 2b = 4 a · b), like a temperature of 1/4: "
        f"pool's weights go from {_show(before)} to {_show(after)}."
    )
    if choice != "sharper":
        raise Failed(f"you predicted {prediction.strip()!r}. {why}")
    return why


def _expect_choice(prediction, choices: tuple[str, ...]) -> str:
    """A predict-then-verify answer: one of ``choices``, stripped and lower-cased."""
    listed = ", ".join(map(repr, choices))
    if prediction is None or prediction is Ellipsis:
        raise NotImplementedYet(f"set prediction to one of {listed}.")
    if not isinstance(prediction, str) or prediction.strip().lower() not in choices:
        raise Failed(f"prediction should be one of {listed}, got {_short_repr(prediction)}.")
    return prediction.strip().lower()


# ---------------------------------------------------------------------------------------
# Chapter 2: the reciprocity problem

# "He picked up the tennis ball and found it was wet", the sentence of chapters 2 and 3.
_SENTENCE = tennis_sentence()
_HE, _TENNIS, _BALL, _AND, _IT = (_SENTENCE.index(w) for w in ("He", "tennis", "ball", "and", "it"))


def _reference_log_ratio(X: np.ndarray) -> np.ndarray:
    log_Z = log_normalisers(dot_product_scores(X, X))  # (seq,)
    return log_Z[None, :] - log_Z[:, None]  # (seq, seq): [i, j] = log Z_j - log Z_i


def _log_ratio_cases() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(2025)
    return [
        ("the sentence's X", _SENTENCE.X),
        ("a random X of shape (4, 3)", rng.standard_normal((4, 3))),
        ("a single token [[2, 1]]", np.array([[2.0, 1.0]])),
        ("X with a repeated token", np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 0.0]])),
        ("20 X, whose scores reach 1300", 20 * _SENTENCE.X),
        ("30 times a random X of shape (6, 4)", 30 * rng.standard_normal((6, 4))),
    ]


@exercise("ch2-log-weight-ratio")
def log_weight_ratio(run, candidate) -> str:
    """Exercise ch2-log-weight-ratio: the matrix of log(W_ij / W_ji) for W = softmax(X Xᵀ).

    The answer is log Z_j - log Z_i. Tries small and random inputs, a single token, a
    repeated token, and scores in the thousands, where the weights underflow to 0 and
    np.log(W / W.T) gives nan. Also checks that the input is left unchanged.
    """
    fn = expect_function(candidate, "log_weight_ratio")
    cases = _log_ratio_cases()
    for description, X in cases:
        given = X.copy()
        what = f"log_weight_ratio of {description}"
        ratio = expect_array(run(fn, given), (len(X), len(X)), what)
        if not np.array_equal(given, X):
            raise Failed(f"{what} changed its input X; work on new arrays.")
        expected = _reference_log_ratio(X)
        if not np.isfinite(ratio).all():
            scores = X @ X.T
            cause = (
                "Scores this large make some weights underflow to exactly 0, and log(0 / 0) "
                "is nan. Hint: stay in logarithms, log W_ij = S_ij - log Z_i, and "
                "log_normalisers(S) computes log Z without overflow."
                if np.ptp(scores) > 700
                else "Every entry should be a finite number."
            )
            raise Failed(f"{what} gave {_show(ratio)}. {cause}")
        if not np.allclose(ratio, expected, rtol=1e-6, atol=1e-6):
            raise Failed(
                f"{what} gave {_show(ratio)}; expected {_show(expected)}. "
                f"{_log_ratio_hint(ratio, expected)}"
            )
    return (
        f"Your log ratios equal log Z_j - log Z_i on {len(cases)} inputs, including scores "
        "of 1300, where np.log(W / W.T) gives nan."
    )


def _log_ratio_hint(ratio: np.ndarray, expected: np.ndarray) -> str:
    with np.errstate(all="ignore"):
        plain_ratio = np.exp(expected)
    if np.allclose(ratio, -expected, rtol=1e-6, atol=1e-6):
        return "That is log(W_ji / W_ij), its transpose: entry [i, j] is log(W_ij / W_ji)."
    if np.allclose(ratio, 0.0):
        return "The scores are symmetric, but the weights are not: W_ij / W_ji = Z_j / Z_i."
    if np.allclose(ratio, plain_ratio, rtol=1e-6, atol=1e-6):
        return "That is the ratio W_ij / W_ji itself: take its logarithm."
    if not np.allclose(ratio, -ratio.T, rtol=1e-6, atol=1e-6):
        return "log(W_ij / W_ji) = -log(W_ji / W_ij), so the matrix must be antisymmetric; yours is not."
    return "Hint: log W_ij = S_ij - log Z_i, where Z_i is the sum of row i of exp(S)."


@exercise("ch2-ball-ignores-it")
def ball_ignores_it(run, X_tuned) -> str:
    """Exercise ch2-ball-ignores-it: edit only the rows of "it" and "ball" of the tennis
    sentence's X, entries between -10 and 10, so that with W = softmax(X Xᵀ)

    1. W[it, ball] > 0.4, and
    2. W[ball, it] < W[it, ball] / 10.

    Possible only through the normalisers (W[it, ball] / W[ball, it] = Z_ball / Z_it); the
    pass message shows the price: how much ball still gives tennis.
    """
    X = _SENTENCE.X
    tuned = expect_array(X_tuned, X.shape, "X_tuned")
    if not np.isfinite(tuned).all():
        raise Failed(f"X_tuned contains nan or inf: {_show(tuned)}")
    if np.array_equal(tuned, X):
        raise NotImplementedYet("X_tuned is still the sentence's X: edit the rows of it and ball.")
    changed = [
        _SENTENCE.tokens[row] for row in range(len(X))
        if row not in (_IT, _BALL) and not np.allclose(tuned[row], X[row])
    ]
    if changed:
        raise Failed(
            f"you changed the row(s) of {', '.join(changed)}; only the rows of it "
            f"(index {_IT}) and ball (index {_BALL}) may change."
        )
    if np.abs(tuned).max() > 10:
        raise Failed("an entry of X_tuned is outside [-10, 10]; keep the embeddings of a sensible size.")
    scores = tuned @ tuned.T  # (seq, seq)
    weights = softmax(scores)
    log_Z = log_normalisers(scores)
    given, returned = weights[_IT, _BALL], weights[_BALL, _IT]
    z_ratio = np.exp(log_Z[_BALL] - log_Z[_IT])
    if not given > 0.4:
        raise Failed(
            f"it gives ball {given:.3f}, not more than 0.4. Hint: raise their shared "
            f"score it · ball (now {scores[_IT, _BALL]:.2f})."
        )
    if not returned < given / 10:
        raise Failed(
            f"ball gives it {returned:.3f}, not less than a tenth of the {given:.3f} it gives "
            f"ball. Hint: W[it, ball] / W[ball, it] = Z_ball / Z_it, now {z_ratio:.2f}: "
            "ball's row normaliser must be more than 10 times that of it."
        )
    before = softmax(X @ X.T)[_BALL, _TENNIS]
    return (
        f"it gives ball {given:.3f}, ball gives it {returned:.3f}: Z_ball is {z_ratio:.1f} times "
        f"Z_it. The price: ball now gives tennis {weights[_BALL, _TENNIS]:.3f} (it gave "
        f"{before:.3f}) and itself {weights[_BALL, _BALL]:.3f}."
    )


_HE_AND_BALL_ANSWERS = ("negative", "zero", "positive")


@exercise("ch2-predict-he-and-ball")
def predict_he_and_ball(run, prediction) -> str:
    """Exercise ch2-predict-he-and-ball: He and ball score 0; after one round of
    similarity attention their score is ...? "positive": every weight is positive, so
    each word takes in a little of every other, and no entry of X is negative."""
    choice = _expect_choice(prediction, _HE_AND_BALL_ANSWERS)
    states, _ = repeated_attention(_SENTENCE.X, steps=1)  # (2, seq, d_model)
    after = dot_product_scores(states[1], states[1])[_HE, _BALL]
    why = (
        f"He and ball share no dimension (score 0), but softmax weights are never 0: after "
        f"one round each word holds a little of every other (He takes in ball, tennis and it, "
        f"all things), and their score is {after:.3f}. No entry of X is negative, so no "
        "mixture of them is, and no score can fall below 0."
    )
    if choice != "positive":
        raise Failed(f"you predicted {prediction.strip()!r}. {why}")
    return why


# ---------------------------------------------------------------------------------------
# Chapter 3: queries, keys and values


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
    ]


@exercise("ch3-attention-head")
def attention_head(run, candidate) -> str:
    """Exercise ch3-attention-head: ``attention_head(X, W_q, W_k, W_v, mask=None)`` returns
    ``(output, weights)``: project, score, scale by 1/sqrt(d_k), mask, softmax, mix.

    Compared with scaled_dot_product_attention on heads where d_model, d_k and d_v differ
    (so a scale by the wrong width shows), with no mask, the causal mask and a mask that is
    not causal, a single token and scores of about ±1000 (where exp overflows). Inputs
    must be left unchanged.
    """
    fn = expect_function(candidate, "attention_head")
    cases = _head_cases()
    for description, arrays, mask in cases:
        given = [a.copy() for a in arrays] + ([] if mask is None else [mask.copy()])
        what = f"attention_head on {description}"
        result = run(fn, *given)
        if not all(np.array_equal(a, b) for a, b in zip(given, [*arrays, mask])):
            raise Failed(f"{what} changed one of its inputs; work on new arrays.")
        output, weights = _head_result(result, arrays, what)
        _check_head_weights(weights, arrays, mask, what)
        X, _, _, W_v = arrays
        expected = weights @ (X @ W_v)  # (seq, d_v)
        if not np.allclose(output, expected, rtol=1e-6, atol=1e-9):
            raise Failed(
                f"{what}: the weights are right but the output {_show(output)} is not "
                f"{_show(expected)}. Hint: output = weights @ V, with the values V = X @ W_v."
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
        got = f"a {type(result).__name__} of {len(result)} items" if isinstance(result, (tuple, list)) else _type_name(result)
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
    close = lambda a, b: np.allclose(a, b, rtol=1e-6, atol=1e-9)
    if not np.isfinite(weights).all():
        scores = Q @ K.T / np.sqrt(d_k)
        hint = (
            "np.exp of scores near 1000 overflows. Hint: subtract each row's maximum "
            "before exp, or use the course's softmax."
            if np.abs(scores).max() > 700
            else "Every weight should be a finite number."
        )
        raise Failed(f"{what} gave the weights {_show(weights)}. {hint}")
    if mask is not None and (np.abs(weights[~mask]) > 1e-9).any():
        raise Failed(f"{what}: {_mask_hint(weights, Q, K, V, mask)}")
    sums = weights.sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-6):
        hint = (
            "You normalised the columns: the softmax runs along each query's row (axis=-1)."
            if np.allclose(weights.sum(axis=0), 1.0, atol=1e-6)
            else "Each query's weights must sum to 1: mask the scores before the softmax, not the weights after it."
        )
        raise Failed(f"{what}: the rows of the weights sum to {_show(sums)}. {hint}")
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
    raise Failed(
        f"{what} gave the weights {_show(weights)}; expected {_show(expected)}. "
        "Hint: weights = softmax(Q Kᵀ / sqrt(d_k)) by rows, with Q = X W_q and K = X W_k."
    )


def _mask_hint(weights, Q, K, V, mask) -> str:
    query, key = np.unravel_index(np.argmax(np.where(mask, 0.0, np.abs(weights))), mask.shape)
    pair = f"query {query} gives key {key} the weight {weights[query, key]:.3g}, but the mask forbids it"
    unmasked = scaled_dot_product_attention(Q, K, V)[1]
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if np.allclose(weights, unmasked, rtol=1e-6, atol=1e-9):
        return f"{pair}: the mask was ignored."
    if np.allclose(weights, scaled_dot_product_attention(Q, K, V, mask=causal_mask(len(Q)))[1], rtol=1e-6, atol=1e-9):
        return f"{pair}: you applied the causal mask, not the mask given."
    if np.abs(weights[~mask]).sum() > np.abs(weights[mask]).sum():
        return f"{pair}, and most of the weight goes to forbidden pairs: the mask is True where a query MAY attend."
    if np.allclose(weights, softmax(np.where(mask, scores, 0.0)), rtol=1e-6, atol=1e-9):
        return f"{pair}. A masked score of 0 still gets the weight e^0 / Z: use -inf, np.where(mask, scores, -np.inf)."
    return f"{pair}. Hint: set the masked scores to -inf before the softmax."


@exercise("ch3-it-attends-to-ball")
def it_attends_to_ball(run, W_q, W_k=None) -> str:
    """Exercise ch3-it-attends-to-ball: W_q and W_k, (d_model, d_k) = (5, 5) as in the
    explorer, such that on the tennis sentence with scores (X W_q)(X W_k)ᵀ, scale 1, no mask:

    1. "it" attends to "ball": W[it, ball] >= 0.5;
    2. "ball" does not attend to "it": its score on it is at most 0, no more than it
       scores the empty word "and" (whose embedding is 0), and W[ball, it] <= 0.05.

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
    looks, looked_back = weights[_IT, _BALL], weights[_BALL, _IT]
    if not looks >= 0.5:
        raise Failed(
            f"it gives ball {looks:.3f} of its attention, less than 0.5 (its score on ball "
            f"is {scores[_IT, _BALL]:.2f}). Hint: let the query of a pronoun (x2) ask for "
            "what the key of a thing (x0) offers."
        )
    if not scores[_BALL, _IT] <= 0:
        symmetric = np.isclose(scores[_BALL, _IT], scores[_IT, _BALL])
        raise Failed(
            f"ball scores it {scores[_BALL, _IT]:.2f}, more than the 0 it scores the empty "
            "word 'and'"
            + (", exactly as much as it scores ball: symmetric scores, as in chapter 2." if symmetric else ".")
            + " Hint: ball and it are both things (x0), so ball's query must not ask for things."
        )
    if not looked_back <= 0.05:
        raise Failed(
            f"ball still gives it {looked_back:.3f} of its attention (at most 0.05): with no "
            "high score anywhere, ball spreads its attention evenly. Hint: give ball's query "
            "something else to look for, such as its sport (x3)."
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
        raise Failed(f"{name} contains nan or inf: {_show(matrix)}")
    return matrix


_ROTATION_ANSWERS = ("symmetric", "antisymmetric", "neither")
_QUARTER_TURN = np.array([[0.0, -1.0], [1.0, 0.0]])  # turns a 2-D vector by 90 degrees


@exercise("ch3-predict-rotation")
def predict_rotation(run, prediction) -> str:
    """Exercise ch3-predict-rotation: with W_K = W_Q R, R a quarter turn, the scores are
    ...? "antisymmetric": M = W_Q Rᵀ W_Qᵀ and Rᵀ = -R, so Mᵀ = -M."""
    choice = _expect_choice(prediction, _ROTATION_ANSWERS)
    W_Q = np.random.default_rng(3).standard_normal((_SENTENCE.X.shape[1], 2))  # (d_model, d_k)
    scores = dot_product_scores(_SENTENCE.X @ W_Q, _SENTENCE.X @ W_Q @ _QUARTER_TURN)
    why = (
        "With W_K = W_Q R the scores are X M Xᵀ with M = W_Q Rᵀ W_Qᵀ, and Rᵀ = -R makes "
        "Mᵀ = -M, whatever W_Q is: S_ij = -S_ji, and every word scores itself 0. With a "
        f"random W_Q, S[it, ball] = {scores[_IT, _BALL]:.2f} and S[ball, it] = "
        f"{scores[_BALL, _IT]:.2f}."
    )
    if choice != "antisymmetric":
        raise Failed(f"you predicted {prediction.strip()!r}. {why}")
    return why
