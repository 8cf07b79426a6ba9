"""What every explorer shares: the error it raises on input it cannot show, and the
traits that carry arrays and a tune exercise's goal between Python and the browser."""

from __future__ import annotations

import numpy as np
import traitlets

__all__ = ["InvalidExplorerInput", "goal_trait", "matrix_trait", "result_trait"]


class InvalidExplorerInput(traitlets.TraitError, ValueError):
    """An explorer input that cannot be shown: raised by the constructor and by an
    assignment, which then leaves the explorer unchanged."""


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
