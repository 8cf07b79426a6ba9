"""The student version of the chapters: solutions and hidden tests removed, stubs and
checks kept; refused, writing nothing, if any solution text would survive."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from pathlib import Path

import nbformat

from attncourse.instructor.course.tags import (
    EXERCISE_END,
    EXERCISE_START,
    exercise_labels,
    exercise_of,
    for_instructors,
    labels_assigned,
    read_chapters,
)
from attncourse.reader_edition import anchored_links, edition_folder, edition_problems


class SolutionLeak(Exception):
    """Solution or hidden-test text survived into the student version."""


def make_student_notebook(nb, assign: Iterable[str] | None = None):
    """A copy of ``nb`` for learners: exercises outside ``assign`` (if given), solutions
    and hidden tests removed; stubs and checks kept; outputs and widget state cleared;
    exercise headers rewritten as plain markdown (Jupyter does not render directives); a
    link to a part of the notebook it removed reduced to its text."""
    keep = None if assign is None else set(assign)
    student = copy.deepcopy(nb)
    cells = []
    for cell in student.cells:
        label = exercise_of(cell)
        if for_instructors(cell) or (label and keep is not None and label not in keep):
            continue
        if cell.cell_type == "markdown" and label:
            cell.source = _plain_heading(label, cell.source)
            cell.source = EXERCISE_END.sub("", cell.source).strip()
            if not cell.source:
                continue
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
        cells.append(cell)
    markdown = [cell for cell in cells if cell.cell_type == "markdown"]
    for cell, source in zip(markdown, anchored_links([cell.source for cell in markdown])):
        cell.source = source
    student.cells = cells
    student.metadata.pop("widgets", None)
    return student


def _plain_heading(label: str, source: str) -> str:
    """The exercise-start directive in ``source`` as a markdown heading Jupyter shows."""
    return EXERCISE_START.sub(lambda m: f"### Exercise `{label}` — {m['title'].strip()}", source)


_IMPORT = re.compile(r"(import \S|from \S+ import \S)")


def solution_leaks(nb, student) -> list[str]:
    """Lines of ``nb``'s solution and hidden-test cells that appear in ``student``.

    A line counts if it is at least 12 characters long, is not a directive fence or
    option, and is not also in the exercise's own kept cells (a stub may share the
    solution's signature and docstring) nor an import the learner's cells already make (a
    hidden test imports what it needs, as the chapter's first cell does)."""
    text = "\n".join(_normalise(line) for cell in student.cells for line in cell.source.splitlines())
    text += "\n" + json.dumps(student.metadata)
    public_imports = {line for cell in nb.cells if not for_instructors(cell)
                      for line in map(_normalise, cell.source.splitlines()) if _IMPORT.match(line)}
    leaks = []
    for label in exercise_labels(nb):
        cells = [cell for cell in nb.cells if exercise_of(cell) == label]
        hidden = [cell for cell in cells if for_instructors(cell)]
        shared = public_imports | {_normalise(line) for cell in cells if cell not in hidden
                                   for line in cell.source.splitlines()}
        for cell in hidden:
            for line in map(_normalise, cell.source.splitlines()):
                fence = re.match(r"(`{3,}|:{3,})|:[\w-]+:", line)
                if len(line) >= 12 and not fence and line not in shared and line in text:
                    leaks.append(f"{label}: {line}")
    for cell in student.cells:
        if for_instructors(cell) or re.search(r"\{solution(-start)?\}", cell.source):
            leaks.append(f"{exercise_of(cell)}: a solution cell survived: {cell.source[:60]!r}")
    return leaks


def _normalise(line: str) -> str:
    return " ".join(line.split())


def write_student_version(chapters: Path, out: Path, assign: Iterable[str] | None = None) -> list[Path]:
    """Write the student version of every chapter (or of those with an assigned exercise)
    into ``out``, a new or empty folder, made from the chapter's reader edition (which
    ``make book`` writes beside ``chapters``: _build/reader/chapters), so the handout reads
    like the page, with no MyST. Raises SolutionLeak, writing nothing, if any solution text
    would survive; ValueError for an unknown label, a broken convention, or a reader edition
    missing or older than its chapter."""
    notebooks = read_chapters(Path(chapters))
    assigned = None if assign is None else list(dict.fromkeys(assign))
    labels_assigned(notebooks.values(), assigned)
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty: give a new or empty folder")
    chosen = {path: nb for path, nb in notebooks.items()
              if assigned is None or set(exercise_labels(nb)) & set(assigned)}
    editions = edition_folder(Path(chapters))
    stale = edition_problems(chosen, editions)
    if stale:
        raise ValueError("the handout is made from the reader edition the book build writes: "
                         "run `make book` first\n  " + "\n  ".join(stale))
    students = {}
    for path in chosen:
        edition = nbformat.read(editions / path.name, as_version=4)
        student = make_student_notebook(edition, assigned)
        leaks = solution_leaks(edition, student)
        if leaks:
            raise SolutionLeak(f"{path.name}: solution text survives:\n  " + "\n  ".join(leaks))
        students[out / path.name] = student
    out.mkdir(parents=True, exist_ok=True)
    for target, student in students.items():
        nbformat.write(student, target)
    return list(students)


