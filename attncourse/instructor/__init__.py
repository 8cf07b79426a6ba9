"""Instructor tools: hand out the exercises without their solutions, grade what comes back.

    python -m attncourse.instructor list
    python -m attncourse.instructor student --out handout [--assign LABEL,LABEL]
    python -m attncourse.instructor grade submissions --out report [--time-limit 120] [--memory-limit 2048]
    python -m attncourse.instructor export {csv,json,canvas,gradescope,feedback} --report report --out OUT
    python -m attncourse.instructor autograder --out autograder.zip [--assign LABEL,LABEL]

``python -m attncourse.instructor --help`` explains the workflow and the tag convention
(also in the book's instructor guide). One module per concern: ``tags`` (the tag
convention), ``student`` (the student version), ``grading`` (the class: what runs, what
is graded), ``placement`` (where each answer is), ``execution`` and ``sandbox`` (running a
notebook), ``discovery`` (the hidden tests' inputs), ``verdict`` (the checks on recorded
data; the data's format is ``attncourse.checks.wire``), ``ledger`` (grades on disk),
``report`` (grades.csv and summary.md), ``cli`` (the command line); after grading,
``points`` (points and partial credit), ``feedback`` (a file per learner), ``export``
(Canvas, Gradescope's results.json, CSV, JSON) and ``gradescope`` (the autograder zip and
the per-submission command). The functions behind the commands are importable from here.
"""

from attncourse.instructor.cli import main
from attncourse.instructor.grading import (
    COMPLETED,
    CRASHED,
    ERROR,
    FAILED,
    NEEDS_REVIEW,
    NOT_ATTEMPTED,
    PASSED,
    Grade,
    grade_submissions,
)
from attncourse.instructor.report import summary, write_report
from attncourse.instructor.sandbox import Limits, SandboxUnavailable
from attncourse.instructor.student import (
    SolutionLeak,
    make_student_notebook,
    solution_leaks,
    write_student_version,
)
from attncourse.instructor.tags import convention_problems, exercise_labels

__all__ = [
    "COMPLETED", "CRASHED", "ERROR", "FAILED", "NEEDS_REVIEW", "NOT_ATTEMPTED", "PASSED",
    "Grade", "Limits", "SandboxUnavailable", "SolutionLeak",
    "convention_problems", "exercise_labels", "grade_submissions", "main",
    "make_student_notebook", "solution_leaks", "summary", "write_report", "write_student_version",
]
