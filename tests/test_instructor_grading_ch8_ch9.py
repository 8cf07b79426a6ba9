"""Grading chapters 8 and 9, whose checks reach the learner's function through a lambda
with keywords (``rope``) and over a generator read once (``online_normaliser``): an
honest, correct learner passes with nothing to review, a wrong one fails saying why.
Real kernels in the sandbox: `make test` runs this file, `make unit` does not."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import nbformat
import pytest

from attncourse.instructor import FAILED, PASSED, grade_submissions, make_student_notebook
from attncourse.instructor.course.tags import exercise_of, role_of
from tests.ch8_ch9_learners import LEARNERS, as_stub

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grade-ch8-ch9")]  # one worker grades the class

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = {"ch8-rope": ROOT / "chapters" / "08_positions.ipynb",
            "ch9-online-softmax": ROOT / "chapters" / "09_attention_at_scale.ipynb"}
def wrong_learner(label: str) -> nbformat.NotebookNode:
    """Chapter ``label``'s student notebook cut to its stub and check, the stub wrong."""
    student = make_student_notebook(nbformat.read(CHAPTERS[label], as_version=4), [label])
    stub, check = ([c for c in student.cells if exercise_of(c) == label and role_of(c) == role][0]
                   for role in ("stub", "check"))
    stub = copy.deepcopy(stub)
    stub.source = as_stub(label, LEARNERS[label][2])
    student.cells = [nbformat.v4.new_code_cell("import numpy as np\nfrom attncourse import checks as check"),
                     stub, copy.deepcopy(check)]
    return student


@pytest.fixture(scope="module")
def grades(tmp_path_factory):
    folder = tmp_path_factory.mktemp("grading-ch8-ch9")
    submissions = folder / "submissions"
    (submissions / "wrong").mkdir(parents=True)
    for label, chapter in CHAPTERS.items():
        shutil.copy(chapter, submissions / f"solved-{label[:3]}.ipynb")  # the solution as submission
        nbformat.write(wrong_learner(label), submissions / "wrong" / f"{label[:3]}.ipynb")
    graded, _ = grade_submissions(submissions, ROOT / "chapters", assign=list(CHAPTERS), time_limit=120.0, jobs=2)
    return {(g.learner, g.exercise): g for g in graded}


@pytest.mark.parametrize("label", list(CHAPTERS))
def test_a_solved_chapter_8_or_9_passes_with_nothing_to_review(grades, label):
    grade = grades[f"solved-{label[:3]}", label]
    assert grade.status == PASSED and not grade.review, (grade.status, grade.message, grade.review)


@pytest.mark.parametrize("label", list(CHAPTERS))
def test_a_wrong_rope_or_online_normaliser_fails_saying_why(grades, label):
    grade = grades["wrong", label]
    assert grade.status == FAILED and LEARNERS[label][3] in grade.message, (grade.status, grade.message)
