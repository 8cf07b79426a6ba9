"""Instructor tools: hand out the exercises without their solutions, grade what comes back.

    python -m attncourse.instructor list
    python -m attncourse.instructor student --out handout [--assign LABEL,LABEL]
    python -m attncourse.instructor import {canvas,gradescope} ZIP --out submissions [--roster CSV]
    python -m attncourse.instructor grade submissions --out report [--time-limit 120] [--memory-limit 2048]
    python -m attncourse.instructor export {csv,json,canvas,gradescope,feedback} --report report --out OUT
    python -m attncourse.instructor autograder --out autograder.zip [--assign LABEL,LABEL]

``python -m attncourse.instructor --help`` explains the workflow and the tag convention
(also in the book's instructor guide, whose section "How grading works" follows one
answer from the notebook to the gradebook). The package is laid out as that answer
travels:

* ``model``: the records every stage passes on (statuses, ``Course``, ``Exercise``,
  ``Placed``, ``NotebookRun``, ``Grade``, ``Progress``);
* ``course/``: the solved chapters (``tags``: the tag convention; ``student``: the
  student version; ``solved``: what grading takes from them; ``discovery``: the hidden
  tests' inputs);
* ``submissions``: the learners and their notebooks in the submissions folder, and
  when each submitted;
* ``lms/``: a learning platform's submissions zip made into that folder (``importing``,
  ``archive``, ``canvas``, ``gradescope_export``, ``plan``);
* ``notebook/``: a learner's notebook as grade runs it (``source``: the one reader of
  cell source; ``placement``: where each answer is; ``slicing``: which of the course's
  cells must run);
* ``run/``: running it (``sandbox``, ``channels``: the kernel's, ``execution``, ``cgroups``);
* ``replay`` and ``judge``: the course's checks on what it recorded, and each exercise's
  verdict;
* ``grading``: the class (``grade_submissions``; ``grade_into``, which the command line
  and Gradescope's autograder call);
* ``gradebook/``: after grading (``points``, ``ledger``, ``report``, ``feedback``, ``canvas_csv``,
  ``export``);
* ``gradescope``: the autograder zip and the per-submission command; ``cli``: the command line.

The names below are importable from here; importing the package loads none of the
grader's kernel machinery (zmq, jupyter_client, nbclient), which ``grading`` loads.
"""

from __future__ import annotations

import importlib

# Public name -> the module that defines it, imported on first use (PEP 562).
_HOMES = {
    **dict.fromkeys(["COMPLETED", "CRASHED", "ERROR", "FAILED", "NEEDS_REVIEW", "NOT_ATTEMPTED", "PASSED",
                     "Grade", "Progress"], "model"),
    **dict.fromkeys(["grade_into", "grade_submissions"], "grading"),
    **dict.fromkeys(["summary", "write_report"], "gradebook.report"),
    **dict.fromkeys(["Limits", "SandboxUnavailable"], "run.sandbox"),
    **dict.fromkeys(["SolutionLeak", "make_student_notebook", "solution_leaks", "write_student_version"],
                    "course.student"),
    **dict.fromkeys(["convention_problems", "exercise_labels"], "course.tags"),
    "main": "cli",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
