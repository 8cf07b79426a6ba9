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
module (``ch1``, ``ch2``, ...), re-exported here. Adding the check of a new exercise (label
``chN-some-name`` in the notebook) is one function in ``chN.py``, named like the label
without its chapter prefix::

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

from attncourse.checks.ch1 import (
    pool_prefers_badminton,
    predict_doubling,
    stable_softmax,
)
from attncourse.checks.ch2 import (
    ball_ignores_it,
    predict_weight_back,
    stationary_distribution,
)
from attncourse.checks.ch3 import (
    attention_head,
    it_attends_to_ball,
    predict_rotation,
)
from attncourse.checks.ch4 import (
    indispensable_head,
    multi_head_attention,
    predict_parameter_count,
)
from attncourse.checks.ch5 import (
    attention_rollout,
    cycle_above_two,
    predict_cycle_ratio,
)
from attncourse.checks.ch6 import (
    conv1d_as_attention,
    predict_heads_for_5x5,
    predict_heads_for_dilated_3x3,
    tune_alpha,
)
from attncourse.checks.ch7 import (
    layer_attention,
    most_important_head,
    predict_rank,
)
from attncourse.checks.ch8 import (
    predict_sinusoidal_dot,
    rope,
    tune_previous_token,
)
from attncourse.checks.ch9 import (
    online_softmax,
    predict_cache_size,
    tune_blocks,
)
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
    short_repr,
    show,
    type_name,
)

__all__ = [
    "CHECKS",
    "CheckError",
    "DEFAULT_TIMEOUT",
    "FAILED",
    "Failed",
    "LOG_VARIABLE",
    "MODE_VARIABLE",
    "NEEDS_REVIEW",
    "NOT_IMPLEMENTED",
    "NotImplementedYet",
    "PASSED",
    "Result",
    "TIMEOUT_VARIABLE",
    "attention_head",
    "attention_rollout",
    "ball_ignores_it",
    "conv1d_as_attention",
    "cycle_above_two",
    "describe",
    "exercise",
    "expect_array",
    "expect_function",
    "hidden_test",
    "indispensable_head",
    "it_attends_to_ball",
    "layer_attention",
    "most_important_head",
    "multi_head_attention",
    "online_softmax",
    "pool_prefers_badminton",
    "predict_cache_size",
    "predict_cycle_ratio",
    "predict_doubling",
    "predict_heads_for_5x5",
    "predict_heads_for_dilated_3x3",
    "predict_parameter_count",
    "predict_rank",
    "predict_rotation",
    "predict_sinusoidal_dot",
    "predict_weight_back",
    "rope",
    "short_repr",
    "show",
    "stable_softmax",
    "stationary_distribution",
    "tune_alpha",
    "tune_previous_token",
    "tune_blocks",
    "type_name",
]
