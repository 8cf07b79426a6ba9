"""The test class of the gradebook's tests (points, feedback, exports, the term's walkthrough):
four learners of chapter 1, each handing in the student version with three exercises (an
implement, a prediction, a tune) answered their way:

* ada, honest: every answer right (6 of 6 points);
* bob, partial: a softmax that overflows on 3 of its check's 7 inputs and on the hidden
  test (4 of 8 inputs right: 1.5 of 3 points), a wrong prediction (completed: 1 point), the
  tune exercise untouched (0);
* cy, wrong: a softmax that returns its input (0 of 8), no prediction, a tuned row that does
  not do it (0 points);
* dee, flagged: a softmax that calls the course's own (passes, flagged), a prediction read
  from the course's declarations (completed, flagged), the tune untouched: 4 points, 1 after
  the instructor's override (0 for the softmax);
* eve, late: only the softmax, right (3 points), graded alone once the class is graded.

The class is graded once per session by running the instructor guide's term walkthrough
(``walkthrough``): the tests read what its commands wrote.
"""

from __future__ import annotations

import atexit
import copy
import csv
import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from attncourse.checks import core
from attncourse.checks.predict import PREDICTIONS
from attncourse.instructor import make_student_notebook
from attncourse.instructor.course.tags import exercise_of, role_of
from tests.test_instructor_grading import CORRECT_SOFTMAX, NAIVE_SOFTMAX

ROOT = Path(__file__).resolve().parent.parent
CHAPTER_1 = ROOT / "chapters" / "01_dot_product_similarity.ipynb"
SOFTMAX, DOUBLING, POOL = "ch1-stable-softmax", "ch1-predict-doubling", "ch1-pool-prefers-badminton"
ASSIGNED = (SOFTMAX, DOUBLING, POOL)
core.load_chapter_of(DOUBLING)  # chapter 1's checks and predictions, declared here too
GUIDE = ROOT / "instructor_guide.md"
WALKTHROUGH = "## The whole term, step by step"

SETUP = """\
import numpy as np
from attncourse import checks as check
from attncourse.attention import softmax
from attncourse.examples import pool_beats_badminton

sentence = pool_beats_badminton()
X = sentence.X
pool, beats, badminton = (sentence.index(word) for word in sentence.tokens)"""
IDENTITY_SOFTMAX = """\
def stable_softmax(scores):
    return np.asarray(scores, dtype=float)"""
COURSE_SOFTMAX = """\
from attncourse.attention import softmax as course_softmax

def stable_softmax(scores):
    return course_softmax(np.asarray(scores, dtype=float))"""
RIGHT_TUNE = """\
X_tuned = X.copy()
X_tuned[badminton] = [0.8, 0.0, 0.0, 0.0]"""
WRONG_TUNE = """\
X_tuned = X.copy()
X_tuned[badminton] = [0.1, 0.0, 0.0, 0.0]"""
READ_PREDICTION = "from attncourse.checks.predict import PREDICTIONS\nprediction = PREDICTIONS['ch1-predict-doubling'].answer"

LEARNERS = {  # learner -> (softmax, prediction, tune): None keeps the stub as handed out
    "ada": (CORRECT_SOFTMAX, f"prediction = {PREDICTIONS[DOUBLING].answer!r}", RIGHT_TUNE),
    "bob": (NAIVE_SOFTMAX, "prediction = 0.01", None),
    "cy": (IDENTITY_SOFTMAX, None, WRONG_TUNE),
    "dee": (COURSE_SOFTMAX, READ_PREDICTION, None),
}
LATE = {"eve": (CORRECT_SOFTMAX, None, None)}
EXPECTED_POINTS = {  # learner -> exercise -> points, as graded (before the overrides)
    "ada": {SOFTMAX: 3.0, DOUBLING: 1.0, POOL: 2.0},
    "bob": {SOFTMAX: 1.5, DOUBLING: 1.0, POOL: 0.0},
    "cy": {SOFTMAX: 0.0, DOUBLING: 0.0, POOL: 0.0},
    "dee": {SOFTMAX: 3.0, DOUBLING: 1.0, POOL: 0.0},
    "eve": {SOFTMAX: 3.0, DOUBLING: 0.0, POOL: 0.0},
}
OVERRIDDEN = {("dee", SOFTMAX): 0.0}  # the guide's overrides.csv
EXPECTED_STATUS = {
    "ada": {SOFTMAX: "passed", DOUBLING: "completed", POOL: "passed"},
    "bob": {SOFTMAX: "failed", DOUBLING: "completed", POOL: "not attempted"},
    "cy": {SOFTMAX: "failed", DOUBLING: "not attempted", POOL: "failed"},
    "dee": {SOFTMAX: "passed", DOUBLING: "completed", POOL: "not attempted"},
    "eve": {SOFTMAX: "passed", DOUBLING: "not attempted", POOL: "not attempted"},
}


def exported_points(learner: str, label: str) -> float:
    """The points the exports give: as graded, or as the instructor overrode them."""
    return OVERRIDDEN.get((learner, label), EXPECTED_POINTS[learner][label])
ROSTER = [  # Canvas's gradebook export: its "Points Possible" row, the five students and one without a submission
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention homework (4321)"],
    ["    Points Possible", "", "", "", "", "6.00"],
    ["Lovelace, Ada", "101", "S101", "ada", "Section A", ""],
    ["Babbage, Bob", "102", "S102", "bob", "Section A", ""],
    ["Young, Cy", "103", "S103", "cy", "Section B", ""],
    ["Dee, Dee", "104", "S104", "dee", "Section B", ""],
    ["Late, Eve", "105", "S105", "eve", "Section B", ""],
    ["Absent, Fay", "106", "S106", "fay", "Section B", ""],
]


def student_notebook(softmax=None, prediction=None, tune=None, before: str = ""):
    """A learner's notebook: the set-up, then the stub (filled in) and the check of each
    assigned exercise, as the student version hands them out."""
    student = make_student_notebook(nbformat.read(CHAPTER_1, as_version=4), list(ASSIGNED))
    cells = [nbformat.v4.new_code_cell(SETUP)]
    if before:
        cells.append(nbformat.v4.new_code_cell(before))
    for label, answer in ((SOFTMAX, softmax), (DOUBLING, prediction), (POOL, tune)):
        for role in ("stub", "check"):
            cell = copy.deepcopy(next(c for c in student.cells if exercise_of(c) == label and role_of(c) == role))
            if role == "stub" and answer is not None:
                cell.source = answer
            cells.append(cell)
    student.cells = cells
    return student


def write_class(folder: Path) -> None:
    """The submissions (one folder per learner), the late one (``late/eve``) and Canvas's
    roster, in ``folder``."""
    for place, learners in (("submissions", LEARNERS), ("late", LATE)):
        for learner, answers in learners.items():
            (folder / place / learner).mkdir(parents=True)
            nbformat.write(student_notebook(*answers), folder / place / learner / CHAPTER_1.name)
    with open(folder / "canvas_export.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows(ROSTER)


def guide_commands() -> list[str]:
    """The shell commands of the guide's walkthrough, in order (one per fenced bash block line,
    continuation lines joined; heredocs kept whole)."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index(WALKTHROUGH):]
    following = re.search(r"\n## ", section[len(WALKTHROUGH):])
    section = section[: len(WALKTHROUGH) + following.start()] if following else section
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        lines = iter(block.replace("\\\n", " ").splitlines())
        for line in lines:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            heredoc = re.search(r"<<'?(\w+)'?", line)
            if heredoc:
                body = []
                for more in lines:
                    body.append(more)
                    if more.strip() == heredoc[1]:
                        break
                line = "\n".join([line, *body])
            commands.append(line)
    return commands


@functools.cache
def walkthrough() -> tuple[Path, list[tuple[str, subprocess.CompletedProcess]]]:
    """Run the guide's walkthrough on the test class, once per session, in a folder of its
    own holding the class, Canvas's roster and a link to the course's chapters: (the folder,
    each command with what it did). The tests read what it wrote."""
    folder = Path(tempfile.mkdtemp(prefix="term-"))
    atexit.register(shutil.rmtree, folder, True)  # once the session's tests have read it
    write_class(folder)
    (folder / "chapters").symlink_to(ROOT / "chapters")
    python = shlex.quote(sys.executable)
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    environment.pop("ATTNCOURSE_CHECK_MODE", None)
    ran = []
    for command in guide_commands():
        runnable = command.replace(".venv/bin/python", python)
        done = subprocess.run(["bash", "-c", runnable], cwd=folder, env=environment, capture_output=True,
                              text=True, timeout=1200)
        ran.append((command, done))
        if done.returncode != 0:
            break
    return folder, ran
