"""Numbers stated as bounds: rounded towards the side the sentence claims.

A sentence that says "at least 0.9997" must not print 0.99965 rounded up, nor "below 1.4"
a largest value of 1.444 rounded down: ``lower_bound`` rounds down and ``upper_bound``
rounds up, to ``decimals`` places, so the printed number is a true bound.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def lower_bound(value: float, decimals: int) -> float:
    """``value`` rounded down to ``decimals`` places (a number it is at least).

    >>> lower_bound(0.99965287, 4)
    0.9996
    """
    return _rounded(value, decimals, math.floor)


def upper_bound(value: float, decimals: int) -> float:
    """``value`` rounded up to ``decimals`` places (a number it is at most).

    >>> upper_bound(1.4439, 1)
    1.5
    """
    return _rounded(value, decimals, math.ceil)


def _rounded(value: float, decimals: int, direction) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)):
        raise TypeError(f"a bound must be a real number, got {type(value).__name__} {value!r}")
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"decimals must be a whole number of places, got {type(decimals).__name__} {decimals!r}")
    value = float(value)
    if not math.isfinite(value) or decimals < 0:
        raise ValueError(f"a bound needs a finite number and 0 or more decimals, got {value!r} and {decimals!r}")
    scale = 10 ** decimals
    # round() first: 0.29 * 100 is 28.999999999999996, which floor would take to 0.28
    return direction(round(value * scale, 9)) / scale
