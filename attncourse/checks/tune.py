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
on every edit (explorers/goal.js, the same rules: tests/test_tune_goals.py runs both).
``GOALS`` keeps every declaration by label, for the pages' tests.

A tune exercise can also ask for one setting of an explorer rather than for edits of its
matrices: chapter 6's alpha, sharp enough for the largest error to fall below a target and
no sharper than a margin above the smallest alpha that gets there. ``tune_setting_goal``
declares that kind (``SettingGoal``); the smallest setting is found by the same bisection
in the check and in the browser, and never written into the page.

A third kind asks for numbers an explorer reads out of its settings (``ReadoutGoal``,
declared by ``tune_readout_goal``): chapter 8's previous-token head (the least weight a
token puts on the one before it), chapter 9's block sizes (the fast memory they take and
the values they move). The goal carries ``readouts_at``, the same numbers computed in
Python from the settings, for the check and the tests.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from attncourse.checks.core import Failed, NotImplementedYet, expect_array, show

__all__ = ["GOALS", "Cell", "Condition", "CycleRatio", "Goal", "Readout", "ReadoutGoal", "SettingGoal",
           "expect_edited_embeddings", "tune_goal", "tune_readout_goal", "tune_setting_goal"]

COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
# The views a condition can read, and the letter the chapters give each matrix.
GOAL_VIEWS = {"scores": "S", "weights": "W"}
# A fixed row counts as unchanged within np.allclose's default tolerances (the checks have
# always compared rows that way; goal.js uses the same formula).
ROW_RTOL, ROW_ATOL = 1e-5, 1e-8
# The explorer's scale counts as the goal's within this relative tolerance: a slider's
# value can be 1 off by a rounding step.
SCALE_RTOL = 1e-9
# Halvings of a setting goal's search interval: the smallest setting to within its width
# times 2^-60, below a float's resolution (goal.js bisects as many times).
BISECTION_STEPS = 60


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


@dataclass(frozen=True)
class SettingGoal:
    """What a tune exercise asks of one setting of an explorer (chapter 6's alpha): the
    explorer's ``readout`` (its largest error) ``comparison target`` at that setting, and
    the setting no more than ``margin`` above the smallest one in ``search`` that meets it,
    on the exercise's own problem (``fixed``: the explorer's other inputs, unchanged).

    The readout must meet the target from one setting on and keep meeting it above (the
    error falls as alpha grows): the smallest setting is found by bisection."""

    label: str
    sentence: str
    setting: str
    readout: str
    readout_text: str
    comparison: str
    target: float
    margin: float
    search: tuple[float, float]
    fixed: Mapping[str, tuple[float, ...]]

    def meets(self, readout: float) -> bool:
        """The readout meets the target (the goal's first condition)."""
        return bool(COMPARISONS[self.comparison](readout, self.target))

    def smallest(self, readout_at: Callable[[float], float]) -> float:
        """The smallest setting in ``search`` whose readout meets the target, by bisection
        (``readout_at(setting)`` computes the readout on the exercise's problem)."""
        low, high = self.search
        for _ in range(BISECTION_STEPS):
            middle = (low + high) / 2
            low, high = (low, middle) if self.meets(readout_at(middle)) else (middle, high)
        return high

    def changed(self, inputs: Mapping[str, Sequence[float] | np.ndarray]) -> list[str]:
        """The fixed inputs that differ from the exercise's (np.allclose's tolerances)."""
        return [name for name, values in self.fixed.items()
                if np.shape(inputs[name]) != (len(values),)
                or not np.allclose(inputs[name], values, rtol=ROW_RTOL, atol=ROW_ATOL)]

    def holds(self, setting: float, inputs: Mapping[str, Sequence[float] | np.ndarray],
              readout_at: Callable[[float], float]) -> bool:
        """Every requirement met: what the explorer's checkmark shows."""
        return (not self.changed(inputs) and self.meets(readout_at(setting))
                and setting <= self.smallest(readout_at) + self.margin)

    def as_json(self) -> dict:
        return {
            "kind": "setting", "label": self.label, "sentence": self.sentence,
            "setting": self.setting, "readout": self.readout, "readout_text": self.readout_text,
            "comparison": self.comparison, "target": self.target, "margin": self.margin,
            "search": list(self.search), "steps": BISECTION_STEPS,
            "row_tolerance": {"rtol": ROW_RTOL, "atol": ROW_ATOL},
            "fixed": {name: list(values) for name, values in self.fixed.items()},
        }


@dataclass(frozen=True)
class Readout:
    """One condition of a ``ReadoutGoal``: the explorer's readout ``name`` (shown as
    ``text``) ``comparison target``."""

    name: str
    text: str
    comparison: str
    target: float

    def holds(self, readouts: Mapping[str, float]) -> bool:
        return bool(COMPARISONS[self.comparison](float(readouts[self.name]), self.target))

    def as_json(self) -> dict:
        return {"name": self.name, "text": self.text, "comparison": self.comparison, "target": self.target}


@dataclass(frozen=True)
class ReadoutGoal:
    """What a tune exercise asks of the numbers an explorer reads out of its ``settings``:
    every condition met, with the explorer's other inputs named in ``fixed`` as the
    exercise sets them. ``readouts_at(**settings)`` computes the readouts in Python as the
    explorer does in the browser (the check and the tests call it)."""

    label: str
    sentence: str
    settings: tuple[str, ...]
    conditions: tuple[Readout, ...]
    fixed: Mapping[str, object]  # input -> value, JSON's kinds (numbers, strings, booleans, lists)
    readouts_at: Callable[..., Mapping[str, float]] = field(compare=False, repr=False)

    def changed(self, inputs: Mapping[str, object]) -> list[str]:
        """The fixed inputs (of those given) that differ from the exercise's."""
        return [name for name, value in self.fixed.items() if name in inputs and inputs[name] != value]

    def holds(self, readouts: Mapping[str, float], inputs: Mapping[str, object] | None = None) -> bool:
        """Every condition met and no fixed input changed: what the explorer's checkmark shows."""
        return not self.changed(inputs or {}) and all(c.holds(readouts) for c in self.conditions)

    def as_json(self) -> dict:
        return {"kind": "readout", "label": self.label, "sentence": self.sentence,
                "settings": list(self.settings), "conditions": [c.as_json() for c in self.conditions],
                "fixed": dict(self.fixed)}


# Every tune exercise's label -> its goal. Filled at import by tune_goal and tune_setting_goal.
GOALS: dict[str, Goal | SettingGoal | ReadoutGoal] = {}


def _check_new_goal(label: str, comparisons: Sequence[str]) -> None:
    """Refuse a second goal for ``label`` or a comparison the goals do not know."""
    if label in GOALS:
        raise ValueError(f"tune exercise {label!r} already has a goal")
    for comparison in comparisons:
        if comparison not in COMPARISONS:
            raise ValueError(f"{label}: unknown comparison {comparison!r}; choose from {sorted(COMPARISONS)}")


def tune_goal(label: str, sentence: str, conditions: Sequence[Condition], *, scale: float = 1.0,
              fixed_rows: Mapping[str, Sequence[float]] | None = None,
              bounds: Mapping[str, tuple[float, float]] | None = None) -> Goal:
    """Declare the goal of tune exercise ``label`` (once per label)."""
    _check_new_goal(label, [condition.comparison for condition in conditions])
    for condition in conditions:
        unknown = sorted({cell.view for cell in condition.cells()} - set(GOAL_VIEWS))
        if unknown:
            raise ValueError(f"{label}: unknown views {unknown}; choose from {sorted(GOAL_VIEWS)}")
    goal = Goal(label, sentence, tuple(conditions), float(scale),
                {token: tuple(float(v) for v in row) for token, row in (fixed_rows or {}).items()},
                {name: (float(low), float(high)) for name, (low, high) in (bounds or {}).items()})
    GOALS[label] = goal
    return goal


def tune_setting_goal(label: str, sentence: str, *, setting: str, readout: tuple[str, str],
                      comparison: str, target: float, margin: float, search: tuple[float, float],
                      fixed: Mapping[str, Sequence[float] | np.ndarray]) -> SettingGoal:
    """Declare the goal of tune exercise ``label`` on one setting (once per label).
    ``readout`` is the explorer's name for the number and the words the page shows for it."""
    _check_new_goal(label, [comparison])
    low, high = (float(limit) for limit in search)
    if not low < high:
        raise ValueError(f"{label}: the search interval must have low < high, got {search}")
    if not margin > 0:
        raise ValueError(f"{label}: the margin must be positive, got {margin}")
    name, text = readout
    goal = SettingGoal(label, sentence, setting, name, text, comparison, float(target), float(margin),
                       (low, high), {key: tuple(float(v) for v in values) for key, values in fixed.items()})
    GOALS[label] = goal
    return goal


def tune_readout_goal(label: str, sentence: str, *, settings: Sequence[str], conditions: Sequence[Readout],
                      fixed: Mapping[str, object], readouts_at: Callable[..., Mapping[str, float]]) -> ReadoutGoal:
    """Declare the goal of tune exercise ``label`` on an explorer's readouts (once per label)."""
    _check_new_goal(label, [condition.comparison for condition in conditions])
    goal = ReadoutGoal(label, sentence, tuple(settings), tuple(conditions), dict(fixed), readouts_at)
    GOALS[label] = goal
    return goal


def expect_edited_embeddings(goal: Goal, value, X: np.ndarray, tokens: Sequence[str], name: str,
                             start: str) -> np.ndarray:
    """``value`` as the learner's edit of the embeddings X (seq, d_model), within the
    goal's rules (its fixed rows unchanged, its bounds on X); else Failed, or
    NotImplementedYet while it is still X (called ``start`` in the message)."""
    tuned = expect_array(value, X.shape, name)
    if not np.isfinite(tuned).all():
        raise Failed(f"{name} contains nan or inf: {show(tuned)}")
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
