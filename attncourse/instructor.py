"""Instructor tools: hand out the exercises without their solutions, grade what comes back.

    python -m attncourse.instructor list
    python -m attncourse.instructor student --out handout [--assign LABEL,LABEL]
    python -m attncourse.instructor grade submissions --out report [--time-limit 120]

``python -m attncourse.instructor --help`` explains the workflow and the tag convention
(also in the book's instructor guide). The functions behind the commands are importable.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import copy
import csv
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Iterable

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from attncourse import checks

__all__ = [
    "Grade",
    "SolutionLeak",
    "convention_problems",
    "exercise_labels",
    "grade_submissions",
    "main",
    "make_student_notebook",
    "solution_leaks",
    "summary",
    "write_report",
    "write_student_version",
]

STUB, SOLUTION, CHECK, HIDDEN_TEST = "stub", "solution", "check", "hidden-test"
ROLES = (STUB, SOLUTION, CHECK, HIDDEN_TEST)
EXERCISE_PREFIX = "exercise:"
PASSED, FAILED, NOT_ATTEMPTED, CRASHED = "passed", "failed", "not attempted", "notebook crashed"

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


_EXERCISE_START = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{exercise-start\}[ \t]*(?P<title>.*)\n"
    r"(?P<options>(?:[ \t]*:[\w-]+:.*\n)*)(?P=fence)[ \t]*$",
    re.MULTILINE,
)
_EXERCISE_END = re.compile(r"^(?P<fence>`{3,}|:{3,})\{exercise-end\}[ \t]*\n(?P=fence)[ \t]*\n?", re.MULTILINE)


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _exercise_of(cell) -> str | None:
    labels = [tag[len(EXERCISE_PREFIX):] for tag in _tags(cell) if tag.startswith(EXERCISE_PREFIX)]
    return labels[0] if labels else None


def _role_of(cell) -> str | None:
    roles = [tag for tag in _tags(cell) if tag in ROLES]
    return roles[0] if roles else None


def _for_instructors(cell) -> bool:
    """A solution or hidden-test cell (whatever other tags it carries)."""
    return bool({SOLUTION, HIDDEN_TEST} & set(_tags(cell)))


def exercise_labels(nb) -> list[str]:
    """The exercise labels of a notebook, in order of appearance."""
    labels = [_exercise_of(cell) for cell in nb.cells]
    return list(dict.fromkeys(label for label in labels if label))


def _exercise_title(nb, label: str) -> str:
    for cell in nb.cells:
        match = _EXERCISE_START.search(cell.source)
        if _exercise_of(cell) == label and match:
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
        tags, label, role = _tags(cell), _exercise_of(cell), _role_of(cell)
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
        cells = [cell for cell in nb.cells if _exercise_of(cell) == label]
        roles = {_role_of(cell) for cell in cells}
        starts = [c for c in cells if (m := _EXERCISE_START.search(c.source)) and f":label: {label}" in m["options"]]
        if not starts:
            problems.append(f"{name}: exercise {label} has no exercise-start cell with ':label: {label}'")
        for role in (STUB, SOLUTION, CHECK):
            if role not in roles:
                problems.append(f"{name}: exercise {label} has no {role!r} cell")
        if label not in checks.CHECKS:
            problems.append(f"{name}: exercise {label} has no check in attncourse.checks")
    return problems


# ---------------------------------------------------------------------------------------
# The student version


class SolutionLeak(Exception):
    """Solution or hidden-test text survived into the student version."""


def make_student_notebook(nb, assign: Iterable[str] | None = None):
    """A copy of ``nb`` for learners: exercises outside ``assign`` (if given), solutions
    and hidden tests removed; stubs and checks kept; outputs and widget state cleared;
    exercise headers rewritten as plain markdown (Jupyter does not render directives)."""
    keep = None if assign is None else set(assign)
    student = copy.deepcopy(nb)
    cells = []
    for cell in student.cells:
        label = _exercise_of(cell)
        if _for_instructors(cell) or (label and keep is not None and label not in keep):
            continue
        if cell.cell_type == "markdown" and label:
            cell.source = _EXERCISE_START.sub(
                lambda m: f"### Exercise `{label}` — {m['title'].strip()}", cell.source
            )
            cell.source = _EXERCISE_END.sub("", cell.source).strip()
            if not cell.source:
                continue
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
        cells.append(cell)
    student.cells = cells
    student.metadata.pop("widgets", None)
    return student


def solution_leaks(nb, student) -> list[str]:
    """Lines of ``nb``'s solution and hidden-test cells that appear in ``student``.

    A line counts if it is at least 12 characters long, is not a directive fence or
    option, and is not also in the exercise's own kept cells (a stub may share the
    solution's signature and docstring)."""
    text = "\n".join(_normalise(line) for cell in student.cells for line in cell.source.splitlines())
    text += "\n" + json.dumps(student.metadata)
    leaks = []
    for label in exercise_labels(nb):
        cells = [cell for cell in nb.cells if _exercise_of(cell) == label]
        hidden = [cell for cell in cells if _for_instructors(cell)]
        shared = {_normalise(line) for cell in cells if cell not in hidden for line in cell.source.splitlines()}
        for cell in hidden:
            for line in map(_normalise, cell.source.splitlines()):
                fence = re.match(r"(`{3,}|:{3,})|:[\w-]+:", line)
                if len(line) >= 12 and not fence and line not in shared and line in text:
                    leaks.append(f"{label}: {line}")
    for cell in student.cells:
        if _for_instructors(cell) or re.search(r"\{solution(-start)?\}", cell.source):
            leaks.append(f"{_exercise_of(cell)}: a solution cell survived: {cell.source[:60]!r}")
    return leaks


def _normalise(line: str) -> str:
    return " ".join(line.split())


def _read_chapters(chapters: Path) -> dict[Path, nbformat.NotebookNode]:
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


def write_student_version(chapters: Path, out: Path, assign: Iterable[str] | None = None) -> list[Path]:
    """Write the student version of every chapter (or of those with an assigned exercise)
    into ``out``, a new or empty folder. Raises SolutionLeak, writing nothing, if any
    solution text would survive; ValueError for an unknown label or a broken convention."""
    notebooks = _read_chapters(Path(chapters))
    known = [label for nb in notebooks.values() for label in exercise_labels(nb)]
    assigned = None if assign is None else list(dict.fromkeys(assign))
    unknown = sorted(set(assigned or ()) - set(known))
    if unknown:
        raise ValueError(f"unknown exercise(s) {', '.join(unknown)}; the chapters have: {', '.join(known)}")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty: give a new or empty folder")
    students = {}
    for path, nb in notebooks.items():
        if assigned is not None and not set(exercise_labels(nb)) & set(assigned):
            continue
        student = make_student_notebook(nb, assigned)
        leaks = solution_leaks(nb, student)
        if leaks:
            raise SolutionLeak(f"{path.name}: solution text survives:\n  " + "\n  ".join(leaks))
        students[out / path.name] = student
    out.mkdir(parents=True, exist_ok=True)
    for target, student in students.items():
        nbformat.write(student, target)
    return list(students)


# ---------------------------------------------------------------------------------------
# Grading


@dataclass(frozen=True)
class Grade:
    """One row of the report: how ``learner`` did on ``exercise``."""

    learner: str
    exercise: str
    status: str  # passed, failed, not attempted, notebook crashed
    message: str
    notebook: str  # the submitted file it came from ("" if none held the exercise)


@dataclass
class _Run:
    submitted: object | None  # the notebook as submitted (None: unreadable)
    executed: object | None
    results: list[dict]  # what the checks logged
    problem: str  # why the run stopped early ("" if it ran to the end)
    errors: list[str]  # cells that raised, as "cell N raised E: message"


def _submissions(folder: Path) -> dict[str, list[Path]]:
    """learner -> notebooks: folder/LEARNER/**.ipynb, or folder/LEARNER.ipynb."""
    by_learner: dict[str, list[Path]] = {}
    for path in sorted(folder.rglob("*.ipynb")):
        relative = path.relative_to(folder)
        if ".ipynb_checkpoints" in relative.parts:
            continue
        learner = relative.parts[0] if len(relative.parts) > 1 else path.stem
        by_learner.setdefault(learner, []).append(path)
    return by_learner


def _with_hidden_tests(nb, hidden: dict[str, list]):
    """A copy of ``nb`` with each exercise's hidden tests after its last cell."""
    run = copy.deepcopy(nb)
    for label, tests in hidden.items():
        positions = [i for i, cell in enumerate(run.cells) if _exercise_of(cell) == label]
        if not positions:
            continue
        injected = []
        for test in tests:
            cell = nbformat.v4.new_code_cell("from attncourse import checks as check\n" + test.source)
            cell.metadata["tags"] = [HIDDEN_TEST, EXERCISE_PREFIX + label]
            injected.append(cell)
        run.cells[positions[-1] + 1 : positions[-1] + 1] = injected
    return run


def _run_to_completion(coroutine):
    """asyncio.run in a thread of its own: the caller's thread may already run an event
    loop (grade() called from Jupyter, or beside Playwright), where asyncio.run refuses."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(asyncio.run, coroutine).result()


def _run_notebook(path: Path, hidden, time_limit: float, check_timeout: float | None) -> _Run:
    try:
        submitted = nbformat.read(path, as_version=4)
    except Exception as error:
        return _Run(None, None, [], f"could not read the notebook ({checks.core._describe(error)})", [])
    executed = _with_hidden_tests(submitted, hidden)
    current = {"cell": 0}
    client = NotebookClient(
        executed, timeout=None, kernel_name="python3", allow_errors=True,
        shutdown_kernel="immediate", resources={"metadata": {"path": str(path.parent)}},
        on_cell_start=lambda cell, cell_index: current.update(cell=cell_index + 1),
    )
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "checks.jsonl"
        env = {k: v for k, v in os.environ.items() if k != checks.MODE_VARIABLE}
        env[checks.LOG_VARIABLE] = str(log)
        if check_timeout is not None:
            env[checks.TIMEOUT_VARIABLE] = str(check_timeout)
        problem = ""
        started = time.monotonic()
        try:
            _run_to_completion(asyncio.wait_for(client.async_execute(env=env), time_limit))
        except Exception as error:  # the learner's notebook may break the run in any way
            if time.monotonic() - started >= time_limit:  # the kernel dies as it is stopped
                problem = f"did not finish within the time limit of {time_limit:g} s (stopped in cell {current['cell']})"
            elif isinstance(error, DeadKernelError):
                problem = f"the kernel died in cell {current['cell']}"
            else:
                problem = f"could not run in cell {current['cell']}: {checks.core._describe(error)}"
        results = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    errors = [
        f"cell {index + 1} raised {output.get('ename')}: {output.get('evalue', '')}"[:300]
        for index, cell in enumerate(executed.cells)
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    return _Run(submitted, executed, results, problem, errors)


def _grade_exercise(run: _Run, label: str) -> tuple[str, str]:
    results = [r for r in run.results if r["exercise"] == label]
    visible = [r for r in results if r["kind"] == "check"][-1:]
    considered = visible + [r for r in results if r["kind"] == "hidden"]
    failed = [r for r in considered if r["status"] == checks.FAILED]
    if failed:
        return FAILED, " ".join(("hidden test: " if r["kind"] == "hidden" else "") + r["message"] for r in failed)
    not_started = [r for r in considered if r["status"] == checks.NOT_IMPLEMENTED]
    if not_started:
        return NOT_ATTEMPTED, not_started[0]["message"]
    if considered:
        return PASSED, (visible or considered)[0]["message"]
    for cell in run.executed.cells:
        if _exercise_of(cell) == label and _role_of(cell) == CHECK:
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    return FAILED, f"the check cell raised {output.get('ename')}: {output.get('evalue', '')}"
    if run.problem:
        return CRASHED, run.problem
    return NOT_ATTEMPTED, "no check ran for this exercise (was its check cell deleted?)"


def grade_submissions(
    submissions: Path,
    chapters: Path = Path("chapters"),
    assign: Iterable[str] | None = None,
    time_limit: float = 120.0,
    check_timeout: float | None = None,
    executed_dir: Path | None = None,
) -> tuple[list[Grade], dict[str, list[str]]]:
    """Run every submitted notebook in a fresh kernel and grade each learner's exercises.

    Returns the grades (one per learner and exercise) and, per learner, the problems
    seen while running their notebooks (cells that raised, crashes), for the summary.
    The exercises graded are ``assign``, or else every exercise found in a submission.
    A crashing or endless notebook is a grade, never an exception.
    """
    sources = _read_chapters(Path(chapters))
    hidden: dict[str, list] = {}
    order = []
    for nb in sources.values():
        order += exercise_labels(nb)
        for cell in nb.cells:
            if _role_of(cell) == HIDDEN_TEST:
                hidden.setdefault(_exercise_of(cell), []).append(cell)
    learners = _submissions(Path(submissions))
    if not learners:
        raise ValueError(f"no submitted notebooks (*.ipynb) in {submissions}")
    runs = {
        learner: {path: _run_notebook(path, hidden, time_limit, check_timeout) for path in paths}
        for learner, paths in learners.items()
    }
    if assign is None:
        found = {label for per in runs.values() for run in per.values() if run.submitted for label in exercise_labels(run.submitted)}
        expected = [label for label in order if label in found] + sorted(found - set(order))
    else:
        expected = list(dict.fromkeys(assign))
    grades, problems = [], {}
    for learner, per in runs.items():
        for label in expected:
            holders = [(p, r) for p, r in per.items() if r.submitted and label in exercise_labels(r.submitted)]
            unreadable = [(p, r) for p, r in per.items() if r.submitted is None]
            if holders:
                path, run = holders[0]
                status, message = _grade_exercise(run, label)
            elif unreadable:
                path, run = unreadable[0]
                status, message = CRASHED, run.problem
            else:
                path, status, message = None, NOT_ATTEMPTED, "no submitted notebook contains this exercise"
            notebook = str(path.relative_to(submissions)) if path else ""
            grades.append(Grade(learner, label, status, message, notebook))
        problems[learner] = [
            f"{path.relative_to(submissions)}: {note}"
            for path, run in per.items()
            for note in ([run.problem] if run.problem else []) + _solution_note(run) + run.errors
        ]
        if executed_dir is not None:
            for path, run in per.items():
                if run.executed is not None:
                    target = Path(executed_dir) / learner / path.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    nbformat.write(run.executed, target)
    return grades, problems


def _solution_note(run: _Run) -> list[str]:
    if run.submitted and any(_for_instructors(cell) for cell in run.submitted.cells):
        return ["holds the course's solution cells: the solved chapter, not the student version?"]
    return []


def summary(grades: list[Grade], problems: dict[str, list[str]]) -> str:
    """A readable report in markdown: a table of learners by exercises, then the details."""
    learners = list(dict.fromkeys(g.learner for g in grades))
    exercises = list(dict.fromkeys(g.exercise for g in grades))
    status = {(g.learner, g.exercise): g for g in grades}
    lines = [
        "# Grades", "",
        f"{len(learners)} learner(s), {len(exercises)} exercise(s).", "",
        "| learner | " + " | ".join(exercises) + " |",
        "|---" * (len(exercises) + 1) + "|",
    ]
    lines += [f"| {learner} | " + " | ".join(status[learner, e].status for e in exercises) + " |" for learner in learners]
    for learner in learners:
        lines += ["", f"## {learner}", ""]
        for exercise in exercises:
            grade = status[learner, exercise]
            detail = f": {grade.message}" if grade.status != PASSED and grade.message else ""
            lines.append(f"- {exercise}: **{grade.status}**{detail}")
        if problems.get(learner):
            lines += ["", "While running the notebooks:", ""] + [f"- {note}" for note in problems[learner]]
    return "\n".join(lines) + "\n"


def write_report(grades: list[Grade], problems: dict[str, list[str]], out: Path) -> tuple[Path, Path]:
    """Write ``grades.csv`` (one row per learner and exercise) and ``summary.md`` into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table, text = out / "grades.csv", out / "summary.md"
    with open(table, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow([field.name for field in fields(Grade)])
        writer.writerows(astuple(grade) for grade in grades)
    text.write_text(summary(grades, problems), encoding="utf-8")
    return table, text


# ---------------------------------------------------------------------------------------
# Command line

_DESCRIPTION = """\
Instructor tools for "Attention, step by step".

Workflow:
  1. See the exercises and their labels:
       python -m attncourse.instructor list
  2. Make the student version (all exercises, or --assign a subset) and hand it out:
       python -m attncourse.instructor student --out handout --assign ch1-stable-softmax,ch1-predict-doubling
     Solution and hidden-test cells are removed, stubs and checks kept, outputs and
     widget state cleared. It fails, writing nothing, if any solution text survives.
  3. Collect the notebooks, one folder per learner (submissions/ada/01_....ipynb) or
     one file per learner (submissions/ada.ipynb), and grade them:
       python -m attncourse.instructor grade submissions --out report --assign ...
     Each notebook runs in a fresh kernel with a time limit; the hidden tests run
     after each exercise. report/grades.csv and report/summary.md give, per learner
     and exercise: passed, failed (with the check's message), not attempted, or
     notebook crashed. report/executed/ keeps the executed notebooks.
"""


def _parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="python -m attncourse.instructor", description=_DESCRIPTION,
        epilog=TAG_CONVENTION, formatter_class=formatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{list,student,grade}")
    chapters = argparse.ArgumentParser(add_help=False)
    chapters.add_argument("--chapters", type=Path, default=Path("chapters"),
                          help="folder of the solved chapter notebooks (default: chapters)")
    assign = argparse.ArgumentParser(add_help=False)
    assign.add_argument("--assign", action="append", metavar="LABEL[,LABEL...]",
                        help="only these exercises (comma-separated or repeated); default: all")

    commands.add_parser("list", parents=[chapters], formatter_class=formatter,
                        help="list the exercises of the chapters, by label",
                        description="List every exercise of the chapters: its label and title.")
    student = commands.add_parser(
        "student", parents=[chapters, assign], formatter_class=formatter,
        help="make the student version of the chapters",
        description="Write the student version: solutions and hidden tests removed, stubs and "
                    "checks kept, outputs and widget state cleared. With --assign, only the "
                    "chapters holding an assigned exercise, and only those exercises.",
        epilog=TAG_CONVENTION,
    )
    student.add_argument("--out", type=Path, required=True, help="a new or empty folder to write into")
    grade = commands.add_parser(
        "grade", parents=[chapters, assign], formatter_class=formatter,
        help="run submitted notebooks and report per learner and exercise",
        description="Run every submitted notebook (SUBMISSIONS/LEARNER/*.ipynb or "
                    "SUBMISSIONS/LEARNER.ipynb) in a fresh kernel, with the hidden tests of "
                    "--chapters inserted after each exercise, and write OUT/grades.csv, "
                    "OUT/summary.md and OUT/executed/. Each learner and exercise is passed, "
                    "failed (with the check's message), not attempted, or notebook crashed. "
                    "A notebook that raises, crashes its kernel or runs past the time limit "
                    "is reported, never fatal.",
        epilog=TAG_CONVENTION,
    )
    grade.add_argument("submissions", type=Path, help="folder of submitted notebooks")
    grade.add_argument("--out", type=Path, required=True, help="folder for the report")
    grade.add_argument("--time-limit", type=float, default=120.0, metavar="SECONDS",
                       help="per notebook (default: 120)")
    grade.add_argument("--check-timeout", type=float, default=None, metavar="SECONDS",
                       help=f"time budget of each check (default: {checks.DEFAULT_TIMEOUT:g})")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status (2 for a usage error, 1 for a leak)."""
    args = _parser().parse_args(argv)
    assign = None
    if getattr(args, "assign", None):
        assign = [label.strip() for item in args.assign for label in item.split(",") if label.strip()]
    try:
        if args.command == "list":
            for path, nb in _read_chapters(args.chapters).items():
                print(path.name)
                for label in exercise_labels(nb):
                    print(f"  {label:32} {_exercise_title(nb, label)}")
        elif args.command == "student":
            for path in write_student_version(args.chapters, args.out, assign):
                labels = exercise_labels(nbformat.read(path, as_version=4))
                print(f"wrote {path}  ({', '.join(labels) or 'no exercises'})")
        else:
            grades, problems = grade_submissions(
                args.submissions, args.chapters, assign, args.time_limit,
                args.check_timeout, executed_dir=args.out / "executed",
            )
            table, text = write_report(grades, problems, args.out)
            print(text.read_text(encoding="utf-8"))
            print(f"wrote {table} and {text}")
    except SolutionLeak as leak:
        print(f"error: {leak}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
