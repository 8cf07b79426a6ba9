"""The class: every learner's notebooks run in the sandbox and judged, each learner's rows
made from them (``grade_submissions``), and kept in a report folder that a grading
resumes (``grade_into``, what the command line and Gradescope's autograder call).

Trust model (the instructor guide says the same at more length). The learner's notebook
is untrusted code. It runs in a bubblewrap sandbox (``run/``) in a throwaway copy, within
limits of time, memory, processes, files and output. After the learner's answer to each
exercise (``notebook/placement.py``) a cell the grader wrote records the answer as data:
values, and the outputs of the learner's functions on the inputs the course's check and
hidden tests use (``attncourse.checks.wire``). The verdict is computed here (``judge``)
by the course's own checks on that data: nothing the learner's code does in the sandbox
can reach them, and the expected values and the hidden tests never enter the sandbox
(their inputs do, found on the solved chapter by ``course/discovery.py``).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import functools
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

import nbformat

from attncourse.checks import wire
from attncourse.checks.core import describe
from attncourse.checks.predict import PREDICTIONS
from attncourse.instructor import judge
from attncourse.instructor.course.discovery import digest
from attncourse.instructor.course.solved import course_of
from attncourse.instructor.course.tags import chapter_of, exercise_labels, for_instructors
from attncourse.instructor.gradebook import late, points
from attncourse.instructor.gradebook.ledger import Ledger, foreign_files, lock, write_whole
from attncourse.instructor.gradebook.report import write_report
from attncourse.instructor.learner_text import the_learner
from attncourse.instructor.model import (
    CRASHED,
    DUPLICATES,
    ERROR,
    NOT_ATTEMPTED,
    PASSED,
    SKIPPED,
    UNGRADED,
    Course,
    Execution,
    Grade,
    NotebookRun,
    Progress,
)
from attncourse.instructor.notebook.placement import notebook_to_run, skipped_cells
from attncourse.instructor.notebook.source import defined_names
from attncourse.instructor.run.execution import execute
from attncourse.instructor.run.sandbox import (
    DEFAULT_LIMITS,
    Limits,
    Sandbox,
    megabytes,
    prepared_sandbox,
)
from attncourse.instructor.submissions import (
    find_learners,
    learners_in,
    read_submitted,
    shown,
    tagged_labels,
)

# An outcome of one exercise in one of a learner's notebooks, as the learner's rows are
# chosen from them: (notebook, status, message, review).
Outcome = tuple[str, str, str, str]


# ---------------------------------------------------------------------------------------
# One notebook: run, then judged


def _run_notebook(submissions: Path, relative: Path, course: Course, sandbox: Sandbox, number: int,
                  time_limit: float, check_timeout: float | None) -> NotebookRun:
    """The notebook at ``relative`` run in ``sandbox`` with its recording cells, and each
    exercise judged: the course's cells no answer needs left out, and, unless every
    exercise then passed or was not started, the whole notebook run again and judged on
    that run."""
    run = NotebookRun(shown(relative.as_posix()))
    path = submissions / relative
    try:
        run.submitted = read_submitted(path, sandbox.limits)
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

    _judged(run, execute_in_sandbox(sliced, f"{number:04d}"), course)
    if skipped_cells(sliced) and not run.problem and not _confirmed(run):
        whole, run.placed = notebook_to_run(run.submitted, exercises)  # the same cells, every one run
        _judged(run, execute_in_sandbox(whole, f"{number:04d}-whole"), course)
    return run


def _judged(run: NotebookRun, execution: Execution, course: Course) -> None:
    """``execution`` as ``run``'s, and every exercise it recorded judged."""
    run.execution, run.problem = execution, execution.problem
    run.verdicts = judge.judge_all(run, course)


def _confirmed(run: NotebookRun) -> bool:
    """Whether a run that left out some of the course's cells stands: every exercise
    passed or was not started. Any other verdict could, in principle, come from a cell
    left out (a missed dependency would be a silent zero), so the whole notebook runs."""
    return all(verdict.status in (PASSED, NOT_ATTEMPTED) for verdict in run.verdicts.values())


def _answered(submitted, course: Course) -> list[str]:
    """The exercises graded in this notebook: those it has cells of, and those whose names
    it defines, of the chapters its tags name (of every chapter, in a notebook stripped of
    its tags): an exercise whose tags an editor dropped or the learner misspelt is graded
    like the others."""
    tagged = set(exercise_labels(submitted)) & set(course.exercises)
    chapters = {chapter_of(label) for label in tagged} or _chapters_by_cells(submitted, course)
    defined = set().union(*(defined_names(c.source) for c in submitted.cells if c.cell_type == "code"))
    return [label for label, e in course.exercises.items()
            if label in tagged or (set(e.names) & defined and (not chapters or chapter_of(label) in chapters))]


def _chapters_by_cells(submitted, course: Course) -> set[str]:
    """The chapters a notebook stripped of its tags is a copy of: those whose code cells, as
    handed out, it holds the most of (none if it holds none: then it may be any). Two
    chapters in one learner's folder, both stripped, each answer their own exercises, not
    every exercise whose names they define (``prediction``)."""
    own = {cell.source.strip() for cell in submitted.cells if cell.cell_type == "code"}
    shared = {chapter: len(own & code) for chapter, code in course.chapters.items()}
    most = max(shared.values(), default=0)
    return {chapter for chapter, count in shared.items() if count == most and most > 0}


def _run_safely(submissions: Path, relative: Path, *args, **kwargs) -> NotebookRun:
    """_run_notebook, and if the grader itself fails on this notebook, that learner's error."""
    try:
        return _run_notebook(submissions, relative, *args, **kwargs)
    except Exception as error:
        return NotebookRun(shown(relative.as_posix()), problem=f"the grader failed on this notebook: {describe(error)}",
                           grader_failed=True)


# ---------------------------------------------------------------------------------------
# One learner: the rows, from every notebook of theirs


def _grade_learner(learner: str, runs: list[NotebookRun], expected: list[str], course: Course, limits: Limits,
                   score_predictions: bool) -> list[Grade]:
    """``learner``'s row for every exercise of ``expected``, from the verdicts on their notebooks."""
    grades = []
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    for label in expected:
        verdicts: dict[str, Grade] = {}
        for run in runs:
            if run.submitted is None or label not in run.verdicts:
                continue
            verdict = run.verdicts[label]
            if label in PREDICTIONS:
                verdict = judge.as_prediction(verdict, run, course, score_predictions)
            verdicts[run.notebook] = verdict
        outcomes = _agreeing_copies(_without_scratch(
            [(v.notebook, v.status, v.message, v.review) for v in verdicts.values()], runs, course))
        unreadable = [run for run in runs if run.submitted is None]
        if len(outcomes) > 1:
            listed = ", ".join(f"{notebook} ({status})" for notebook, status, *_ in outcomes)
            theirs = ", ".join(f"{notebook.removeprefix(learner + '/')} ({status})" for notebook, status, *_ in outcomes)
            grades.append(Grade(learner, label, ERROR, f"{DUPLICATES}: {listed}; keep one and grade again",
                                " ".join(o[0] for o in outcomes), "", now,
                                feedback=f"Your notebooks hold this exercise with different results: {theirs}. "
                                         "It is not graded until one of them holds it: keep one and submit again."))
        elif outcomes:
            notebook, *_, review = outcomes[0]
            grades.append(replace(verdicts[notebook], learner=learner, review=f"{notebook}: {review}" if review else "",
                                  graded_at=now))
        elif unreadable:
            first = unreadable[0]
            grades.append(Grade(learner, label, ERROR if first.grader_failed else CRASHED, first.problem,
                                first.notebook, "", now))
        else:
            grades.append(Grade(learner, label, NOT_ATTEMPTED, "no submitted notebook contains this exercise", "", "", now))
    return points.scored([judge.for_the_learner(replace(grade, message=_explained(grade.message, limits),
                                                        review=_clip(grade.review))) for grade in grades])


def _without_scratch(outcomes: list[Outcome], runs: list[NotebookRun], course: Course) -> list[Outcome]:
    """``outcomes`` of one exercise, less those of the learner's scratch notebooks (no tags,
    none of the course's cells: an ``Untitled.ipynb`` that happens to bind ``prediction``)
    when exactly one other notebook holds an attempted answer: that one is graded, and its
    review names the others. Otherwise all are kept (and reported as duplicates)."""
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


def _agreeing_copies(outcomes: list[Outcome]) -> list[Outcome]:
    """``outcomes`` of one exercise in several notebooks (a copy Jupyter made, ``ch1-Copy1.ipynb``)
    that all earned the same status: that status, graded on the first, its review naming
    the others. Outcomes that differ stay apart (and are reported as duplicates)."""
    if len(outcomes) < 2 or len({status for _, status, *_ in outcomes}) > 1:
        return outcomes
    notebook, status, message, review = outcomes[0]
    others = ", ".join(other for other, *_ in outcomes[1:])
    note = f"also in {others}, graded the same ({status}): keep one notebook per chapter"
    return [(notebook, status, message, "; ".join(filter(None, [review, note])))]


def _clip(text: str, limit: int = 1000) -> str:
    """``text`` cut to ``limit`` characters: what a learner's code prints reaches the report."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _explained(message: str, limits: Limits) -> str:
    """A grade's message, clipped, saying why a MemoryError happened (a check reports the
    MemoryError a learner's function raised as that function failing)."""
    if "MemoryError" in message and "memory limit" not in message:
        return f"{_clip(message)} (the memory limit is {megabytes(limits.memory)} per process: --memory-limit)"
    return _clip(message)


def _problems(learner: str, paths: list[Path], runs: list[NotebookRun]) -> list[str]:
    flat_and_folder = {shown(p.parts[0]) for p in paths} >= {f"{learner}.ipynb", learner}
    return (
        (["submitted both as a file and as a folder: graded separately, not merged"] if flat_and_folder else [])
        + (["no notebook in the folder"] if not runs else [])
        + [f"{run.notebook}: {note}" for run in runs
           for note in (([run.problem] if run.problem else [])
                        + _solution_note(run) + (run.execution.errors if run.execution else []))]
    )


def _graded_for_nothing(runs: list[NotebookRun], rows: list[Grade]) -> list[str]:
    """A line for each notebook read that no row was graded on (a scratch notebook beside
    the chapter's): every file of the submissions appears in the report."""
    return [f"{run.notebook}: graded for no exercise (it holds none of those graded, or another notebook "
            "of the learner's holds each one it binds)" for run in runs
            if run.submitted is not None and not any(f" {run.notebook} " in f" {g.notebook} " for g in rows)]


def _write_executed(runs: list[NotebookRun], folder: Path) -> list[str]:
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


def _solution_note(run: NotebookRun) -> list[str]:
    if run.submitted and any(for_instructors(cell) for cell in run.submitted.cells):
        return ["holds the course's solution cells: the solved chapter, not the student version?"]
    return []


# ---------------------------------------------------------------------------------------
# The class


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
    progress: Callable[[Progress], None] | None = None,
) -> tuple[list[Grade], dict[str, list[str]]]:
    """Run every submitted notebook in a sandbox and grade each learner's exercises.

    Returns the grades (one per learner and exercise, in the order of the chapters) and,
    per learner, the problems seen while running their notebooks (``problems[SKIPPED]``:
    the files of the folder not graded, each with why). The exercises graded are
    ``assign``, or else every exercise found in a submission. Up to ``jobs`` notebooks
    (default: the number of processors) run at once, each within ``limits``. Each
    learner's grades go to ``done(learner, grades, problems)`` as soon as they are known,
    then ``progress`` hears how far the class has come (also once as the notebooks start);
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
    found, skipped = find_learners(submissions)
    if learners is not None:
        named = {typed: the_learner(typed, found) for typed in learners}  # 'zed' names the folder 'zed '
        unknown = sorted(typed for typed, learner in named.items() if learner is None)
        if unknown:  # a misspelt name would be left as it was, silently
            raise ValueError(f"no learner {', '.join(map(repr, unknown))} in {submissions}; it has: "
                             + ", ".join(sorted(found)))
        learners = [learner for learner in named.values() if learner is not None]
        found = {name: paths for name, paths in found.items() if name in set(learners)}
    if not found:
        raise ValueError(f"no submissions in {submissions}: expected LEARNER.ipynb files or LEARNER/ folders")
    if contained and len(found) > 1:  # every contained kernel runs as the same uid, in folders it can enter
        raise ValueError(f"--container grades one learner (a container is the sandbox of one submission); "
                         f"{submissions} holds {len(found)}: grade a class without --container, in bubblewrap's "
                         "sandbox, or give each learner a container of their own (the autograder command)")
    todo = {name: paths for name, paths in found.items() if not (finished and finished(name, paths))}
    tasks = [(learner, path) for learner, paths in todo.items() for path in paths]
    expected = list(dict.fromkeys(assign)) if assign is not None else None
    results: dict[int, NotebookRun] = {}
    grades: list[Grade] = []
    problems: dict[str, list[str]] = {SKIPPED: skipped} if skipped else {}
    jobs = jobs or os.cpu_count() or 1
    learners_done: list[list[Grade]] = []  # each learner's rows, as they are graded

    def report_progress(learner: str = "", rows: tuple[Grade, ...] = ()) -> None:
        if progress is not None:
            failed = sum(any(row.status in UNGRADED for row in done_rows) for done_rows in learners_done)
            progress(Progress(len(learners_done), len(todo), failed, time.monotonic() - started, learner, rows))

    def learner_done(learner: str) -> None:
        # The learner's error boundary: whatever fails while their rows are made or kept
        # (their notebooks' data is anything) becomes their error rows, never the class's.
        runs = [results[i] for i, (name, _) in enumerate(tasks) if name == learner]
        labels = expected or _found_labels(runs, course)
        try:
            rows = _grade_learner(learner, runs, labels, course, limits, score_predictions)
            notes = _problems(learner, todo[learner], runs) + _graded_for_nothing(runs, rows)
            if executed_dir is not None:
                notes += _write_executed(runs, Path(executed_dir))
            if done is not None:
                done(learner, rows, notes)
        except Exception as error:
            rows, notes = _grader_failed(learner, labels, error)
            if done is not None:
                done(learner, rows, notes)  # the grader's own words: if even these fail, grade stops
        grades.extend(rows)
        problems[learner] = notes
        learners_done.append(rows)
        report_progress(learner, tuple(rows))

    with prepared_sandbox(unsafe_no_sandbox, limits, contained) as sandbox:  # a sandbox that cannot start: before discovery
        course = course_of(chapters, assign, cache, tagged_labels(submissions, [path for _, path in tasks], limits), jobs)
        run_one = functools.partial(_run_safely, submissions, course=course, sandbox=sandbox,
                                    time_limit=time_limit, check_timeout=check_timeout)
        remaining = {learner: len(paths) for learner, paths in todo.items()}
        started = time.monotonic()
        report_progress()
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
                for future in futures:  # start (the pool would run the whole remaining class first, unseen and unsaved)
                    future.cancel()
                raise
    order = {name: n for n, name in enumerate(found)}
    grades.sort(key=lambda g: (order.get(g.learner, 0), course.order.index(g.exercise) if g.exercise in course.order else 0))
    return grades, problems


def _grader_failed(learner: str, labels: list[str], error: Exception) -> tuple[list[Grade], list[str]]:
    """``learner``'s rows and notes when the grader failed while making or keeping them:
    an error row for every exercise, saying so (a regrade of the learner retries)."""
    why = f"the grader failed on this learner's notebooks ({describe(error)}): not a grade; grade them again"
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    rows = [Grade(learner, label, ERROR, why, "", why, now) for label in labels]
    return points.scored([judge.for_the_learner(row) for row in rows]), [why]


def _found_labels(runs: list[NotebookRun], course: Course) -> list[str]:
    found = {p.label for run in runs for p in run.placed}
    return [label for label in course.order if label in found] or [label for label in course.order if label in course.exercises]


def grade_into(out: Path, submissions: Path, chapters: Path = Path("chapters"), assign: Iterable[str] | None = None,
               *, time_limit: float = 120.0, check_timeout: float | None = None, jobs: int | None = None,
               learners: Iterable[str] | None = None, limits: Limits = DEFAULT_LIMITS, score_predictions: bool = False,
               unsafe_no_sandbox: bool = False, contained: bool = False,
               progress: Callable[[Progress], None] | None = None,
               late_policy: late.Policy | None = None) -> tuple[list[Grade], Path, Path]:
    """Grade ``submissions`` (see ``grade_submissions``) into the report folder ``out``:
    each learner's rows on disk as soon as they are known (``gradebook.ledger``), the
    report rewritten after each (``grades.csv``, ``summary.md``, ``executed/``), learners
    already graded on the same notebooks, course and options kept. Returns every row of
    the folder (of this grading and of earlier ones) and the report's two files. Raises
    ValueError while another grading writes into ``out``, if ``out`` is inside
    ``submissions`` or ``submissions`` inside ``out``, or if ``out`` holds files and is no
    grade report. ``late_policy``: the due
    date and penalty every row is marked with (``gradebook.late``); none, none marked."""
    submissions, out, chapters = Path(submissions), Path(out), Path(chapters)
    inside, folder = out.resolve(), submissions.resolve()
    if inside == folder or folder in inside.parents:
        raise ValueError(f"--out {out} is inside the submissions folder {submissions}: "
                         "the report would be graded as a submission, or overwrite one")
    if inside in folder.parents:  # report/executed: the grader's own copies, written over as they are graded
        raise ValueError(f"the submissions folder {submissions} is inside --out {out}: a report's executed "
                         "notebooks hold the grader's cells and are rewritten by this grading; grade the "
                         "learners' own submissions")
    if out.is_symlink() and not out.exists():
        raise ValueError(f"--out {out} is a symbolic link to {os.readlink(out)}, which does not exist: "
                         "give a folder for the report, or make the one it points to")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file: give a folder for the report (a new one, or an earlier report's)")
    foreign = foreign_files(out)
    if foreign:  # an instructor's own grades.csv would be replaced without a word
        raise ValueError(f"--out {out} holds files of no grade report ({', '.join(foreign)}): give a new or empty "
                         "folder, or the folder of an earlier grading to resume it")
    options = repr((time_limit, check_timeout, limits, score_predictions, unsafe_no_sandbox, str(chapters.resolve())))
    ledger = Ledger(out, options + digest(sorted(chapters.glob("*.ipynb"))), list(assign or []))
    keys: dict[str, str] = {}

    def finished(learner: str, notebooks: list[Path]) -> bool:
        keys[learner] = ledger.key(submissions, notebooks)
        return ledger.finished(learner, keys[learner])

    skipped: list[str] = []
    present = learners_in(submissions) if submissions.is_dir() else set()

    # Known before any notebook runs: every report of this grading marks late work alike.
    lateness = late.recorded(submissions, late_policy) if late_policy is not None and submissions.is_dir() else None

    def begin() -> None:  # once grading has started: a grading refused at its start changes nothing
        ledger.begin(present, submissions)
        if lateness is None:
            (out / late.LATE).unlink(missing_ok=True)
        else:
            write_whole(out / late.LATE, lateness)

    def done(learner: str, rows: list[Grade], notes: list[str]) -> None:
        begin()
        ledger.save(learner, keys[learner], rows, notes)
        write_report(*ledger.everything(skipped), out)

    with lock(out):
        _, problems = grade_submissions(
            submissions, chapters, assign, time_limit, check_timeout, executed_dir=out / "executed", jobs=jobs,
            unsafe_no_sandbox=unsafe_no_sandbox, limits=limits, score_predictions=score_predictions,
            cache=out / ".cache", learners=learners, done=done, finished=finished, contained=contained,
            progress=progress)
        skipped += problems.get(SKIPPED, [])
        begin()
        grades, notes = ledger.everything(skipped)
        table, text = write_report(grades, notes, out)
    return grades, table, text
