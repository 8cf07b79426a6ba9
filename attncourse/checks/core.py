"""The machinery of the checks: registry, time budget, result, report, and the helpers
every chapter's checks use (see ``attncourse.checks`` for how to write a check)."""

from __future__ import annotations

import ctypes
import functools
import importlib
import inspect
import json
import math
import os
import re
import threading
import time
import tracemalloc
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from decimal import Decimal
from numbers import Real
from typing import Any

import numpy as np

# A check's time budget is measured beside the learner's code, which may patch the time
# module (`time.monotonic = lambda: 0.0` would stop no call): its clocks are bound here, when
# the notebook imports the checks, before any cell of the learner's runs.
_monotonic, _clock_gettime, _cpu_clock_of = time.monotonic, time.clock_gettime, time.pthread_getcpuclockid
_thread_time = time.thread_time
# and the thread that runs the check, as functions (a class bound here would still read a
# patched ``Thread.start``).
_Thread, _start, _is_alive, _join = threading.Thread, threading.Thread.start, threading.Thread.is_alive, threading.Thread.join
_get_ident, _errstate = threading.get_ident, np.errstate
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # no kernel can send one: each becomes U+FFFD

PASSED, FAILED, NOT_IMPLEMENTED = "passed", "failed", "not implemented"
NEEDS_REVIEW = "needs review"  # only the grader's replay gives it (see attncourse.checks.wire)
MODE_VARIABLE = "ATTNCOURSE_CHECK_MODE"
LOG_VARIABLE = "ATTNCOURSE_CHECK_LOG"
TIMEOUT_VARIABLE = "ATTNCOURSE_CHECK_TIMEOUT"
DEFAULT_TIMEOUT = 10.0
_HEADLINES = {PASSED: "Passed.", FAILED: "Not right yet.", NOT_IMPLEMENTED: "Not implemented yet.",
              NEEDS_REVIEW: "Needs review."}
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


class Stop(BaseException):
    """Raised inside the learner's worker thread to stop it once the budget is spent."""


class Replayed(Exception):
    """What a learner's function did in the sandbox, raised by the grader's replay of it
    (``attncourse.instructor.replay``) where the function itself would have raised."""

    def __init__(self, function: str, raised: str = "", not_implemented: bool = False,
                 stopped: float | None = None, unreadable: str = ""):
        """``unreadable``: what the function did, where the record of it cannot be read
        ("returned a value the grader cannot read (...)"): a fail, as its own words."""
        super().__init__(raised or unreadable)
        self.function, self.raised, self.not_implemented, self.stopped = function, raised, not_implemented, stopped
        self.unreadable = unreadable

    def verdict(self, label_of_call: str) -> Exception:
        if self.unreadable:  # what the function itself did, whatever the call's label (a hidden test's)
            return Failed(f"{self.function}() {self.unreadable}.")
        if self.stopped is not None:
            return Failed(f"{self.function}() did not return within the time budget of {self.stopped:g} s "
                          "(an endless loop?).")
        if self.not_implemented:
            return NotImplementedYet(f"{label_of_call} raised NotImplementedError: replace the stub's "
                                     "`raise` with your code.")
        return Failed(f"{label_of_call} raised {self.raised}")


class NotRecorded(Exception):
    """The grader's replay was asked for a call the learner's notebook did not record: the
    grader cannot tell, so the exercise needs an instructor's review."""


# Every exercise label -> its check. Filled by @exercise when a chapter's module is imported
# (on first use of one of its checks, by load_chapter_of, or by the package's load_all).
CHECKS: dict[str, Callable[..., None]] = {}
# Every exercise label -> the points it is worth (declared with its check; default 1).
POINTS: dict[str, float] = {}


def check_name(label: str) -> str:
    """The name of exercise ``label``'s check: the label less its chapter, dashes as
    underscores (``ch1-stable-softmax``: ``check.stable_softmax``)."""
    return label.split("-", 1)[-1].replace("-", "_")


def load_chapter_of(label: str) -> None:
    """Import the checks module of exercise ``label``'s chapter (``ch4-...``: ``ch4``), which
    declares that chapter's checks and predict exercises, unless ``label`` is declared
    already. A label of no chapter's module is left for the caller to report."""
    chapter = label.split("-", 1)[0]
    if label not in CHECKS and re.fullmatch(r"ch\d+", chapter):
        try:
            importlib.import_module(f"{__package__}.{chapter}")
        except ModuleNotFoundError as error:
            if error.name != f"{__package__}.{chapter}":
                raise


def exercise(label: str, *, points: float = 1):
    """Register ``evaluate(run, *answers) -> str`` as the check of exercise ``label``,
    worth ``points`` (an implement exercise whose check goes through :func:`inputs` earns
    the fraction of its inputs it gets right; see ``attncourse.instructor.gradebook.points``).

    The public check takes the answers (and an optional ``timeout=`` in seconds), prints
    its message, records it, applies the CI mode and returns None.
    """

    def register(evaluate):
        name = check_name(label)
        if evaluate.__name__ != name:
            raise ValueError(f"the check of exercise {label!r} must be named {name!r}")
        if label in CHECKS:
            raise ValueError(f"exercise {label!r} already has a check")
        if isinstance(points, bool) or not isinstance(points, (int, float)) or not points > 0:
            raise ValueError(f"exercise {label!r} must be worth a positive number of points, got {points!r}")
        POINTS[label] = float(points)

        @functools.wraps(evaluate)
        def check(*answers, timeout: float | None = None) -> None:
            _report(evaluate_check(label, "check", evaluate, answers, timeout))

        parameters = list(inspect.signature(evaluate).parameters.values())[1:]
        timeout_parameter = inspect.Parameter(
            "timeout", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="float | None"
        )
        vars(check)["__signature__"] = inspect.Signature(  # read by inspect.signature
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

        _report(evaluate_check(label, "hidden", evaluate, (), timeout))

    return run_now


# ---------------------------------------------------------------------------------------
# One input at a time: how the grader gives partial credit

_SELECTION = threading.local()  # per thread: a check runs in a worker thread of its own


def inputs(cases: list) -> list:
    """The inputs an implement check tries, each a tuple whose first item describes it
    ("the large scores [1000, 999, 0]"). A check loops over ``inputs(cases)``: normally
    every case; inside :func:`one_input` only case ``k``, so that the grader can judge each
    input alone (a wrong first input does not hide the others) and count those right."""
    _SELECTION.described = [str(case[0]) for case in cases]
    only = getattr(_SELECTION, "only", None)
    return list(cases) if only is None else list(cases[only:only + 1])


class one_input:
    """``with one_input(k) as selection:`` a check run inside sees only its input ``k``;
    afterwards ``selection.described`` lists every input's description (None if the check
    does not go through :func:`inputs`). Enter it in the thread that runs the check."""

    def __init__(self, index: int | None):
        self.index = index
        self.described: list[str] | None = None

    def __enter__(self):
        _SELECTION.only, _SELECTION.described = self.index, None
        return self

    def __exit__(self, *exc):
        self.described = _SELECTION.described
        _SELECTION.only, _SELECTION.described = None, None
        return False


# ---------------------------------------------------------------------------------------
# Running the learner's code


def _as_it_is(value: Any) -> Any:
    return value


# How the grader receives an answer and what a learner's function returns
# (attncourse.checks.wire, which the package registers here: wire imports this module). A
# check judges both as the grader will receive them, so that the notebook and the grader
# never disagree on their form.
_AS_SENT: dict[str, Callable[[Any], Any]] = {"answer": _as_it_is, "returned": _as_it_is}


def judge_as_sent(answer: Callable[[Any], Any], returned: Callable[[Any], Any]) -> None:
    """Let every check judge its answers as ``answer`` gives them (``wire.as_sent``) and
    what ``run`` returns as ``returned`` gives it (``wire.returned_as_sent``)."""
    _AS_SENT.update(answer=answer, returned=returned)


def evaluate_check(label, kind, evaluate, answers, timeout) -> Result:
    """The outcome of the check ``evaluate(run, *answers)`` of exercise ``label``: the whole
    check run in a worker thread under one time budget (``timeout`` seconds, or the
    default). ``kind``: "check", or "hidden" for a hidden test. The learner's notebook
    reports it (``exercise``, ``hidden_test``); the grader judges with it on a record
    (``attncourse.instructor.replay``).

    Everything a check does with the learner's answer (calling it, converting what it
    returns to an array, ``len``, attribute access, ``repr``) may run the learner's code,
    which may loop or raise anything, ``SystemExit`` too: all of it happens in the worker,
    and only plain strings come back to the caller's thread.
    """
    budget = time_budget(timeout)
    calling: list[str] = []  # the learner's function being called by run(), if any

    def run(fn, *args, name=None):
        label_of_call = name or _name_of(fn)
        calling.append(label_of_call)  # left in place when stopped: the message names it
        try:
            value = fn(*args)
            value = _AS_SENT["returned"](value)  # as the replay in the grader returns it
        except (Stop, NotRecorded):
            raise
        except Replayed as outcome:
            calling.pop()
            raise outcome.verdict(label_of_call) from None
        except NotImplementedError:
            calling.pop()
            raise NotImplementedYet(
                f"{label_of_call} raised NotImplementedError: replace the stub's `raise` with your code."
            ) from None
        except BaseException as error:  # learners' code may raise anything, SystemExit too
            calling.pop()
            raise Failed(f"{label_of_call} raised {describe(error)}") from None
        calling.pop()
        return value

    def check() -> tuple[str, str]:
        try:
            sent = tuple(_AS_SENT["answer"](answer) for answer in answers)
            return PASSED, _text(evaluate(run, *sent))
        except NotImplementedYet as reason:
            return NOT_IMPLEMENTED, _text(reason)
        except Failed as reason:
            return FAILED, _text(reason)
        except NotRecorded as reason:
            return NEEDS_REVIEW, _text(reason)
        except Stop:
            raise
        except Exception as bug:  # a bug in the check itself must not crash the notebook
            return FAILED, f"the check itself hit an error (please report it): {describe(bug)}"
        except BaseException as error:  # raised by the answer while the check examined it
            return FAILED, f"your answer raised {describe(error)} while the check examined it"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the message explains; numpy's warnings only clutter
        outcome, still_running = call_with_deadline(check, budget)
    if outcome is None:
        doing = f"{calling[-1]} did not return" if calling else "your answer did not let the check finish"
        still = (
            " It is still running in the background: restart the kernel to free the processor."
            if still_running
            else ""
        )
        outcome = FAILED, (f"{doing} within the time budget of {budget:g} s of processor time, or "
                           f"{CLOCK_BACKSTOP * budget:g} s by the clock (an endless loop, or a wait for what never "
                           f"comes?).{still}")
    status, message = outcome
    return Result(label, status, message, kind)


def time_budget(timeout: float | None) -> float:
    if timeout is None:
        setting = os.environ.get(TIMEOUT_VARIABLE, "")
        try:
            timeout = float(setting) if setting else DEFAULT_TIMEOUT
        except ValueError:
            raise ValueError(f"{TIMEOUT_VARIABLE}={setting!r} is not a number of seconds") from None
    if not timeout > 0:
        raise ValueError(f"a check's time budget must be positive, got {timeout!r}")
    return float(timeout)


# A check's budget is the processor time of the thread that runs it, so that a learner
# whose kernel shares a busy machine gets the same work done as one alone; the clock stops
# one that waits without working (for a lock, a socket, input) after this many budgets.
CLOCK_BACKSTOP = 3.0


def call_with_deadline(fn, budget: float, wall: float | None = None):
    """``(fn(), False)`` from a daemon thread, or ``(None, still_running)`` if it did not
    finish within ``budget`` seconds of that thread's processor time, or ``wall`` seconds
    (``CLOCK_BACKSTOP`` budgets) by the clock (it is then stopped). ``fn`` must not raise."""
    outcome: list = []
    clock: list[int] = []  # the worker's own processor-time clock, as it reads it

    spent: list[float] = []  # the worker's processor time once fn returned, as the worker reads it

    def target():
        clock.append(_cpu_clock_of(_get_ident()))
        try:
            with _errstate(all="ignore"):  # numpy's error state is per thread
                outcome.append(fn())
            spent.append(_thread_time())
        except Stop:
            pass

    worker = _Thread(target=target, name="attncourse check", daemon=True)
    backstop = _monotonic() + (CLOCK_BACKSTOP * budget if wall is None else wall)
    _start(worker)
    try:
        while _is_alive(worker):
            left = min(budget - _used(clock), backstop - _monotonic())
            if left <= 0:
                break
            _join(worker, left)
    finally:
        if _is_alive(worker):  # out of time, or the learner interrupted the kernel
            _stop(worker)
    # Whatever the waiting did (a learner's cell can change how a thread is joined), an
    # answer that took more than its budget did not return within it.
    over = (spent[0] if spent else _used(clock)) > budget or _monotonic() > backstop
    return (outcome[0], False) if outcome and not over else (None, _is_alive(worker) or bool(outcome))


def _used(clock: list[int]) -> float:
    """The processor time the worker whose clock is in ``clock`` has used (0 before it has
    said; its last reading is not needed once it has ended)."""
    try:
        return _clock_gettime(clock[0]) if clock else 0.0
    except OSError:  # the thread has just ended
        return 0.0


# The peak the sandbox measured for the call the grader's replay has just answered (see
# ``peak_memory``): the replay itself allocates nothing of the learner's.
_REPLAYED_PEAK = threading.local()


def peak_memory(run, fn, *args) -> tuple[Any, int]:
    """``(run(fn, *args), the most memory the call held at once beyond what it started with,
    in bytes)``, measured with tracemalloc (which counts numpy's arrays) where the learner's
    function runs; in the grader's replay, the figure the sandbox recorded for that call."""
    _REPLAYED_PEAK.value = None
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    try:
        result = run(fn, *args)
    finally:
        peak = tracemalloc.get_traced_memory()[1] - before
        if started:
            tracemalloc.stop()
    replayed = _REPLAYED_PEAK.value
    return result, int(replayed if replayed is not None else peak)


def replayed_peak(bytes_held: int | None) -> None:
    """What the grader's replay says the sandbox measured for the call it answers."""
    _REPLAYED_PEAK.value = bytes_held


def _stop(worker: threading.Thread) -> None:
    """Raise Stop inside ``worker`` at its next bytecode, and give it a second to end.

    This ends a Python loop, though not a call stuck in C code: such a worker runs on as a
    daemon thread until the kernel stops.
    """
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident or 0), ctypes.py_object(Stop))
    worker.join(1.0)


def _text(value) -> str:
    """``str(value)``, or a placeholder if the learner's object breaks ``str``."""
    try:
        return str(value)
    except Stop:
        raise
    except BaseException:
        return f"(a {type(value).__name__} that cannot be shown)"


def _name_of(fn) -> str:
    return f"{getattr(fn, '__name__', type(fn).__name__)}()"


def describe(error: BaseException, limit: int = 200) -> str:
    message = _text(error)
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    text = _LONE_SURROGATE.sub("\ufffd", " ".join(text.split()))  # one line, and one a kernel can send
    return text if len(text) <= limit else text[: limit - 3] + "..."


def show(values, decimals: int = 3) -> str:
    """``values`` rounded, on one line (a check's message is a single line)."""
    text = np.array2string(
        np.asarray(values), precision=decimals, suppress_small=True, threshold=20,
        edgeitems=2, separator=", ", max_line_width=10**6,
    )
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------
# Reporting


def _report(result: Result) -> None:
    """Print the message, append it to the log, apply the CI mode."""
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
    raise Failed(f"expected the function {name}, got {type_name(answer)}.{hint}")


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
        raise Failed(f"{what} returned {type_name(value)}, expected an array of numbers") from None
    if array.shape != tuple(shape):
        raise Failed(f"{what} returned an array of shape {array.shape}, expected shape {tuple(shape)}")
    return array


# One rule for every check that compares a learner's numbers with the reference's (issue 36,
# item 12). An answer computed in float64 must agree to RTOL, ATOL (np.isclose's form). An
# answer computed in float32 carries 24 bits and the rounding of every step that made it,
# so it is held to float32's precision instead: every entry within FLOAT32_UNITS units of
# float32's rounding (np.finfo(np.float32).eps) of the largest entry expected (or of 1, if
# every entry is smaller). 1024 units, 1.2e-4: the checks' inputs hold scores near 1000, and
# float32's numbers there are 6.1e-5 apart, so a stable float32 softmax of them (one through
# a log-sum-exp of 1000.3, say) may be off by 3e-5. The mistakes the checks name still
# differ by more on at least one input, in float32 too (tests/test_checks_float32.py). An
# answer computed partly in float32 and handed back in float64 (a float32 head scaled by
# np.sqrt of an int) shows no trace of float32 and is held to float64's precision: holding
# every answer to float32's let a mistake pass on some draws (no scaling, a denominator off
# by 1e-5), and a verdict must not depend on the draw.
RTOL, ATOL = 1e-6, 1e-9
FLOAT32_UNITS = 1024
_FLOAT32_TOLERANCE = FLOAT32_UNITS * float(np.finfo(np.float32).eps)


def computed_in_float32(answer) -> bool:
    """Whether every finite entry of ``answer`` is a float32 number, as every array computed
    in float32 (or float16) is, whatever dtype it is handed back in (a float64 copy, the
    grader's record of it). Other entries (NaN, inf) say nothing either way."""
    return _representable(answer, np.float32)


def computed_in_float16(answer) -> bool:
    """Whether every finite entry of ``answer`` is a float16 number (as for float32, above)."""
    return _representable(answer, np.float16)


def _representable(answer, dtype) -> bool:
    array = np.asarray(answer, dtype=np.float64)
    finite = array[np.isfinite(array)]
    with np.errstate(over="ignore"):  # a float64 beyond dtype's range is not one of its numbers
        return bool(np.array_equal(finite.astype(dtype).astype(np.float64), finite))


def tolerance(answer, expected, like=None) -> dict[str, float]:
    """np.isclose's ``rtol`` and ``atol`` for comparing ``answer`` with ``expected``, set by
    the precision ``like`` (the learner's array; ``answer`` itself by default) was computed
    in: RTOL and ATOL for float64, float32's precision for float32 (see above)."""
    if not computed_in_float32(answer if like is None else like):
        return {"rtol": RTOL, "atol": ATOL}
    expected = np.abs(np.asarray(expected, dtype=np.float64))
    largest = float(expected[np.isfinite(expected)].max(initial=1.0))
    return {"rtol": 0.0, "atol": _FLOAT32_TOLERANCE * largest}


def close(answer, expected, like=None, *, equal_nan: bool = False) -> bool:
    """Whether ``answer`` agrees with ``expected`` (same shape, or broadcastable as
    np.allclose allows) to the precision it was computed in (:func:`tolerance`). Every
    check compares arrays through this, mistakes' variants included, so that a float32
    answer passes where it is right and is told its mistake where it is not."""
    answer, expected = np.asarray(answer, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    return bool(np.allclose(answer, expected, equal_nan=equal_nan, **tolerance(answer, expected, like)))


def precision_problem(answer, expected) -> str:
    """For an ``answer`` that :func:`close` refuses but that is ``expected`` rounded, a
    sentence saying which precision it lost (empty otherwise): one computed partly in
    float32 and handed back in float64 agrees to float32's precision only, and so does one
    with a small slip (an epsilon of 1e-5), which the sentence names too; one computed in
    float16 (11 bits) to about 1e-3. A hint about the algorithm would mislead either."""
    answer, expected = np.asarray(answer, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if answer.shape != expected.shape or not np.isfinite(answer).all() or close(answer, expected):
        return ""
    like_float32 = np.ones_like(expected, dtype=np.float32)  # float32's tolerance for this expected
    if computed_in_float16(answer) and np.allclose(answer, expected, rtol=0.0, atol=4e-3 * max(
            1.0, float(np.abs(expected).max(initial=0.0)))):
        return (f"your answer was computed in float16, whose 11 bits cannot hold this check's precision "
                f"({difference(answer, expected)}): compute in float32 or float64.")
    if not computed_in_float32(answer) and close(answer, expected, like=like_float32):
        return (f"your numbers agree with the reference only to about float32's precision "
                f"({difference(answer, expected)}): either part of your computation ran in float32 (an "
                "array cast to float32, a float32 tensor) and the rest in float64, or a small step differs "
                "from the formula (an added epsilon, a slightly different scale). Compute every step in "
                "float64 (numpy's default) or every step in float32, and check each constant.")
    return ""


def beyond_float32(answer, *inputs) -> str:
    """For an ``answer`` computed in float32 (:func:`computed_in_float32`) from ``inputs``
    that float32 cannot hold, a sentence saying so (empty otherwise): no float32 answer
    can be right there, and a hint about the algorithm would mislead."""
    largest = max((float(np.nanmax(np.abs(np.where(np.isinf(x), 0.0, x)), initial=0.0))
                   for x in map(np.asarray, inputs)), default=0.0)
    if largest <= np.finfo(np.float32).max or not computed_in_float32(answer):
        return ""
    return (f"Your answer was computed in float32, whose largest number is "
            f"{float(np.finfo(np.float32).max):.2g}, and this input holds {largest:.2g}: "
            "compute in float64 (numpy's default).")


def difference(answer, expected) -> str:
    """The largest difference between two arrays of one shape, for a message in which
    both, rounded, may look the same ("the largest difference is 2.4e-05")."""
    with np.errstate(invalid="ignore"):
        gap = np.abs(np.asarray(answer, dtype=np.float64) - np.asarray(expected, dtype=np.float64))
    return f"the largest difference is {np.nanmax(gap, initial=0.0):.2g}"


def short_repr(value, limit: int = 60) -> str:
    try:
        text = " ".join(repr(value).split())
    except Exception:  # a learner's object may break even repr
        return type_name(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Opaque:
    """What the grader sees of a learner's answer that was not data (see
    ``attncourse.checks.wire``): equal to nothing, an array of nothing."""

    def __init__(self, description: str):
        self.description = description

    def __repr__(self) -> str:
        return f"<{self.description}, not data>"


def is_real_number(value) -> bool:
    """Whether ``value`` is one real number, in any of the forms a learner may hold one: a
    Python or numpy number, a Fraction, a Decimal, sympy's or mpmath's, a 0-d numpy array
    of numbers. Not a bool (True is no number a check asks for) and not a complex number.
    Every check that asks for one number asks this: the grader receives such a number as a
    float (``wire``), so a check that refused one form would judge the notebook and the
    grader apart."""
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "iuf"
    if isinstance(value, (bool, np.bool_, complex, np.complexfloating)):
        return False
    return isinstance(value, (Real, np.number, Decimal))


def as_float(value) -> float:
    """A real number (``is_real_number``) as a float: one too large for a float
    (``10**400``) is an infinity of its sign, never an OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def type_name(value) -> str:
    if isinstance(value, Opaque):
        return f"{value.description} (not data)"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    if callable(value) and not isinstance(value, type):  # the learner's, or the grader's stand-in for it
        return "a function"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
