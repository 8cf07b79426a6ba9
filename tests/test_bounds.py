"""attncourse.bounds: a number stated as a bound is one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attncourse.bounds import lower_bound, upper_bound


@given(st.floats(-1e6, 1e6, allow_nan=False), st.integers(0, 6))
def test_the_bounds_hold_and_are_within_one_step(value, decimals):
    low, high = lower_bound(value, decimals), upper_bound(value, decimals)
    step = 10.0 ** -decimals
    assert low <= value + 1e-9 * max(1.0, abs(value)) and high >= value - 1e-9 * max(1.0, abs(value))
    assert high - low <= step + 1e-9 * max(1.0, abs(value))


def test_the_chapters_cases_round_towards_the_claim():
    assert lower_bound(0.99965287, 4) == 0.9996 and upper_bound(1.4439, 1) == 1.5
    assert upper_bound(0.01466, 2) == 0.02 and lower_bound(0.29, 2) == 0.29


@pytest.mark.parametrize("value, decimals, error, expected", [
    (float("nan"), 2, ValueError, "finite"), (1.0, -1, ValueError, "0 or more"),
    (1.0, 1.5, TypeError, "whole number"), (1.0, True, TypeError, "whole number"), ("3", 2, TypeError, "real number"),
])
def test_bad_input_is_named(value, decimals, error, expected):
    with pytest.raises(error, match=expected):
        lower_bound(value, decimals)
