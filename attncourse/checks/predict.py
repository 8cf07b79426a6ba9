"""Predict-a-number exercises: one declaration gives the check and the expected answer.

A predict exercise asks the learner to write down a number before computing it. The
chapter's check module declares it once::

    predict_doubling = predict_exercise(
        "ch1-predict-doubling",
        answer=float(weights_after[0, 0]),   # computed by the course's code, never typed
        tolerance=0.01,
        hint="Doubling every embedding multiplies every score by ...",
        explanation="The scores are multiplied by 4, like a temperature of 1/4 ...",
    )

and the notebook calls ``check.predict_doubling(prediction)``. The first miss gives the
hint, never the answer; from the second miss on the answer comes with its explanation
(so does the solution dropdown on the page, for a learner who asks). ``PREDICTIONS`` keeps
every declaration by label: the one source of truth for anything else that shows the
exercise (an answer box on the static page, the instructor's list).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from numbers import Real

import numpy as np

from attncourse.checks.core import Failed, NotImplementedYet, exercise


@dataclass(frozen=True)
class Prediction:
    """What a predict exercise expects: ``answer`` within ``tolerance`` (absolute)."""

    label: str
    answer: float
    tolerance: float
    hint: str
    explanation: str

    def accepts(self, value: float) -> bool:
        return abs(value - self.answer) <= self.tolerance


ATTEMPTS_MIMETYPE = "application/vnd.attncourse.attempts+json"

# Every predict exercise's label -> its declaration. Filled at import by predict_exercise.
PREDICTIONS: dict[str, Prediction] = {}

class _MissCounter:
    """Misses per label in this kernel: the hint comes first, the answer from the second miss."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self.attempts: dict[str, list[dict]] = {}

    def clear(self) -> None:
        self._counts.clear()
        self.attempts.clear()

    def add(self, label: str) -> int:
        self._counts[label] += 1
        return self._counts[label]


_misses = _MissCounter()


def forget_misses() -> None:
    """Start counting misses afresh (the grader judges each learner's answer on its own)."""
    _misses.clear()


def predict_exercise(label: str, *, answer: float, tolerance: float, hint: str, explanation: str):
    """Declare the predict exercise ``label`` and return its check (see the module doc)."""
    if not (isinstance(answer, Real) and math.isfinite(answer)):
        raise ValueError(f"the answer of {label!r} must be a finite number, got {answer!r}")
    if not (isinstance(tolerance, Real) and tolerance > 0):
        raise ValueError(f"the tolerance of {label!r} must be positive, got {tolerance!r}")
    prediction = Prediction(label, float(answer), float(tolerance), hint, explanation)

    def evaluate(run, value) -> str:
        number, problem = run(_as_number, value, name="reading your prediction")
        if problem:
            raise Failed(problem)
        return _judge(prediction, number)

    evaluate.__name__ = label.split("-", 1)[-1].replace("-", "_")
    evaluate.__doc__ = f"Exercise {label}: predict a number (within {tolerance:g})."
    check = exercise(label)(evaluate)
    PREDICTIONS[label] = prediction
    return check


def _as_number(value) -> tuple[float | None, str]:
    """``(the learner's prediction as a float, "")``, or ``(None, what is wrong with it)``.

    The number is None while the stub is untouched. Runs under the check's time budget: a
    learner's object may loop or raise in ``__float__``.
    """
    if value is None or value is Ellipsis:
        return None, ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.number)):
        return None, f"write your prediction as one number, such as 0.25; got {_kind(value)}."
    number = float(value)
    if not math.isfinite(number):
        return None, f"write your prediction as a finite number; got {number}."
    return number, ""


def _judge(prediction: Prediction, value: float | None) -> str:
    if value is None:
        raise NotImplementedYet("write your prediction as a number: prediction = 0.25, say.")
    said = f"you predicted {_number(value)}"
    if prediction.accepts(value):
        _keep_attempt(prediction.label, value, right=True, revealed=False)
        return f"{said}; the answer is {_number(prediction.answer)}. {prediction.explanation}"
    if _misses.add(prediction.label) == 1:
        _keep_attempt(prediction.label, value, right=False, revealed=False)
        raise Failed(f"{said}, which is not within {prediction.tolerance:g} of the answer. "
                     f"Hint: {prediction.hint} Then try again.")
    _keep_attempt(prediction.label, value, right=False, revealed=True)
    raise Failed(f"{said}; the answer is {_number(prediction.answer)}. {prediction.explanation}")


def _keep_attempt(label: str, value: float, right: bool, revealed: bool) -> None:
    """Note the attempt, and in a Jupyter kernel save every attempt so far in the check
    cell's output (no text: nothing shows), where ``grade`` reads them in the submitted
    notebook. A kernel cannot write the notebook's metadata; an output is saved with it."""
    attempts = _misses.attempts.setdefault(label, [])
    attempts.append({"value": value, "right": right, "revealed": revealed})
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and getattr(shell, "kernel", None) is not None:
        display({ATTEMPTS_MIMETYPE: {"exercise": label, "attempts": list(attempts)}, "text/plain": ""}, raw=True)


def _number(value: float) -> str:
    """A number as a reader writes it: 655,360 rather than 6.554e+05; 0.1235 to 4 digits."""
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.4g}"


def _kind(value) -> str:
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    return f"a {type(value).__name__}"
