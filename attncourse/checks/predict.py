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

How numbers are read and written, and what a prediction gets, is decided here once:
``read_number`` (what a reader types), ``format_number`` (how every number is shown) and
``judge`` (the verdict and its text). The answer box's JavaScript
(attncourse/explorers/answer_box.js) mirrors the three, and tests/test_answer_box.py runs
both on one table of inputs: the box and the check say the same thing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from numbers import Real

from attncourse.checks.core import (
    Failed,
    NotImplementedYet,
    check_name,
    exercise,
    is_real_number,
    short_repr,
)


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


# Every predict exercise's label -> its declaration. Filled at import by predict_exercise.
PREDICTIONS: dict[str, Prediction] = {}

ATTEMPTS_MIMETYPE = "application/vnd.attncourse.attempts+json"

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

    def count(self, label: str) -> int:
        return self._counts[label]


_misses = _MissCounter()


def forget_misses() -> None:
    """Start counting misses afresh (the grader judges each learner's answer on its own)."""
    _misses.clear()


def predict_exercise(label: str, *, answer: float, tolerance: float, hint: str, explanation: str,
                     points: float = 1):
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

    evaluate.__name__ = check_name(label)
    evaluate.__doc__ = f"Exercise {label}: predict a number (within {tolerance:g})."
    check = exercise(label, points=points)(evaluate)
    PREDICTIONS[label] = prediction
    return check


def _as_number(value) -> tuple[float | None, str]:
    """``(the learner's prediction as a float, "")``, or ``(None, what is wrong with it)``.

    The number is None while the stub is untouched. Runs under the check's time budget: a
    learner's object may loop or raise in ``__float__``.
    """
    if value is None or value is Ellipsis:
        return None, ""
    if isinstance(value, str):  # read as the answer box reads it
        number, _ = read_number(value)
        if number is None:
            return None, f"write your prediction as one number, such as 0.25; got {_kind(value)}."
        return number, ""
    if not is_real_number(value):
        return None, f"write your prediction as one number, such as 0.25; got {_kind(value)}."
    number = finite_float(value)
    if number is None:
        return None, f"write your prediction as a finite number; got {short_repr(value)}."
    return number, ""


def finite_float(value) -> float | None:
    """``value`` as a finite float, or None for NaN, an infinity, an integer too large for
    a float (``10**400``), a bool or anything that is not one real number. Decimal("2.5")
    and np.array(2.5) are real numbers. Never raises for such a value (what
    ``math.isfinite`` does for ``10**400``); a learner's own ``__float__`` may, and runs
    under the check's time budget.

    >>> import numpy as np
    >>> [finite_float(v) for v in (0.25, 3, 10**400, float("nan"), True, "1", Decimal("2.5"), np.array(2.5))]
    [0.25, 3.0, None, None, None, None, 2.5, 2.5]
    """
    if not is_real_number(value):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return number if math.isfinite(number) else None


def _judge(prediction: Prediction, value: float | None) -> str:
    if value is None:
        raise NotImplementedYet("write your prediction as a number: prediction = 0.25, say.")
    verdict, text = judge(prediction, value, _misses.count(prediction.label))
    _keep_attempt(prediction.label, value, right=verdict == "right", revealed=verdict == "answer")
    if verdict == "right":
        return text
    _misses.add(prediction.label)
    raise Failed(text)


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


def judge(prediction: Prediction, value: float, misses: int) -> tuple[str, str]:
    """``(verdict, text)`` for a prediction after ``misses`` earlier misses: "right", or
    "hint" on a first miss (the hint, never the answer), or "answer" from the second miss
    on (the answer and its explanation).

    >>> judge(Prediction("x", 655360.0, 0.5, "Count.", "Four heads."), 655360.0, 0)
    ('right', 'you predicted 655,360; the answer is 655,360. Four heads.')
    """
    said = f"you predicted {format_number(value)}"
    if prediction.accepts(value):
        return "right", f"{said}; the answer is {format_number(prediction.answer)}. {prediction.explanation}"
    if misses == 0:
        return "hint", (f"{said}, which is not within {format_number(prediction.tolerance)} of "
                        f"the answer. Hint: {prediction.hint} Then try again.")
    return "answer", f"{said}; the answer is {format_number(prediction.answer)}. {prediction.explanation}"


SIGNIFICANT = 4  # digits shown of a number that is not whole


def format_number(value: float) -> str:
    """A number as a reader writes it: whole numbers in full with thousands separators
    (655,360, never 6.554e+05), others to 4 significant digits (0.1235, 12.5; 12,350 once
    rounded to a whole number), very small or large ones as 1.235e-05. Ties round away
    from zero, as JavaScript's toExponential does.

    >>> [format_number(v) for v in (655360.0, 0.123456, -12.5, 12345.6, 0.0000123456, 0.0)]
    ['655,360', '0.1235', '-12.5', '12,350', '1.235e-05', '0']
    """
    if value == 0:
        return "0"
    sign, magnitude = ("-" if value < 0 else ""), abs(value)
    if magnitude.is_integer() and magnitude < 1e15:
        return f"{sign}{int(magnitude):,}"
    exact = Decimal(magnitude)
    exponent = exact.adjusted()
    mantissa = exact.scaleb(-exponent).quantize(Decimal("1.000"), rounding=ROUND_HALF_UP)
    if mantissa >= 10:  # 9.9996 rounds up to 10.00
        mantissa, exponent = Decimal("1.000"), exponent + 1
    digits = str(mantissa).replace(".", "")  # 4 digits, the first not 0
    if 3 <= exponent < 15:  # a whole number once rounded
        return f"{sign}{int(digits) * 10 ** (exponent - 3):,}"
    if -4 <= exponent < 3:
        fixed = ("0" * (-exponent) + digits) if exponent < 0 else digits
        point = len(fixed) - (3 - exponent)  # 3 - exponent decimals
        return sign + (fixed[:point] + "." + fixed[point:]).rstrip("0").rstrip(".")
    short = (digits[0] + "." + digits[1:]).rstrip("0").rstrip(".")
    return f"{sign}{short}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


# What a reader may type, whole (see read_number). One sign, then digits.
_PLAIN = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?")
_GROUPED = re.compile(r"([+-]?)([1-9]\d{0,2}(?:([, _'])\d{3})(?:\3\d{3})*)(\.\d+)?")
_DOTS_AND_COMMA = re.compile(r"([+-]?)(\d{1,3}(?:\.\d{3})+),(\d+)")
_DECIMAL_COMMA = re.compile(r"([+-]?\d*),(\d+)")
_TIMES_TEN = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))\s*[x*]\s*10\s*(?:\^|\*\*)\s*([+-]?\d+)")
_POWER = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))\s*(?:\^|\*\*)\s*([+-]?\d+)")
EXAMPLES = "0.25, 1/4, 655,360, 6.5e5 or 2^16"


def _one_number(text: str) -> float | None:
    """One number in any form read_number accepts but a fraction or a percentage."""
    if _PLAIN.fullmatch(text):
        return float(text)
    if match := _GROUPED.fullmatch(text):
        sign, whole, separator, decimals = match.groups()
        return float(sign + whole.replace(separator, "") + (decimals or ""))
    if match := _DOTS_AND_COMMA.fullmatch(text):
        sign, whole, decimals = match.groups()
        return float(f"{sign}{whole.replace('.', '')}.{decimals}")
    if match := _DECIMAL_COMMA.fullmatch(text):
        return float(f"{match.group(1)}.{match.group(2)}")
    if match := _TIMES_TEN.fullmatch(text):
        return float(f"{match.group(1)}e{match.group(2)}")
    if match := _POWER.fullmatch(text):
        base, exponent = match.groups()
        if base.lstrip("+-") == "10":
            return float(f"{base[:-2]}1e{exponent}")
        try:
            return float(base) ** int(exponent)
        except (OverflowError, ZeroDivisionError):
            return math.inf
    return None


def read_number(text: str) -> tuple[float | None, str]:
    """A prediction typed as text: ``(its value, "")``, or ``(None, what was understood)``.

    Read as a person means them: a decimal point or comma (0.25, 0,25), thousands
    separators (655,360; 655 360; 655_360; 1.234,5), exponents (6.5e5, 6.5 x 10^5, 2^16,
    10**-3), a fraction (1/4, 3 / 8) or a percentage (25%). "1,250" has a thousands
    separator: it is 1250 (the reply says so), 1,25 is 1.25.

    >>> [read_number(t)[0] for t in ("655,360", "0,25", "6.5 x 10^5", "2^16", "1/4", "25%")]
    [655360.0, 0.25, 650000.0, 65536.0, 0.25, 0.25]
    >>> read_number("about a third")[1]
    'Could not read "about a third" as one number: write it like 0.25, 1/4, 655,360, 6.5e5 or 2^16.'
    """
    shown = " ".join(text.split())[:40]
    cleaned = (shown.lower().replace("\u2212", "-").replace("\u00d7", "x")
               .replace("\u00b7", "x").replace("\u22c5", "x"))
    if not cleaned:
        return None, f"Write your prediction as one number, such as {EXAMPLES}."
    scale = 1.0
    if cleaned.endswith("%"):
        cleaned, scale = cleaned[:-1].rstrip(), 100.0
    parts = [part.strip() for part in cleaned.split("/")]
    read = [_one_number(part) for part in parts]
    values = [value for value in read if value is not None]
    if len(parts) > 2 or len(values) < len(read):
        return None, f'Could not read "{shown}" as one number: write it like {EXAMPLES}.'
    if len(values) == 2 and values[1] == 0:
        return None, f'Read "{shown}" as {format_number(values[0])} divided by 0, which is no number.'
    value = (values[0] / values[1] if len(values) == 2 else values[0]) / scale
    if not math.isfinite(value):
        return None, f'Read "{shown}" as a number too large to write down: try a smaller one.'
    return value, ""


def _kind(value) -> str:
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    return f"a {type(value).__name__}"
