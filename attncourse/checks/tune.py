"""Tune exercises: one declaration of the goal, read by the check and by the explorer.

A tune exercise asks the learner to edit an explorer's matrices until some cells of its
views meet conditions. The chapter's check module declares the goal once::

    goal = tune_goal(
        "ch2-ball-ignores-it",
        "Make it give ball more than 0.4 ...",
        conditions=(Condition(Cell("weights", "it", "ball"), ">", 0.4), ...),
        fixed_rows={"He": X[0], ...},      # rows of X the learner may not change
        bounds={"X": (-10.0, 10.0)},       # every entry of X within [-10, 10]
    )

The check decides pass or fail with ``goal.holds`` (and words its hints itself); the
explorer given ``goal=`` shows the sentence with a checkmark that the browser evaluates
on every edit (static/goal.js, the same rules: tests/test_tune_goals.py runs both).
``GOALS`` keeps every declaration by label, for the pages' tests.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from attncourse.checks.core import Failed, NotImplementedYet, _show, expect_array

__all__ = ["GOALS", "Cell", "Condition", "CycleRatio", "Goal", "expect_edited_embeddings", "tune_goal"]

COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
# The views a condition can read, and the letter the chapters give each matrix.
GOAL_VIEWS = {"scores": "S", "weights": "W"}
# A fixed row counts as unchanged within np.allclose's default tolerances (the checks have
# always compared rows that way; goal.js uses the same formula).
ROW_RTOL, ROW_ATOL = 1e-5, 1e-8
# The explorer's scale counts as the goal's within this relative tolerance: a slider's
# value can be 1 off by a rounding step.
SCALE_RTOL = 1e-9


@dataclass(frozen=True)
class Cell:
    """``factor`` times the entry (row token, column token) of a view, e.g. W[it, ball]."""

    view: str
    row: str
    col: str
    factor: float = 1.0

    def value(self, tokens: Sequence[str], views: Mapping[str, np.ndarray]) -> float:
        return self.factor * float(views[self.view][tokens.index(self.row), tokens.index(self.col)])

    def as_json(self) -> dict:
        return {"view": self.view, "row": self.row, "col": self.col, "factor": self.factor}


@dataclass(frozen=True)
class CycleRatio:
    """How much likelier the walk on the weights goes round ``tokens`` (each reads the
    next, the last the first) than the other way: exp(sum of S[a, b] - S[b, a]) from the
    scores alone, the normalisers cancelling (attncourse.graph.cycle_ratio, at scale 1)."""

    tokens: tuple[str, ...]

    def log_value(self, tokens: Sequence[str], views: Mapping[str, np.ndarray]) -> float:
        """Exact even where some weights underflow to 0 (huge scores)."""
        scores, at = views["scores"], [tokens.index(token) for token in self.tokens]
        return float(sum(scores[a, b] - scores[b, a] for a, b in zip(at, at[1:] + at[:1])))

    def value(self, tokens: Sequence[str], views: Mapping[str, np.ndarray]) -> float:
        with np.errstate(over="ignore"):
            return float(np.exp(self.log_value(tokens, views)))

    def as_json(self) -> dict:
        return {"cycle": list(self.tokens)}


@dataclass(frozen=True)
class Condition:
    """``left comparison right``: left is a cell or a cycle's ratio, right a number or a cell."""

    left: Cell | CycleRatio
    comparison: str
    right: float | Cell

    def cells(self) -> list[Cell]:
        return [side for side in (self.left, self.right) if isinstance(side, Cell)]

    def holds(self, tokens: Sequence[str], views: Mapping[str, np.ndarray]) -> bool:
        right = self.right.value(tokens, views) if isinstance(self.right, Cell) else self.right
        return bool(COMPARISONS[self.comparison](self.left.value(tokens, views), right))

    def as_json(self) -> dict:
        right = self.right.as_json() if isinstance(self.right, Cell) else {"number": self.right}
        return {"left": self.left.as_json(), "comparison": self.comparison, "right": right}


@dataclass(frozen=True)
class Goal:
    """What a tune exercise asks of an explorer: every condition on its views, at
    ``scale``, with the ``fixed_rows`` of X unchanged and every entry of each input named
    in ``bounds`` within its [low, high]."""

    label: str
    sentence: str
    conditions: tuple[Condition, ...]
    scale: float = 1.0
    fixed_rows: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def changed_rows(self, tokens: Sequence[str], X: np.ndarray) -> list[str]:
        """The fixed rows' tokens whose row of X differs from the goal's."""
        return [token for token, row in self.fixed_rows.items()
                if not np.allclose(X[tokens.index(token)], row, rtol=ROW_RTOL, atol=ROW_ATOL)]

    def out_of_bounds(self, inputs: Mapping[str, np.ndarray]) -> list[str]:
        """The bounded inputs with an entry outside their [low, high]."""
        return [name for name, (low, high) in self.bounds.items()
                if not ((inputs[name] >= low) & (inputs[name] <= high)).all()]

    def holds(self, tokens: Sequence[str], inputs: Mapping[str, np.ndarray], scale: float,
              views: Mapping[str, np.ndarray]) -> bool:
        """Every requirement met: what the explorer's checkmark shows."""
        return (abs(scale - self.scale) <= SCALE_RTOL * max(1.0, abs(self.scale))
                and not (self.fixed_rows and self.changed_rows(tokens, inputs["X"]))
                and not self.out_of_bounds(inputs)
                and all(condition.holds(tokens, views) for condition in self.conditions))

    def as_json(self) -> dict:
        return {
            "label": self.label, "sentence": self.sentence, "scale": self.scale,
            "scale_tolerance": SCALE_RTOL, "row_tolerance": {"rtol": ROW_RTOL, "atol": ROW_ATOL},
            "conditions": [condition.as_json() for condition in self.conditions],
            "fixed_rows": {token: list(row) for token, row in self.fixed_rows.items()},
            "bounds": {name: list(limits) for name, limits in self.bounds.items()},
        }


# Every tune exercise's label -> its goal. Filled at import by tune_goal.
GOALS: dict[str, Goal] = {}


def tune_goal(label: str, sentence: str, conditions: Sequence[Condition], *, scale: float = 1.0,
              fixed_rows: Mapping[str, Sequence[float]] | None = None,
              bounds: Mapping[str, tuple[float, float]] | None = None) -> Goal:
    """Declare the goal of tune exercise ``label`` (once per label)."""
    if label in GOALS:
        raise ValueError(f"tune exercise {label!r} already has a goal")
    for condition in conditions:
        if condition.comparison not in COMPARISONS:
            raise ValueError(f"{label}: unknown comparison {condition.comparison!r}; "
                             f"choose from {sorted(COMPARISONS)}")
        unknown = sorted({cell.view for cell in condition.cells()} - set(GOAL_VIEWS))
        if unknown:
            raise ValueError(f"{label}: unknown views {unknown}; choose from {sorted(GOAL_VIEWS)}")
    goal = Goal(label, sentence, tuple(conditions), float(scale),
                {token: tuple(float(v) for v in row) for token, row in (fixed_rows or {}).items()},
                {name: (float(low), float(high)) for name, (low, high) in (bounds or {}).items()})
    GOALS[label] = goal
    return goal


def expect_edited_embeddings(goal: Goal, value, X: np.ndarray, tokens: Sequence[str], name: str,
                             start: str) -> np.ndarray:
    """``value`` as the learner's edit of the embeddings X (seq, d_model), within the
    goal's rules (its fixed rows unchanged, its bounds on X); else Failed, or
    NotImplementedYet while it is still X (called ``start`` in the message)."""
    tuned = expect_array(value, X.shape, name)
    if not np.isfinite(tuned).all():
        raise Failed(f"{name} contains nan or inf: {_show(tuned)}")
    free = [token for token in tokens if token not in goal.fixed_rows]
    rows = "row" if len(free) == 1 else "rows"
    if np.array_equal(tuned, X):
        raise NotImplementedYet(f"{name} is still {start}: edit the {rows} of {' and '.join(free)}.")
    changed = goal.changed_rows(tokens, tuned)
    if changed:
        allowed = " and ".join(f"{token} (index {tokens.index(token)})" for token in free)
        raise Failed(f"you changed the row(s) of {', '.join(changed)}; only the {rows} of {allowed} may change.")
    if goal.out_of_bounds({"X": tuned}):
        low, high = goal.bounds["X"]
        raise Failed(f"an entry of {name} is outside [{low:g}, {high:g}]; keep the embeddings of a sensible size.")
    return tuned
