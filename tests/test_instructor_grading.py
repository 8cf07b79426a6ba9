"""Tests for ``attncourse.instructor.grading`` and ``.sandbox``: grading a class in which
some learners are honest and others hostile.

One class of fabricated submissions is graded once, in parallel, in the sandbox (the
module fixture ``graded``): learners who are right, wrong, empty, raising, endless or
crashing, and learners who attack the grader (delete or overwrite other submissions and
the course, read the solutions and the instructor's environment, use the network, leave
a process behind to forge the report, forge or malform results, replace the checks'
machinery, hand back objects that loop or exit inside the check, submit twice or under
a name that breaks a spreadsheet or a table). The tests then check every honest grade,
that no attack got a pass, that every attack is reported, that no file outside the
scratch folders changed and that no process survived. Learners who bomb the grader's
machine (fork without end, allocate without end, print without end, fill the disk,
submit a huge file) meet the sandbox's limits: each bomb stops at its limit, fast, and
says so.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import csv
import hashlib
import html
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import nbformat
import pytest
from markdown_it import MarkdownIt

from attncourse import instructor
from attncourse.checks import load_chapter_of, wire
from attncourse.checks.predict import PREDICTIONS
from attncourse.instructor import (
    COMPLETED,
    CRASHED,
    ERROR,
    FAILED,
    NEEDS_REVIEW,
    NOT_ATTEMPTED,
    PASSED,
    SandboxUnavailable,
    grade_submissions,
    gradescope,
    grading,
    make_student_notebook,
    write_report,
)
from attncourse.instructor.course.tags import exercise_of, role_of
from attncourse.instructor.gradebook import export
from attncourse.instructor.gradebook.report import csv_cell, markdown_text
from attncourse.instructor.model import SKIPPED, Grade
from attncourse.instructor.run import cgroups, sandbox
from attncourse.instructor.run import execution as grading_execution
from attncourse.instructor.run.sandbox import DEFAULT_LIMITS, NOBODY, Limits, MiB

# The class is graded once per session (see `graded`), and these tests read the result.
# Every test here starts real kernels in the sandbox: `make test` runs them, `make unit` does not.
pytestmark = [pytest.mark.xdist_group("grade-a-class"), pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
CHAPTER_1 = ROOT / "chapters" / "01_dot_product_similarity.ipynb"
SOFTMAX, DOUBLING = "ch1-stable-softmax", "ch1-predict-doubling"
load_chapter_of(DOUBLING)  # declares PREDICTIONS[DOUBLING]
RIGHT_PREDICTION = f"prediction = {PREDICTIONS[DOUBLING].answer!r}"
TIME_LIMIT = 30.0  # the endless learners take all of it; the copier runs what chapter 1's answers need
CHECK_TIMEOUT = 2.0
SECRET = "attncourse-secret-7f3a"  # in the instructor's environment during grading
TOKEN = "attncourse-leftover-9c1e"  # in the command line of the process left behind

CORRECT_SOFTMAX = """\
def stable_softmax(scores):
    scores = np.asarray(scores, dtype=float)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)"""
NAIVE_SOFTMAX = """\
def stable_softmax(scores):
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True)"""
FLOAT64_ONLY = CORRECT_SOFTMAX.replace("scores = np.asarray(scores, dtype=float)", "assert scores.dtype == np.float64")
STUB = None  # keep the stub as handed out


def _cells(nb, label, role):
    return [cell for cell in nb.cells if exercise_of(cell) == label and role_of(cell) == role]


def run_in_own_thread(coroutine):
    """asyncio.run in a thread of its own: another test of this worker may leave a loop running."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


def submission(softmax=STUB, prediction=STUB, before=""):
    """A learner's notebook in the student format: ch1's stubs and checks for the two
    assigned exercises, filled in; ``before``: a cell of their own before the exercises."""
    student = make_student_notebook(nbformat.read(CHAPTER_1, as_version=4), [SOFTMAX, DOUBLING])
    cells = [nbformat.v4.new_code_cell("import numpy as np\nfrom attncourse import checks as check")]
    if before:
        cells.append(nbformat.v4.new_code_cell(before))
    for label, answer in ((SOFTMAX, softmax), (DOUBLING, prediction)):
        for role in ("stub", "check"):
            cell = copy.deepcopy(_cells(student, label, role)[0])
            if role == "stub" and answer is not None:
                cell.source = answer
            cells.append(cell)
    student.cells = cells
    return student


# The bombs are bounded, so that without the limits they end (and their tests fail) instead
# of taking the machine down: 256 processes, 6 GiB, 1 GiB of files; the flood would run to
# the time limit.
FORK_BOMB = """\
import os, time
kernel = os.getpid()
for generation in range(8):  # every process forks again: 256 processes if nothing stops them
    try:
        os.fork()
    except OSError:
        pass
if os.getpid() != kernel:  # the bomb's processes hold their place a while, then go
    time.sleep(2)
    os._exit(0)
time.sleep(1)
print("processes at once:", sum(name.isdigit() for name in os.listdir("/proc")))
while True:
    try:
        os.wait()
    except ChildProcessError:
        break"""
HOARD_IN_A_FUNCTION = """\
def stable_softmax(scores):
    hoard = []
    while True:
        hoard.append(np.zeros(2**27))  # 1 GiB each"""
HOARD = f"""\
hoard = []
for gib in range(6):
    hoard.append(np.ones(2**27))  # 1 GiB each, every page written
{RIGHT_PREDICTION}"""
# Processes that each start a session of their own each get a share of the CPU: within
# every per-process limit, they starve the notebook running beside them.
SPINNERS = """\
import os
for generation in range(4):  # 16 processes, every one spinning
    if os.fork() == 0:
        os.setsid()
while True:
    pass"""

FLOOD = """\
while True:
    print("flood " * 1000)"""
FILL_THE_DISK = """\
written = 0
try:
    with open("big", "wb") as file:
        while written < 2**30:
            file.write(b"x" * 2**20)
            written += 2**20
    print("wrote", written // 2**20, "MiB")
except OSError as error:
    print("disk full after", written // 2**20, "MiB:", error.strerror)"""


# Class A: each tries to make a wrong answer pass by changing, in the sandbox, what a check
# would rely on if it ran there. The verdict is made in the grader's process: none works.
NUMPY_PATCHER = NAIVE_SOFTMAX + """

import numpy
numpy.allclose = lambda *a, **k: True
numpy.isfinite = lambda x: numpy.ones(numpy.shape(x), bool)
try:
    numpy._core.numeric.isclose = lambda a, b, **k: numpy.ones(numpy.broadcast(a, b).shape, bool)
except AttributeError:
    pass"""
DISPLAY_PATCHER = """\
import builtins, IPython.display
IPython.display.display = lambda *objects, **kwargs: print("Passed.")
print.__self__.__import__ = builtins.__import__
builtins.isinstance = lambda *args: True  # the grader's cell breaks on it, and says so"""
CHECK_PATCHER = """\
from attncourse import checks
from attncourse.checks import core
checks.stable_softmax  # chapter 1's checks, loaded (as the chapter's own cells load them)
core.CHECKS["ch1-stable-softmax"].__wrapped__ = lambda run, answer: "patched"
core.Failed = type("Failed", (Exception,), {})
checks.ch1.stable_softmax.__wrapped__.__code__ = (lambda run, candidate: "ok").__code__"""
REBINDER = FLOAT64_ONLY + """

import types
np = types.SimpleNamespace(**{k: getattr(__import__("numpy"), k) for k in dir(__import__("numpy")) if not k.startswith("_")})
np.allclose = lambda *a, **k: True  # what the hidden test calls, were it to use the notebook's np"""
REFERENCE_CALLER = """\
def stable_softmax(scores):
    from attncourse.attention import softmax
    return softmax(scores)"""

# Class B: each tries to take more of the machine than the limits give.
MAPPER = """\
import mmap, os
got = []
try:
    hoard = mmap.mmap(-1, 3 * 2**30)
    got.append("mapped 3 GiB")
except (OSError, MemoryError) as error:
    got.append(f"mmap refused: {type(error).__name__}")
try:
    fd = os.memfd_create("hoard")
    os.ftruncate(fd, 3 * 2**30)
    shared = mmap.mmap(fd, 3 * 2**30)
    got.append("memfd mapped 3 GiB")
except (OSError, MemoryError) as error:
    got.append(f"memfd refused: {type(error).__name__}")
print(got)"""
NESTER = """\
import subprocess
done = subprocess.run(["unshare", "-Ur", "sh", "-c", "mount -t tmpfs none /mnt && echo mounted"], capture_output=True, text=True)
print("nested namespace:", "made" if done.returncode == 0 else "refused")"""
RUNTIME_FILLER = """\
import pathlib, sys
runtime = pathlib.Path(sys.argv[sys.argv.index("-f") + 1]).parent  # where the kernel's sockets are, on the host
try:
    (runtime / "hoard").write_bytes(b"x" * 2**20)
    print("runtime written")
except OSError as error:
    print("runtime refused:", type(error).__name__)"""


# A further hostile class (session 29). A: forged passes by what the answer is, not by
# patching the sandbox.
LYING_ARRAY = """\
class Agreeable(np.ndarray):  # every comparison and ufunc says yes
    def __eq__(self, other):
        return True
    def __array_ufunc__(self, *args, **kwargs):
        return True
    def __array_function__(self, *args, **kwargs):
        return True

def stable_softmax(scores):
    return np.zeros(np.shape(scores)).view(Agreeable)"""
NAN_AND_HUGE = """\
def stable_softmax(scores):
    out = np.full(np.shape(scores), np.nan)
    out[..., 0] = np.inf
    return out"""
SNIFFER = f"""\
import json, pathlib
from IPython.display import display

def stable_softmax(scores):  # tries to rewrite the hidden tests' inputs, then hands back a "record"
    for name in pathlib.Path(".").glob("*.json"):
        try:
            name.write_text(json.dumps({{"schema": 1, "tests": {{}}}}))
        except OSError:
            pass
    return {{"{wire.RECORD_MIMETYPE}": {{"exercise": "{SOFTMAX}", "answers": [], "calls": []}}}}"""
OWN_CHECK_OF_THE_COURSE = 'check.stable_softmax(__import__("attncourse.attention", fromlist=["x"]).softmax)'

# B: memory no process maps (the per-process limit does not see it). Each holds 2.5 GiB at
# most, so that without a control group the machine survives (and the test says so).
MEMFD_HOARD = """\
import os
fd, held = os.memfd_create("hoard"), 0
for mib in range(2560):
    os.write(fd, b"x" * 2**20)
    held += 1
print("memfd held", held, "MiB")"""
SYSV_HOARD = """\
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype, libc.shmat.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
held = 0
for segment in range(5):  # 512 MiB each, written, then detached: held by no process
    ident = libc.shmget(0, 2**29, 0o1600)
    address = libc.shmat(ident, None, 0) if ident >= 0 else None
    if address in (None, ctypes.c_void_p(-1).value):
        print("shared memory refused:", os.strerror(ctypes.get_errno()))
        break
    ctypes.memset(address, 1, 2**29)
    libc.shmdt(ctypes.c_void_p(address))
    held += 512
print("shared memory held", held, "MiB")"""
FORKED_HOARD = """\
import os, time
children = []
for child in range(4):  # 640 MiB each, under the per-process limit; 2.5 GiB together
    pid = os.fork()
    if pid == 0:
        hoard = b"x" * (640 * 2**20)  # every page written
        time.sleep(3)
        os._exit(0)
    children.append(pid)
held = sum(os.waitpid(pid, 0)[1] == 0 for pid in children)
print("children that held theirs:", held)"""
DEV_SHM_FILLER = """\
written = 0
try:
    with open("/dev/shm/hoard", "wb") as file:
        while written < 600:
            file.write(b"x" * 2**20)
            written += 1
    print("/dev/shm took", written, "MiB")
except OSError as error:
    print("/dev/shm refused after", written, "MiB:", error.strerror)
try:
    open("/dev/hoard", "wb").write(b"x")
    print("/dev written")
except OSError as error:
    print("/dev refused:", error.strerror)"""


# A third hostile class (redA). A: forged passes and flags escaped by what the answer is.
PARTIAL_REFERENCE = """\
import functools
from attncourse.attention import softmax
stable_softmax = functools.partial(softmax)  # the course's reference, under no name of its own"""
THREADED_COPY = """\
import threading, types
from attncourse import attention
helper = types.FunctionType(attention.softmax.__code__.replace(co_name="helper"), {**vars(attention), "__name__": "mine"},
                            None, attention.softmax.__defaults__)

def stable_softmax(scores):  # the course's code under another name, in a thread of its own
    out = []
    worker = threading.Thread(target=lambda: out.append(helper(scores)))
    worker.start()
    worker.join()
    return out[0]"""
CLASS_LIAR = """\
class Liar:  # isinstance(Liar(), float) is True, and float's own methods refuse it
    @property
    def __class__(self):
        return float

def stable_softmax(scores):
    return Liar()"""
# B: processor time, the host's disk and the grader's memory, by routes the limits missed.
CPU_HIDER = """\
import os, signal, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # Linux reaps the children: their time is in no process's
alive = lambda: sum(name.isdigit() for name in os.listdir("/proc"))
before = alive()
for pair in range(8):  # 16 children, 0.5 s of processor time each
    for child in range(2):
        if os.fork() == 0:
            end = time.process_time() + 0.5
            while time.process_time() < end:
                pass
            os._exit(0)
    time.sleep(0.5)
while alive() > before:
    time.sleep(0.1)
print("the children burnt 8 s of processor time")"""
CONNECTION_WRITER = """\
import sys
connection = sys.argv[sys.argv.index("-f") + 1]  # the kernel's connection file, on the host's disk
try:
    with open(connection, "ab") as file:
        file.write(b" " * 2**20)
    print("connection file written")
except OSError as error:
    print("connection file refused:", type(error).__name__)"""
FOREIGN_FLOODER = """\
kernel = get_ipython().kernel
elsewhere = {"header": {"msg_id": "no-cell", "msg_type": "execute_request", "session": "", "username": "",
                        "date": "2026-01-01T00:00:00Z", "version": "5.3"}}
for message in range(16):  # 16 MiB of output that claims a cell nbclient does not run
    kernel.session.send(kernel.iopub_socket, "stream", {"name": "stdout", "text": "x" * 2**20}, parent=elsewhere)
print("sent 16 MiB")"""
# An honest learner whose cells outrun the grader: messages the kernel's socket drops cost
# outputs in the executed copy (instructor_guide.md, "Limits"), never a grade.
BURST = """\
import ipywidgets
from IPython.display import display
for step in range(5000):
    display(step)
bar = ipywidgets.IntProgress(max=5000)
display(bar)
for step in range(5000):
    bar.value = step"""
HUGE_MESSAGE = """\
from IPython.display import display
display({"text/plain": "x" * 25 * 2**20}, raw=True)  # one message of 25 MiB: read whole, it could be 1.5 GB
print("sent")"""
# Attacks the sandbox already holds, kept so that it goes on holding them.
ESCAPER = """\
import ctypes, os, resource, signal
tried = []
for what, attempt in [("signal pid 1", lambda: os.kill(1, signal.SIGKILL)),
                      ("raise the memory limit", lambda: resource.setrlimit(resource.RLIMIT_AS, (-1, -1))),
                      ("raise the process limit", lambda: resource.setrlimit(resource.RLIMIT_NPROC, (10**6, 10**6))),
                      ("read the environment of pid 1", lambda: open("/proc/1/environ", "rb").read())]:
    try:
        attempt()
        tried.append(f"{what}: done")
    except (OSError, ValueError):
        tried.append(f"{what}: refused")
libc = ctypes.CDLL(None, use_errno=True)
tried.append("trace pid 1: " + ("done" if libc.ptrace(16, 1, None, None) == 0 else "refused"))  # PTRACE_ATTACH
print(tried)"""


def with_misspelt_tags():
    """Right answers; the softmax's cells tagged ``exercise:ch1-stable-sofmax`` (the other
    exercise's tags intact)."""
    nb = submission(CORRECT_SOFTMAX, RIGHT_PREDICTION)
    for cell in nb.cells:
        cell.metadata["tags"] = [t.replace(SOFTMAX, "ch1-stable-sofmax") for t in cell.metadata.get("tags", [])]
    return nb


def saved_on_windows() -> bytes:
    """Right answers, saved with a byte order mark, Windows line ends in every source line,
    nbformat 4.0 (no cell ids) and metadata of an editor's own."""
    nb = json.loads(nbformat.writes(submission(CORRECT_SOFTMAX, RIGHT_PREDICTION)))
    for cell in nb["cells"]:
        cell.pop("id", None)
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cell["source"] = [line + "\r\n" for line in source.split("\n")]
        cell["metadata"]["vscode"] = {"languageId": "python"}
    nb["nbformat_minor"] = 0
    nb["metadata"]["colab"] = {"provenance": []}
    return "\ufeff".encode() + json.dumps(nb, indent=1).replace("\n", "\r\n").encode()


def checked_under_its_own_name():
    """The stub left raising; the learner's ``my_softmax`` in a cell of its own, and the check
    cell edited to ``check.stable_softmax(my_softmax)``."""
    nb = submission(prediction=RIGHT_PREDICTION)
    stub = next(i for i, cell in enumerate(nb.cells) if exercise_of(cell) == SOFTMAX and role_of(cell) == "stub")
    nb.cells.insert(stub + 1, nbformat.v4.new_code_cell(CORRECT_SOFTMAX.replace("def stable_softmax", "def my_softmax")))
    check = next(cell for cell in nb.cells if exercise_of(cell) == SOFTMAX and role_of(cell) == "check")
    check.source = "check.stable_softmax(my_softmax)"
    return nb


def answered_as_a_method():
    """The answer bound from a class's static method, the prediction from a lambda."""
    method = "class Mine:\n    @staticmethod\n" + "\n".join("    " + line for line in CORRECT_SOFTMAX.splitlines())
    return submission(method + "\n\nstable_softmax = Mine.stable_softmax",
                      f"prediction = (lambda: {PREDICTIONS[DOUBLING].answer!r})()")


def with_own_check_call(nb, source: str):
    next(cell for cell in nb.cells if exercise_of(cell) == SOFTMAX and role_of(cell) == "check").source = source
    return nb


def answered_below_the_stub():
    """The stub left as handed out, the answer in a new (untagged) cell below it."""
    nb = submission(prediction=RIGHT_PREDICTION)
    stub = next(i for i, cell in enumerate(nb.cells) if exercise_of(cell) == SOFTMAX and role_of(cell) == "stub")
    nb.cells.insert(stub + 1, nbformat.v4.new_code_cell(CORRECT_SOFTMAX))
    return nb


def without_tags(nb):
    """As a notebook app that drops cell metadata saves it."""
    for cell in nb.cells:
        cell.metadata = {}
    return nb


def stub_replaced_by_an_untagged_cell():
    nb = submission(prediction=RIGHT_PREDICTION)
    stub = next(i for i, cell in enumerate(nb.cells) if exercise_of(cell) == SOFTMAX and role_of(cell) == "stub")
    nb.cells[stub] = nbformat.v4.new_code_cell(CORRECT_SOFTMAX)
    return nb


def saved_by_another_editor() -> bytes:
    """Right answers, in a notebook Jupyter opens but strict validation refuses: cells
    without ids or execution counts, sources as one string, a field of the editor's own."""
    nb = json.loads(nbformat.writes(submission(CORRECT_SOFTMAX, RIGHT_PREDICTION)))
    for cell in nb["cells"]:
        cell.pop("id", None)
        cell.pop("execution_count", None)
        cell["source"] = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cell["editor:collapsed"] = True
    nb["nbformat_minor"] = 5
    return json.dumps(nb).encode()


def hostile_class(folder: Path, chapters: Path, report: Path, port: int) -> dict[str, object]:
    """learner file name -> notebook (or bytes for a file that is not one)."""
    submissions = folder / "submissions"
    vandal = f"""\
import os, pathlib, shutil
attempts = []
for target in [{str(submissions)!r}, {str(chapters)!r}, {str(report)!r}, {str(ROOT / "attncourse")!r}]:
    try:
        shutil.rmtree(target)
        attempts.append(f"deleted {{target}}")
    except OSError as error:
        attempts.append(f"blocked {{type(error).__name__}}")
try:
    pathlib.Path({str(submissions / "correct" / "ch1.ipynb")!r}).write_text("{{}}")
    attempts.append("overwrote correct")
except OSError as error:
    attempts.append(f"blocked {{type(error).__name__}}")
import attncourse.checks.core as core
try:
    with open(core.__file__, "a") as file:
        file.write("\\nPASSED = FAILED\\n")
    attempts.append("edited the package")
except OSError as error:
    attempts.append(f"blocked {{type(error).__name__}}")
for name in os.listdir("."):
    attempts.append(f"sees {{name}}")
print(attempts)"""
    snoop = f"""\
import os, pathlib, socket
print(sorted(os.environ.items()))
print([pathlib.Path(p).exists() for p in ({str(chapters / CHAPTER_1.name)!r}, {str(CHAPTER_1)!r}, {str(ROOT / "attncourse")!r})])
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
    print("connected")
except OSError as error:
    print("no network:", type(error).__name__)"""
    leaver = f"""\
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sh", ["sh", "-c", "touch alive; while :; do sleep 0.2; echo {TOKEN} >> {report}/grades.csv; done", "{TOKEN}"])
    os._exit(0)
os.wait()
import time
time.sleep(1)
print("left behind:", os.path.exists("alive"))"""
    forger = f"""\
from IPython.display import display
FORGED = {{"schema": 1, "exercise": "{SOFTMAX}", "answers": [[1.0]], "missing": "", "names": {{}}, "calls": []}}
display({{"{wire.RECORD_MIMETYPE}": FORGED}}, raw=True)  # in its own cell: ignored

def stable_softmax(scores):  # called by the grader's cell: its record comes after this one
    display({{"{wire.RECORD_MIMETYPE}": FORGED}}, raw=True)
    raise NotImplementedError"""
    malformer = f"""\
from IPython.display import display

def stable_softmax(scores):
    display({{"{wire.RECORD_MIMETYPE}": ["not", "a", "record"]}}, raw=True)
    raise NotImplementedError"""
    patcher = """\
from attncourse.checks import core
core.evaluate_check = lambda label, kind, evaluate, answers, timeout: core.Result(label, "passed", "patched", kind)"""
    replacer = """\
setattr(__import__("attncourse.checks", fromlist=["x"]), "stable_softmax", lambda *a, **k: print("Passed."))"""
    objects = """\
class Exits:
    def __array__(self, dtype=None, copy=None):
        raise SystemExit("bye")

class Loops(float):
    def __float__(self):
        while True:
            pass

def stable_softmax(scores):
    return Exits()"""
    return {
        "correct/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION),
        "wrong/ch1.ipynb": submission(NAIVE_SOFTMAX, 'prediction = 0.3'),
        "empty/ch1.ipynb": submission(),
        "raises/ch1.ipynb": submission("def stable_softmax(scores):\n    return 1 / 0", "prediction = undefined_name"),
        "loops/ch1.ipynb": submission("def stable_softmax(scores):\n    while True:\n        pass", "while True:\n    pass"),
        "crashes/ch1.ipynb": submission(CORRECT_SOFTMAX, "import os\nos._exit(1)"),
        "sly/ch1.ipynb": submission(FLOAT64_ONLY, RIGHT_PREDICTION),
        "unreadable.ipynb": b"",
        "copier.ipynb": nbformat.read(CHAPTER_1, as_version=4),
        "vandal/ch1.ipynb": submission(before=vandal),
        "snoop/ch1.ipynb": submission(before=snoop),
        "leaver/ch1.ipynb": submission(before=leaver),
        "forger/ch1.ipynb": submission(forger),
        "malformer/ch1.ipynb": submission(malformer),
        "patcher/ch1.ipynb": submission(before=patcher),
        "replacer/ch1.ipynb": submission(before=replacer),
        "objects/ch1.ipynb": submission(objects, 'prediction = Loops(0.1)'),
        "twice.ipynb": submission(CORRECT_SOFTMAX),
        "twice/ch1.ipynb": submission(NAIVE_SOFTMAX),
        "twice/resubmit/ch1.ipynb": submission(),
        "=HYPERLINK(1)|x.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION),
        "@line\nbreak.ipynb": submission(),
        "forker/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=FORK_BOMB),
        "spinner/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=SPINNERS),
        "hoarder/ch1.ipynb": submission(HOARD_IN_A_FUNCTION, HOARD),
        "flooder/ch1.ipynb": submission(CORRECT_SOFTMAX, FLOOD),
        "filler/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=FILL_THE_DISK),
        "bloated.ipynb": submission(before="# " + "x" * DEFAULT_LIMITS.output),
        # A: forged passes, each with a wrong answer (or the course's own)
        "numpy-patcher/ch1.ipynb": submission(NUMPY_PATCHER, "prediction = 0.3"),
        "display-patcher/ch1.ipynb": submission(NAIVE_SOFTMAX, "prediction = 0.3", before=DISPLAY_PATCHER),
        "check-patcher/ch1.ipynb": submission(NAIVE_SOFTMAX, "prediction = 0.3", before=CHECK_PATCHER),
        "rebinder/ch1.ipynb": submission(REBINDER, "prediction = 0.3"),
        "reference-caller/ch1.ipynb": submission(REFERENCE_CALLER, RIGHT_PREDICTION),
        # B: resource escapes
        "mapper/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=MAPPER),
        "nester/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=NESTER),
        "runtime-filler/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=RUNTIME_FILLER),
        # C: honest learners whose notebooks are not as handed out
        "below/ch1.ipynb": answered_below_the_stub(),
        "untagged/ch1.ipynb": without_tags(submission(CORRECT_SOFTMAX, RIGHT_PREDICTION)),
        "replaced/ch1.ipynb": stub_replaced_by_an_untagged_cell(),
        "lenient/ch1.ipynb": saved_by_another_editor(),
        "burst/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=BURST),
        # D: files that are not graded, each for a reason
        ".hidden.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION),
        "notes.txt": b"my notes",
        "dotted/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION),
        "dotted/.ipynb_checkpoints/ch1-checkpoint.ipynb": submission(),
        "dotted/readme.md": b"# hello",
        "badjson/ch1.ipynb": b"{not json",
        # A further hostile class (session 29)
        "lying-array/ch1.ipynb": submission(LYING_ARRAY, "prediction = 10**400"),
        "nan-and-huge/ch1.ipynb": submission(NAN_AND_HUGE, 'prediction = float("nan")'),
        "sniffer/ch1.ipynb": submission(SNIFFER, RIGHT_PREDICTION),
        "own-check-of-the-course/ch1.ipynb": with_own_check_call(submission(prediction=RIGHT_PREDICTION),
                                                                 OWN_CHECK_OF_THE_COURSE),
        "memfd-hoarder/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=MEMFD_HOARD),
        "sysv-hoarder/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=SYSV_HOARD),
        "forked-hoarder/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=FORKED_HOARD),
        "dev-filler/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=DEV_SHM_FILLER),
        "misspelt/ch1.ipynb": with_misspelt_tags(),
        "windows/ch1.ipynb": saved_on_windows(),
        "own-name/ch1.ipynb": checked_under_its_own_name(),
        "method/ch1.ipynb": answered_as_a_method(),
        "Upper.IPYNB": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION),
        "folder.ipynb/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION),
        # A third hostile class (redA)
        "partial-reference/ch1.ipynb": submission(PARTIAL_REFERENCE, RIGHT_PREDICTION),
        "threaded-copy/ch1.ipynb": submission(THREADED_COPY, RIGHT_PREDICTION),
        "class-liar/ch1.ipynb": submission(CLASS_LIAR, RIGHT_PREDICTION),
        "cpu-hider/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=CPU_HIDER),
        "connection-writer/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=CONNECTION_WRITER),
        "foreign-flooder/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=FOREIGN_FLOODER),
        "huge-message/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=HUGE_MESSAGE),
        "escaper/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION, before=ESCAPER),
        **red_team_c_learners(),  # honest learners the grader must not zero, files it must list (redC)
        **red_team_d_learners(),  # honest learners in unusual places and types, and one who stalls a socket (redD)
    }


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) -> a digest of its content."""
    found = {}
    for parent, folders, files in os.walk(folder):
        folders[:] = [f for f in folders if f != "__pycache__"]  # the grader's own imports write there
        for name in files:
            path = Path(parent) / name
            found[str(path.relative_to(folder))] = (
                "link" if path.is_symlink() else "not a file" if not path.is_file()
                else hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def _processes_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    """The class, graded once: the module's tests share one xdist group, so one worker."""
    return _grade_the_class(tmp_path_factory)


def _grade_the_class(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("grading")
    chapters = folder / "chapters"
    shutil.copytree(ROOT / "chapters", chapters, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    report = folder / "report"
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    connections = []

    def accept():
        while listener.fileno() != -1:
            with contextlib.suppress(OSError):
                connections.append(listener.accept()[1])  # who connected

    threading.Thread(target=accept, daemon=True).start()
    submissions = folder / "submissions"
    for name, content in hostile_class(folder, chapters, report, listener.getsockname()[1]).items():
        (submissions / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (submissions / name).write_bytes(content)
        else:
            nbformat.write(content, submissions / name)
    (submissions / "linked.ipynb").symlink_to(chapters / CHAPTER_1.name)  # the solved chapter
    (submissions / "alias").symlink_to(submissions / "correct", target_is_directory=True)
    (submissions / "dotted" / "inside-link.ipynb").symlink_to(submissions / "wrong" / "ch1.ipynb")
    (submissions / "nobody").mkdir()
    (submissions / "fifo").mkdir()
    os.mkfifo(submissions / "fifo" / "ch1.ipynb")  # reading it would wait for ever
    latin1 = os.path.join(os.fsencode(submissions), "café.ipynb".encode("latin-1"))  # not UTF-8
    with open(latin1, "wb") as file:
        file.write(nbformat.writes(submission(CORRECT_SOFTMAX, RIGHT_PREDICTION)).encode())
    before = {"submissions": _tree(submissions), "chapters": _tree(chapters), "package": _tree(ROOT / "attncourse")}
    scratch_roots = []  # the folders grade makes its sandbox's scratch folders in
    make_folder = sandbox.tempfile.mkdtemp
    spans = []  # when each notebook ran
    run_notebook = grading._run_notebook

    cpu = {}  # notebook -> the processor time grade counted for it

    def timed_run(*args, **kwargs):
        started = time.monotonic()
        try:
            run = run_notebook(*args, **kwargs)
            cpu[run.notebook] = run.execution.cpu_seconds if run.execution else 0.0
            return run
        finally:
            spans.append((started, time.monotonic()))

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNCOURSE_TEST_SECRET", SECRET)
        patch.setattr(sandbox.tempfile, "mkdtemp", lambda **kw: scratch_roots.append(make_folder(**kw)) or scratch_roots[-1])
        patch.setattr(grading, "_run_notebook", timed_run)
        grades, problems = grade_submissions(
            submissions, chapters, assign=[DOUBLING, SOFTMAX], time_limit=TIME_LIMIT,
            check_timeout=CHECK_TIMEOUT, executed_dir=report / "executed", jobs=2, score_predictions=True,
        )
    table, text = write_report(grades, problems, report)
    report_written = table.read_bytes()
    time.sleep(1.0)  # what a process left behind would need to append to the report
    listener.close()
    return {
        "grades": {(g.learner, g.exercise): g for g in grades}, "rows": grades, "table": table,
        "problems": problems,
        "text": text, "report": report, "folder": folder, "spans": spans, "before": before,
        "after": {"submissions": _tree(submissions), "chapters": _tree(chapters), "package": _tree(ROOT / "attncourse")},
        "report_written": report_written, "connections": connections, "scratch_roots": scratch_roots,
        "groups": cgroups.available(), "cpu": cpu,
    }


def executed_text(graded, notebook: str) -> str:
    path = graded["report"] / "executed" / notebook
    learner = notebook.split("/")[0]
    assert path.exists(), (f"{notebook} has no executed copy: ",  # it never ran: say what the grader said
                           [(g.status, g.message) for g in graded["rows"] if g.learner == learner],
                           graded["problems"].get(learner))
    nb = nbformat.read(path, as_version=4)
    return "\n".join(str(output) for cell in nb.cells for output in cell.get("outputs", []))


# --- honest learners -------------------------------------------------------------------


def test_honest_learners_get_the_grades_they_earned(graded):
    grades = graded["grades"]
    assert grades["correct", SOFTMAX].status == grades["correct", DOUBLING].status == PASSED
    assert grades["wrong", SOFTMAX].status == FAILED and "overflows to inf" in grades["wrong", SOFTMAX].message
    assert grades["wrong", DOUBLING].status == FAILED
    assert grades["wrong", DOUBLING].message.startswith("you predicted 0.3")
    assert grades["empty", SOFTMAX].status == grades["empty", DOUBLING].status == NOT_ATTEMPTED
    assert "NotImplementedError" in grades["empty", SOFTMAX].message
    assert not any(g.review for (learner, _), g in grades.items() if learner in ("correct", "wrong", "empty", "copier"))


def test_code_that_raises_loops_or_crashes_is_a_grade(graded):
    grades = graded["grades"]
    assert grades["raises", SOFTMAX].status == FAILED and "ZeroDivisionError" in grades["raises", SOFTMAX].message
    assert grades["raises", DOUBLING] .message == "the check cell raised NameError: name 'prediction' is not defined"
    assert grades["loops", SOFTMAX].status == FAILED
    assert f"did not return within the time budget of {CHECK_TIMEOUT:g} s" in grades["loops", SOFTMAX].message
    assert grades["loops", DOUBLING].status == CRASHED
    assert grades["loops", DOUBLING].message.startswith(f"did not finish within the time limit of {TIME_LIMIT:g} s")
    assert grades["loops", DOUBLING].message.startswith(
        f"did not finish within the time limit of {TIME_LIMIT:g} s of processor time")
    assert grades["crashes", SOFTMAX].status == PASSED  # graded before the kernel died
    assert grades["crashes", DOUBLING].status == CRASHED and grades["crashes", DOUBLING].message.startswith("the kernel died")
    assert grades["unreadable", SOFTMAX].status == CRASHED
    assert grades["unreadable", SOFTMAX].message.startswith("could not read the notebook")


def test_the_hidden_tests_come_from_the_course_and_never_enter_the_sandbox(graded):
    grades = graded["grades"]
    assert grades["sly", SOFTMAX].status == FAILED and grades["sly", SOFTMAX].message.startswith("hidden test:")
    hidden = _cells(nbformat.read(CHAPTER_1, as_version=4), SOFTMAX, "hidden-test")[0].source
    executed = (graded["report"] / "executed" / "correct" / "ch1.ipynb").read_text(encoding="utf-8")
    assert "single_precision" in hidden and "single_precision" not in executed and "hidden_test" not in executed
    assert wire.RECORD_MIMETYPE in executed  # what came out of the sandbox: the record, data only


def test_a_submitted_solved_chapter_passes_and_is_noted(graded):
    grades = graded["grades"]
    assert grades["copier", SOFTMAX].status == grades["copier", DOUBLING].status == PASSED
    assert "copier.ipynb: holds the course's solution cells" in graded["text"].read_text(encoding="utf-8")


# --- hostile learners ------------------------------------------------------------------


def test_no_attack_earns_a_pass(graded):
    hostile = ("vandal", "snoop", "leaver", "forger", "malformer", "patcher", "replacer", "objects",
               "numpy-patcher", "display-patcher", "check-patcher", "rebinder")
    passed = [key for key, grade in graded["grades"].items() if key[0] in hostile and grade.status == PASSED]
    assert passed == []


def test_no_file_outside_the_scratch_folders_changed(graded):
    changed = {(part, path) for part in graded["before"] for path in
               set(graded["before"][part]) ^ set(graded["after"][part])
               | {p for p in graded["before"][part] if graded["after"][part].get(p) != graded["before"][part][p]}}
    assert changed == set()
    assert "deleted" not in executed_text(graded, "vandal/ch1.ipynb")
    assert "blocked" in executed_text(graded, "vandal/ch1.ipynb")
    assert "edited the package" not in executed_text(graded, "vandal/ch1.ipynb")
    assert "'sees ch1.ipynb'" in executed_text(graded, "vandal/ch1.ipynb")  # its own copy, alone
    seen = executed_text(graded, "vandal/ch1.ipynb").replace("'sees ch1.ipynb'", "")
    assert "sees" not in seen.replace(f"'sees {wire.INPUTS_FILE}'", "")  # and the hidden tests' inputs
    assert len(graded["scratch_roots"]) == 1 and not Path(graded["scratch_roots"][0]).exists()  # removed


def test_the_instructors_environment_solutions_and_network_are_out_of_reach(graded):
    seen = executed_text(graded, "snoop/ch1.ipynb")
    assert SECRET not in seen and "ATTNCOURSE_TEST_SECRET" not in seen
    assert "[False, False, False]" in seen  # the chapters, their copy, the repository's package
    assert "no network" in seen and graded["connections"] == []


def test_no_process_survives_and_the_report_is_not_forged(graded):
    assert "left behind: True" in executed_text(graded, "leaver/ch1.ipynb")  # it did start one
    assert _processes_with(TOKEN) == []
    assert graded["table"].read_bytes() == graded["report_written"]
    assert TOKEN.encode() not in graded["report_written"]


def test_forged_and_malformed_records_change_nothing_and_are_flagged(graded):
    grades = graded["grades"]
    forged = grades["forger", SOFTMAX]  # the grader's own record comes last: the stub's
    assert forged.status == NOT_ATTEMPTED and "touches the grader's recording (`vnd.attncourse`)" in forged.review
    assert forged.review.startswith("forger/ch1.ipynb: ")  # a note names its notebook
    assert grades["forger", DOUBLING].status == NOT_ATTEMPTED  # the record in its own cell is ignored
    assert grades["malformer", SOFTMAX].status == NOT_ATTEMPTED


def test_replacing_the_checks_machinery_in_the_sandbox_changes_nothing(graded):
    grades = graded["grades"]
    for label in (SOFTMAX, DOUBLING):
        assert grades["patcher", label].status == NOT_ATTEMPTED  # the stubs, as handed out
        assert "touches the grader's recording (`import core`)" in grades["patcher", label].review
    assert grades["replacer", SOFTMAX].status == NOT_ATTEMPTED


def test_class_a_patched_numpy_display_checks_or_names_forge_no_pass(graded):
    grades = graded["grades"]
    assert grades["numpy-patcher", SOFTMAX].status == FAILED and "overflows to inf" in grades["numpy-patcher", SOFTMAX].message
    assert grades["numpy-patcher", DOUBLING].status == FAILED
    broken = grades["display-patcher", SOFTMAX]  # builtins.isinstance replaced: nothing can record, or even run
    assert broken.status in (NEEDS_REVIEW, CRASHED) and broken.message
    patched = grades["check-patcher", SOFTMAX]  # the check it ran in the sandbox called nothing: no outputs
    assert patched.status == NEEDS_REVIEW and "did not record" in patched.message and patched.review
    assert grades["check-patcher", DOUBLING].status == FAILED
    rebound = grades["rebinder", SOFTMAX]  # the hidden test uses numpy, not the notebook's np
    assert rebound.status == FAILED and rebound.message.startswith("hidden test:")


def test_calling_the_courses_reference_passes_but_is_flagged(graded):
    caller = graded["grades"]["reference-caller", SOFTMAX]
    assert caller.status == PASSED and "called the course's own attncourse.attention.softmax" in caller.review


def test_an_answer_that_is_not_data_is_a_failed_check(graded):
    grades = graded["grades"]
    assert grades["objects", SOFTMAX].status == FAILED and "returned a Exits (not data)" in grades["objects", SOFTMAX].message
    assert grades["objects", DOUBLING].status == FAILED  # read as the float it is, never through its __float__


def test_every_file_of_the_submissions_is_graded_or_listed_with_why(graded):
    skipped = graded["problems"][SKIPPED]
    for expected in ("linked.ipynb: a symbolic link that leaves the submissions folder",
                     "alias: a symbolic link to a folder (grade follows none)",
                     "dotted/inside-link.ipynb: a symbolic link (grade follows none)",
                     ".hidden.ipynb: a hidden file (its name starts with a dot)",
                     "notes.txt: not a notebook (.ipynb)", "dotted/readme.md: not a notebook (.ipynb)",
                     "dotted/.ipynb_checkpoints: a hidden folder (its name starts with a dot): nothing in it is graded"):
        assert expected in skipped
    graded_files = {notebook for g in graded["rows"] for notebook in g.notebook.split(" ")} | {
        note.split(":")[0] for learner, notes in graded["problems"].items() if learner != SKIPPED for note in notes}
    listed = {note.split(": ")[0] for note in skipped}
    for parent, folders, files in os.walk(graded["folder"] / "submissions"):
        for name in folders + files:
            relative = grading.shown((Path(parent) / name).relative_to(graded["folder"] / "submissions").as_posix())
            inside_a_listed_folder = any(relative.startswith(folder + "/") for folder in listed)
            is_a_learner_folder = (Path(parent) / name).is_dir() and not (Path(parent) / name).is_symlink()
            assert relative in graded_files | listed or inside_a_listed_folder or is_a_learner_folder, relative
    bad = graded["grades"]["badjson", SOFTMAX]
    assert bad.status == CRASHED and "could not read the notebook (JSONDecodeError" in bad.message
    assert graded["grades"]["dotted", SOFTMAX].status == PASSED
    assert "| dotted |" in graded["text"].read_text(encoding="utf-8")
    assert "## Files not graded" in graded["text"].read_text(encoding="utf-8")


def test_class_c_honest_answers_are_graded_wherever_they_are_and_however_much_they_display(graded):
    grades = graded["grades"]
    for learner in ("below", "untagged", "replaced", "lenient", "burst"):
        assert grades[learner, SOFTMAX].status == PASSED, (learner, grades[learner, SOFTMAX])
        assert grades[learner, DOUBLING].status == PASSED, (learner, grades[learner, DOUBLING])


def test_class_b_mappings_nested_namespaces_and_the_runtime_folder_are_refused(graded):
    mapped = executed_text(graded, "mapper/ch1.ipynb")
    assert "mmap refused" in mapped and "memfd refused" in mapped
    assert "nested namespace: refused" in executed_text(graded, "nester/ch1.ipynb")
    if os.geteuid() == 0:  # the kernel runs as nobody; the runtime folder is root's once its sockets exist
        assert "runtime refused: PermissionError" in executed_text(graded, "runtime-filler/ch1.ipynb")
    grades = graded["grades"]
    for learner in ("mapper", "nester", "runtime-filler"):
        assert grades[learner, SOFTMAX].status == grades[learner, DOUBLING].status == PASSED


# --- a further hostile class (session 29) ------------------------------------------------


def test_class_a_answers_that_lie_about_themselves_forge_no_pass(graded):
    grades = graded["grades"]
    for learner in ("lying-array", "nan-and-huge", "sniffer"):  # an ndarray subclass is read as its data
        assert grades[learner, SOFTMAX].status == FAILED, grades[learner, SOFTMAX]
    assert grades["lying-array", DOUBLING].status == grades["nan-and-huge", DOUBLING].status == FAILED
    assert grades["sniffer", DOUBLING].status == PASSED  # the inputs it tried to rewrite are read-only
    assert "returned a dict" in grades["sniffer", SOFTMAX].message or "dict" in grades["sniffer", SOFTMAX].message
    course = grades["own-check-of-the-course", SOFTMAX]  # its own check call hands over the course's softmax
    assert course.status != PASSED or "the course's own" in course.review
    assert "graded on the arguments of the notebook's own check call" in course.review


def test_class_b_memory_held_by_no_process_is_bounded_by_a_control_group(graded):
    if graded["groups"] is None:
        pytest.skip("no control group can be made here: memory no process maps is not bounded (instructor guide)")
    grades = graded["grades"]
    for learner in ("memfd-hoarder", "sysv-hoarder"):  # stopped at the sandbox's limit, together
        assert grades[learner, DOUBLING].status == CRASHED, grades[learner, DOUBLING]
        assert "its processes together passed the sandbox's limit" in grades[learner, DOUBLING].message
        assert "held 2560" not in executed_text(graded, f"{learner}/ch1.ipynb")
    forked = executed_text(graded, "forked-hoarder/ch1.ipynb")  # Linux stopped one of them at least
    assert "children that held theirs:" in forked and "children that held theirs: 4" not in forked
    assert grades["forked-hoarder", SOFTMAX].status == PASSED  # the kernel itself is not the largest


def test_class_b_dev_is_read_only_and_dev_shm_is_limited(graded):
    text = executed_text(graded, "dev-filler/ch1.ipynb")
    assert "/dev/shm took 600" not in text and "/dev/shm refused after" in text
    assert "/dev refused" in text and "/dev written" not in text
    assert graded["grades"]["dev-filler", SOFTMAX].status == PASSED


def test_class_c_misspelt_tags_editors_own_names_and_methods_are_graded(graded):
    grades = graded["grades"]
    for learner in ("misspelt", "windows", "own-name", "method", "Upper", "folder.ipynb", "caf\\xe9"):
        assert grades[learner, SOFTMAX].status == PASSED, (learner, grades[learner, SOFTMAX])
        assert grades[learner, DOUBLING].status == PASSED, (learner, grades[learner, DOUBLING])
    assert "graded on the arguments of the notebook's own check call (my_softmax)" in grades["own-name", SOFTMAX].review


def test_class_d_a_fifo_and_a_name_that_is_not_utf8_are_reported(graded):
    assert "fifo/ch1.ipynb: not a regular file" in graded["problems"][SKIPPED]
    assert graded["grades"]["fifo", SOFTMAX].status == NOT_ATTEMPTED
    assert "caf\\xe9," in graded["table"].read_text(encoding="utf-8")  # the report is written, the name shown
    assert (graded["report"] / "executed" / "caf\\xe9.ipynb").exists()


def test_duplicate_submissions_are_reported_not_merged(graded):
    grades = graded["grades"]
    twice = grades["twice", SOFTMAX]
    assert twice.status == ERROR
    assert twice.message == ("duplicate submissions hold this exercise: twice/ch1.ipynb (failed), "
                             "twice/resubmit/ch1.ipynb (not attempted), twice.ipynb (passed); keep one and grade again")
    for notebook in ("twice.ipynb", "twice/ch1.ipynb", "twice/resubmit/ch1.ipynb"):  # each kept apart
        assert (graded["report"] / "executed" / notebook).exists()
    assert "submitted both as a file and as a folder" in graded["text"].read_text(encoding="utf-8")


def test_duplicates_tell_the_learner_to_keep_one_and_are_no_failure_of_the_gradescope_grader(graded):
    twice = graded["grades"]["twice", SOFTMAX]
    assert twice.feedback == ("Your notebooks hold this exercise with different results: ch1.ipynb (failed), "
                              "resubmit/ch1.ipynb (not attempted), twice.ipynb (passed). It is not graded until "
                              "one of them holds it: keep one and submit again.")
    assert gradescope.grader_failures([twice]) == []  # results.json is written: the learner reads why
    broken = Grade("twice", SOFTMAX, ERROR, "the sandbox could not start", "twice.ipynb")
    assert gradescope.grader_failures([twice, broken]) == [f"{SOFTMAX}: the sandbox could not start"]
    (test,) = export.gradescope_results([twice], {})["tests"]
    assert test["score"] == 0 and test["status"] == "failed" and "keep one and submit again" in test["output"]


def test_every_learner_has_a_row_for_every_exercise(graded):
    learners = {path.split("/")[0] if "/" in path else path[:-len(".ipynb")]
                for path in hostile_class(Path("x"), Path("y"), Path("z"), 0)
                if not path.startswith(".") and ("/" in path or path.lower().endswith(".ipynb"))}
    learners |= {"nobody", "fifo", "caf\\xe9"}
    assert {g.learner for g in graded["rows"]} == learners
    assert len(graded["rows"]) == 2 * len(learners)
    assert graded["grades"]["nobody", SOFTMAX].status == NOT_ATTEMPTED
    assert all(g.status in (PASSED, FAILED, NOT_ATTEMPTED, CRASHED, ERROR, NEEDS_REVIEW)
               and (g.message or g.status == PASSED) and g.graded_at for g in graded["rows"])


def test_names_cannot_inject_a_formula_or_break_the_table(graded):
    with open(graded["table"], newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == len(graded["rows"])
    learners = {row["learner"] for row in rows}
    assert "'=HYPERLINK(1)|x" in learners and "'@line\nbreak" in learners
    assert not [row for row in rows for value in row.values() if value[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert graded["grades"]["=HYPERLINK(1)|x", SOFTMAX].status == PASSED
    summary = graded["text"].read_text(encoding="utf-8")
    lines = summary.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("| learner | "))
    table = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))
    assert len(table) == 2 + len({g.learner for g in graded["rows"]})  # the header, its rule, a row per learner
    assert all(line.count(" | ") == 2 for line in table[2:])  # learner + two exercises on every row
    assert "| =HYPERLINK(1)\\|x | passed | passed |" in summary and "| @line break |" in summary


def test_the_class_was_graded_in_parallel_up_to_the_jobs_asked_for(graded):
    events = sorted([(start, 1) for start, _ in graded["spans"]] + [(end, -1) for _, end in graded["spans"]])
    running = [sum(change for _, change in events[: k + 1]) for k in range(len(events))]
    notebooks = len([path for path in hostile_class(Path("x"), Path("y"), Path("z"), 0)
                     if path.lower().endswith(".ipynb") and not path.startswith(".") and "/." not in path])
    notebooks += 1  # the one whose name is not UTF-8
    assert len(graded["spans"]) == notebooks and max(running) == 2  # jobs=2, each notebook run once


# --- a third hostile class (redA) --------------------------------------------------------


def test_class_a_the_courses_reference_is_flagged_through_a_partial_a_thread_or_a_copy(graded):
    grades = graded["grades"]
    partial = grades["partial-reference", SOFTMAX]
    assert partial.status == PASSED and "called the course's own attncourse.attention.softmax" in partial.review
    copy_in_a_thread = grades["threaded-copy", SOFTMAX]
    assert copy_in_a_thread.status == PASSED
    assert "called the course's own attncourse.attention.softmax (a copy of its code)" in copy_in_a_thread.review


def test_class_a_an_answer_that_breaks_its_reading_is_not_data_not_a_timeout(graded):
    liar = graded["grades"]["class-liar", SOFTMAX]
    assert liar.status == FAILED and "returned a Liar that could not be read (TypeError) (not data)" in liar.message
    assert "time budget" not in liar.message


def test_class_b_processor_time_of_children_reaped_by_linux_is_counted(graded):
    if graded["groups"] is None or graded["groups"].cpuacct is None and graded["groups"].version == 1:
        pytest.skip("no control group counts processor time here: children reaped by Linux are not counted")
    assert "the children burnt 8 s" in executed_text(graded, "cpu-hider/ch1.ipynb")
    assert graded["cpu"]["cpu-hider/ch1.ipynb"] >= 8.0  # 0.5 s or so without the group's count
    assert graded["grades"]["cpu-hider", SOFTMAX].status == PASSED


def test_class_b_the_connection_file_is_not_the_kernels_to_write(graded):
    if os.geteuid() == 0:  # as another user, the kernel could write its runtime folder anyway (instructor guide)
        assert "connection file refused: PermissionError" in executed_text(graded, "connection-writer/ch1.ipynb")
    assert graded["grades"]["connection-writer", SOFTMAX].status == PASSED


def test_class_b_output_that_claims_no_cell_or_comes_in_one_huge_message_is_bounded(graded):
    flooded = graded["grades"]["foreign-flooder", SOFTMAX]
    assert flooded.status == CRASHED and flooded.message.startswith("its output passed the limit of 10 MiB in cell 2")
    assert "sent 16 MiB" not in executed_text(graded, "foreign-flooder/ch1.ipynb")
    huge = graded["grades"]["huge-message", SOFTMAX]  # refused before it is read, and said so
    assert huge.status == CRASHED and huge.message.startswith(
        "its output passed the limit of 10 MiB in cell 2 (one message larger than 20 MiB or malformed, refused unread)")
    assert "[grade: output cut off here, past the limit of 10 MiB]" in executed_text(graded, "huge-message/ch1.ipynb")


def test_class_b_signals_limits_and_tracing_beyond_the_sandbox_are_refused(graded):
    text = executed_text(graded, "escaper/ch1.ipynb")
    for attempt in ("signal pid 1", "raise the memory limit", "raise the process limit"):
        assert f"{attempt}: refused" in text, attempt
    if os.geteuid() == 0:  # pid 1 is root's bubblewrap, the kernel nobody
        assert "read the environment of pid 1: refused" in text and "trace pid 1: refused" in text
    assert graded["grades"]["escaper", SOFTMAX].status == graded["grades"]["escaper", DOUBLING].status == PASSED


# --- learners who bomb the grader's machine -----------------------------------------


def test_a_fork_bomb_stops_at_the_process_limit(graded):
    processes = re.search(r"processes at once: (\d+)", executed_text(graded, "forker/ch1.ipynb"))
    assert processes and 8 < int(processes.group(1)) < DEFAULT_LIMITS.processes  # it forked; 256 without the limit
    grades = graded["grades"]
    assert grades["forker", SOFTMAX].status == grades["forker", DOUBLING].status == PASSED  # graded on after it


def test_processes_hogging_the_cpu_cannot_make_a_neighbour_run_out_of_time(graded):
    """The spinners starve whatever runs beside them, but the time limit counts each
    notebook's own processor time: every other learner keeps the grade earned (the other
    tests check those grades), and the spinner runs out of its own time, once."""
    notes = graded["problems"]["spinner"]
    assert "did not finish within the time limit" in notes[0]
    assert graded["grades"]["spinner", SOFTMAX].status != PASSED


def test_a_memory_bomb_stops_at_the_memory_limit(graded):
    grades = graded["grades"]
    hoarded = grades["hoarder", DOUBLING]
    assert hoarded.status == CRASHED and hoarded.message.startswith("ran out of memory in cell ")
    assert hoarded.message.endswith("the memory limit is 2048 MiB per process (--memory-limit)")
    in_a_check = grades["hoarder", SOFTMAX]  # the check reports the function's MemoryError, and grade says why
    assert in_a_check.status == FAILED and in_a_check.message.startswith("stable_softmax() raised MemoryError")
    assert in_a_check.message.endswith("(the memory limit is 2048 MiB per process: --memory-limit)")


def test_endless_output_is_cut_at_the_output_limit(graded):
    grades = graded["grades"]
    flooded = grades["flooder", DOUBLING]
    assert flooded.status == CRASHED and flooded.message.startswith("its output passed the limit of 10 MiB in cell ")
    assert grades["flooder", SOFTMAX].status == PASSED
    assert "[grade: output cut off here, past the limit of 10 MiB]" in executed_text(graded, "flooder/ch1.ipynb")
    executed = graded["report"] / "executed" / "flooder" / "ch1.ipynb"
    assert executed.stat().st_size < DEFAULT_LIMITS.output + 100_000  # the outputs kept, and the notebook
    assert graded["table"].stat().st_size < 100_000 and graded["text"].stat().st_size < 100_000


def test_files_stop_at_the_disk_limit(graded):
    filled = re.search(r"disk full after (\d+) MiB: No space left on device", executed_text(graded, "filler/ch1.ipynb"))
    assert filled and int(filled.group(1)) <= DEFAULT_LIMITS.disk // MiB  # 1024 MiB without the limit
    grades = graded["grades"]
    assert grades["filler", SOFTMAX].status == grades["filler", DOUBLING].status == PASSED


def test_messages_reach_the_report_clipped_and_memory_errors_explained():
    assert grading._clip("x" * 5000) == "x" * 997 + "..." and grading._clip("short") == "short"
    explained = grading._explained("f() raised MemoryError: no", Limits(memory=512 * MiB))
    assert explained == "f() raised MemoryError: no (the memory limit is 512 MiB per process: --memory-limit)"
    assert grading._explained("ran out of memory (the memory limit is 2048 MiB)", DEFAULT_LIMITS).count("memory limit") == 1


def test_a_huge_notebook_is_not_read(graded):
    bloated = graded["grades"]["bloated", SOFTMAX]
    assert bloated.status == CRASHED and bloated.message.startswith("could not read the notebook")
    assert bloated.message.endswith("grade reads notebooks of up to 10 MiB)")


# --- reports, arguments, the sandbox ---------------------------------------------------


def test_csv_and_markdown_escaping():
    assert [csv_cell(t) for t in ("=1+1", "+1", "-1", "@A1", "\tx", "\rx", "ada", "")] == [
        "'=1+1", "'+1", "'-1", "'@A1", "'\tx", "'\rx", "ada", ""]
    assert markdown_text("a|b\n<script>*x*_y_ `z` [l](u)") == "a\\|b \\<script\\>\\*x\\*\\_y\\_ \\`z\\` \\[l\\](u)"


@pytest.mark.parametrize("text", ["see http://evil.com/x now", "*www.evil.com*", "(mail bob@evil.com)", "_ftp://a.org_",
                                  "~https://a.com|c~", "a ``b` www.evil.com", "[x](http://e.fr)", "<https://a.com>"])
def test_no_learner_text_becomes_a_link_in_markdown(text):
    shown = markdown_text(text)
    renderer = MarkdownIt("gfm-like")  # linkify on: bare addresses become links, as on GitHub
    assert "<a " in renderer.render(text)  # each would, unescaped
    assert "<a " not in renderer.render(shown) and "<a " not in renderer.render(f"| learner |\n|---|\n| {shown} |")
    assert text in html.unescape(re.sub("<[^>]*>", "", renderer.render(shown)))  # shown as written


@pytest.mark.parametrize(
    "arguments, expected",
    [
        (["--time-limit", "0"], "--time-limit: must be positive, got 0"),
        (["--time-limit", "-5"], "--time-limit: must be positive, got -5"),
        (["--check-timeout", "0"], "--check-timeout: must be positive, got 0"),
        (["--check-timeout", "nan"], "--check-timeout: must be positive, got nan"),
        (["--jobs", "0"], "--jobs: must be positive, got 0"),
        (["--memory-limit", "0"], "--memory-limit: must be positive, got 0"),
        (["--memory-limit", "-512"], "--memory-limit: must be positive, got -512"),
        (["--memory-limit", "1.5"], "--memory-limit: '1.5' is not a whole number"),
    ],
)
def test_limits_must_be_positive(tmp_path, capsys, arguments, expected):
    with pytest.raises(SystemExit):
        instructor.main(["grade", str(tmp_path), "--out", str(tmp_path / "r"), *arguments])
    assert expected in capsys.readouterr().err
    with pytest.raises(ValueError, match="must be a positive number of seconds"):
        grade_submissions(tmp_path, time_limit=-1.0)
    for field in ("memory", "processes", "disk", "output"):
        with pytest.raises(ValueError, match=f"the {field} limit must be a positive whole number, got 0"):
            Limits(**{field: 0})


def test_a_memory_limit_python_cannot_start_under_is_refused_before_grading(tmp_path):
    submissions = tmp_path / "subs"
    submissions.mkdir()
    nbformat.write(submission(CORRECT_SOFTMAX), submissions / "ada.ipynb")
    with pytest.raises(SandboxUnavailable, match=r"with a memory limit of 64 MiB per process: .*[Mm]emory"):
        grade_submissions(submissions, ROOT / "chapters", limits=Limits(memory=64 * MiB))


def test_out_inside_the_submissions_is_refused(tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    for out in (tmp_path / "subs", tmp_path / "subs" / "report"):
        assert instructor.main(["grade", str(tmp_path / "subs"), "--out", str(out)]) == 2
        assert "is inside the submissions folder" in capsys.readouterr().err
    assert not (tmp_path / "subs" / "report").exists()


def test_without_a_sandbox_grade_refuses_unless_told_and_says_what_that_means(tmp_path, capsys, monkeypatch):
    submissions = tmp_path / "subs"
    submissions.mkdir()
    nbformat.write(submission(CORRECT_SOFTMAX), submissions / "ada.ipynb")
    which = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None if name == "bwrap" else which(name))  # no bwrap here
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed"):
        grade_submissions(submissions, ROOT / "chapters", assign=[SOFTMAX])
    command = ["grade", str(submissions), "--chapters", str(ROOT / "chapters"), "--out", str(tmp_path / "r"), "--assign", SOFTMAX]
    assert instructor.main(command) == 2
    err = capsys.readouterr().err
    assert "can read, change and delete any file you can" in err and "--unsafe-no-sandbox" in err
    assert not (tmp_path / "r").exists()
    assert instructor.main([*command, "--unsafe-no-sandbox", "--time-limit", "60"]) == 0
    assert "| ada | passed |" in capsys.readouterr().out


@pytest.mark.parametrize("uid", [1000, 0])
def test_the_sandbox_command_hides_everything_but_the_system_and_its_scratch(tmp_path, monkeypatch, uid):
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: uid)
    monkeypatch.setattr(sandbox.os, "chown", lambda *args: None)
    box = sandbox.Sandbox(tmp_path, isolated=True, limits=Limits(memory=1000 * MiB, processes=50, disk=7 * MiB))
    scratch = box.scratch("0001")
    box.copy_in(scratch, CHAPTER_1)
    env = box.environment(scratch, 3.0)
    command = box.command(scratch, env)
    end = len(command) - 1 - command[::-1].index("--remount-ro")
    assert command[end + 1] == "/"
    dev = command.index("/dev/shm")  # bubblewrap's /dev is a tmpfs of no set size: read-only, /dev/shm limited
    assert command[dev - 5:dev + 3] == ["--perms", "01777", "--size", str(7 * MiB), "--tmpfs", "/dev/shm",
                                        "--remount-ro", "/dev"]
    if uid:  # bubblewrap makes the user namespace, prlimit sets the limits in it
        assert command[1:9] == ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                                "--new-session", "--clearenv", "--cap-drop", "ALL"]
        assert command[end + 2:] == [shutil.which("prlimit"), "--nproc=50", f"--as={1000 * MiB}", "--"]
    else:  # root leaves uid 0 (the process limit never applies to it), then makes its own user namespace
        outer = command[:command.index(shutil.which("setpriv"))]
        assert "--unshare-all" not in outer and "--unshare-user" not in outer
        assert command[command.index("--cap-drop") + 1:command.index("--cap-drop") + 6] == [
            "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        assert command[end + 2:] == [
            shutil.which("setpriv"), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            shutil.which("bwrap"), "--unshare-user", "--disable-userns", "--dev-bind", "/", "/",
            shutil.which("prlimit"), "--nproc=50", f"--as={1000 * MiB}", "--"]
    writable = [command[i + 1] for i, arg in enumerate(command) if arg == "--bind"]
    assert writable == [str(scratch / "runtime")]  # the kernel's sockets; the rest is the tmpfs
    tmpfs = command.index("--tmpfs")
    assert command[tmpfs - 2:tmpfs + 2] == ["--size", str(7 * MiB), "--tmpfs", str(scratch)]
    notebook = str(scratch / "work" / CHAPTER_1.name)
    assert command[command.index(notebook) - 1] == "--ro-bind"  # its own copy, read-only
    mounted = {command[i + 1] for i, arg in enumerate(command) if arg in ("--ro-bind", "--bind")}
    assert str(ROOT) not in mounted and str(ROOT / "chapters") not in mounted and str(tmp_path) not in mounted
    assert env["ATTNCOURSE_CHECK_TIMEOUT"] == "3.0" and "ATTNCOURSE_TEST_SECRET" not in env
    assert set(env) <= {"HOME", "TMPDIR", "LANG", "PATH", "USER", "PYTHONPATH", "PYTHONNOUSERSITE", "MALLOC_ARENA_MAX",
                        "PYTHONDONTWRITEBYTECODE", "MPLCONFIGDIR", "JUPYTER_PLATFORM_DIRS", "OMP_NUM_THREADS",
                        "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS", "ATTNCOURSE_CHECK_TIMEOUT"}


def test_a_control_group_is_joined_before_the_sandbox_starts(tmp_path):
    group = cgroups.Group((tmp_path / "memory" / "g", tmp_path / "pids" / "g"), 1)
    prefix = group.join_then()
    assert prefix[:2] == ["/bin/sh", "-c"] and prefix[-1] == "sh" and prefix[2].endswith('&& exec "$@"')
    for folder in group.folders:
        folder.mkdir(parents=True)
        (folder / "cgroup.procs").write_text("")
    done = subprocess.run([*prefix, "sh", "-c", "echo ran"], capture_output=True, text=True, check=True)
    assert done.stdout == "ran\n"
    joined = [(folder / "cgroup.procs").read_text().strip() for folder in group.folders]
    assert joined[0] == joined[1] and joined[0].isdigit()  # the shell that became the command
    (group.folders[0] / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    assert group.out_of_memory()
    for folder in group.folders:
        for file in folder.iterdir():
            file.unlink()
    group.remove()
    assert not any(folder.exists() for folder in group.folders)


def test_a_control_group_counts_the_processor_time_of_processes_that_ended(tmp_path):
    (tmp_path / "cpuacct").mkdir()
    (tmp_path / "cpuacct" / "cpuacct.usage").write_text("2500000000\n")  # nanoseconds (version 1)
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
    assert cgroups.Group((tmp_path / "memory",), 1, tmp_path / "cpuacct").cpu_seconds() == 2.5
    assert cgroups.Group((tmp_path / "unified",), 2, tmp_path / "unified").cpu_seconds() == 1.5
    assert cgroups.Group((tmp_path / "memory",), 1).cpu_seconds() is None  # no cpuacct: /proc is read instead

    class Counted:
        group, process = cgroups.Group((tmp_path / "memory",), 1, tmp_path / "cpuacct"), None

    assert grading_execution.used_seconds(Counted()) == 2.5 and grading_execution.used_seconds(Counted(), 3.0) == 3.0


def test_without_a_writable_hierarchy_there_is_no_control_group(tmp_path, monkeypatch):
    mounts, own = tmp_path / "mounts", tmp_path / "cgroup"
    mounts.write_text("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
    own.write_text("0::/user.slice/user-1000.slice/session-1.scope\n")
    monkeypatch.setattr(cgroups, "_MOUNTS", mounts)
    monkeypatch.setattr(cgroups, "_OWN", own)
    assert cgroups.available() is None  # no memory and pids delegated there


def test_without_a_sandbox_only_the_memory_limit_applies(tmp_path):
    """Outside a user namespace of its own, RLIMIT_NPROC would count all of the instructor's processes."""
    box = sandbox.Sandbox(tmp_path, isolated=False, limits=Limits(memory=1000 * MiB))
    assert box.command(box.scratch("0001"), {}) == [shutil.which("prlimit"), f"--as={1000 * MiB}", "--"]


def test_the_instructors_walkthrough(tmp_path, capsys):
    """Two exercises assigned; the learner gets one right and one wrong; grade says so."""
    handout = tmp_path / "handout"
    assert instructor.main(["student", "--out", str(handout), "--assign", f"{SOFTMAX},{DOUBLING}",
                            "--chapters", str(ROOT / "chapters")]) == 0
    nb = nbformat.read(handout / CHAPTER_1.name, as_version=4)
    _cells(nb, SOFTMAX, "stub")[0].source = CORRECT_SOFTMAX
    _cells(nb, DOUBLING, "stub")[0].source = 'prediction = 0.3'
    (tmp_path / "submissions" / "ada").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "submissions" / "ada" / CHAPTER_1.name)
    report = tmp_path / "report"
    assert instructor.main(["grade", str(tmp_path / "submissions"), "--chapters", str(ROOT / "chapters"),
                            "--out", str(report), "--memory-limit", "1024"]) == 0
    with open(report / "grades.csv", newline="", encoding="utf-8") as file:
        rows = [(r["learner"], r["exercise"], r["status"], r["review"]) for r in csv.DictReader(file)]
    assert rows == [("ada", DOUBLING, COMPLETED, ""), ("ada", SOFTMAX, PASSED, "")]  # a prediction counts as done
    assert "| ada | completed | passed |" in capsys.readouterr().out


def test_grade_works_where_an_event_loop_is_already_running(tmp_path):
    """As in Jupyter, or in a pytest worker that ran Playwright's sync API before."""
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    nbformat.write(submission(CORRECT_SOFTMAX), submissions / "ada.ipynb")

    async def grade_inside_a_loop():
        return grade_submissions(submissions, ROOT / "chapters", assign=[SOFTMAX], time_limit=60.0)

    grades, _ = run_in_own_thread(grade_inside_a_loop())
    assert [g.status for g in grades] == [PASSED]


def test_a_failure_of_the_grader_on_one_notebook_is_that_learners_error(tmp_path, monkeypatch):
    submissions = tmp_path / "subs"
    submissions.mkdir()
    for learner in ("ada", "bob"):
        nbformat.write(submission(CORRECT_SOFTMAX), submissions / f"{learner}.ipynb")
    run_notebook = grading._run_notebook

    def fails_on_bob(submissions, relative, *args, **kwargs):
        if relative.name == "bob.ipynb":
            raise RuntimeError("a bug in grade")
        return run_notebook(submissions, relative, *args, **kwargs)

    monkeypatch.setattr(grading, "_run_notebook", fails_on_bob)
    grades, _ = grade_submissions(submissions, ROOT / "chapters", assign=[SOFTMAX], time_limit=60.0)
    assert [(g.learner, g.status, g.message) for g in grades] == [
        ("ada", PASSED, grades[0].message),
        ("bob", ERROR, "the grader failed on this notebook: RuntimeError: a bug in grade"),
    ]


def test_the_time_limit_counts_processor_time_not_waiting():
    """A notebook starved by its neighbours is not out of time; an endless one is, once."""
    before = grading_execution.cpu_seconds(os.getpid())
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    assert grading_execution.cpu_seconds(os.getpid()) - before >= 0.25

    class Stuck:
        process = None

        async def refused_a_message(self):
            return False

    started = time.monotonic()
    with pytest.raises(grading_execution._OutOfTime):  # no process: only the wall-clock backstop
        run_in_own_thread(grading_execution._watch_the_clock(Stuck(), 0.5, started))
    assert time.monotonic() - started >= grading_execution.WALL_CLOCK_FACTOR * 0.5


# --- red team C and D (redC): honest learners written as people write, files beside them --


def red_team_c_learners() -> dict[str, object]:
    """Right answers where a learner puts them: a helper below the answer (above the check),
    the answer below the check with the stub left as handed out, an answer imported from a
    module beside the notebook (which the sandbox does not hold), and a notebook as
    JupyterLab 4 or VS Code saves it."""
    helper = submission("def stable_softmax(scores):\n    return _stable(scores)", RIGHT_PREDICTION)
    stub = next(i for i, cell in enumerate(helper.cells) if exercise_of(cell) == SOFTMAX and role_of(cell) == "stub")
    helper.cells.insert(stub + 1, nbformat.v4.new_code_cell(CORRECT_SOFTMAX.replace("def stable_softmax", "def _stable")))
    after = submission(prediction=RIGHT_PREDICTION)
    check = next(i for i, cell in enumerate(after.cells) if exercise_of(cell) == SOFTMAX and role_of(cell) == "check")
    after.cells.insert(check + 1, nbformat.v4.new_code_cell(CORRECT_SOFTMAX))
    return {
        "redc-helper-below/ch1.ipynb": helper,
        "redc-after-check/ch1.ipynb": after,
        "redc-beside/ch1.ipynb": submission("from mymodule import stable_softmax", RIGHT_PREDICTION),
        "redc-beside/mymodule.py": f"import numpy as np\n\n{CORRECT_SOFTMAX}\n".encode(),
        "redc-editor/ch1.ipynb": saved_by_jupyterlab_or_vscode(),
    }


def saved_by_jupyterlab_or_vscode() -> bytes:
    """Right answers (the softmax's under ``%%time``), saved with every cell's id the same
    (a copy and paste), execution counts and long outputs kept, a markdown cell with an
    attachment, widget state, and a kernel named after the learner's environment."""
    nb = json.loads(nbformat.writes(submission("%%time\n" + CORRECT_SOFTMAX, RIGHT_PREDICTION)))
    for count, cell in enumerate(nb["cells"], start=1):
        cell["id"] = "4f6a"
        if cell["cell_type"] == "code":
            cell["execution_count"] = count
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["loss 0.25\n"] * 2000}]
    nb["cells"].insert(0, {"cell_type": "markdown", "id": "4f6a", "metadata": {}, "source": ["![](attachment:a.png)"],
                           "attachments": {"a.png": {"image/png": "iVBORw0KGgo="}}})
    nb["metadata"] = {"kernelspec": {"name": ".venv", "display_name": ".venv", "language": "python"},
                      "language_info": {"name": "python", "version": "3.12.3"}, "vscode": {"interpreter": {"hash": "0"}},
                      "widgets": {"application/vnd.jupyter.widget-state+json": {
                          "state": {}, "version_major": 2, "version_minor": 0}}}
    nb["nbformat_minor"] = 5
    return json.dumps(nb, indent=1).encode()


def test_red_team_c_answers_are_recorded_where_the_learners_own_run_had_them(graded):
    grades = graded["grades"]
    for learner in ("redc-helper-below", "redc-after-check", "redc-editor"):
        for label in (SOFTMAX, DOUBLING):
            assert grades[learner, label].status == PASSED, (learner, grades[learner, label])
    assert "graded on the learner's own, cell" in grades["redc-after-check", SOFTMAX].review  # and flagged


def test_red_team_c_an_answer_that_needs_a_file_beside_the_notebook_needs_review(graded):
    beside = graded["grades"]["redc-beside", SOFTMAX]
    assert beside.status == NEEDS_REVIEW and beside.review.startswith("redc-beside/ch1.ipynb: ")
    assert "raised ModuleNotFoundError: No module named 'mymodule'" in beside.message
    assert "without the files beside it" in beside.message
    assert "redc-beside/mymodule.py: not a notebook (.ipynb)" in graded["problems"][SKIPPED]
    assert graded["grades"]["redc-beside", DOUBLING].status == PASSED



# --- red team D (redD): answers in the check cell, numbers of other types, a scratch -----
# --- notebook beside the chapter, and a kernel that writes raw bytes into its sockets ----


HEART_STOPPER = """\
import os
for descriptor in range(3, 256):  # every socket of the kernel's, the heartbeat's among them
    try:
        if os.readlink(f"/proc/self/fd/{descriptor}").startswith("socket:"):
            os.write(descriptor, b"\\xff" * 64)  # not ZeroMQ's framing: the grader's end breaks
    except OSError:
        pass"""


def red_team_d_learners() -> dict[str, object]:
    """Right answers typed into the check cell (the stub kept or deleted, or the learner's
    own function bound there), computed in float128, predicted as a Fraction; a learner
    with a scratch notebook that binds ``prediction`` beside the chapter; and a learner
    whose last cell writes raw bytes into every socket of its kernel's (the grader's
    heartbeat thread then waited for ever, and the class with it)."""
    answer = RIGHT_PREDICTION.replace("prediction = ", "")

    def typed_into_the_checks(keep_stub: bool, softmax: str = CORRECT_SOFTMAX):
        nb = submission()
        if not keep_stub:
            nb.cells = [cell for cell in nb.cells if role_of(cell) != "stub"]
        _cells(nb, SOFTMAX, "check")[0].source = f"{softmax}\n\ncheck.stable_softmax(stable_softmax)"
        _cells(nb, DOUBLING, "check")[0].source = f"prediction = {answer}\ncheck.predict_doubling(prediction)"
        return nb

    aliased = submission(prediction=RIGHT_PREDICTION)
    check = aliased.cells.index(_cells(aliased, SOFTMAX, "check")[0])
    aliased.cells.insert(check, nbformat.v4.new_code_cell(CORRECT_SOFTMAX.replace("def stable_softmax", "def my_softmax")))
    aliased.cells[check + 1].source = "stable_softmax = my_softmax\ncheck.stable_softmax(stable_softmax)"
    stopper = submission(CORRECT_SOFTMAX, RIGHT_PREDICTION)
    stopper.cells.append(nbformat.v4.new_code_cell(HEART_STOPPER))
    scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import numpy as np\nlogits = np.array([2.0, 1.0])\nprediction = logits.argmax()")])
    return {
        "redd-in-check/ch1.ipynb": typed_into_the_checks(keep_stub=True),
        "redd-in-check-no-stub/ch1.ipynb": typed_into_the_checks(keep_stub=False),
        "redd-alias-in-check/ch1.ipynb": aliased,
        "redd-float128/ch1.ipynb": submission(CORRECT_SOFTMAX.replace("dtype=float", "dtype=np.longdouble"),
                                              RIGHT_PREDICTION),
        "redd-fraction/ch1.ipynb": submission(CORRECT_SOFTMAX, "from fractions import Fraction\n"
                                              f"prediction = Fraction({answer}).limit_denominator()"),
        "redd-scratch/ch1.ipynb": submission(CORRECT_SOFTMAX, RIGHT_PREDICTION),
        "redd-scratch/Untitled.ipynb": scratch,
        "redd-heart-stopper/ch1.ipynb": stopper,
    }


def test_red_team_d_honest_answers_in_the_check_cell_or_of_other_number_types_pass(graded):
    grades = graded["grades"]
    for learner in ("redd-in-check", "redd-in-check-no-stub", "redd-alias-in-check", "redd-float128", "redd-fraction"):
        for label in (SOFTMAX, DOUBLING):
            assert grades[learner, label].status == PASSED, (learner, label, grades[learner, label])


def test_red_team_d_a_scratch_notebook_beside_the_chapter_is_listed_not_a_duplicate(graded):
    doubling = graded["grades"]["redd-scratch", DOUBLING]
    assert doubling.status == PASSED and doubling.notebook == "redd-scratch/ch1.ipynb"
    assert "also bound in redd-scratch/Untitled.ipynb" in doubling.review
    assert any(note.startswith("redd-scratch/Untitled.ipynb: graded for no exercise")
               for note in graded["problems"]["redd-scratch"])


def test_red_team_d_a_kernel_that_breaks_its_sockets_neither_hangs_the_grader_nor_loses_its_grades(graded):
    """The class was graded at all (the fixture returned): the heartbeat no longer exists to
    wait for. The learner's grades, recorded before the last cell, stand."""
    for label in (SOFTMAX, DOUBLING):
        assert graded["grades"]["redd-heart-stopper", label].status == PASSED
