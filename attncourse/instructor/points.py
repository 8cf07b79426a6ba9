"""Points: what each exercise is worth, what each learner earned, and the class's totals.

Each exercise declares its points next to its check (``@exercise(label, points=3)``,
``predict_exercise(..., points=1)``; default 1: ``attncourse.checks.core.POINTS``).

* An implement exercise (its check goes through ``attncourse.checks.core.inputs``) earns
  the fraction of its inputs it gets right: the check's inputs, judged one at a time on the
  data the notebook recorded (``attncourse.checks.wire`` records every input's outcome),
  and each hidden test. The message names the check's inputs it got wrong as the learner's
  version of the check describes them, and the hidden tests by number only.
* Any other exercise earns all its points when passed (or, for a predict exercise,
  completed), none otherwise.
* ``needs review``, ``notebook crashed``, ``error`` and ``not attempted`` earn nothing until
  the row changes (a regrade, or an instructor's override after review: :func:`read_overrides`).
"""

from __future__ import annotations

import csv
import functools
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from attncourse import checks
from attncourse.checks import core, wire
from attncourse.instructor import verdict

if TYPE_CHECKING:  # grading imports this module
    from attncourse.instructor.grading import Grade

EARNS_ALL = ("passed", "completed")  # the statuses that earn every point of an exercise
OVERRIDE_COLUMNS = ("learner", "exercise", "points", "note")


def points_of(label: str) -> float:
    """The points exercise ``label`` is worth (1 if its check declares none)."""
    core.load_chapter_of(label)
    return core.POINTS.get(label, 1.0)


@dataclass(frozen=True)
class InputCredit:
    """How many of an exercise's inputs the learner's answer got right, and which not."""

    right: int
    total: int
    missed: tuple[str, ...]  # the check's inputs by their description, hidden tests by number

    def message(self) -> str:
        """One line for the learner: the count, then what was not right."""
        text = f"{self.right} of {self.total} inputs right"
        return text + (f"; not right on: {'; '.join(self.missed)}." if self.missed else ".")


def judge_inputs(label: str, record: dict) -> tuple[list[str], list[str] | None]:
    """(the status of each input of ``label``'s check, judged alone on ``record``; the
    inputs' descriptions), or ``([], None)`` if the check does not try inputs one by one."""
    evaluate = checks.load_all()[label].__wrapped__  # the check undecorated
    statuses: list[str] = []
    described: list[str] | None = None
    index, count = 0, 1
    while index < count:
        replay = verdict.Replay(record, input=index)  # the calls made on this input, afresh
        answers = [wire.decode(answer, functions=functools.partial(verdict._answer_function, replay, i))
                   for i, answer in enumerate(record.get("answers", []))]
        seen: list[list[str] | None] = []

        def alone(run, *answers, index=index, seen=seen):
            chosen = core.one_input(index)
            try:
                with chosen:
                    return evaluate(run, *answers)
            finally:
                seen.append(chosen.described)

        result = core._evaluate(label, "check", alone, answers, verdict.JUDGE_TIMEOUT)
        if index == 0:
            described = seen[0] if seen else None
            if described is None:
                return [], None
            count = len(described)
        statuses.append(result.status)
        index += 1
    return statuses, described


def learner_view(label: str, record: dict, hidden_sources: list[str], hidden_inputs: dict) -> dict:
    """What a learner may read of ``label``'s verdict, and the inputs it got right, from
    ``record`` (the notebook's data), judged in the grader's process: ``{"feedback":
    the check's own message unless it passed, and the hidden tests that failed by number
    only; "inputs_right", "inputs": the partial credit of an implement exercise}``."""
    if record.get("missing"):
        return {}
    check = verdict.judge_check(label, record)
    hidden = [result for source in hidden_sources
              for result in verdict.judge_hidden(label, source, hidden_inputs, record)]
    failed_hidden = [f"hidden test {n}" for n, result in enumerate(hidden, start=1) if result.status != checks.PASSED]
    statuses, described = judge_inputs(label, record)
    parts = [check.message]
    found: dict = {}
    if described is not None:
        missed = [d for d, status in zip(described, statuses) if status != checks.PASSED] + failed_hidden
        credit = InputCredit(len(described) + len(hidden) - len(missed), len(described) + len(hidden), tuple(missed))
        found = {"inputs_right": credit.right, "inputs": credit.total}
        if check.status != checks.NOT_IMPLEMENTED:
            parts.append(credit.message())
    elif failed_hidden:
        parts.append(f"Not right on: {'; '.join(failed_hidden)}.")
    return {**found, "feedback": " ".join(parts)}


def earned(grade: Grade) -> float:
    """The points a report row earned (see the module doc)."""
    worth = points_of(grade.exercise)
    if grade.status in EARNS_ALL:
        return worth
    if grade.status == "failed" and grade.inputs:
        return round(worth * grade.inputs_right / grade.inputs, 2)
    return 0.0


@dataclass(frozen=True)
class Scored:
    """A report row with its points (``override``: the instructor's note, if overridden)."""

    grade: Grade
    points: float
    max_points: float
    override: str = ""

    @property
    def learner(self) -> str:
        return self.grade.learner

    @property
    def exercise(self) -> str:
        return self.grade.exercise


def scored(grades: list, overrides: dict[tuple[str, str], tuple[float, str]] | None = None) -> list[Scored]:
    """Every row with its points; an instructor's override (points, note) replaces them."""
    rows = []
    for grade in grades:
        points, note = (overrides or {}).get((grade.learner, grade.exercise), (earned(grade), ""))
        rows.append(Scored(grade, points, points_of(grade.exercise), note))
    return rows


def read_overrides(path: Path) -> dict[tuple[str, str], tuple[float, str]]:
    """An instructor's overrides after review: a CSV with columns learner, exercise, points,
    note (the note is required: it says why, and the feedback file shows it)."""
    found: dict[tuple[str, str], tuple[float, str]] = {}
    with open(path, newline="", encoding="utf-8-sig") as file:
        reader = csv.DictReader(file)
        missing = set(OVERRIDE_COLUMNS) - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path}: the overrides need the columns {', '.join(OVERRIDE_COLUMNS)}; "
                             f"missing {', '.join(sorted(missing))}")
        for number, row in enumerate(reader, start=2):
            try:
                points = float(row["points"])
            except ValueError:
                raise ValueError(f"{path}, line {number}: points {row['points']!r} is not a number") from None
            label = row["exercise"].strip()
            if not 0 <= points <= points_of(label):
                raise ValueError(f"{path}, line {number}: {label} is worth 0 to {points_of(label):g} points, "
                                 f"not {points:g}")
            if not row["note"].strip():
                raise ValueError(f"{path}, line {number}: say why in the note column")
            found[row["learner"].strip(), label] = (points, row["note"].strip())
    return found


def totals(rows: list[Scored]) -> dict[str, tuple[float, float]]:
    """learner -> (points earned, points possible)."""
    found: dict[str, tuple[float, float]] = {}
    for row in rows:
        got, worth = found.get(row.learner, (0.0, 0.0))
        found[row.learner] = (round(got + row.points, 2), worth + row.max_points)
    return found


def by_exercise(rows: list[Scored]) -> dict[str, tuple[float, float, int]]:
    """exercise -> (mean points, points possible, learners with every point)."""
    found: dict[str, list[Scored]] = {}
    for row in rows:
        found.setdefault(row.exercise, []).append(row)
    return {label: (round(statistics.fmean(r.points for r in group), 2), group[0].max_points,
                    sum(r.points == r.max_points for r in group)) for label, group in found.items()}


def distribution(rows: list[Scored], bins: int = 5) -> list[tuple[str, int]]:
    """The class's totals as percentages in ``bins`` bands: [("0-20%", n), ...]; the last
    band includes 100%."""
    counts = [0] * bins
    for got, worth in totals(rows).values():
        share = got / worth if worth else 0.0
        counts[min(int(share * bins), bins - 1)] += 1
    width = 100 // bins
    return [(f"{i * width}-{(i + 1) * width}%", n) for i, n in enumerate(counts)]
