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

from attncourse.attention import softmax

__all__ = [
    "CHECKS",
    "CheckError",
    "Failed",
    "NotImplementedYet",
    "Result",
    "exercise",
    "expect_array",
    "expect_function",
    "hidden_test",
    "pool_prefers_badminton",
    "predict_doubling",
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
    if prediction is None or prediction is Ellipsis:
        raise NotImplementedYet(f"set prediction to one of {', '.join(map(repr, _DOUBLING_ANSWERS))}.")
    if not isinstance(prediction, str) or prediction.strip().lower() not in _DOUBLING_ANSWERS:
        raise Failed(
            f"prediction should be one of {', '.join(map(repr, _DOUBLING_ANSWERS))}, "
            f"got {_short_repr(prediction)}."
        )
    before = softmax(_CH1_EMBEDDINGS @ _CH1_EMBEDDINGS.T)[_POOL]
    doubled = 2 * _CH1_EMBEDDINGS
    after = softmax(doubled @ doubled.T)[_POOL]
    why = (
        f"Doubling A multiplies every score by 4 (2a · 2b = 4 a · b), like a temperature of 1/4: "
        f"pool's weights go from {_show(before)} to {_show(after)}."
    )
    if prediction.strip().lower() != "sharper":
        raise Failed(f"you predicted {prediction.strip()!r}. {why}")
    return why
