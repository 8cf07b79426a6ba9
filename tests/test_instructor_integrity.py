"""Grading integrity, third round (``attncourse.instructor.grading``, ``judge``, ``wire``):
one learner never costs another a grade, the grader's own failures are never the class's,
and honest learners in unusual styles are graded as their own check grades them.

A fourth class, graded once (``graded``) the way an instructor grades it: ``grade_into`` a
report folder, with the default options (predict exercises completed, not scored). In it a
learner whose prediction no float can hold, one whose kernel sends text no UTF-8 file can
hold, honest answers that are a callable dataclass, a big-endian array, an unfinished case,
and a wrong answer below an unrelated cell that needed a file; honest neighbours graded
after each. Then the instructor's own folder, and a container asked to grade a class.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import socket
import subprocess
import sys
import threading

import nbformat
import pytest

from attncourse import instructor
from attncourse.checks.predict import PREDICTIONS
from attncourse.instructor import COMPLETED, ERROR, FAILED, NOT_ATTEMPTED, PASSED, grading, judge
from attncourse.instructor.gradebook.points import in_hundredths, points_of
from attncourse.instructor.notebook.source import defined_names
from attncourse.instructor.run import cgroups, sandbox
from attncourse.instructor.run.sandbox import DEFAULT_LIMITS
from attncourse.instructor.submissions import read_submitted
from tests.test_instructor_gradescope import container_view
from tests.test_instructor_grading import (
    CORRECT_SOFTMAX,
    DOUBLING,
    NAIVE_SOFTMAX,
    ROOT,
    SOFTMAX,
    _cells,
    submission,
)

pytestmark = [pytest.mark.xdist_group("integrity-class"), pytest.mark.slow]

RIGHT_PREDICTION = f"prediction = {PREDICTIONS[DOUBLING].answer!r}"
HONEST = submission(CORRECT_SOFTMAX, RIGHT_PREDICTION)

# The kernel's own packer refuses a lone surrogate; this one writes it as JSON's escape
# "\ud800", which the grader's end decodes into one.
SURROGATE_SENDER = """\
import json
session = get_ipython().kernel.session
session.pack = lambda message: json.dumps(message, default=str).encode()
print("lone \\ud800 surrogate", flush=True)"""
CALLABLE_DATACLASS = CORRECT_SOFTMAX.replace("def stable_softmax(scores):", "def _softmax(scores):") + """

from dataclasses import dataclass

@dataclass
class Softmax:
    axis: int = -1

    def __call__(self, scores):
        return _softmax(scores)

stable_softmax = Softmax()"""
BIG_ENDIAN = CORRECT_SOFTMAX.replace("return e / e.sum(axis=-1, keepdims=True)",
                                     "return (e / e.sum(axis=-1, keepdims=True)).astype('>f8')")
UNFINISHED = CORRECT_SOFTMAX.replace("    scores = np.asarray(scores, dtype=float)\n", """\
    scores = np.asarray(scores, dtype=float)
    if scores.ndim == 3:
        raise NotImplementedError("batches: next week")
""")
# Slow Python made of many small calls: some 0.2 s of processor time a call, under 2 s a
# check of the budget of 10 s, but several times that under a profiler.
MANY_SMALL_CALLS = CORRECT_SOFTMAX.replace("    scores = np.asarray(scores, dtype=float)\n", """\
    total = 0
    for step in range(3_500_000):
        total = _add(total, step)
    scores = np.asarray(scores, dtype=float)
""") + """


def _add(a, b):
    return a + b"""
# Right answers that report their progress, thousands of times a call.
PRINTS_PROGRESS = CORRECT_SOFTMAX.replace("    scores = np.asarray(scores, dtype=float)\n", """\
    for step in range(3000):
        print("step", step, "of 3000", flush=True)
    scores = np.asarray(scores, dtype=float)
""")
DISPLAYS_PROGRESS = CORRECT_SOFTMAX.replace("    scores = np.asarray(scores, dtype=float)\n", """\
    from IPython.display import display
    for step in range(2000):
        display(f"step {step} of 2000")
    scores = np.asarray(scores, dtype=float)
""")
LOGS_PROGRESS = CORRECT_SOFTMAX.replace("    scores = np.asarray(scores, dtype=float)\n", """\
    for step in range(3000):
        log.warning("step %d of 3000", step)
    scores = np.asarray(scores, dtype=float)
""")
LOGGER = "import logging, sys\nlog = logging.getLogger('progress')\nlog.addHandler(logging.StreamHandler(sys.stderr))"
WARNINGS_AS_ERRORS = "import warnings\nwarnings.simplefilter('error')"
WARNS_BUT_RIGHT = CORRECT_SOFTMAX.replace("    scores = np.asarray(scores, dtype=float)\n", """\
    import warnings
    warnings.warn("this answer warns", DeprecationWarning)
    scores = np.asarray(scores, dtype=float)
""")
BLANK_LINES = "notes = 1" + "\n" * 50_000 + "notes = 2"
NEEDS_A_FILE = 'notes = open("my_notes.txt").read()  # beside the notebook on the learner\'s machine'


def answered_in_a_nested_check_cell(wrapper: str) -> nbformat.NotebookNode:
    """The stub deleted, the answer typed into the check cell, its check call inside a
    compound statement (``with np.errstate(...):``, ``try:``): the learner's own run passes."""
    nb = submission(prediction=RIGHT_PREDICTION)
    nb.cells.remove(_cells(nb, SOFTMAX, "stub")[0])
    _cells(nb, SOFTMAX, "check")[0].source = f"{CORRECT_SOFTMAX}\n\n{wrapper}\n    check.stable_softmax(stable_softmax)"
    if wrapper.startswith("try"):
        _cells(nb, SOFTMAX, "check")[0].source += "\nexcept Exception as error:\n    print(error)"
    return nb


def integrity_class() -> dict[str, nbformat.NotebookNode]:
    """learner file -> notebook; each hostile or unusual learner sorts before an honest one."""
    return {
        "a-huge-prediction/ch1.ipynb": submission(CORRECT_SOFTMAX, "prediction = 10**400"),
        "b-honest/ch1.ipynb": HONEST,
        "c-surrogate/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=SURROGATE_SENDER),
        "d-honest/ch1.ipynb": HONEST,
        "e-callable-dataclass/ch1.ipynb": submission(CALLABLE_DATACLASS, RIGHT_PREDICTION),
        "f-big-endian/ch1.ipynb": submission(BIG_ENDIAN, RIGHT_PREDICTION),
        "g-unfinished/ch1.ipynb": submission(UNFINISHED, RIGHT_PREDICTION),
        "h-naive/ch1.ipynb": submission(NAIVE_SOFTMAX, RIGHT_PREDICTION),
        "i-naive-below-a-missing-file/ch1.ipynb": submission(NAIVE_SOFTMAX, RIGHT_PREDICTION, before=NEEDS_A_FILE),
        "j-honest/ch1.ipynb": HONEST,
        "k-many-small-calls/ch1.ipynb": submission(MANY_SMALL_CALLS, RIGHT_PREDICTION),
        "l-prints-progress/ch1.ipynb": submission(PRINTS_PROGRESS, RIGHT_PREDICTION),
        "m-displays-progress/ch1.ipynb": submission(DISPLAYS_PROGRESS, RIGHT_PREDICTION),
        "n-honest/ch1.ipynb": HONEST,
        "o-logs-progress/ch1.ipynb": submission(LOGS_PROGRESS, RIGHT_PREDICTION, before=LOGGER),
        "p-sympy-prediction/ch1.ipynb": submission(
            CORRECT_SOFTMAX, f"import sympy\nprediction = sympy.Float({PREDICTIONS[DOUBLING].answer!r})"),
        "q-warnings-as-errors/ch1.ipynb": submission(WARNS_BUT_RIGHT, RIGHT_PREDICTION, before=WARNINGS_AS_ERRORS),
        "r-blank-lines/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=BLANK_LINES),
        "s-honest/ch1.ipynb": HONEST,
        "t-check-inside-with/ch1.ipynb": answered_in_a_nested_check_cell('with np.errstate(all="ignore"):'),
        "u-check-inside-try/ch1.ipynb": answered_in_a_nested_check_cell("try:"),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("integrity")
    chapters = folder / "chapters"
    shutil.copytree(ROOT / "chapters", chapters, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    submissions = folder / "submissions"
    for name, nb in integrity_class().items():
        (submissions / name).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, submissions / name)
    out = folder / "report"
    grades, table, text = grading.grade_into(out, submissions, chapters, [DOUBLING, SOFTMAX], jobs=2)
    return {"grades": {(g.learner, g.exercise): g for g in grades}, "rows": grades, "table": table, "text": text,
            "out": out, "submissions": submissions, "chapters": chapters}


def test_every_learner_is_graded_whatever_one_of_them_submits(graded):
    learners = {name.split("/")[0] for name in integrity_class()}
    assert {(learner, label) for learner in learners for label in (SOFTMAX, DOUBLING)} == set(graded["grades"])
    for learner in ("b-honest", "d-honest", "j-honest"):
        assert graded["grades"][learner, SOFTMAX].status == PASSED
        assert graded["grades"][learner, DOUBLING].status == COMPLETED


def test_a_prediction_no_float_can_hold_is_that_learners_row_alone(graded):
    huge = graded["grades"]["a-huge-prediction", DOUBLING]
    assert huge.status == FAILED and huge.points == 0.0  # no number: not completed, as its own check said
    assert graded["grades"]["a-huge-prediction", SOFTMAX].status == PASSED


def test_text_no_utf8_file_holds_is_cleaned_where_it_enters_and_the_report_is_written(graded):
    assert graded["grades"]["c-surrogate", SOFTMAX].status == PASSED
    assert "c-surrogate" in graded["table"].read_text(encoding="utf-8")
    executed = (graded["out"] / "executed" / "c-surrogate" / "ch1.ipynb").read_text(encoding="utf-8")
    assert "lone \ufffd surrogate" in executed
    again, table, _ = grading.grade_into(graded["out"], graded["submissions"], graded["chapters"], [DOUBLING, SOFTMAX],
                                         jobs=2)  # a rerun reads the ledger back and rewrites the report
    assert {(g.learner, g.exercise): g.status for g in again} == {k: g.status for k, g in graded["grades"].items()}


def test_honest_answers_of_unusual_types_pass_as_their_own_check_passes_them(graded):
    for learner in ("e-callable-dataclass", "f-big-endian"):
        row = graded["grades"][learner, SOFTMAX]
        assert row.status == PASSED, (learner, row.message)


def test_slow_code_made_of_many_small_calls_is_timed_without_the_profiler(graded):
    row = graded["grades"]["k-many-small-calls", SOFTMAX]
    assert row.status == PASSED, row.message


def test_answers_that_print_or_display_thousands_of_times_a_call_are_recorded(graded):
    for learner in ("l-prints-progress", "m-displays-progress"):
        row = graded["grades"][learner, SOFTMAX]
        assert row.status == PASSED, (learner, row.message)
    executed = (graded["out"] / "executed" / "l-prints-progress" / "ch1.ipynb").read_text(encoding="utf-8")
    assert "more characters of output while recording were not shown" in executed


def test_answers_that_log_warn_or_predict_in_sympy_are_graded_as_their_own_check_grades_them(graded):
    for learner in ("o-logs-progress", "q-warnings-as-errors"):
        assert graded["grades"][learner, SOFTMAX].status == PASSED, (learner, graded["grades"][learner, SOFTMAX].message)
    assert graded["grades"]["p-sympy-prediction", DOUBLING].status == COMPLETED


def test_an_answer_in_a_check_cell_whose_call_is_nested_is_graded(graded):
    for learner in ("t-check-inside-with", "u-check-inside-try"):
        row = graded["grades"][learner, SOFTMAX]
        assert row.status == PASSED, (learner, row.message)


def test_a_cell_of_blank_lines_costs_nobody_a_grade(graded):
    for learner in ("r-blank-lines", "s-honest"):
        assert graded["grades"][learner, SOFTMAX].status == PASSED


def test_patterns_on_learner_text_take_time_linear_in_it():
    """A run of blank lines once froze the whole grader (a pattern with \\s* at a line's
    start, holding the GIL); each pattern must finish on it well within a second or two."""
    text = "notes = 1" + "\n" * 200_000 + "notes = 2\n(("  # and unparseable: the fallback pattern too
    finished = threading.Event()

    def scan():
        judge.TOUCHES_RECORDING.search(text)
        judge.READS_ANSWERS.search(text)
        defined_names(text)
        finished.set()

    threading.Thread(target=scan, daemon=True).start()
    assert finished.wait(30), "a pattern took more than 30 s on 200,000 blank lines"


@pytest.mark.parametrize("source", [
    "shell.payload_manager.write_payload = blank_the_references",
    "if sys.getprofile() is None:\n    return course_softmax(x)",
    "if threading._profile_hook is None:\n    return course_softmax(x)",  # red team 8
    "traceback.print_stack(file=buffer)",
    "inspect.getouterframes(sys._current_frames()[threading.get_ident()])",
    "import faulthandler",
    "frame = error.__traceback__.tb_frame",
])
def test_reaching_for_the_record_s_channel_or_the_watch_is_flagged(source):
    assert judge.TOUCHES_RECORDING.search(source)


def test_a_notebook_of_millions_of_json_objects_is_refused_before_it_is_read(tmp_path):
    nb = copy.deepcopy(HONEST)
    nb.metadata["padding"] = [{}] * 300_000
    nbformat.write(nb, tmp_path / "ch1.ipynb")
    with pytest.raises(ValueError, match=r"300,\d{3} JSON objects and lists"):
        read_submitted(tmp_path / "ch1.ipynb", DEFAULT_LIMITS)


def test_one_unfinished_case_earns_the_points_of_the_cases_answered(graded):
    row = graded["grades"]["g-unfinished", SOFTMAX]
    assert row.status == FAILED and row.status != NOT_ATTEMPTED
    assert 0 < row.inputs_right < row.inputs
    assert row.points == in_hundredths(points_of(SOFTMAX) * row.inputs_right / row.inputs) > 0
    assert f"{row.inputs_right} of {row.inputs} inputs right" in row.feedback


def test_an_unrelated_cell_that_needed_a_file_adds_a_note_and_changes_no_verdict(graded):
    alone, below = graded["grades"]["h-naive", SOFTMAX], graded["grades"]["i-naive-below-a-missing-file", SOFTMAX]
    assert alone.status == FAILED and alone.points > 0
    assert (below.status, below.points, below.inputs_right) == (alone.status, alone.points, alone.inputs_right)
    assert "raised FileNotFoundError" in below.review and "the verdict stands" in below.review


def test_a_failure_of_the_graders_own_on_one_learner_is_that_learners_error_rows(tmp_path, monkeypatch):
    chapters = tmp_path / "chapters"
    shutil.copytree(ROOT / "chapters", chapters, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for learner in ("broken", "honest"):
        (tmp_path / "submissions" / learner).mkdir(parents=True)
        nbformat.write(HONEST, tmp_path / "submissions" / learner / "ch1.ipynb")
    problems = grading._problems

    def fails_on_broken(learner, *args):
        if learner == "broken":
            raise RuntimeError("a bug of the grader's")
        return problems(learner, *args)

    monkeypatch.setattr(grading, "_problems", fails_on_broken)
    grades, table, _ = grading.grade_into(tmp_path / "report", tmp_path / "submissions", chapters, [SOFTMAX], jobs=2)
    rows = {g.learner: g for g in grades}
    assert rows["honest"].status == PASSED
    assert rows["broken"].status == ERROR and rows["broken"].points == 0.0
    assert "the grader failed" in rows["broken"].message and "RuntimeError: a bug of the grader's" in rows["broken"].message
    assert "not a grade" in rows["broken"].feedback


# --- the instructor ----------------------------------------------------------------------


def test_grading_into_a_folder_of_the_instructors_own_files_is_refused(tmp_path, capsys):
    own = tmp_path / "term"
    own.mkdir()
    for name, text in (("grades.csv", "learner,points\nada,10\n"), ("summary.md", "# my notes\n")):
        (own / name).write_text(text)
    (tmp_path / "submissions" / "ada").mkdir(parents=True)
    nbformat.write(HONEST, tmp_path / "submissions" / "ada" / "ch1.ipynb")
    assert instructor.main(["grade", str(tmp_path / "submissions"), "--out", str(own), "--assign", SOFTMAX]) == 2
    said = capsys.readouterr().err
    assert str(own) in said and "grades.csv" in said and "no grade report" in said
    assert (own / "grades.csv").read_text() == "learner,points\nada,10\n"
    assert sorted(p.name for p in own.iterdir()) == ["grades.csv", "summary.md"]


@pytest.mark.parametrize("layout", ["a ledger folder of its own", "a file"])
def test_grading_into_a_folder_that_only_looks_like_a_report_or_a_file_is_refused(tmp_path, capsys, layout):
    own = tmp_path / "term"
    if layout == "a file":
        own.write_text("learner,points\n")
    else:
        (own / "learners").mkdir(parents=True)
        (own / "grades.csv").write_text("learner,points\nada,10\n")
    (tmp_path / "submissions" / "ada").mkdir(parents=True)
    nbformat.write(HONEST, tmp_path / "submissions" / "ada" / "ch1.ipynb")
    assert instructor.main(["grade", str(tmp_path / "submissions"), "--out", str(own), "--assign", SOFTMAX]) == 2
    assert str(own) in capsys.readouterr().err
    kept = own if layout == "a file" else own / "grades.csv"
    assert kept.read_text().startswith("learner,points\n")


def test_a_container_is_refused_a_class_and_named_why(tmp_path):
    for learner in ("ada", "grace"):
        (tmp_path / learner).mkdir()
        nbformat.write(HONEST, tmp_path / learner / "ch1.ipynb")
    with pytest.raises(ValueError, match=r"--container grades one learner.*holds 2"):
        grading.grade_submissions(tmp_path, ROOT / "chapters", [SOFTMAX], contained=True)


# --- one learner's processes, a neighbour's time ----------------------------------------

# Forty-eight busy processes, each in a session of its own, for long enough to starve
# whatever runs beside them, then gone.
HOG = """\
import os, time
stop = time.monotonic() + 40
for _ in range(47):
    try:
        if os.fork() == 0:
            os.setsid()
            break
    except OSError:
        break
while time.monotonic() < stop:
    pass
print("spun")"""
# Right, after the hog has started, and slow: about 0.15 s of processor time a call, some
# 1.5 s a check, half the check's budget of 3 s (time.thread_time is this thread's).
SLOW_BUT_RIGHT = CORRECT_SOFTMAX.replace("    scores = np.asarray(scores, dtype=float)\n", """\
    import time
    started = time.thread_time()
    while time.thread_time() - started < 0.15:
        pass
    scores = np.asarray(scores, dtype=float)
""")
STARVED_CHECK_TIMEOUT = 3.0


@pytest.fixture(scope="module")
def starved(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("starved")
    for learner, nb in (("hog", submission(before=HOG)),
                        ("neighbour", submission(SLOW_BUT_RIGHT, RIGHT_PREDICTION, before="import time\ntime.sleep(8)"))):
        (folder / "submissions" / learner).mkdir(parents=True)
        nbformat.write(nb, folder / "submissions" / learner / "ch1.ipynb")
    grades, problems = grading.grade_submissions(folder / "submissions", ROOT / "chapters", [SOFTMAX], time_limit=90.0,
                                                 check_timeout=STARVED_CHECK_TIMEOUT, jobs=2)
    return {(g.learner, g.exercise): g for g in grades}


def test_a_learner_with_48_busy_processes_cannot_run_a_neighbours_check_out_of_time(starved):
    row = starved["neighbour", SOFTMAX]
    assert row.status == PASSED, row.message


def test_every_notebooks_group_has_an_equal_processor_share_in_either_version(tmp_path, monkeypatch):
    unified = tmp_path / "unified"
    unified.mkdir()
    (unified / "cgroup.subtree_control").write_text("cpu memory pids\n")
    (tmp_path / "mounts").write_text(f"cgroup2 {unified} cgroup2 rw 0 0\n")
    (tmp_path / "cgroup").write_text("0::/\n")
    monkeypatch.setattr(cgroups, "_MOUNTS", tmp_path / "mounts")
    monkeypatch.setattr(cgroups, "_OWN", tmp_path / "cgroup")
    hierarchy = cgroups.available()
    assert hierarchy is not None and hierarchy.cpu == unified
    group = hierarchy.make("notebook-1", 2**30, 64)
    assert (unified / "notebook-1" / "cpu.weight").read_text() == f"{cgroups.EQUAL_SHARE[2]}\n"
    assert group.folders == (unified / "notebook-1",)  # one folder joins every controller
    (unified / "cgroup.subtree_control").write_text("memory pids\n")
    assert cgroups.available().cpu is None  # cpu not delegated: the memory and pids bounds still hold


def test_on_this_machine_each_notebooks_group_has_the_cpu_controllers_equal_share():
    hierarchy = cgroups.available()
    if hierarchy is None or hierarchy.cpu is None:
        pytest.skip("no writable cpu controller here: the processor budget of a check still holds")
    group = hierarchy.make(f"ag-share-{os.getpid()}", 2**30, 64)
    try:
        share = "cpu.shares" if hierarchy.version == 1 else "cpu.weight"
        assert (hierarchy.cpu / f"ag-share-{os.getpid()}" / share).read_text().strip() == str(
            cgroups.EQUAL_SHARE[hierarchy.version])
        assert hierarchy.cpu / f"ag-share-{os.getpid()}" in group.folders  # the sandbox joins it
    finally:
        group.remove()


# --- a container: what outlives a notebook -----------------------------------------------

LEFTOVER = "attncourse-outlives-its-notebook-5d2b"
DOUBLE_FORK = f"""\
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sh", ["sh", "-c", "while :; do sleep 1; done", "{LEFTOVER}"])
    os._exit(0)
os.wait()"""
GRADE_IN_A_CONTAINER = """\
import json, os, pathlib, sys
from attncourse.instructor import grading
from attncourse.instructor.run import cgroups
submissions, chapters, label = sys.argv[1:4]
grades, _ = grading.grade_submissions(pathlib.Path(submissions), pathlib.Path(chapters), [label], contained=True)
left = [p.name for p in pathlib.Path("/proc").iterdir()
        if p.name.isdigit() and (p / "cmdline").read_bytes().startswith(b"sh\\x00-c\\x00")
        and (p / "cmdline").read_bytes().endswith(b"\\x00" + sys.argv[4].encode() + b"\\x00")]
hierarchy = cgroups.available()
mine = f"ag-{os.getpid()}-*"  # the groups of this grader's sandbox (tempfile names it so)
groups = sorted(str(f) for f in hierarchy.memory.glob(mine)) if hierarchy else []
print(json.dumps({"status": grades[0].status, "left": left, "groups": groups}))"""


CALLS_HOME = """\
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"from the sandbox")
    print("reached the container's network")
except OSError as error:
    print("no network:", type(error).__name__)"""


@pytest.fixture(scope="module")
def contained(tmp_path_factory) -> dict:
    """One learner graded with --container, in a view of this machine standing in for
    Gradescope's container (root, every capability, the host's network): a process left
    in a session of its own, and a message to a listener on the container's 127.0.0.1."""
    if os.geteuid() != 0 or not shutil.which("bwrap") or not shutil.which("setpriv"):
        pytest.skip("--container runs as root (and the test's container view needs bwrap)")
    folder = tmp_path_factory.mktemp("contained")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    heard: list[bytes] = []

    def listen():
        while listener.fileno() != -1:
            with contextlib.suppress(OSError):
                heard.append(listener.accept()[0].recv(100))

    threading.Thread(target=listen, daemon=True).start()
    before = DOUBLE_FORK + "\n" + CALLS_HOME.format(port=listener.getsockname()[1])
    (folder / "submissions" / "ada").mkdir(parents=True)
    nbformat.write(submission(CORRECT_SOFTMAX, before=before), folder / "submissions" / "ada" / "ch1.ipynb")
    (folder / "grade.py").write_text(GRADE_IN_A_CONTAINER)
    done = subprocess.run([*container_view(), sys.executable, str(folder / "grade.py"), str(folder / "submissions"),
                           str(ROOT / "chapters"), SOFTMAX, LEFTOVER], capture_output=True, text=True, timeout=600,
                          cwd=ROOT)
    listener.close()
    assert done.returncode == 0, done.stderr[-3000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "heard": heard}


def test_in_a_container_no_process_outlives_its_notebook_and_its_group_is_removed(contained):
    assert contained["status"] == PASSED
    assert contained["left"] == [] and contained["groups"] == [], contained


def test_in_a_container_that_allows_it_the_kernel_has_no_network(contained):
    assert sandbox.no_network()  # this stand-in allows a network namespace, as a container with CAP_SYS_ADMIN does
    assert contained["heard"] == []


def test_a_terminals_escape_sequences_in_learner_text_are_written_out_in_the_report(tmp_path):
    from attncourse.instructor import write_report
    from attncourse.instructor.model import Grade

    row = Grade("ada\x1b[2J", SOFTMAX, FAILED, "stable_softmax() raised ValueError: \x1b]52;c;cm0gLXJmIH4=\x07 \x9b31m",
                "ada/ch1.ipynb", review="cell 2 raised OSError: \x1bc")
    table, text = write_report([row], {"ada\x1b[2J": ["cell 2 printed \x1b[31mred"]}, tmp_path)
    for written in (table.read_text(encoding="utf-8"), text.read_text(encoding="utf-8")):
        assert not any(ord(ch) < 32 and ch not in "\t\n\r" or 0x7f <= ord(ch) <= 0x9f for ch in written)
        assert "x1b" in written and "x07" in written  # written out, not run
