"""The one judge: each exercise a notebook recorded, judged once into its verdict, a
``Grade`` (status, message, review notes, the inputs right, what the learner may read),
from the executed notebook and the course's checks and hidden tests run on its record
(``replay``).

Nothing here runs a line of the learner's code: the record is data (``attncourse.checks.wire``).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np

from attncourse import checks
from attncourse.checks import core, predict, wire
from attncourse.checks.predict import ATTEMPTS_MIMETYPE, PREDICTIONS, finite_float, read_number
from attncourse.instructor import replay
from attncourse.instructor.course.tags import CHECK, HIDDEN_TEST, role_of
from attncourse.instructor.model import (
    COMPLETED,
    CRASHED,
    EARNS_ALL,
    ERROR,
    FAILED,
    NEEDS_REVIEW,
    NOT_ATTEMPTED,
    PASSED,
    RAISED,
    Course,
    Grade,
    NotebookRun,
    Placed,
)
from attncourse.instructor.notebook.source import defined_names, names_read, reaches_into_modules

# What in a learner's source reads a predict exercise's answer from the course's declarations.
READS_ANSWERS = re.compile(r"\bPREDICTIONS\b|\bchecks?\s*\.\s*(predict|ch\d+)\b|\bpredict_exercise\b"
                           r"|\battncourse\.checks\.(predict|ch\d+)\b|\.answer\b")

# What in a learner's source touches the grader's recording in the sandbox. It cannot change
# a verdict on what an answer returns (the data is judged here), but it can withhold or alter
# what the recording notes of its behaviour (changed, written, peak): worth a look. The
# recording's memory measure (tracemalloc), threads its watch cannot follow (_thread), and the
# ways to find the recorder or its watch from the learner's code (the checks package's
# insides, any module's through sys.modules or importlib, frames, stacks, the modules that
# read them, the hooks a profiler sets, referrers, globals, code run from a built string,
# numpy patched) too.
TOUCHES_RECORDING = re.compile(r"vnd\.attncourse|\bchecks?\s*\.\s*(wire|core|importlib|load_\w+|_)|\bimport\s+(wire|core)\b"
                               r"|\bexport\s*\("
                               # what leads to any module's insides: the recorder's, or numpy's it calls
                               r"|\bsys\s*\.\s*modules\b|\bimportlib\b|\b__import__\b|\bbuiltins\b|\b__builtins__\b"
                               r"|\b__(globals|subclasses|code|defaults|kwdefaults|dict)__\b|__(set|del)attr__\s*\("
                               r"|\brun_cell\b|\.ex\s*\(|^[ \t]*%run\b|\bkernel\s*\.\s*session\b"
                               r"|\b(getattr|setattr|delattr|vars)\s*\(\s*(checks?|np|numpy|sys)\b|^[ \t]*(np|numpy)[ \t]*\.[\w. \t]*=[^=]"
                               r"|(?<![.\w])(exec|eval|compile)\s*\(|\bctypes\b|\baddaudithook\b|\batexit\b"
                               r"|\bsignal\s*\.\s*(signal|setitimer|alarm|pthread_kill|raise_signal)\b"
                               r"|\bsys\s*\.\s*(setprofile|settrace)\b|\bevents\s*\.\s*register\b"
                               r"|\bpayload_manager\b|\bwrite_payload\b|attncourse\.record|\bsys\s*\.\s*getprofile\b"
                               r"|^[ \t]*[\w.]*\bdisplay[ \t]*=[^=]|\bCHECKS\b|__wrapped__"
                               r"|\btracemalloc\b|\bclear_refs\b|\b_thread\b|\b(get|set)(profile|trace)\w*|\b_getframe\b"
                               r"|\bf_back\b|\bf_locals\b|\bget_refer(rers|ents)\b|\bcurrentframe\b|\b(extract|format|print|walk)_stack\b"
                               r"|\b_current_frames\b|(?<![.\w])globals\s*\(\s*\)"
                               r"|\b__closure__\b|\bcell_contents\b|\bget_objects\b|\bimport\s+gc\b|\bgc\s*\.\s*\w"
                               r"|\b(inspect|traceback|faulthandler)\s*\.|\b(import|from)\s+(inspect|traceback|faulthandler)\b"
                               r"|\b_(profile|trace)_hook\b|\b(tb|gi|cr|ag)_frame\b",
                               re.MULTILINE)
# What allocates memory the memory measure (tracemalloc, Python's and numpy's allocations)
# does not see: an answer whose peak is measured and whose source uses one is worth a look.
UNMEASURED_MEMORY = re.compile(r"\b(torch|ctypes|mmap|cupy|jax|tensorflow|numba)\b")
# (Every pattern here runs on text a learner wrote, holding the GIL: none may take time
# more than linear in it, so no \s* at a line's start, which runs over blank lines.)

# What a learner's cell raises when the sandbox lacks what the learner's own machine had:
# the files beside the notebook, a module the course does not install, the network, a
# keyboard. An answer that fails after one of these may be right: the grader cannot tell.
# (An ImportError of a name from a module the sandbox has is the learner's own, anywhere.)
MISSING_IN_THE_SANDBOX = frozenset({
    "ModuleNotFoundError", "FileNotFoundError", "NotADirectoryError", "IsADirectoryError",
    "PermissionError", "OSError", "URLError", "ConnectionError", "gaierror", "StdinNotImplementedError"})

# What the learner reads where the grader could not tell, and in place of a hidden test's
# message (the instructor's message quotes it after HIDDEN).
BY_HAND = "Your instructor reviews this exercise by hand: the grader could not tell. "
HIDDEN, HIDDEN_FAILED = "hidden test: ", "A hidden test did not pass."


def judge_all(run: NotebookRun, course: Course) -> dict[str, Grade]:
    """Every exercise recorded in ``run``, judged (a failure of the grader's own is that
    exercise's error, not the notebook's)."""
    verdicts = {}
    for placed in run.placed:
        try:
            verdicts[placed.label] = judge(run, placed, course)
        except Exception as error:  # a bug of grade's own: this row's error, not the class's
            verdicts[placed.label] = Grade("", placed.label, ERROR,
                                           f"the grader failed on this exercise ({core.describe(error)}): not a grade; "
                                           "grade this learner again", run.notebook)
    return verdicts


def judge(run: NotebookRun, placed: Placed, course: Course) -> Grade:
    """The verdict on the exercise ``placed`` recorded in ``run``'s executed notebook, of no
    learner yet (the class names it)."""
    label = placed.label
    if run.stopped_in is not None and run.stopped_in <= placed.index:
        return Grade("", label, CRASHED, run.problem, run.notebook, placed.note)
    record, problem = recorded(run, placed)
    if record is None:
        return Grade("", label, NEEDS_REVIEW, problem, run.notebook, problem)
    notes = [placed.note] if placed.note else []
    learners = learners_code(run.submitted, course)
    touching = [m.group(0) for c in learners for m in [TOUCHES_RECORDING.search(c.source)] if m] or [
        reached for reached in [reaches_into_modules([c.source for c in learners],
                                                     [c.source for c in run.submitted.cells if c.cell_type == "code"])]
        if reached]
    if touching:
        notes.append(f"its source touches the grader's recording (`{touching[0]}`)")
    measured = any(isinstance(call, dict) and "peak" in call for call in record.get("calls", []))
    unmeasured = [m.group(0) for c in learners if measured
                  for m in [UNMEASURED_MEMORY.search(c.source)] if m]
    if unmeasured:
        notes.append(f"its memory is measured with tracemalloc, which does not see what `{unmeasured[0]}` allocates")
    references = record.get("references")
    if references:  # a list, as the grader's cell writes it (a forged one is read as its text)
        called = references[:3] if isinstance(references, list) else [references]
        notes.append(f"its answer called the course's own {', '.join(str(name)[:200] for name in called)}")
    elif record.get("watch") == "stopped short":  # a sleep, a wait, or an answer far slower when watched
        notes.append("the watch for the course's own functions stopped before the answer's calls ended: "
                     "whether it calls them is not known")
    try:
        verdict = judge_record(label, record, course.hidden.get(label, []), course.inputs.get(label, {}))
    except wire.WireError as error:
        return Grade("", label, NEEDS_REVIEW, f"its record cannot be read: {error}", run.notebook,
                     f"a malformed record ({error})")
    verdict = replace(verdict, notebook=run.notebook)
    if verdict.status == NEEDS_REVIEW:
        return replace(verdict, review="; ".join([verdict.message, *notes]))
    if verdict.status == PASSED:
        return replace(verdict, review="; ".join(notes))
    lacking, bound = _missing_in_the_sandbox(run, placed, course, after_the_stub=verdict.status == NOT_ATTEMPTED)
    if not lacking:
        return replace(verdict, review="; ".join(notes))
    if not _may_have_caused(verdict, bound, _answer_reads(run, placed, course)):
        unrelated = f"{lacking} (the answer reads nothing it binds: the verdict stands)"
        return replace(verdict, review="; ".join([*notes, unrelated]))
    why = (f"{verdict.status} ({verdict.message}), but {lacking}: grade runs the notebook alone, without the files "
           "beside it, modules the course does not install, the network or a keyboard, so the answer may be right")
    return replace(verdict, status=NEEDS_REVIEW, message=why, review="; ".join([why, *notes]))


def judge_record(label: str, record: dict, hidden_sources: list[str], hidden_inputs: dict) -> Grade:
    """The course's check of ``label`` and its hidden tests (``hidden_sources``, with the
    inputs ``hidden_inputs`` discovery found) on ``record``, and the check's inputs one at a
    time, each run once: the verdict of no learner or notebook yet. Raises WireError for a
    record that cannot be read."""
    check = replay.judge_check(label, record)
    hidden = [result for source in hidden_sources
              for result in replay.judge_hidden(label, source, hidden_inputs, record)]
    results = [check, *hidden]
    review = [r for r in results if r.status == checks.NEEDS_REVIEW]
    failed = [r for r in results if r.status == checks.FAILED]
    not_started = [r for r in results if r.status == checks.NOT_IMPLEMENTED]
    if review:
        status, message = NEEDS_REVIEW, review[0].message
    elif failed:
        status, message = FAILED, " ".join((HIDDEN if r.kind == "hidden" else "") + r.message for r in failed)
    elif not_started:
        status, message = NOT_ATTEMPTED, not_started[0].message
    else:
        status, message = PASSED, check.message
    verdict = Grade("", label, status, message, "", hint=_hint(check.message, record))
    try:
        credit = {} if record.get("missing") else _credit(label, record, check, hidden)
    except Exception:  # a record partial credit cannot judge: the status above stands
        credit = {}
    if credit.pop("answered", False) and status == NOT_ATTEMPTED:  # unfinished, not untouched
        verdict = replace(verdict, status=FAILED, message=f"{message} ({credit['inputs_right']} of "
                                                          f"{credit['inputs']} inputs right)")
    if credit:
        return replace(verdict, **credit)
    if status == FAILED and any(r.kind == "hidden" for r in failed):  # what the learner may read of it
        visible = " ".join(r.message for r in failed if r.kind != "hidden")
        return replace(verdict, feedback=f"{visible} {HIDDEN_FAILED}".strip())
    return verdict


def _credit(label: str, record: dict, check: core.Result, hidden: list[core.Result]) -> dict:
    """The partial credit of an implement exercise (``inputs_right`` of ``inputs``: the
    check's inputs judged one at a time, and each hidden test) and the learner's feedback:
    the check's own message, the inputs it got wrong as the check describes them, the
    hidden tests that failed by number only."""
    failed_hidden = [f"hidden test {n}" for n, result in enumerate(hidden, start=1) if result.status != checks.PASSED]
    statuses, described = replay.judge_inputs(label, record)
    parts = [check.message]
    if described is None:
        if failed_hidden:
            parts.append(f"Not right on: {'; '.join(failed_hidden)}.")
        return {"feedback": " ".join(parts)}
    missed = [d for d, status in zip(described, statuses) if status != checks.PASSED] + failed_hidden
    total = len(described) + len(hidden)
    # An input is answered unless the function raised NotImplementedError on it: one case
    # left unfinished earns the points of the others, as a case answered wrongly would.
    answered = any(status != checks.NOT_IMPLEMENTED for status in statuses)
    if answered:  # the check's message counts its own inputs: say what the total adds to them
        tests = f"{len(hidden)} hidden test" + ("s" if len(hidden) != 1 else "")
        right = f"{total - len(missed)} of {total} inputs right (the check's {len(described)} and {tests})"
        parts.append(right + (f"; not right on: {'; '.join(missed)}." if missed else "."))
    return {"inputs_right": total - len(missed), "inputs": total, "feedback": " ".join(parts), "answered": answered}


def _hint(message: str, record: dict) -> str:
    """The hint a check's message gives (after "Hint: "), or "" when the learner's own
    text could have written it: a message quotes what the learner's code raised or
    returned, and the report shows a hint as the course's."""
    found = re.search(r"Hint: (.*)", message)
    if not found or "Hint:" in json.dumps(record, ensure_ascii=False):
        return ""
    return found[1].strip()


def recorded(run: NotebookRun, placed: Placed) -> tuple[dict | None, str]:
    """The record the grader's cell ``placed`` sent, or why there is none to judge."""
    cell = run.executed.cells[placed.index]
    raised = [o for o in cell.get("outputs", []) if o.get("output_type") == RAISED]
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


def learners_code(submitted, course: Course) -> list:
    """The code cells the learner wrote or changed (the course's own cells, as handed
    out, import the checks' modules themselves)."""
    return [c for c in submitted.cells if c.cell_type == "code" and role_of(c) not in (CHECK, HIDDEN_TEST)
            and c.source.strip() not in course.sources]


def _missing_in_the_sandbox(run: NotebookRun, placed: Placed, course: Course, after_the_stub: bool) -> tuple[str, set[str]]:
    """Which of the learner's cells before ``placed`` raised for want of something the
    sandbox does not give (``MISSING_IN_THE_SANDBOX``), as "cell N raised ...", and the
    names that cell binds; ``("", set())`` if none did. ``after_the_stub``: only a cell
    after the last definition of the exercise's names (an answer left as handed out is not
    attempted, whatever failed above it)."""
    cells = run.executed.cells[: placed.index]
    names = set(course.exercises[placed.label].names)
    first = max((i for i, cell in enumerate(cells) if cell.cell_type == "code" and defined_names(cell.source) & names),
                default=-1) if after_the_stub else -1
    for index, cell in enumerate(cells):
        if index <= first or cell.cell_type != "code" or "attncourse" in cell.metadata \
                or cell.source.strip() in course.sources:
            continue  # the grader's cells, and the course's as handed out
        for output in cell.get("outputs", []):
            if output.get("output_type") == RAISED and output.get("ename") in MISSING_IN_THE_SANDBOX:
                return (f"cell {index + 1} raised {output.get('ename')}: {str(output.get('evalue', ''))[:200]}",
                        defined_names(cell.source))
    return "", set()


def _answer_reads(run: NotebookRun, placed: Placed, course: Course) -> set[str]:
    """The names an answer is made of: the exercise's names, and every name read by a cell
    of the learner's before ``placed`` that binds one of those, followed back to the cells
    that bind them (a helper, the data it reads)."""
    cells = [c.source for c in run.executed.cells[: placed.index]
             if c.cell_type == "code" and "attncourse" not in c.metadata and c.source.strip() not in course.sources]
    binds = [(defined_names(source), names_read(source)) for source in cells]
    reads, grown = set(course.exercises[placed.label].names), True
    while grown:
        more = set().union(*(read for bound, read in binds if bound & reads)) - reads
        reads |= more
        grown = bool(more)
    return reads


def _may_have_caused(verdict: Grade, bound: set[str], reads: set[str]) -> bool:
    """Whether a cell that raised for want of the sandbox's (binding ``bound``) may be why
    the answer got ``verdict``: the answer reads a name it binds, or the answer itself
    raised for want of the sandbox's (a file it opens, a module it imports)."""
    return bool(bound & reads) or any(f"raised {name}" in verdict.message for name in MISSING_IN_THE_SANDBOX)


# ---------------------------------------------------------------------------------------
# Predict exercises, and what the learner reads


def as_prediction(verdict: Grade, run: NotebookRun, course: Course, score: bool) -> Grade:
    """A predict exercise's verdict: completed (or as judged, where the instructor scores
    them, ``score``), with what the notebook's saved attempts and source say about how it
    was found."""
    notes = [verdict.review] if verdict.review else []
    attempts = _attempts(run.submitted, verdict.exercise)
    first_right = next((i for i, a in enumerate(attempts) if a.get("right")), len(attempts))
    if any(a.get("revealed") for a in attempts[:first_right]):
        notes.append(f"the check showed the answer after {first_right} misses, before the first right attempt")
    reading = [m.group(0) for c in learners_code(run.submitted, course) for m in [READS_ANSWERS.search(c.source)] if m]
    if reading:
        notes.append(f"its source reads the course's declarations (`{reading[0]}`)")
    message, status, feedback = verdict.message, verdict.status, verdict.feedback
    if attempts:
        first = attempts[0]
        message = f"{message} (first attempt: {first.get('value')!r}, {len(attempts)} in all)"
    given = _number_given(run, verdict.exercise) if status == FAILED else None
    if not score and (status == PASSED or given is not None):
        status = COMPLETED  # a wrong number counts; no number (undefined, a word, a tuple) does not
    if status == COMPLETED and given is not None:
        # The exercise is done: the learner reads the answer, as their check shows it at a second miss,
        # not the first miss's "try again".
        _, feedback = predict.judge(PREDICTIONS[verdict.exercise], given, misses=1)
    return replace(verdict, status=status, message=message, feedback=feedback, review="; ".join(notes))


def _number_given(run: NotebookRun, label: str) -> float | None:
    """The number the notebook recorded as the prediction of ``label``, or None."""
    placed = next((p for p in run.placed if p.label == label), None)
    record, _ = recorded(run, placed) if placed is not None and run.executed is not None else (None, "")
    if not record or record.get("missing") or not record.get("answers"):
        return None
    try:
        value = wire.decode(record["answers"][0])
    except wire.WireError:
        return None
    if isinstance(value, str):
        return read_number(value)[0]
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    return finite_float(value)


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


def for_the_learner(grade: Grade) -> Grade:
    """``grade`` with what its learner reads: its feedback (the judge's, or else its message,
    which then quotes no hidden test) and its hint (a predict exercise's own, or the
    check's), none where the row earned every point."""
    feedback = grade.feedback or ((BY_HAND if grade.status == NEEDS_REVIEW else "") + grade.message).strip()
    core.load_chapter_of(grade.exercise)
    hint = PREDICTIONS[grade.exercise].hint if grade.exercise in PREDICTIONS else grade.hint
    return replace(grade, feedback=feedback, hint="" if grade.status in EARNS_ALL else hint)


def learner_message(grade: Grade) -> str:
    """What the learner reads of a row: its feedback (``judge``). A row graded before every
    row had one (an older report) gives its message, cut before any hidden test's own text."""
    if grade.feedback:
        return grade.feedback
    message = grade.message
    if HIDDEN in message:
        message = message.split(HIDDEN)[0].strip() + " " + HIDDEN_FAILED
    if grade.status == NEEDS_REVIEW:
        message = BY_HAND + message
    return message.strip()
