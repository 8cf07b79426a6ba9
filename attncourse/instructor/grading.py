"""Grading: run each submitted notebook in a sandbox, where it produces data only, and
judge that data with the course's checks and hidden tests in the grader's own process.

Trust model (the instructor guide says the same at more length). The learner's notebook
is untrusted code. It runs in a bubblewrap sandbox (``sandbox.py``, ``execution.py``) in a
throwaway copy, within limits of time, memory, processes, files and output. After the
learner's answer to each exercise (``placement.py``) a cell the grader wrote records the
answer as data: values, and the outputs of the learner's functions on the inputs the
course's check and hidden tests use (``attncourse.checks.wire``). The verdict is computed
here (``verdict.py``) by the course's own checks on that data: nothing the learner's code
does in the sandbox can reach them, and the expected values and the hidden tests never
enter the sandbox (their inputs do, found on the solved chapter by ``discovery.py``).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import functools
import json
import math
import numbers
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import nbformat
import numpy as np

from attncourse import checks
from attncourse.checks import wire
from attncourse.checks.core import describe
from attncourse.checks.predict import ATTEMPTS_MIMETYPE, PREDICTIONS, read_number
from attncourse.instructor import points, verdict
from attncourse.instructor.discovery import hidden_inputs
from attncourse.instructor.execution import Execution, execute, megabytes
from attncourse.instructor.placement import (
    Exercise,
    Placed,
    defined_names,
    exercise_of_course,
    notebook_to_run,
    skipped_cells,
)
from attncourse.instructor.sandbox import DEFAULT_LIMITS, Limits, Sandbox, prepared_sandbox
from attncourse.instructor.tags import (
    CHECK,
    HIDDEN_TEST,
    exercise_labels,
    exercise_of,
    for_instructors,
    read_chapters,
    role_of,
)

PASSED, FAILED, NOT_ATTEMPTED, CRASHED, ERROR = (
    "passed", "failed", "not attempted", "notebook crashed", "error",
)
NEEDS_REVIEW, COMPLETED = "needs review", "completed"
SKIPPED = ""  # the key of ``problems`` listing the files of the submissions not graded

# What in a learner's source reads a predict exercise's answer from the course's declarations.
READS_ANSWERS = re.compile(r"\bPREDICTIONS\b|\bchecks?\s*\.\s*(predict|ch\d+)\b|\bpredict_exercise\b"
                           r"|\battncourse\.checks\.(predict|ch\d+)\b|\.answer\b")


# What in a learner's source touches the grader's recording in the sandbox. It cannot change
# a verdict (the data is judged here), but it can withhold or alter data: worth a look.
TOUCHES_RECORDING = re.compile(r"vnd\.attncourse|checks\s*\.\s*(wire|core)\b|\bimport\s+(wire|core)\b|\bexport\s*\("
                               r"|\bsys\s*\.\s*(setprofile|settrace)\b|\bevents\s*\.\s*register\b"
                               r"|^\s*[\w.]*\bdisplay\s*=[^=]|\bCHECKS\b|__wrapped__", re.MULTILINE)


# What a learner's cell raises when the sandbox lacks what the learner's own machine had:
# the files beside the notebook, a module the course does not install, the network, a
# keyboard. An answer that fails after one of these may be right: the grader cannot tell.
# (An ImportError of a name from a module the sandbox has is the learner's own, anywhere.)
MISSING_IN_THE_SANDBOX = frozenset({
    "ModuleNotFoundError", "FileNotFoundError", "NotADirectoryError", "IsADirectoryError",
    "PermissionError", "OSError", "URLError", "ConnectionError", "gaierror", "StdinNotImplementedError"})


@dataclass(frozen=True)
class Grade:
    """One row of the report: how ``learner`` did on ``exercise``."""

    learner: str
    exercise: str
    status: str  # passed, failed, completed, not attempted, needs review, notebook crashed, error
    message: str
    notebook: str  # the submitted file it came from ("" if none held the exercise)
    review: str = ""  # why an instructor should look at this row ("" if no reason)
    graded_at: str = ""  # when (UTC, ISO 8601)
    inputs_right: int = 0  # partial credit (attncourse.instructor.points): the inputs right,
    inputs: int = 0  # of the exercise's inputs (0: not an implement exercise, or not judged)
    feedback: str = ""  # what the learner may read: the check's message, hidden tests by number only


@dataclass
class _Run:
    notebook: str  # the submitted file, relative to the submissions folder
    submitted: Any = None  # the notebook as submitted (None: unreadable)
    execution: Execution | None = None
    placed: list[Placed] = field(default_factory=list)
    problem: str = ""  # why the run stopped early, or never started ("" if it ran to the end)
    grader_failed: bool = False  # a bug of grade's own, not the learner's doing

    @property
    def executed(self):
        return self.execution.executed if self.execution else None


@dataclass(frozen=True)
class Course:
    """What grading takes from the solved chapters."""

    order: list[str]  # every exercise label, in the chapters' order
    exercises: dict[str, Exercise]  # label -> its check's arguments and names (those with a check)
    hidden: dict[str, list[str]]  # label -> the sources of its hidden-test cells
    inputs: dict[str, dict]  # label -> its hidden tests' modules, names and inputs (discovery)
    sources: frozenset[str] = frozenset()  # every code cell of the chapters: the course's, not the learner's
    chapters: dict[str, frozenset[str]] = field(default_factory=dict)  # "ch1" -> its chapter's code cells


# ---------------------------------------------------------------------------------------
# Reading a notebook as Jupyter would


def read_leniently(path: Path):
    """The notebook at ``path``, read as Jupyter opens it: nbformat 4 (or older, converted),
    with what another editor may leave out or add tolerated (a missing ``metadata``, an
    ``id`` in an older minor version, a source as one string or as lines)."""
    data = json.loads(path.read_bytes().decode("utf-8-sig"))
    if not isinstance(data, dict) or not isinstance(data.get("cells", data.get("worksheets")), list):
        raise ValueError("not a notebook: no list of cells")
    if data.get("nbformat", 4) < 4:
        return nbformat.convert(nbformat.from_dict(data), 4)
    cells = []
    for cell in data["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        metadata: dict = cell["metadata"] if isinstance(cell.get("metadata"), dict) else {}
        tags = metadata.get("tags")
        metadata = {**metadata, "tags": [str(t) for t in tags] if isinstance(tags, list) else []}
        if cell["cell_type"] == "code":
            made = nbformat.v4.new_code_cell(source, metadata=metadata)
            outputs = cell.get("outputs")
            made.outputs = [nbformat.from_dict(o) for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else []
        elif cell["cell_type"] == "markdown":
            made = nbformat.v4.new_markdown_cell(source, metadata=metadata)
        else:
            made = nbformat.v4.new_raw_cell(source, metadata=metadata)
        cells.append(made)
    notebook_metadata = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    return nbformat.v4.new_notebook(cells=cells, metadata=notebook_metadata)


SAVED_OUTPUTS_FACTOR = 5  # a notebook file may be this many output limits: saved outputs are not run


def read_submitted(path: Path, limits: Limits):
    """``read_leniently``, for a notebook whose cells hold at most ``limits.output`` bytes
    of code and text; its saved outputs (a long training log, figures), which grade clears
    before running it, may take ``SAVED_OUTPUTS_FACTOR`` times as much. Raises ValueError
    past either."""
    size, largest = path.stat().st_size, SAVED_OUTPUTS_FACTOR * limits.output
    if size > largest:
        raise ValueError(f"it is {megabytes(size)}; grade reads notebooks of up to {megabytes(largest)}")
    nb = read_leniently(path)
    cells = sum(len(cell.source.encode("utf-8", "surrogatepass")) for cell in nb.cells)
    if cells > limits.output:
        raise ValueError(f"its cells hold {megabytes(cells)} besides their outputs; grade reads notebooks of up to "
                         f"{megabytes(limits.output)}")
    return nb


# ---------------------------------------------------------------------------------------
# Running one notebook


def _run_notebook(submissions: Path, relative: Path, course: Course, sandbox: Sandbox, number: int,
                  time_limit: float, check_timeout: float | None) -> _Run:
    run = _Run(shown(relative.as_posix()))
    path = submissions / relative
    limits = sandbox.limits
    try:
        run.submitted = read_submitted(path, limits)
        labels = [label for label in course.exercises if label in _answered(run.submitted, course)]
        exercises = [course.exercises[label] for label in labels]
        sliced, run.placed = notebook_to_run(run.submitted, exercises, course.sources)
    except Exception as error:  # a learner's file may be anything
        run.submitted = None
        run.problem = f"could not read the notebook ({describe(error)})"
        return run
    inputs = {label: {"values": tests["values"], "calls": tests["calls"]}
              for label, tests in course.inputs.items() if label in {p.label for p in run.placed}}

    def execute_in_sandbox(nb, name: str) -> Execution:
        scratch = sandbox.scratch(name)
        sandbox.copy_in(scratch, path)  # its own copy, nothing else
        sandbox.copy_in_data(scratch, wire.INPUTS_FILE, json.dumps({"schema": wire.SCHEMA, "tests": inputs}))
        return execute(nb, sandbox, scratch, sandbox.environment(scratch, check_timeout), time_limit)

    run.execution = execute_in_sandbox(sliced, f"{number:04d}")
    if skipped_cells(sliced) and not run.execution.problem and not _confirmed(run, course):
        whole, run.placed = notebook_to_run(run.submitted, exercises)  # the same cells, every one run
        run.execution = execute_in_sandbox(whole, f"{number:04d}-whole")
    run.problem = run.execution.problem
    return run


def _confirmed(run: _Run, course: Course) -> bool:
    """Whether a run that left out some of the course's cells stands: every exercise
    passed or was not started. Any other verdict could, in principle, come from a cell
    left out (a missed dependency would be a silent zero), so the whole notebook runs."""
    try:
        return all(_grade_exercise(run, p.label, course)[0] in (PASSED, NOT_ATTEMPTED) for p in run.placed)
    except Exception:  # judged again, and reported, after the run
        return False


def _answered(submitted, course: Course) -> list[str]:
    """The exercises graded in this notebook: those it has cells of, and those whose names
    it defines, of the chapters its tags name (of every chapter, in a notebook stripped of
    its tags): an exercise whose tags an editor dropped or the learner misspelt is graded
    like the others."""
    tagged = set(exercise_labels(submitted)) & set(course.exercises)
    chapters = {label.split("-", 1)[0] for label in tagged} or _chapters_by_cells(submitted, course)
    defined = set().union(*(defined_names(c.source) for c in submitted.cells if c.cell_type == "code"))
    return [label for label, e in course.exercises.items()
            if label in tagged or (set(e.names) & defined and (not chapters or label.split("-", 1)[0] in chapters))]


def _chapters_by_cells(submitted, course: Course) -> set[str]:
    """The chapters a notebook stripped of its tags is a copy of: those whose code cells, as
    handed out, it holds the most of (none if it holds none: then it may be any). Two
    chapters in one learner's folder, both stripped, each answer their own exercises, not
    every exercise whose names they define (``prediction``)."""
    own = {cell.source.strip() for cell in submitted.cells if cell.cell_type == "code"}
    shared = {chapter: len(own & code) for chapter, code in course.chapters.items()}
    most = max(shared.values(), default=0)
    return {chapter for chapter, count in shared.items() if count == most and most > 0}


def _run_safely(submissions: Path, relative: Path, *args, **kwargs) -> _Run:
    """_run_notebook, and if the grader itself fails on this notebook, that learner's error."""
    try:
        return _run_notebook(submissions, relative, *args, **kwargs)
    except Exception as error:
        return _Run(shown(relative.as_posix()), problem=f"the grader failed on this notebook: {describe(error)}",
                    grader_failed=True)


# ---------------------------------------------------------------------------------------
# Judging what a notebook recorded


def _record(run: _Run, placed: Placed) -> tuple[dict | None, str]:
    """The record the grader's cell ``placed`` sent, or why there is none to judge."""
    cell = run.executed.cells[placed.index]
    raised = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    records = [o["data"][wire.RECORD_MIMETYPE] for o in cell.get("outputs", [])
               if wire.RECORD_MIMETYPE in o.get("data", {})]
    where = f"the grader's cell {placed.index + 1}"
    if raised:
        return None, f"{where} raised {raised[0].get('ename')}: {raised[0].get('evalue', '')}"
    if not records:
        return None, f"{where} ran but recorded nothing (the notebook changed what it uses?)"
    record = records[-1]  # the grader's own comes last; what the learner's code displayed comes before
    if not (isinstance(record, dict) and record.get("schema") == wire.SCHEMA and record.get("exercise") == placed.label
            and isinstance(record.get("answers"), list) and isinstance(record.get("calls"), list)):
        return None, f"{where} sent a malformed record"
    return record, ""


def _grade_exercise(run: _Run, label: str, course: Course) -> tuple[str, str, str]:
    """(status, message, review) of ``label`` in one executed notebook."""
    placed = next((p for p in run.placed if p.label == label), None)
    if placed is None:
        return ERROR, "the course's chapters have no check cell for this exercise", ""
    stopped = run.execution.stopped_in if run.execution is not None else None
    if stopped is not None and stopped <= placed.index:
        return CRASHED, run.problem, placed.note
    record, problem = _record(run, placed)
    if record is None:
        return NEEDS_REVIEW, problem, problem
    notes = [placed.note] if placed.note else []
    touching = [m.group(0) for c in _learners_code(run.submitted, course)
                for m in [TOUCHES_RECORDING.search(c.source)] if m]
    if touching:
        notes.append(f"its source touches the grader's recording (`{touching[0]}`)")
    if record.get("references"):
        notes.append(f"its answer called the course's own {', '.join(map(str, record['references'][:3]))}")
    try:
        results = [verdict.judge_check(label, record)]
        for source in course.hidden.get(label, []):
            results += verdict.judge_hidden(label, source, course.inputs.get(label, {}), record)
    except wire.WireError as error:
        return NEEDS_REVIEW, f"its record cannot be read: {error}", f"a malformed record ({error})"
    review = [r for r in results if r.status == checks.NEEDS_REVIEW]
    if review:
        return NEEDS_REVIEW, review[0].message, "; ".join([review[0].message, *notes])
    failed = [r for r in results if r.status == checks.FAILED]
    not_started = [r for r in results if r.status == checks.NOT_IMPLEMENTED]
    if failed:
        status, message = FAILED, " ".join(("hidden test: " if r.kind == "hidden" else "") + r.message for r in failed)
    elif not_started:
        status, message = NOT_ATTEMPTED, not_started[0].message
    else:
        return PASSED, results[0].message, "; ".join(notes)
    lacking = _missing_in_the_sandbox(run, placed, course, after_the_stub=status == NOT_ATTEMPTED)
    if lacking:
        why = (f"{status} ({message}), but {lacking}: grade runs the notebook alone, without the files beside it, "
               "modules the course does not install, the network or a keyboard, so the answer may be right")
        return NEEDS_REVIEW, why, "; ".join([why, *notes])
    return status, message, "; ".join(notes)


def _missing_in_the_sandbox(run: _Run, placed: Placed, course: Course, after_the_stub: bool) -> str:
    """Which of the learner's cells before ``placed`` raised for want of something the
    sandbox does not give (``MISSING_IN_THE_SANDBOX``), as "cell N raised ...", or "".
    ``after_the_stub``: only a cell after the last definition of the exercise's names (an
    answer left as handed out is not attempted, whatever failed above it)."""
    cells = run.executed.cells[: placed.index]
    names = set(course.exercises[placed.label].names)
    first = max((i for i, cell in enumerate(cells) if cell.cell_type == "code" and defined_names(cell.source) & names),
                default=-1) if after_the_stub else -1
    for index, cell in enumerate(cells):
        if index <= first or cell.cell_type != "code" or "attncourse" in cell.metadata \
                or cell.source.strip() in course.sources:
            continue  # the grader's cells, and the course's as handed out
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and output.get("ename") in MISSING_IN_THE_SANDBOX:
                return f"cell {index + 1} raised {output.get('ename')}: {str(output.get('evalue', ''))[:200]}"
    return ""


def _learners_code(submitted, course: Course) -> list:
    """The code cells the learner wrote or changed (the course's own cells, as handed
    out, import the checks' modules themselves)."""
    return [c for c in submitted.cells if c.cell_type == "code" and role_of(c) not in (CHECK, HIDDEN_TEST)
            and c.source.strip() not in course.sources]


def _predicted(run: _Run, label: str, status: str, message: str, review: str, score: bool,
               course: Course) -> tuple[str, str, str]:
    """A predict exercise's grade: completed (or its verdict where the instructor scores
    them), with what the notebook's saved attempts and source say about how it was found."""
    notes = [review] if review else []
    attempts = _attempts(run.submitted, label)
    first_right = next((i for i, a in enumerate(attempts) if a.get("right")), len(attempts))
    if any(a.get("revealed") for a in attempts[:first_right]):
        notes.append(f"the check showed the answer after {first_right} misses, before the first right attempt")
    reading = [m.group(0) for c in _learners_code(run.submitted, course) for m in [READS_ANSWERS.search(c.source)] if m]
    if reading:
        notes.append(f"its source reads the course's declarations (`{reading[0]}`)")
    if attempts:
        first = attempts[0]
        message = f"{message} (first attempt: {first.get('value')!r}, {len(attempts)} in all)"
    if not score and (status == PASSED or (status == FAILED and _gave_a_number(run, label))):
        status = COMPLETED  # a wrong number counts; no number (undefined, a word, a tuple) does not
    return status, message, "; ".join(notes)


def _gave_a_number(run: _Run, label: str) -> bool:
    """Whether the notebook recorded a number as the prediction of ``label``."""
    placed = next((p for p in run.placed if p.label == label), None)
    record, _ = _record(run, placed) if placed is not None and run.executed is not None else (None, "")
    if not record or record.get("missing") or not record.get("answers"):
        return False
    try:
        value = wire.decode(record["answers"][0])
    except wire.WireError:
        return False
    if isinstance(value, str):
        return read_number(value)[0] is not None
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _attempts(submitted, label: str) -> list[dict]:
    """The attempts the predict check saved in the notebook's outputs (the learner can
    edit or clear them: best effort)."""
    found: list[dict] = []
    for cell in submitted.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data", {}).get(ATTEMPTS_MIMETYPE) if isinstance(output.get("data"), dict) else None
            if isinstance(data, dict) and data.get("exercise") == label and isinstance(data.get("attempts"), list):
                found = [a for a in data["attempts"] if isinstance(a, dict)]
    return found


def _grade_learner(learner: str, runs: list[_Run], expected: list[str], course: Course, limits: Limits,
                   score_predictions: bool) -> list[Grade]:
    grades = []
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    for label in expected:
        outcomes = []
        for run in runs:
            if run.submitted is None or label not in {p.label for p in run.placed}:
                continue
            try:
                status, message, review = _grade_exercise(run, label, course)
            except Exception as error:  # a bug of grade's own: this row's error, not the class's
                status, message, review = ERROR, f"the grader failed on this exercise: {describe(error)}", ""
            if label in PREDICTIONS:
                status, message, review = _predicted(run, label, status, message, review, score_predictions, course)
            outcomes.append((run.notebook, status, message, review))
        outcomes = _agreeing_copies(_without_scratch(outcomes, runs, course))
        unreadable = [run for run in runs if run.submitted is None]
        if len(outcomes) > 1:
            listed = ", ".join(f"{notebook} ({status})" for notebook, status, *_ in outcomes)
            grades.append(Grade(learner, label, ERROR,
                                f"duplicate submissions hold this exercise: {listed}; keep one and grade again",
                                " ".join(o[0] for o in outcomes), "", now))
        elif outcomes:
            notebook, status, message, review = outcomes[0]
            grades.append(Grade(learner, label, status, message, notebook,
                                f"{notebook}: {review}" if review else "", now,
                                **_learner_view(runs, notebook, label, course)))
        elif unreadable:
            first = unreadable[0]
            grades.append(Grade(learner, label, ERROR if first.grader_failed else CRASHED, first.problem,
                                first.notebook, "", now))
        else:
            grades.append(Grade(learner, label, NOT_ATTEMPTED, "no submitted notebook contains this exercise", "", "", now))
    return [replace(grade, message=_explained(grade.message, limits), review=_clip(grade.review))
            for grade in grades]


def _without_scratch(outcomes: list[tuple[str, str, str, str]], runs: list[_Run], course: Course
                     ) -> list[tuple[str, str, str, str]]:
    """``outcomes`` (notebook, status, message, review) of one exercise, less those of the
    learner's scratch notebooks (no tags, none of the course's cells: an ``Untitled.ipynb``
    that happens to bind ``prediction``) when exactly one other notebook holds an attempted
    answer: that one is graded, and its review names the others. Otherwise all are kept
    (and reported as duplicates)."""
    if len(outcomes) < 2:
        return outcomes
    scratch = {run.notebook for run in runs if run.submitted is not None and not exercise_labels(run.submitted)
               and not _chapters_by_cells(run.submitted, course)}
    kept = [outcome for outcome in outcomes if outcome[0] not in scratch]
    if len(kept) != 1 or kept[0][1] == NOT_ATTEMPTED:
        return outcomes
    notebook, status, message, review = kept[0]
    others = ", ".join(outcome[0] for outcome in outcomes if outcome[0] in scratch)
    note = f"also bound in {others} (no tags, none of the course's cells), which was not graded for it"
    return [(notebook, status, message, "; ".join(filter(None, [review, note])))]


def _agreeing_copies(outcomes: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    """``outcomes`` of one exercise in several notebooks (a copy Jupyter made, ``ch1-Copy1.ipynb``)
    that all earned the same status: that status, graded on the first, its review naming
    the others. Outcomes that differ stay apart (and are reported as duplicates)."""
    if len(outcomes) < 2 or len({status for _, status, *_ in outcomes}) > 1:
        return outcomes
    notebook, status, message, review = outcomes[0]
    others = ", ".join(other for other, *_ in outcomes[1:])
    note = f"also in {others}, graded the same ({status}): keep one notebook per chapter"
    return [(notebook, status, message, "; ".join(filter(None, [review, note])))]


def _learner_view(runs: list[_Run], notebook: str, label: str, course: Course) -> dict:
    """Partial credit and the learner's feedback (``points.learner_view``), judged on the
    same record as the row's status; nothing where there is no record to judge."""
    run = next(run for run in runs if run.notebook == notebook)
    placed = next((p for p in run.placed if p.label == label), None)
    stopped = run.execution.stopped_in if run.execution is not None else None
    if placed is None or run.executed is None or (stopped is not None and stopped <= placed.index):
        return {}
    record, _ = _record(run, placed)
    try:
        return points.learner_view(label, record, course.hidden.get(label, []), course.inputs.get(label, {})) \
            if record else {}
    except Exception:  # a record the verdict could not read: the row's status already says so
        return {}


def _clip(text: str, limit: int = 1000) -> str:
    """``text`` cut to ``limit`` characters: what a learner's code prints reaches the report."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _explained(message: str, limits: Limits) -> str:
    """A grade's message, clipped, saying why a MemoryError happened (a check reports the
    MemoryError a learner's function raised as that function failing)."""
    if "MemoryError" in message and "memory limit" not in message:
        return f"{_clip(message)} (the memory limit is {megabytes(limits.memory)} per process: --memory-limit)"
    return _clip(message)


# ---------------------------------------------------------------------------------------
# The class


def _learners(folder: Path) -> tuple[dict[str, list[Path]], list[str]]:
    """(learner -> their notebooks, relative to ``folder``: LEARNER.ipynb and every notebook
    under LEARNER/; every other file of the folder, with why it is not graded)."""
    by_learner: dict[str, list[Path]] = {}
    skipped: list[str] = []
    resolved = folder.resolve()

    def skip(path: Path, why: str) -> None:
        skipped.append(f"{shown(path.relative_to(folder).as_posix())}: {why}")

    def unreadable(error: OSError) -> None:  # os.walk would pass over a folder it cannot list
        skip(Path(error.filename), f"a folder grade cannot read ({error.strerror}): nothing in it is graded")

    def consider(path: Path, learner: str) -> None:
        if path.is_symlink():
            target = path.resolve()
            leaves = resolved not in target.parents
            skip(path, "a symbolic link " + ("that leaves the submissions folder" if leaves else "(grade follows none)"))
        elif path.name.startswith("."):
            skip(path, "a hidden file (its name starts with a dot)")
        elif not path.name.lower().endswith(".ipynb"):  # as Jupyter opens it, whatever the case
            skip(path, "not a notebook (.ipynb)")
        elif not path.is_file():
            skip(path, "not a regular file")
        else:
            by_learner.setdefault(shown(learner), []).append(path.relative_to(folder))

    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            if entry.name.startswith("."):
                skip(entry, "a hidden folder (its name starts with a dot): nothing in it is graded")
                continue
            found = by_learner.setdefault(shown(entry.name), [])
            for parent, folders, files in os.walk(entry, onerror=unreadable):
                for name in sorted(folders):
                    sub = Path(parent) / name
                    if sub.is_symlink() or name.startswith("."):
                        skip(sub, "a symbolic link to a folder (grade follows none)" if sub.is_symlink()
                             else "a hidden folder (its name starts with a dot): nothing in it is graded")
                folders[:] = sorted(f for f in folders if not f.startswith(".") and not (Path(parent) / f).is_symlink())
                for name in sorted(files):
                    consider(Path(parent) / name, entry.name)
            if not found:
                by_learner[shown(entry.name)] = []
        elif entry.is_dir():
            skip(entry, "a symbolic link to a folder (grade follows none)")
        else:
            consider(entry, entry.name[:-len(".ipynb")] if entry.name.lower().endswith(".ipynb") else entry.name)
    return by_learner, skipped


def learners_in(folder: Path) -> set[str]:
    """The learners of a submissions folder (as ``grade_submissions`` names them)."""
    return set(_learners(Path(folder))[0])


def shown(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (which Python keeps as lone surrogates,
    and no report can write) shown as ``\\xff``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def course_of(chapters: Path, assign: Iterable[str] | None, cache: Path | None = None,
              submitted: Iterable[str] | None = None) -> Course:
    """The exercises of the solved chapters, and their hidden tests' inputs (running the
    chapters that hold an assigned exercise's hidden test, once: see discovery). Without
    ``assign``, only the chapters of ``submitted`` (labels found in the submissions; None:
    every chapter) are run."""
    sources = read_chapters(Path(chapters))
    checks.load_all()  # every check and predict exercise declared, for the grades below
    order = [label for nb in sources.values() for label in exercise_labels(nb)]
    unknown = sorted(set(assign or ()) - set(order))
    if unknown:
        raise ValueError(f"unknown exercise(s) {', '.join(unknown)}; the chapters have: {', '.join(order)}")
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
        label for label in hidden if label.split("-", 1)[0] in {found.split("-", 1)[0] for found in submitted}}
    inputs = hidden_inputs(sources, discovered, cache)
    exercises = {label: exercise_of_course(label, checks_cells[label], inputs.get(label, {}))
                 for label in order if label in checks_cells}
    code = {path: frozenset(c.source.strip() for c in nb.cells if c.cell_type == "code") for path, nb in sources.items()}
    by_chapter = {exercise_labels(nb)[0].split("-", 1)[0]: code[path] for path, nb in sources.items() if exercise_labels(nb)}
    return Course(order, exercises, hidden, inputs, frozenset().union(*code.values()), by_chapter)


def grade_submissions(
    submissions: Path,
    chapters: Path = Path("chapters"),
    assign: Iterable[str] | None = None,
    time_limit: float = 120.0,
    check_timeout: float | None = None,
    executed_dir: Path | None = None,
    *,
    jobs: int | None = None,
    unsafe_no_sandbox: bool = False,
    limits: Limits = DEFAULT_LIMITS,
    score_predictions: bool = False,
    cache: Path | None = None,
    learners: Iterable[str] | None = None,
    done: Callable[[str, list[Grade], list[str]], None] | None = None,
    finished: Callable[[str, list[Path]], bool] | None = None,
    contained: bool = False,
) -> tuple[list[Grade], dict[str, list[str]]]:
    """Run every submitted notebook in a sandbox and grade each learner's exercises.

    Returns the grades (one per learner and exercise, in the order of the chapters) and,
    per learner, the problems seen while running their notebooks (``problems[SKIPPED]``:
    the files of the folder not graded, each with why). The exercises graded are
    ``assign``, or else every exercise found in a submission. Up to ``jobs`` notebooks
    (default: the number of processors) run at once, each within ``limits``. Each
    learner's grades go to ``done(learner, grades, problems)`` as soon as they are known;
    a learner for whom ``finished(learner, notebooks)`` is true is not graded again; only
    ``learners`` are graded, if given. Predict exercises count as completed unless
    ``score_predictions``. ``contained``: the machine is a throwaway container, the
    sandbox (see ``prepared_sandbox``). A crashing, endless or hostile notebook is a grade, never an
    exception. Raises SandboxUnavailable if no sandbox can start (unless
    ``unsafe_no_sandbox``), ValueError for bad arguments.
    """
    submissions = Path(submissions)
    for name, value in (("time_limit", time_limit), ("check_timeout", check_timeout)):
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    if not submissions.is_dir():
        raise ValueError(f"{submissions} is not a folder")
    found, skipped = _learners(submissions)
    if learners is not None:
        unknown = sorted(set(learners) - set(found))
        if unknown:  # a misspelt name would be left as it was, silently
            raise ValueError(f"no learner {', '.join(map(repr, unknown))} in {submissions}; it has: "
                             + ", ".join(sorted(found)))
        found = {name: paths for name, paths in found.items() if name in set(learners)}
    if not found:
        raise ValueError(f"no submissions in {submissions}: expected LEARNER.ipynb files or LEARNER/ folders")
    todo = {name: paths for name, paths in found.items() if not (finished and finished(name, paths))}
    tasks = [(learner, path) for learner, paths in todo.items() for path in paths]
    expected = list(dict.fromkeys(assign)) if assign is not None else None
    results: dict[int, _Run] = {}
    grades: list[Grade] = []
    problems: dict[str, list[str]] = {SKIPPED: skipped} if skipped else {}
    jobs = jobs or os.cpu_count() or 1

    def learner_done(learner: str) -> None:
        runs = [results[i] for i, (name, _) in enumerate(tasks) if name == learner]
        labels = expected or _found_labels(runs, course)
        rows = _grade_learner(learner, runs, labels, course, limits, score_predictions)
        notes = _problems(learner, todo[learner], runs) + _graded_for_nothing(runs, rows)
        if executed_dir is not None:
            notes += _write_executed(runs, Path(executed_dir))
        grades.extend(rows)
        problems[learner] = notes
        if done is not None:
            done(learner, rows, notes)

    with prepared_sandbox(unsafe_no_sandbox, limits, contained) as sandbox:  # a sandbox that cannot start: before discovery
        course = course_of(chapters, assign, cache, _chapters_submitted(submissions, tasks, limits))
        run_one = functools.partial(_run_safely, submissions, course=course, sandbox=sandbox,
                                    time_limit=time_limit, check_timeout=check_timeout)
        remaining = {learner: len(paths) for learner, paths in todo.items()}
        for learner in [name for name, count in remaining.items() if count == 0]:
            learner_done(learner)
        # Notebooks run in worker threads, never in the caller's, which may have an event
        # loop running (a notebook's own, or a test's): the kernels need one of their own.
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(run_one, path, number=i): i for i, (_, path) in enumerate(tasks)}
            try:
                for future in concurrent.futures.as_completed(futures):
                    i = futures[future]
                    results[i] = future.result()
                    remaining[tasks[i][0]] -= 1
                    if remaining[tasks[i][0]] == 0:
                        learner_done(tasks[i][0])
            except BaseException:  # Ctrl-C, or a failure of grade's own: the notebooks not started never
                for future in futures:  # start (the pool would run the whole class first, unseen and unsaved)
                    future.cancel()
                raise
    order = {name: n for n, name in enumerate(found)}
    grades.sort(key=lambda g: (order.get(g.learner, 0), course.order.index(g.exercise) if g.exercise in course.order else 0))
    return grades, problems


def _chapters_submitted(submissions: Path, tasks: list[tuple[str, Path]], limits: Limits) -> set[str] | None:
    """The exercise labels the submissions are tagged with (None if one notebook has no
    tags left, or cannot be read: every chapter's exercises may then be in it)."""
    labels: set[str] = set()
    for _, path in tasks:
        try:
            found = exercise_labels(read_submitted(submissions / path, limits))
        except Exception:  # read again, and reported, when it runs
            return None
        if not found:
            return None
        labels.update(found)
    return labels


def _found_labels(runs: list[_Run], course: Course) -> list[str]:
    found = {p.label for run in runs for p in run.placed}
    return [label for label in course.order if label in found] or [label for label in course.order if label in course.exercises]


def _problems(learner: str, paths: list[Path], runs: list[_Run]) -> list[str]:
    flat_and_folder = {shown(p.parts[0]) for p in paths} >= {f"{learner}.ipynb", learner}
    return (
        (["submitted both as a file and as a folder: graded separately, not merged"] if flat_and_folder else [])
        + (["no notebook in the folder"] if not runs else [])
        + [f"{run.notebook}: {note}" for run in runs
           for note in (([run.problem] if run.problem else [])
                        + _solution_note(run) + (run.execution.errors if run.execution else []))]
    )


def _graded_for_nothing(runs: list[_Run], rows: list[Grade]) -> list[str]:
    """A line for each notebook read that no row was graded on (a scratch notebook beside
    the chapter's): every file of the submissions appears in the report."""
    return [f"{run.notebook}: graded for no exercise (it holds none of those graded, or another notebook "
            "of the learner's holds each one it binds)" for run in runs
            if run.submitted is not None and not any(f" {run.notebook} " in f" {g.notebook} " for g in rows)]


def _write_executed(runs: list[_Run], folder: Path) -> list[str]:
    notes = []
    for run in runs:
        if run.executed is not None:
            target = folder / run.notebook
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                nbformat.write(run.executed, target)
            except Exception as error:  # what the learner's code printed may be anything
                notes.append(f"{run.notebook}: its executed copy could not be written ({describe(error)})")
    return notes


def _solution_note(run: _Run) -> list[str]:
    if run.submitted and any(for_instructors(cell) for cell in run.submitted.cells):
        return ["holds the course's solution cells: the solved chapter, not the student version?"]
    return []
