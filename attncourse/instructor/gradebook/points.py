"""Points: what each exercise is worth, what each row earned (arithmetic on its verdict),
an instructor's overrides, and the class's totals.

Each exercise declares its points next to its check (``@exercise(label, points=3)``,
``predict_exercise(..., points=1)``; default 1: ``attncourse.checks.core.POINTS``).

* An implement exercise (its check goes through ``attncourse.checks.core.inputs``) earns
  the fraction of its inputs it gets right: the check's inputs, judged one at a time on the
  data the notebook recorded, and each hidden test (the judge counts them:
  ``Grade.inputs_right`` of ``Grade.inputs``).
* Any other exercise earns all its points when passed (or, for a predict exercise,
  completed), none otherwise.
* ``needs review``, ``notebook crashed``, ``error`` and ``not attempted`` earn nothing until
  the row changes (a regrade, or an instructor's override after review: :func:`read_overrides`).
"""

from __future__ import annotations

import decimal
import difflib
import math
import statistics
from dataclasses import replace
from pathlib import Path

from attncourse.checks import core
from attncourse.instructor.gradebook.instructor_csv import read_rows
from attncourse.instructor.learner_text import the_learner
from attncourse.instructor.model import EARNS_ALL, FAILED, Grade

OVERRIDE_COLUMNS = ("learner", "exercise", "points", "note")
Overrides = dict[tuple[str, str], tuple[float, str]]  # (learner, exercise) -> (points, the instructor's note)


def points_of(label: str) -> float:
    """The points exercise ``label`` is worth (1 if its check declares none)."""
    core.load_chapter_of(label)
    return core.POINTS.get(label, 1.0)


def in_words(count: float) -> str:
    """``count`` points in words: "1 point", "0.5 points", "3 points"."""
    return f"{count:g} point" + ("" if count == 1 else "s")


def in_hundredths(value: float) -> float:
    """``value`` to two decimals, a half rounded up (as a gradebook does, and in the learner's
    favour): 7 of 8 inputs of 3 points earn 2.63, where Python's round gives 2.62."""
    return float(decimal.Decimal(repr(value)).quantize(decimal.Decimal("0.01"), rounding=decimal.ROUND_HALF_UP))


def earned(grade: Grade) -> float:
    """The points a row earned (see the module doc), less its late penalty."""
    worth = points_of(grade.exercise)
    if grade.status in EARNS_ALL:
        return in_hundredths(worth * (1 - grade.late_penalty))
    if grade.status == FAILED and grade.inputs:
        return in_hundredths(worth * grade.inputs_right / grade.inputs * (1 - grade.late_penalty))
    return 0.0


def scored(grades: list[Grade], overrides: Overrides | None = None) -> list[Grade]:
    """Every row with its points and what it is worth; an instructor's override (points,
    note) replaces its points."""
    rows = []
    for grade in grades:
        got, note = (overrides or {}).get((grade.learner, grade.exercise), (earned(grade), ""))
        rows.append(replace(grade, points=got, max_points=points_of(grade.exercise), override=note))
    return rows


def learner_view(label: str, record: dict, hidden_sources: list[str], hidden_inputs: dict) -> dict:
    """What a learner may read of one record's verdict and the inputs it got right, as the
    row's fields (``judge.judge_record``): ``{"feedback", "inputs_right", "inputs"}``, the
    last two for an implement exercise; nothing for a record whose answers could not be read."""
    from attncourse.instructor.judge import judge_record

    if record.get("missing"):
        return {}
    verdict = judge_record(label, record, hidden_sources, hidden_inputs)
    credit = {"inputs_right": verdict.inputs_right, "inputs": verdict.inputs} if verdict.inputs else {}
    return {**credit, "feedback": verdict.feedback}


def read_overrides(path: Path, grades: list[Grade] | None = None, allow_extra_credit: bool = False) -> Overrides:
    """An instructor's overrides after review: a CSV with columns learner, exercise, points,
    note (in any capitals and spacing; the note is required: it says why, and the feedback
    file shows it). Points run from 0 to what the exercise is worth, or above it with
    ``allow_extra_credit``. With the report's ``grades``, an exercise or a learner none of
    them has (misspelt) is refused, naming the closest, and so is a learner's exercise
    they were not graded on: an override that would change nothing never passes unseen."""
    found: Overrides = {}
    lines: dict[tuple[str, str], int] = {}
    columns, rows = read_rows(path)
    named = {column: " ".join(column.split()).lower() for column in columns}  # any capitals and spacing
    missing = set(OVERRIDE_COLUMNS) - set(named.values())
    if missing:
        raise ValueError(f"{path}: the overrides need the columns {', '.join(OVERRIDE_COLUMNS)}; "
                         f"missing {', '.join(sorted(missing))}")
    for number, as_read in enumerate(rows, start=2):
        row = {named[column]: value for column, value in as_read.items() if column in named}
        learner, label = (row["learner"] or "").strip(), (row["exercise"] or "").strip()
        if grades is not None:
            learner = the_learner(learner, (g.learner for g in grades)) or learner  # 'zed' for a folder 'zed '
            _known(f"{path}, line {number}", "exercise", label, [g.exercise for g in grades])
            _known(f"{path}, line {number}", "learner", learner, [g.learner for g in grades])
            if not any((g.learner, g.exercise) == (learner, label) for g in grades):
                raise ValueError(f"{path}, line {number}: {learner!r} has no row of {label} in the report "
                                 "(graded on other exercises)")
        try:
            points = float(row["points"])
        except (TypeError, ValueError):
            raise ValueError(f"{path}, line {number}: points {row['points']!r} is not a number") from None
        if not 0 <= points <= (float("inf") if allow_extra_credit else points_of(label)):
            raise ValueError(f"{path}, line {number}: {label} is worth 0 to {points_of(label):g} points, "
                             f"not {points:g}" + ("" if points < 0 else " (extra credit: --allow-extra-credit)"))
        if not (row["note"] or "").strip():
            raise ValueError(f"{path}, line {number}: say why in the note column")
        if (learner, label) in lines:
            raise ValueError(f"{path}, line {number}: {learner!r}, {label} again (line {lines[learner, label]}): "
                             "keep one decision")
        found[learner, label], lines[learner, label] = (points, row["note"].strip()), number
    return found


def _known(where: str, what: str, name: str, graded: list[str]) -> None:
    """Refuse a ``name`` that no row of the report has, naming the closest it has."""
    if name in graded:
        return
    known = list(dict.fromkeys(graded))
    near = difflib.get_close_matches(name, known, n=3, cutoff=0.5) or known[:5]
    raise ValueError(f"{where}: no row of the report has the {what} {name!r} (misspelt?); the closest: "
                     f"{', '.join(near)}")


def totals(rows: list[Grade]) -> dict[str, tuple[float, float]]:
    """learner -> (points earned, points possible)."""
    found: dict[str, tuple[float, float]] = {}
    for row in rows:
        got, worth = found.get(row.learner, (0.0, 0.0))
        found[row.learner] = (round(got + row.points, 2), worth + row.max_points)
    return found


def by_exercise(rows: list[Grade]) -> dict[str, tuple[float, float, int]]:
    """exercise -> (mean points, points possible, learners with every point)."""
    found: dict[str, list[Grade]] = {}
    for row in rows:
        found.setdefault(row.exercise, []).append(row)
    return {label: (in_hundredths(statistics.fmean(r.points for r in group)), group[0].max_points,
                    sum(r.points == r.max_points for r in group)) for label, group in found.items()}


def distribution(rows: list[Grade], bins: int = 5) -> list[tuple[str, int]]:
    """The class's totals as percentages in ``bins`` bands: [("0-20%", n), ...]; the last
    band includes 100%."""
    counts = [0] * bins
    for got, worth in totals(rows).values():
        band = math.floor(round(got * bins / worth, 9)) if worth else 0  # 4.8 of 6 is 80%, not 79.99...%
        counts[min(band, bins - 1)] += 1
    width = 100 // bins
    return [(f"{i * width}-{(i + 1) * width}%", n) for i, n in enumerate(counts)]
