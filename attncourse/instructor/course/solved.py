"""What grading takes from the solved chapters (a ``Course``): every exercise in order, its
check's arguments and the names its answer is made of, its hidden tests, and the inputs
those tests call the learner's functions on (``discovery``)."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import nbformat

from attncourse import checks
from attncourse.instructor.course.discovery import hidden_inputs
from attncourse.instructor.course.tags import (
    CHECK,
    HIDDEN_TEST,
    chapter_of,
    exercise_labels,
    exercise_of,
    labels_assigned,
    read_chapters,
    role_of,
)
from attncourse.instructor.model import Course, Exercise
from attncourse.instructor.notebook.source import calls_of_check


def course_of(chapters: Path, assign: Iterable[str] | None, cache: Path | None = None,
              submitted: Iterable[str] | None = None, jobs: int = 1) -> Course:
    """The exercises of the solved chapters, and their hidden tests' inputs (running the
    chapters that hold an assigned exercise's hidden test, once, up to ``jobs`` at a time:
    see discovery). Without ``assign``, only the chapters of ``submitted`` (labels found in
    the submissions; None: every chapter) are run."""
    sources = read_chapters(Path(chapters))
    checks.load_all()  # every check and predict exercise declared, for the grades below
    order = labels_assigned(sources.values(), assign)
    wanted = set(assign or order)
    checks_cells: dict[str, nbformat.NotebookNode] = {}
    hidden: dict[str, list[str]] = {}
    for nb in sources.values():
        for cell in nb.cells:
            label = exercise_of(cell)
            if label in wanted and role_of(cell) == CHECK:
                checks_cells.setdefault(label, cell)
            elif label in wanted and role_of(cell) == HIDDEN_TEST:
                hidden.setdefault(label, []).append(cell.source)
    discovered = set(hidden) if assign is not None or submitted is None else {
        label for label in hidden if chapter_of(label) in {chapter_of(found) for found in submitted}}
    inputs = hidden_inputs(sources, discovered, cache, jobs)
    exercises = {label: exercise_of_course(label, checks_cells[label].source, inputs.get(label, {}))
                 for label in order if label in checks_cells}
    code = {path: frozenset(c.source.strip() for c in nb.cells if c.cell_type == "code") for path, nb in sources.items()}
    by_chapter = {chapter_of(exercise_labels(nb)[0]): code[path] for path, nb in sources.items() if exercise_labels(nb)}
    return Course(order, exercises, hidden, inputs, frozenset().union(*code.values()), by_chapter)


def exercise_of_course(label: str, check_cell: str, hidden: dict) -> Exercise:
    """``label``'s check arguments, from the course's check cell (``check.NAME(a, b)``), and
    the notebook names its hidden tests read (``hidden``: what ``discovery`` found)."""
    expressions: list[str] = []
    names: list[str] = []
    for call in calls_of_check(label, check_cell):
        expressions += [ast.unparse(arg) for arg in call.args]
        names += [n.id for arg in call.args for n in ast.walk(arg) if isinstance(n, ast.Name)]
    names += hidden.get("values", []) + [call["function"] for call in hidden.get("calls", [])]
    return Exercise(label, tuple(expressions), tuple(dict.fromkeys(names)))
