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
  ``{"exercise", "status", "message", "kind"}`` (``grade`` does not read it: it judges
  data the notebook records, see :mod:`attncourse.checks.wire`).
* ``ATTNCOURSE_CHECK_TIMEOUT``: the time budget of one check in seconds (default 10).

The machinery lives in :mod:`attncourse.checks.core`; each chapter's checks in their own
module (``ch1``, ``ch2``, ...), imported on first use through ``_HOMES`` below, so that a
chapter loads (and its execution cache depends on) its own checks and maths alone. Code
that needs every check (the instructor's tools) calls :func:`load_all`. Adding the check of
a new exercise (label ``chN-some-name`` in the notebook) is one function in ``chN.py``,
named like the label without its chapter prefix, and its line in ``_HOMES``::

    @exercise("chN-some-name")
    def some_name(run, answer):
        '''What the exercise asks; what the check tries.'''
        fn = expect_function(answer, "some_name")
        value = run(fn, inputs)          # the learner's code, time-limited
        if wrong(value):
            raise Failed("what is wrong, and a hint")
        return "why this counts as a pass"

``run`` calls the learner's code safely; ``Failed`` and ``NotImplementedYet`` end the
check with that message; the returned string is the message of a pass. Call the learner's
functions only through ``run``, on inputs the check makes itself (seeded, never random
without a seed): ``grade`` replays those calls from the outputs a learner's notebook
recorded, looked up by their inputs. ``show``, ``type_name``, ``short_repr`` and
``describe`` format values and errors for a message. Instructors' hidden
tests use :func:`hidden_test`.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable

from attncourse.checks import core, wire
from attncourse.checks.core import (
    CHECKS,
    DEFAULT_TIMEOUT,
    FAILED,
    LOG_VARIABLE,
    MODE_VARIABLE,
    NEEDS_REVIEW,
    NOT_IMPLEMENTED,
    PASSED,
    TIMEOUT_VARIABLE,
    CheckError,
    Failed,
    NotImplementedYet,
    Result,
    describe,
    exercise,
    expect_array,
    expect_function,
    hidden_test,
    load_chapter_of,
    short_repr,
    show,
    type_name,
)

# Public check -> the chapter module that defines it (tests/test_checks.py keeps this table
# equal to the checks the modules declare; tools/chapter_cache.py reads it).
_HOMES = {
    "pool_prefers_badminton": "ch1",
    "predict_doubling": "ch1",
    "stable_softmax": "ch1",
    "ball_ignores_it": "ch2",
    "predict_weight_back": "ch2",
    "stationary_distribution": "ch2",
    "attention_head": "ch3",
    "it_attends_to_ball": "ch3",
    "predict_rotation": "ch3",
    "indispensable_head": "ch4",
    "multi_head_attention": "ch4",
    "predict_parameter_count": "ch4",
    "attention_rollout": "ch5",
    "cycle_above_two": "ch5",
    "predict_cycle_ratio": "ch5",
    "conv1d_as_attention": "ch6",
    "predict_heads_for_5x5": "ch6",
    "predict_heads_for_dilated_3x3": "ch6",
    "tune_alpha": "ch6",
    "layer_attention": "ch7",
    "most_important_head": "ch7",
    "predict_rank": "ch7",
    "predict_sinusoidal_dot": "ch8",
    "rope": "ch8",
    "tune_previous_token": "ch8",
    "online_softmax": "ch9",
    "predict_cache_size": "ch9",
    "tune_blocks": "ch9",
}

__all__ = [
    "CheckError",
    "CHECKS",
    "DEFAULT_TIMEOUT",
    "describe",
    "exercise",
    "expect_array",
    "expect_function",
    "FAILED",
    "Failed",
    "hidden_test",
    "load_all",
    "load_chapter_of",
    "LOG_VARIABLE",
    "MODE_VARIABLE",
    "NEEDS_REVIEW",
    "NOT_IMPLEMENTED",
    "NotImplementedYet",
    "PASSED",
    "Result",
    "short_repr",
    "show",
    "TIMEOUT_VARIABLE",
    "type_name",
    *_HOMES,
]


core.judge_as_sent(wire.as_sent, wire.returned_as_sent)  # in the notebook as in the grader


def load_all() -> dict[str, Callable[..., None]]:
    """Every chapter's checks, imported: exercise label -> its check (``core.CHECKS``).
    The instructor's tools call it; a chapter loads its own checks by using them."""
    for module in sorted(set(_HOMES.values())):
        importlib.import_module(f"{__name__}.{module}")
    return core.CHECKS


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # a submodule: check.ch7
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
