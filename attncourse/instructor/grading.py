"""Grading: run each submitted notebook in a sandbox, with the course's own check cells and
hidden tests, and report per learner and exercise.

Trust model (the instructor guide says the same at more length). The learner's notebook
is untrusted code. It runs in a bubblewrap sandbox (``sandbox.py``) in a throwaway copy:
it cannot see the course's solutions, the other submissions or the report, whatever it
starts dies with its kernel, and its memory, processes, files and output are limited
(``sandbox.Limits``): a notebook that reaches a limit is stopped or refused, and its
report says which. Its check and hidden-test cells are replaced by the ones
in the instructor's chapters. Results come only from the cells the grader wrote, as
records carrying the nonce the grader gave that cell and a fingerprint of the checks'
code, compared with the fingerprint sent before any of the learner's code ran (see
``attncourse.checks.core``). What one Python process cannot prevent, the learner's code
replacing the checks' machinery, is detected (a changed fingerprint, a missing, extra or
foreign record, the learner's source naming the checks' internals) and flagged for review.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import functools
import os
import re
import secrets
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from attncourse import checks
from attncourse.checks.core import RESULT_MIMETYPE, _describe
from attncourse.instructor.sandbox import (
    DEFAULT_LIMITS,
    Limits,
    MiB,
    Sandbox,
    SandboxedKernelManager,
    prepared_sandbox,
)
from attncourse.instructor.tags import (
    CHECK,
    EXERCISE_PREFIX,
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
OPENING, VISIBLE, HIDDEN = "opening", "check", "hidden"  # the kinds of cell the grader writes

# What in a learner's source touches the checks' machinery or the results channel.
SUSPICIOUS = [
    (re.compile(r"\bchecks?\s*\.\s*(core\b|_\w+|CHECKS\b)"), "the checks' internals"),
    (re.compile(r"\battncourse\.checks\.core\b|\bfrom\s+attncourse\.checks\s+import\s+[^\n]*\bcore\b"), "the checks' internals"),
    (re.compile(r"\b_(evaluate|report|grading\w*|send_to_grader|fingerprint|identity|call_with_deadline|Stop)\b"), "the checks' internals"),
    (re.compile(r"^\s*(checks?|np|numpy)\s*\.\s*\w+\s*=[^=]", re.MULTILINE), "replaces a function of the checks or numpy"),
    (re.compile(r"\b(set|del)attr\s*\(\s*(checks?|np|numpy|builtins)\b"), "replaces a function of the checks or numpy"),
    (re.compile(r"\bsys\s*\.\s*modules\s*(\[[^\]]*\]\s*=[^=]|\.\s*(pop|update|setdefault|clear|__setitem__))"
                r"|\bdel\s+sys\s*\.\s*modules|\bimportlib\b|\bbuiltins\b|\b__builtins__\b"), "the interpreter's modules"),
    (re.compile(r"\bctypes\b|\bgc\s*\.\s*get_(referrers|objects)\b|__code__|__closure__|cell_contents"), "the interpreter's internals"),
    (re.compile(r"\b(sys|threading)\s*\.\s*(settrace|setprofile)\b|\bsys\s*\.\s*_getframe\b"), "the interpreter's internals"),
    (re.compile(r"\binspect\s*\.\s*(stack|currentframe|getouterframes)\b|\bhistory_manager\b|\buser_ns\b"), "the interpreter's internals"),
    (re.compile(r"vnd\.attncourse|ATTNCOURSE_|\b_ih\b|\bIn\s*\["), "the results channel"),
]


@dataclass(frozen=True)
class Grade:
    """One row of the report: how ``learner`` did on ``exercise``."""

    learner: str
    exercise: str
    status: str  # passed, failed, not attempted, notebook crashed, error
    message: str
    notebook: str  # the submitted file it came from ("" if none held the exercise)
    review: str = ""  # why an instructor should look at this row ("" if no reason)


@dataclass(frozen=True)
class _Written:
    """A cell the grader wrote into the notebook it runs."""

    index: int
    label: str
    kind: str  # opening, check, hidden
    nonce: str
    expected: int  # how many results it must send


@dataclass
class _Run:
    notebook: str  # the submitted file, relative to the submissions folder
    submitted: Any = None  # the notebook as submitted (None: unreadable)
    executed: Any = None
    written: list[_Written] = field(default_factory=list)
    problem: str = ""  # why the run stopped early ("" if it ran to the end)
    stopped_in: int | None = None  # the cell running when it stopped
    errors: list[str] = field(default_factory=list)  # cells that raised
    review: list[str] = field(default_factory=list)  # what in the source touches the checks
    grader_failed: bool = False  # a bug of grade's own, not the learner's doing
    timed_out: bool = False  # stopped at the time limit
    ran_alone: bool = False  # run again with no other notebook beside it (see _rerun_alone)


# ---------------------------------------------------------------------------------------
# The notebook the grader runs


def _prologue(nonce: str, opening: bool = False) -> str:
    if opening:
        return f'__import__("attncourse.checks.core", fromlist=["core"])._grading_cell("{nonce}", opening=True)'
    return (f'__import__("attncourse.checks.core", fromlist=["core"])._grading_cell("{nonce}")\n'
            "from attncourse import checks as check\nimport numpy as np\n")


def _expected_results(cell, label: str) -> int:
    if role_of(cell) == HIDDEN_TEST:
        pattern = r"\bhidden_test\s*\("
    else:
        pattern = rf"\bcheck\.{label.split('-', 1)[-1].replace('-', '_')}\s*\("
    return max(1, len(re.findall(pattern, cell.source)))


def _notebook_to_run(submitted, course: dict[str, list]) -> tuple[Any, list[_Written]]:
    """The learner's cells, minus their check and hidden-test cells, with the course's
    check and hidden-test cells after each exercise, and an opening cell first."""
    run = nbformat.v4.new_notebook(metadata=copy.deepcopy(submitted.metadata))
    written = []

    def write(source_cell, label, kind, opening=False):
        nonce = secrets.token_hex(16)
        source = _prologue(nonce, opening) + ("" if opening else source_cell.source)
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = [] if opening else [role_of(source_cell), EXERCISE_PREFIX + label]
        cell.metadata["attncourse"] = {"written_by_grade": kind}
        expected = 1 if opening else _expected_results(source_cell, label)
        written.append(_Written(len(run.cells), label, kind, nonce, expected))
        run.cells.append(cell)

    write(None, "", OPENING, opening=True)
    learner_cells = [cell for cell in submitted.cells if role_of(cell) not in (CHECK, HIDDEN_TEST)]
    last = {exercise_of(cell): index for index, cell in enumerate(learner_cells)}
    for index, cell in enumerate(learner_cells):
        cell = copy.deepcopy(cell)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        run.cells.append(cell)
        label = exercise_of(cell)
        if label in course and last[label] == index:
            for source_cell in course[label]:
                write(source_cell, label, HIDDEN if role_of(source_cell) == HIDDEN_TEST else VISIBLE)
    return run, written


def _suspicious(submitted) -> list[str]:
    notes = []
    for index, cell in enumerate(submitted.cells):
        if cell.cell_type != "code" or role_of(cell) in (CHECK, HIDDEN_TEST):
            continue
        for pattern, what in SUSPICIOUS:
            match = pattern.search(cell.source)
            if match:
                notes.append(f"cell {index + 1} of the submission touches {what} (`{match.group(0).strip()}`)")
    return notes


# ---------------------------------------------------------------------------------------
# Running one notebook


class _OutOfMemory(Exception):
    """A cell raised MemoryError: the kernel reached its memory limit (or says it did)."""

    def __init__(self, cell_index: int, what: str):
        super().__init__(what)
        self.cell_index = cell_index


def _stop_when_out_of_memory(cell, cell_index: int, execute_reply: dict) -> None:
    """nbclient's on_cell_error hook: the run stops at a MemoryError, as at the time limit
    (what the kernel holds then is not worth grading on, nor keeping in memory)."""
    content = execute_reply.get("content", {})
    if content.get("ename") == "MemoryError":
        raise _OutOfMemory(cell_index, f"MemoryError: {content.get('evalue', '')}"[:200])


def _size(content: Any) -> int:
    """About how many bytes a message's decoded JSON takes (the lengths of its strings).
    Iterative: the nesting is the learner's to choose."""
    total, pending = 0, [content]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending += [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple):
            pending += item
        elif isinstance(item, str | bytes):
            total += len(item)
        else:
            total += 8
    return total


class _OutputLimitedClient(NotebookClient):
    """An nbclient that keeps at most ``output_limit`` bytes of a notebook's output (text,
    images, widget messages). Past it, it keeps nothing more, notes in the cell where it
    cut, and kills the sandbox: the run ends in ``cut_in``, a cell that prints without
    end stops at once instead of at the time limit, and the executed copy stays small."""

    def __init__(self, nb, km: SandboxedKernelManager, output_limit: int, **kwargs):
        super().__init__(nb, km=km, **kwargs)
        self.kill_sandbox = km.kill_sandbox
        self.output_limit = output_limit
        self.received = 0
        self.cut_in: int | None = None

    def process_message(self, msg, cell, cell_index):
        if self.cut_in is not None:
            return None
        if msg.get("msg_type") not in ("status", "execute_input"):  # what becomes output
            self.received += _size(msg.get("content")) + sum(memoryview(b).nbytes for b in msg.get("buffers") or ())
        if self.received > self.output_limit:
            self.cut_in = cell_index
            cell.outputs.append(nbformat.v4.new_output(
                "stream", name="stderr", text=f"[grade: output cut off here, past the limit of {_megabytes(self.output_limit)}]\n"))
            self.kill_sandbox()
            return None
        return super().process_message(msg, cell, cell_index)


def _megabytes(size: int) -> str:
    return f"{size / MiB:g} MiB"


def _why_it_stopped(error: Exception | None, client: _OutputLimitedClient, running: int, elapsed: float,
                    time_limit: float, limits: Limits) -> tuple[int, str]:
    """(the cell where the run stopped, why), after the run raised ``error`` (None: it
    ended, but its output was cut)."""
    if client.cut_in is not None:
        return client.cut_in, (f"its output passed the limit of {_megabytes(limits.output)} in cell "
                               f"{client.cut_in + 1}: the rest was not kept and the notebook was stopped there")
    if isinstance(error, _OutOfMemory):
        return error.cell_index, (f"ran out of memory in cell {error.cell_index + 1} ({error}): the memory "
                                  f"limit is {_megabytes(limits.memory)} per process (--memory-limit)")
    where = f"in cell {running + 1}"
    if elapsed >= time_limit:  # the kernel dies as it is stopped
        return running, f"did not finish within the time limit of {time_limit:g} s (stopped {where})"
    if isinstance(error, DeadKernelError):
        return running, f"the kernel died {where}"
    return running, f"could not run {where}: {_describe(error)}"


def _run_notebook(submissions: Path, relative: Path, course, sandbox: Sandbox, number: int,
                  time_limit: float, check_timeout: float | None) -> _Run:
    run = _Run(relative.as_posix())
    path = submissions / relative
    limits = sandbox.limits
    try:
        if path.is_symlink():
            raise ValueError("it is a symbolic link, which grade does not follow")
        if not path.is_file():
            raise ValueError("it is not a regular file")
        if path.stat().st_size > limits.output:
            raise ValueError(f"it is {_megabytes(path.stat().st_size)}; grade reads notebooks of up to "
                             f"{_megabytes(limits.output)}")
        run.submitted = nbformat.read(path, as_version=4)
        nbformat.validate(run.submitted)
        run.executed, run.written = _notebook_to_run(run.submitted, course)
        run.review = _suspicious(run.submitted)
    except Exception as error:  # a learner's file may be anything
        run.submitted = None
        run.problem = f"could not read the notebook ({_describe(error)})"
        return run
    scratch = sandbox.scratch(f"{number:04d}")
    sandbox.copy_in(scratch, path)  # its own copy, nothing else
    env = sandbox.environment(scratch, check_timeout)
    km = SandboxedKernelManager(
        sandbox.command(scratch, env), owner=sandbox.owner, kernel_name="python3", transport="ipc",
        ip=str(scratch / "runtime" / "k"), connection_file=str(scratch / "runtime" / "kernel.json"),
    )
    current = {"cell": 0}
    client = _OutputLimitedClient(
        run.executed, km, limits.output, timeout=None, allow_errors=True, shutdown_kernel="immediate",
        on_cell_start=lambda cell, cell_index: current.update(cell=cell_index),
        on_cell_error=_stop_when_out_of_memory,
    )
    started = time.monotonic()
    try:
        asyncio.run(asyncio.wait_for(client.async_execute(
            env=env, cwd=str(scratch / "work"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ), time_limit))
    except Exception as error:  # the learner's notebook may break the run in any way
        elapsed = time.monotonic() - started
        run.timed_out = elapsed >= time_limit
        run.stopped_in, run.problem = _why_it_stopped(error, client, current["cell"], elapsed, time_limit, limits)
    finally:
        km.kill_sandbox()
    if client.cut_in is not None and not run.problem:  # cut in a last cell that had already replied
        run.stopped_in, run.problem = _why_it_stopped(None, client, current["cell"], 0.0, time_limit, limits)
    run.errors = [
        f"cell {index + 1} raised {output.get('ename')}: {output.get('evalue', '')}"[:300]
        for index, cell in enumerate(run.executed.cells)
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    return run


def _run_safely(submissions: Path, relative: Path, *args, **kwargs) -> _Run:
    """_run_notebook, and if the grader itself fails on this notebook, that learner's error."""
    try:
        return _run_notebook(submissions, relative, *args, **kwargs)
    except Exception as error:
        return _Run(relative.as_posix(), problem=f"the grader failed on this notebook: {_describe(error)}",
                    grader_failed=True)


# ---------------------------------------------------------------------------------------
# Reading the results


def _records(run: _Run, written: _Written, opening: str | None) -> tuple[list[dict], str]:
    """The results ``written`` sent, or why they cannot be trusted."""
    cell = run.executed.cells[written.index]
    found = [output["data"][RESULT_MIMETYPE] for output in cell.get("outputs", [])
             if RESULT_MIMETYPE in output.get("data", {})]
    where = f"cell {written.index + 1}"
    records = []
    for record in found:
        shape_ok = isinstance(record, dict) and all(
            isinstance(record.get(key), str) for key in ("exercise", "status", "message", "kind", "nonce", "fingerprint")
        )
        if not shape_ok:
            return [], f"a malformed result in {where}: {str(record)[:80]!r}"
        if record["nonce"] != written.nonce:
            return [], f"a result in {where} that the grader did not ask for (forged?)"
        if opening is not None and record["fingerprint"] != opening:
            return [], (f"the checks' code, numpy or the builtins were changed by the notebook "
                        f"before {where} ran: its results cannot be trusted")
        if record["kind"] != written.kind or record["exercise"] != written.label or (
            written.kind != OPENING and record["status"] not in (checks.PASSED, checks.FAILED, checks.NOT_IMPLEMENTED)
        ):
            return [], f"a result in {where} for another exercise or of another kind (forged?)"
        records.append(record)
    if records and len(records) != written.expected:
        return [], f"{where} sent {len(records)} results where the grader expected {written.expected}"
    return records, ""


def _opening(run: _Run) -> tuple[str | None, str]:
    written = run.written[0]
    if run.stopped_in is not None and run.stopped_in <= written.index:
        return None, run.problem
    records, problem = _records(run, written, None)
    if problem or not records:
        return None, problem or "the grader's opening cell sent no result (the package copy did not import?)"
    return records[0]["fingerprint"], ""


def _grade_exercise(run: _Run, label: str, opening: str) -> tuple[str, str, str]:
    """(status, message, review) of ``label`` in one executed notebook."""
    results = []
    if not any(w.label == label for w in run.written):
        return ERROR, "the course's chapters have no check cell for this exercise", ""
    for written in (w for w in run.written if w.label == label):
        cell = run.executed.cells[written.index]
        if run.stopped_in is not None and run.stopped_in <= written.index:
            return CRASHED, run.problem, ""
        records, problem = _records(run, written, opening)
        if problem:
            return ERROR, problem, problem
        raised = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if raised:
            what = "a hidden-test cell" if written.kind == HIDDEN else "the check cell"
            return FAILED, f"{what} raised {raised[0].get('ename')}: {raised[0].get('evalue', '')}", ""
        if not records:
            problem = (f"cell {written.index + 1} ran but sent no result: the checks or the results "
                       "channel were tampered with")
            return ERROR, problem, problem
        results += records
    failed = [r for r in results if r["status"] == checks.FAILED]
    if failed:
        message = " ".join(("hidden test: " if r["kind"] == HIDDEN else "") + r["message"] for r in failed)
        return FAILED, message, ""
    not_started = [r for r in results if r["status"] == checks.NOT_IMPLEMENTED]
    if not_started:
        return NOT_ATTEMPTED, not_started[0]["message"], ""
    visible = [r for r in results if r["kind"] == VISIBLE] or results
    return PASSED, visible[0]["message"], ""


def _grade_learner(learner: str, runs: list[_Run], expected: list[str], limits: Limits) -> list[Grade]:
    openings = {run.notebook: _opening(run) for run in runs if run.submitted is not None}
    grades = []
    for label in expected:
        outcomes = []
        for run in runs:
            if run.submitted is None or label not in exercise_labels(run.submitted):
                continue
            fingerprint, problem = openings[run.notebook]
            if fingerprint is None:
                status = CRASHED if run.stopped_in is not None else ERROR
                outcome = (status, problem, "" if status == CRASHED else problem)
            else:
                outcome = _grade_exercise(run, label, fingerprint)
            outcomes.append((run.notebook, *outcome))
        unreadable = [run for run in runs if run.submitted is None]
        review = "; ".join(note for run in runs for note in run.review)
        if len(outcomes) > 1:
            listed = ", ".join(f"{notebook} ({status})" for notebook, status, *_ in outcomes)
            grades.append(Grade(learner, label, ERROR,
                                f"duplicate submissions hold this exercise: {listed}; keep one and grade again",
                                " ".join(o[0] for o in outcomes), review))
        elif outcomes:
            notebook, status, message, flagged = outcomes[0]
            grades.append(Grade(learner, label, status, message, notebook,
                                "; ".join(filter(None, (flagged, review)))))
        elif unreadable:
            first = unreadable[0]
            grades.append(Grade(learner, label, ERROR if first.grader_failed else CRASHED, first.problem, first.notebook, review))
        else:
            grades.append(Grade(learner, label, NOT_ATTEMPTED, "no submitted notebook contains this exercise", "", review))
    return [replace(grade, message=_explained(grade.message, limits), review=_clip(grade.review))
            for grade in grades]


def _clip(text: str, limit: int = 1000) -> str:
    """``text`` cut to ``limit`` characters: what a learner's code prints reaches the report."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _explained(message: str, limits: Limits) -> str:
    """A grade's message, clipped, saying why a MemoryError happened (a check reports the
    MemoryError a learner's function raised as that function failing)."""
    if "MemoryError" in message and "memory limit" not in message:
        return f"{_clip(message)} (the memory limit is {_megabytes(limits.memory)} per process: --memory-limit)"
    return _clip(message)


# ---------------------------------------------------------------------------------------
# The class


def _learners(folder: Path) -> dict[str, list[Path]]:
    """learner -> their notebooks, relative to ``folder``: LEARNER.ipynb, and every
    notebook under LEARNER/ (symbolic links are listed, to be refused, never followed)."""
    by_learner: dict[str, list[Path]] = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.suffix == ".ipynb" and (entry.is_file() or entry.is_symlink()):
            by_learner.setdefault(entry.stem, []).append(entry.relative_to(folder))
        elif entry.is_dir() and not entry.is_symlink():
            found = by_learner.setdefault(entry.name, [])
            for parent, folders, files in os.walk(entry):
                folders[:] = sorted(f for f in folders if not f.startswith("."))
                found += [(Path(parent) / name).relative_to(folder) for name in sorted(files)
                          if name.endswith(".ipynb")]
    return by_learner


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
) -> tuple[list[Grade], dict[str, list[str]]]:
    """Run every submitted notebook in a sandbox and grade each learner's exercises.

    Returns the grades (one per learner and exercise, in the order of the chapters) and,
    per learner, the problems seen while running their notebooks, for the summary. The
    exercises graded are ``assign``, or else every exercise found in a submission. Up to
    ``jobs`` notebooks (default: the number of processors) run at once, each within
    ``limits`` (memory, processes, disk, output). A crashing, endless or hostile notebook
    is a grade, never an exception. Raises SandboxUnavailable
    if no sandbox can start (unless ``unsafe_no_sandbox``), ValueError for bad arguments.
    """
    submissions = Path(submissions)
    for name, value in (("time_limit", time_limit), ("check_timeout", check_timeout)):
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    sources = read_chapters(Path(chapters))
    order = [label for nb in sources.values() for label in exercise_labels(nb)]
    course: dict[str, list] = {}
    for nb in sources.values():
        for cell in nb.cells:
            label = exercise_of(cell)
            if label and role_of(cell) in (CHECK, HIDDEN_TEST):
                course.setdefault(label, []).append(cell)
    unknown = sorted(set(assign or ()) - set(order))
    if unknown:
        raise ValueError(f"unknown exercise(s) {', '.join(unknown)}; the chapters have: {', '.join(order)}")
    if not submissions.is_dir():
        raise ValueError(f"{submissions} is not a folder")
    learners = _learners(submissions)
    if not learners:
        raise ValueError(f"no submissions in {submissions}: expected LEARNER.ipynb files or LEARNER/ folders")
    tasks = [(learner, path) for learner, paths in learners.items() for path in paths]
    jobs = jobs or os.cpu_count() or 1
    with prepared_sandbox(unsafe_no_sandbox, limits) as sandbox:
        run_one = functools.partial(_run_safely, submissions, course=course, sandbox=sandbox,
                                    time_limit=time_limit, check_timeout=check_timeout)
        # Notebooks run in worker threads, never in the caller's, which may have an event
        # loop running (a notebook's own, or a test's): the kernels need one of their own.
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(lambda numbered: run_one(numbered[1][1], number=numbered[0]),
                                    enumerate(tasks)))
        if jobs > 1:
            with concurrent.futures.ThreadPoolExecutor(max_workers=1) as alone:
                results = alone.submit(_rerun_alone, results, [path for _, path in tasks], run_one).result()
    runs: dict[str, list[_Run]] = {learner: [] for learner in learners}
    for (learner, _), result in zip(tasks, results):
        runs[learner].append(result)
    if assign is None:
        found = {label for per in runs.values() for run in per if run.submitted for label in exercise_labels(run.submitted)}
        expected = [label for label in order if label in found] or order
    else:
        expected = list(dict.fromkeys(assign))
    grades, problems = [], {}
    for learner, per in runs.items():
        grades += _grade_learner(learner, per, expected, limits)
        flat_and_folder = {p.parts[0] for p in learners[learner]} >= {f"{learner}.ipynb", learner}
        problems[learner] = (
            (["submitted both as a file and as a folder: graded separately, not merged"] if flat_and_folder else [])
            + (["no notebook in the folder"] if not per else [])
            + [f"{run.notebook}: {note}" for run in per
               for note in (([RAN_ALONE] if run.ran_alone else []) + ([run.problem] if run.problem else [])
                            + _solution_note(run) + run.errors)]
        )
        if executed_dir is not None:
            for run in per:
                if run.executed is not None:
                    target = Path(executed_dir) / run.notebook
                    target.parent.mkdir(parents=True, exist_ok=True)
                    try:
                        nbformat.write(run.executed, target)
                    except Exception as error:  # what the learner's code printed may be anything
                        problems[learner].append(f"{run.notebook}: its executed copy could not be written ({_describe(error)})")
    return grades, problems


RAN_ALONE = ("ran out of time beside other notebooks, so it was run again alone: "
             "this grade is from that second run")


def _rerun_alone(results: list[_Run], paths: list[Path], run: Callable[..., _Run]) -> list[_Run]:
    """Each notebook that ran out of time beside others, run again with none beside it;
    the second run is its grade.

    A submission can take more than its share of the processors: processes that each
    start a session of their own (``os.setsid``) each get a share of the CPU, so a fork
    bomb of them starves the notebook running next to it, within every per-process limit.
    Alone, an honest notebook gets the whole machine; the bomb still runs out of time.
    """
    again = []
    for number, (result, path) in enumerate(zip(results, paths)):
        if result.timed_out:
            result = run(path, number=len(paths) + number)  # a fresh scratch folder
            result.ran_alone = True
        again.append(result)
    return again


def _solution_note(run: _Run) -> list[str]:
    if run.submitted and any(for_instructors(cell) for cell in run.submitted.cells):
        return ["holds the course's solution cells: the solved chapter, not the student version?"]
    return []
