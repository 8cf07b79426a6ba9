"""The shape every implement check shares: call the learner's function on copies of the
inputs and fail, with one message, if it changed them (a pure function leaves them be)."""

from __future__ import annotations

import numpy as np

from attncourse.checks.core import Failed


def run_on_copies(run, fn, arrays, what: str):
    """``run(fn, *copies)`` on fresh copies of ``arrays``; Failed if any copy changed.

    ``what`` names the call in the message ("stable_softmax of the scores [1, 2, 3]").
    """
    copies = [np.array(array, copy=True) for array in arrays]
    result = run(fn, *copies)
    if not all(np.array_equal(copy, array) for copy, array in zip(copies, arrays)):
        which = "its input" if len(arrays) == 1 else "one of its inputs"
        raise Failed(
            f"{what} changed {which}. Work on new arrays (x = x - ...) "
            "rather than in place (x -= ...)."
        )
    return result
