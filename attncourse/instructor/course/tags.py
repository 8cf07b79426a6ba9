"""The tag convention of the chapter notebooks: which cell is a stub, a solution, a check
or a hidden test of which exercise, and every way a notebook can break it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from attncourse import checks

if TYPE_CHECKING:
    import nbformat

STUB, SOLUTION, CHECK, HIDDEN_TEST = "stub", "solution", "check", "hidden-test"
ROLES = (STUB, SOLUTION, CHECK, HIDDEN_TEST)
EXERCISE_PREFIX = "exercise:"
TAG_CONVENTION = """\
Tag convention (cell tags in the chapter notebooks):
  exercise:LABEL  every cell of the exercise LABEL (e.g. exercise:ch1-stable-softmax):
                  its statement, stub, solution, check and hidden tests. LABEL is the
                  sphinx-exercise label of the exercise and names its check:
                  ch1-stable-softmax -> check.stable_softmax in attncourse.checks.
  stub            the code a learner starts from (raises NotImplementedError, or sets a
                  starting value); kept in the student version.
  solution        a solution cell, markdown or code, from the `solution-start` cell to the
                  `solution-end` cell; removed from the student version.
  check           the cell that calls the exercise's check, after the solution; kept.
                  Also tagged remove-output, so the site shows no solved check message.
  hidden-test     an instructor's test, @check.hidden_test(LABEL); removed from the
                  student version, run again by `grade`. Also tagged remove-cell.
An exercise is a gated sphinx-exercise block: a markdown cell opening with
`{exercise-start}` and `:label: LABEL`, its statement and stub, a cell with
`{exercise-end}`, then `{solution-start} LABEL` with `:class: dropdown` ... `{solution-end}`,
then the check cell and any hidden tests."""


EXERCISE_START = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{exercise-start\}[ \t]*(?P<title>.*)\n"
    r"(?P<options>(?:[ \t]*:[\w-]+:.*\n)*)(?P=fence)[ \t]*$",
    re.MULTILINE,
)
EXERCISE_END = re.compile(r"^(?P<fence>`{3,}|:{3,})\{exercise-end\}[ \t]*\n(?P=fence)[ \t]*\n?", re.MULTILINE)


def cell_tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def exercise_of(cell) -> str | None:
    labels = [tag[len(EXERCISE_PREFIX):] for tag in cell_tags(cell) if tag.startswith(EXERCISE_PREFIX)]
    return labels[0] if labels else None


def role_of(cell) -> str | None:
    roles = [tag for tag in cell_tags(cell) if tag in ROLES]
    return roles[0] if roles else None


def for_instructors(cell) -> bool:
    """A solution or hidden-test cell (whatever other tags it carries)."""
    return bool({SOLUTION, HIDDEN_TEST} & set(cell_tags(cell)))


def exercise_labels(nb) -> list[str]:
    """The exercise labels of a notebook, in order of appearance."""
    labels = [exercise_of(cell) for cell in nb["cells"]]
    return list(dict.fromkeys(label for label in labels if label))


def chapter_of(label: str) -> str:
    """The chapter an exercise label belongs to (``ch1-stable-softmax``: ``ch1``)."""
    return label.split("-", 1)[0]


def labels_assigned(notebooks: Iterable, assign: Iterable[str] | None) -> list[str]:
    """Every exercise label of ``notebooks``, in order; raises ValueError naming each label
    of ``assign`` that none of them has."""
    order = [label for nb in notebooks for label in exercise_labels(nb)]
    unknown = sorted(set(assign or ()) - set(order))
    if unknown:
        raise ValueError(f"unknown exercise(s) {', '.join(unknown)}; the chapters have: {', '.join(order)}")
    return order


def exercise_title(nb, label: str) -> str:
    for cell in nb["cells"]:
        match = EXERCISE_START.search(cell["source"])
        if exercise_of(cell) == label and match:
            return match["title"].strip()
    return ""


# ---------------------------------------------------------------------------------------
# The convention, checked

def convention_problems(nb, name: str = "notebook") -> list[str]:
    """Every way ``nb`` breaks the tag convention (an empty list when it keeps it)."""
    problems = []

    def where(index: int) -> str:
        return f"{name}, cell {index + 1}"

    in_solution = None  # the label of the gated solution we are inside, if any
    for index, cell in enumerate(nb.cells):
        tags, label, role = cell_tags(cell), exercise_of(cell), role_of(cell)
        if len([t for t in tags if t in ROLES]) > 1:
            problems.append(f"{where(index)} has more than one role tag: {tags}")
        if len([t for t in tags if t.startswith(EXERCISE_PREFIX)]) > 1:
            problems.append(f"{where(index)} belongs to more than one exercise: {tags}")
        if role and not label:
            problems.append(f"{where(index)} is tagged {role!r} but has no exercise:LABEL tag")
        if role in (STUB, CHECK, HIDDEN_TEST) and cell.cell_type != "code":
            problems.append(f"{where(index)} is tagged {role!r} but is not a code cell")
        if role == CHECK and "remove-output" not in tags:
            problems.append(f"{where(index)}: a check cell must also be tagged remove-output")
        if role == HIDDEN_TEST and "remove-cell" not in tags:
            problems.append(f"{where(index)}: a hidden-test cell must also be tagged remove-cell")
        if "{solution-start}" in cell.source:
            in_solution = label or "?"
        if in_solution and (role != SOLUTION or label != in_solution):
            problems.append(
                f"{where(index)} is inside the solution of {in_solution} "
                f"but not tagged 'solution' and 'exercise:{in_solution}'"
            )
        if "{solution-end}" in cell.source:
            in_solution = None
        if re.search(r"\{solution\}", cell.source) and role != SOLUTION:
            problems.append(f"{where(index)} holds a solution directive but is not tagged 'solution'")
    if in_solution:
        problems.append(f"{name}: the solution of {in_solution} has no solution-end cell")
    for label in exercise_labels(nb):
        cells = [cell for cell in nb.cells if exercise_of(cell) == label]
        roles = {role_of(cell) for cell in cells}
        starts = [c for c in cells if (m := EXERCISE_START.search(c.source)) and f":label: {label}" in m["options"]]
        if not starts:
            problems.append(f"{name}: exercise {label} has no exercise-start cell with ':label: {label}'")
        for role in (STUB, SOLUTION, CHECK):
            if role not in roles:
                problems.append(f"{name}: exercise {label} has no {role!r} cell")
        if label not in checks.load_all():
            problems.append(f"{name}: exercise {label} has no check in attncourse.checks")
    return problems


def read_chapters(chapters: Path) -> dict[Path, nbformat.NotebookNode]:
    import nbformat  # here, not above: its validator takes seconds to import, and exports need none of it

    paths = sorted(Path(chapters).glob("*.ipynb"))
    if not paths:
        raise ValueError(f"no notebooks (*.ipynb) in {chapters}")
    notebooks = {path: nbformat.read(path, as_version=4) for path in paths}
    problems = [p for path, nb in notebooks.items() for p in convention_problems(nb, path.name)]
    seen: dict[str, str] = {}
    for path, nb in notebooks.items():
        for label in exercise_labels(nb):
            if label in seen:
                problems.append(f"exercise {label} is in both {seen[label]} and {path.name}")
            seen[label] = path.name
    if problems:
        raise ValueError("the chapters break the tag convention:\n  " + "\n  ".join(problems))
    return notebooks




def exercise_titles(chapters: Path) -> dict[str, str]:
    """label -> title of every exercise of the notebooks in ``chapters``, read as the JSON
    they are (the exports need only these: no nbformat, no check of the convention)."""
    titles = {}
    for path in sorted(Path(chapters).glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        nb = {"cells": [{**cell, "source": "".join(cell.get("source", ""))} for cell in cells]}
        titles.update({label: exercise_title(nb, label) for label in exercise_labels(nb)})
    return titles
