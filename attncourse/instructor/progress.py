"""grade's progress bar: learners done, failed and remaining, and the time left, drawn by
tqdm from the ``Progress`` the grading library reports after each learner; nothing at
all when the output is not a terminal (a log, a CI job, a pipe)."""

from __future__ import annotations

import sys
from typing import TextIO

from tqdm import tqdm

from attncourse.instructor.gradebook.report import shown_controls
from attncourse.instructor.model import Progress


class ProgressBar:
    """A callable for ``grade_into(progress=...)``; close it (or use it in ``with``) when
    the grading ends."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr  # the one in place now: a default bound at import may be closed since
        self.bar: tqdm | None = None

    def __call__(self, progress: Progress) -> None:
        if self.bar is None:
            self.bar = tqdm(total=progress.total, unit="learner", file=self.stream, dynamic_ncols=True,
                            disable=not self.stream.isatty(), desc="grading")
        self.bar.update(progress.done - self.bar.n)  # tqdm estimates the time left from the pace so far
        self.bar.set_postfix_str(status(progress), refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def status(progress: Progress) -> str:
    """What the bar says beside its count: the learner just graded, how many failed (a
    notebook that crashed, an error of the grader's) and how many remain."""
    last = f"{shown_controls(progress.learner)}: done, " if progress.learner else ""  # a name is the learner's
    return f"{last}{progress.failed} failed, {progress.remaining} remaining"
