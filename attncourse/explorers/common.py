"""What every explorer shares: the error it raises on input it cannot show, the check of
an array input, and the traits that carry arrays and a tune exercise's goal between
Python and the browser."""

from __future__ import annotations

import numpy as np
import traitlets

__all__ = ["InvalidExplorerInput", "finite_array", "goal_trait", "matrix_trait", "result_trait"]


class InvalidExplorerInput(traitlets.TraitError, ValueError):
    """An explorer input that cannot be shown: raised by the constructor and by an
    assignment, which then leaves the explorer unchanged."""


def finite_array(value, name: str, fits, layout: str) -> np.ndarray:
    """``value`` as a float64 array, once it is numeric, of a shape that ``fits(shape)``
    accepts (``layout`` says which in the message) and finite; else InvalidExplorerInput
    naming ``name``.

    >>> finite_array([1, 2], "x", lambda shape: len(shape) == 1, "a vector (seq,)").tolist()
    [1.0, 2.0]
    """
    array = np.asarray(value)
    if array.dtype == object or not np.issubdtype(array.dtype, np.number):
        raise InvalidExplorerInput(f"{name} must be numeric, got dtype {array.dtype}")
    if not fits(array.shape):
        raise InvalidExplorerInput(f"{name} must be {layout}, got shape {array.shape}")
    if not np.isfinite(array).all():
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])  # the first one
        raise InvalidExplorerInput(f"{name} must be finite, got {array[where]} at index {where}")
    return array.astype(np.float64)


def matrix_trait(dtype=float):
    """A numpy array in Python, nested lists (empty for None) in the browser."""
    return traitlets.Any(None, allow_none=True).tag(
        sync=True,
        to_json=lambda value, widget: [] if value is None else np.asarray(value, dtype).tolist(),
        from_json=lambda value, widget: None if not value else np.asarray(value),
    )


def result_trait():
    """Recomputed in Python from the inputs; never synced, never assigned."""
    return traitlets.Any(None, allow_none=True, read_only=True)


def goal_trait():
    """A tune exercise's goal (attncourse.checks.tune), sent to the browser as its JSON."""
    return traitlets.Any(None, allow_none=True).tag(
        sync=True, to_json=lambda value, widget: None if value is None else value.as_json())
