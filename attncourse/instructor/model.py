"""The records every stage of grading passes on: the statuses, the course (``Course``,
``Exercise``), a learner's notebook as grade ran it (``Placed``, ``Execution``,
``NotebookRun``), the verdict on one learner's exercise (``Grade``) and how far a grading
has come (``Progress``).

Nothing here runs or judges anything: every other module of the grader imports its
records from here, and this module imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The status of a row of the report. The checks have their own (passed, failed, not
# implemented, needs review): the judge maps them onto these.
PASSED, FAILED, COMPLETED = "passed", "failed", "completed"
NOT_ATTEMPTED, NEEDS_REVIEW = "not attempted", "needs review"
CRASHED, ERROR = "notebook crashed", "error"
STATUSES = (PASSED, FAILED, COMPLETED, NOT_ATTEMPTED, NEEDS_REVIEW, CRASHED, ERROR)
EARNS_ALL = (PASSED, COMPLETED)  # the statuses that earn every point of an exercise
UNGRADED = (CRASHED, ERROR)  # a notebook that did not run through, or a failure of the grader's own
UNDECIDED = (NEEDS_REVIEW, CRASHED, ERROR)  # earn nothing until the instructor regrades or decides: flagged
# How an error row whose cause is the learner's begins: notebooks of theirs that disagree on
# an exercise (not the grader's failure: on Gradescope the learner reads it and resubmits).
DUPLICATES = "duplicate submissions hold this exercise"
SKIPPED = ""  # the key of a grading's problems that lists the files of the submissions not graded
RAISED = "error"  # Jupyter's output type of a cell that raised (nbformat's word, not a status)


@dataclass(frozen=True)
class Exercise:
    """What grading needs of an exercise: its check's arguments and the names it reads."""

    label: str
    expressions: tuple[str, ...]  # the check's arguments, as the course's check cell writes them
    names: tuple[str, ...]  # every notebook name the answer is made of
    aliases: tuple[tuple[str, str], ...] = ()  # a name the hidden tests read -> the learner's stand-in


@dataclass(frozen=True)
class Course:
    """What grading takes from the solved chapters."""

    order: list[str]  # every exercise label, in the chapters' order
    exercises: dict[str, Exercise]  # label -> its check's arguments and names (those with a check)
    hidden: dict[str, list[str]]  # label -> the sources of its hidden-test cells
    inputs: dict[str, dict]  # label -> its hidden tests' modules, names and inputs (discovery)
    sources: frozenset[str] = frozenset()  # every code cell of the chapters: the course's, not the learner's
    chapters: dict[str, frozenset[str]] = field(default_factory=dict)  # "ch1" -> its chapter's code cells


@dataclass(frozen=True)
class Placed:
    """A recording cell the grader wrote after a learner's answer, and what it records."""

    index: int  # the cell's index in the notebook grade runs
    label: str
    note: str  # why an instructor should look at this exercise ("" if no reason)


@dataclass
class Execution:
    """How a notebook's run went."""

    executed: Any  # the notebook, with its outputs
    problem: str = ""  # why the run stopped early ("" if it ran to the end)
    stopped_in: int | None = None  # the cell running when it stopped
    errors: list[str] = field(default_factory=list)  # cells that raised
    timed_out: bool = False  # stopped at the time limit
    cpu_seconds: float = 0.0  # of processor time its processes had used when it ended or was stopped


@dataclass
class NotebookRun:
    """One submitted notebook as grade ran it, and each of its exercises judged."""

    notebook: str  # the submitted file, relative to the submissions folder
    submitted: Any = None  # the notebook as submitted (None: unreadable)
    execution: Execution | None = None
    placed: list[Placed] = field(default_factory=list)
    problem: str = ""  # why the run stopped early, or never started ("" if it ran to the end)
    grader_failed: bool = False  # a bug of grade's own, not the learner's doing
    verdicts: dict[str, Grade] = field(default_factory=dict)  # label -> its verdict (``judge``)

    @property
    def executed(self):
        return self.execution.executed if self.execution else None

    @property
    def stopped_in(self) -> int | None:
        return self.execution.stopped_in if self.execution else None


@dataclass(frozen=True)
class Grade:
    """The verdict on ``learner``'s ``exercise``: one row of the report, from the judge
    (which leaves ``learner`` and ``graded_at`` to the class) through points, the ledger,
    the report, the feedback files and the exports."""

    learner: str
    exercise: str
    status: str  # one of STATUSES
    message: str  # for the instructor: the check's message, and the hidden tests'
    notebook: str  # the submitted file it came from ("" if none held the exercise)
    review: str = ""  # why an instructor should look at this row ("" if no reason)
    graded_at: str = ""  # when (UTC, ISO 8601)
    inputs_right: int = 0  # partial credit: the inputs right,
    inputs: int = 0  # of the exercise's inputs (0: not an implement exercise, or not judged)
    feedback: str = ""  # what the learner may read: the check's message, hidden tests by number only
    hint: str = ""  # the check's hint, where the exercise earned less than all its points
    points: float = 0.0  # what the row earns (``gradebook.points``),
    max_points: float = 0.0  # of what the exercise is worth
    override: str = ""  # the instructor's note, where an export replaced the points
    submitted_at: str = ""  # when the learner submitted, and where that time comes from (``gradebook.late``)
    late: str = ""  # how late, and the penalty ("" if on time, or no due date was given)
    late_penalty: float = 0.0  # the fraction of the points the lateness takes


def grader_failed(grade: Grade) -> bool:
    """Whether ``grade`` is a failure of the grader's own (an error row that is not the
    learner's notebooks disagreeing): grading the learner again tries it again."""
    return grade.status == ERROR and not grade.message.startswith(DUPLICATES)


@dataclass(frozen=True)
class Progress:
    """Where a grading is, once as its notebooks start and after each learner: enough for a
    progress bar to show learners done, failed and remaining, and the time left."""

    done: int  # learners graded so far by this grading
    total: int  # learners this grading grades (those kept from an earlier one not counted)
    failed: int  # of those done, learners with a row that is a crash or an error
    elapsed: float  # seconds since the first notebook started
    learner: str = ""  # the learner just graded ("" at the start)
    rows: tuple[Grade, ...] = ()  # and that learner's rows

    @property
    def remaining(self) -> int:
        return self.total - self.done

    @property
    def seconds_left(self) -> float | None:
        """The time the learners remaining would take at the pace so far (None before the first)."""
        return self.elapsed / self.done * self.remaining if self.done else None
