"""The command line: ``python -m attncourse.instructor {list,student,grade}``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import nbformat

from attncourse import checks
from attncourse.instructor.grading import SKIPPED, grade_submissions
from attncourse.instructor.ledger import Ledger
from attncourse.instructor.report import write_report
from attncourse.instructor.sandbox import (
    DEFAULT_LIMITS,
    UNSAFE_MEANS,
    Limits,
    MiB,
    SandboxUnavailable,
)
from attncourse.instructor.student import SolutionLeak, write_student_version
from attncourse.instructor.tags import (
    TAG_CONVENTION,
    exercise_labels,
    exercise_title,
    read_chapters,
)

_DESCRIPTION = """\
Instructor tools for "Attention, step by step".

Workflow:
  1. See the exercises and their labels:
       python -m attncourse.instructor list
  2. Make the student version (all exercises, or --assign a subset) and hand it out:
       python -m attncourse.instructor student --out handout --assign ch1-stable-softmax,ch1-predict-doubling
     Solution and hidden-test cells are removed, stubs and checks kept, outputs and
     widget state cleared. It fails, writing nothing, if any solution text survives.
  3. Collect the notebooks, one folder per learner (submissions/ada/01_....ipynb) or
     one file per learner (submissions/ada.ipynb), and grade them:
       python -m attncourse.instructor grade submissions --out report --assign ...
     Each notebook runs in a fresh kernel inside a bubblewrap sandbox, in parallel,
     with limits on its time, memory, processes, files and output; the course's own
     check cells and hidden tests run after each exercise. report/grades.csv and
     report/summary.md give, per learner and exercise: passed, failed (with the
     check's message), not attempted, notebook crashed, or error, and flag for review
     what looks like tampering with the checks.
     report/executed/ keeps the executed notebooks.
"""


def _parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="python -m attncourse.instructor", description=_DESCRIPTION,
        epilog=TAG_CONVENTION, formatter_class=formatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{list,student,grade}")
    chapters = argparse.ArgumentParser(add_help=False)
    chapters.add_argument("--chapters", type=Path, default=Path("chapters"),
                          help="folder of the solved chapter notebooks (default: chapters)")
    assign = argparse.ArgumentParser(add_help=False)
    assign.add_argument("--assign", action="append", metavar="LABEL[,LABEL...]",
                        help="only these exercises (comma-separated or repeated); default: all")

    commands.add_parser("list", parents=[chapters], formatter_class=formatter,
                        help="list the exercises of the chapters, by label",
                        description="List every exercise of the chapters: its label and title.")
    student = commands.add_parser(
        "student", parents=[chapters, assign], formatter_class=formatter,
        help="make the student version of the chapters",
        description="Write the student version: solutions and hidden tests removed, stubs and "
                    "checks kept, outputs and widget state cleared. With --assign, only the "
                    "chapters holding an assigned exercise, and only those exercises.",
        epilog=TAG_CONVENTION,
    )
    student.add_argument("--out", type=Path, required=True, help="a new or empty folder to write into")
    grade = commands.add_parser(
        "grade", parents=[chapters, assign], formatter_class=formatter,
        help="run submitted notebooks and report per learner and exercise",
        description="Run every submitted notebook (SUBMISSIONS/LEARNER/**/*.ipynb or "
                    "SUBMISSIONS/LEARNER.ipynb) in a fresh kernel inside a bubblewrap sandbox "
                    "(a throwaway copy, no network, nothing else of yours visible), with the "
                    "check cells and hidden tests of --chapters after each exercise, and write "
                    "OUT/grades.csv, OUT/summary.md and OUT/executed/. Each learner and exercise "
                    "is passed, failed (with the check's message), not attempted, notebook "
                    "crashed, or error; a review column flags what looks like tampering. "
                    "A notebook that raises, crashes its kernel, runs past the time limit or "
                    "attacks the grader is reported, never fatal. Limits of each notebook, "
                    "besides --time-limit and --memory-limit: "
                    f"{DEFAULT_LIMITS.processes} processes and threads, "
                    f"{DEFAULT_LIMITS.disk // MiB} MiB of files (its working folder, home and "
                    f"temporary folder), {DEFAULT_LIMITS.output // MiB} MiB of output (past it, "
                    "the notebook is stopped and its output cut), and notebooks of up to "
                    f"{DEFAULT_LIMITS.output // MiB} MiB are read.",
        epilog=TAG_CONVENTION,
    )
    grade.add_argument("submissions", type=Path, help="folder of submitted notebooks")
    grade.add_argument("--out", type=Path, required=True, help="folder for the report")
    grade.add_argument("--time-limit", type=_positive(float), default=120.0, metavar="SECONDS",
                       help="processor time per notebook, kernel start included (default: 120); a notebook "
                            "kept waiting by a busy machine gets up to 3 times as long on the clock")
    grade.add_argument("--memory-limit", type=_positive(int), default=DEFAULT_LIMITS.memory // MiB, metavar="MIB",
                       help="memory of each of a notebook's processes, in MiB; past it, what it asks for "
                            "raises MemoryError and the notebook is stopped (default: "
                            f"{DEFAULT_LIMITS.memory // MiB}, address space: chapter 7, the largest, passes with it)")
    grade.add_argument("--check-timeout", type=_positive(float), default=None, metavar="SECONDS",
                       help=f"time budget of each check (default: {checks.DEFAULT_TIMEOUT:g})")
    grade.add_argument("--jobs", type=_positive(int), default=None, metavar="N",
                       help=f"notebooks run at once (default: the number of processors, {os.cpu_count()})")
    grade.add_argument("--learners", metavar="NAME[,NAME...]", default=None,
                       help="grade only these learners; the other learners' rows already in --out are kept")
    grade.add_argument("--score-predictions", action="store_true",
                       help="grade predict exercises passed/failed (default: completed once a number "
                            "is given, since their answer can be computed by design)")
    grade.add_argument("--unsafe-no-sandbox", action="store_true",
                       help="run the notebooks even where no sandbox can start. " + UNSAFE_MEANS)
    return parser


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {'whole ' if kind is int else ''}number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def _refuse_out_inside(submissions: Path, out: Path) -> None:
    inside, folder = out.resolve(), submissions.resolve()
    if inside == folder or folder in inside.parents:
        raise ValueError(f"--out {out} is inside the submissions folder {submissions}: "
                         "the report would be graded as a submission, or overwrite one")


def _grade(args, assign: list[str] | None) -> None:
    """Grade into --out: each learner's rows on disk as soon as they are known, the report
    rewritten after each, learners already graded on the same notebooks and options kept."""
    _refuse_out_inside(args.submissions, args.out)
    limits = Limits(memory=args.memory_limit * MiB)
    options = repr((sorted(assign or []), args.time_limit, args.check_timeout, limits, args.score_predictions,
                    args.unsafe_no_sandbox, str(args.chapters.resolve())))
    ledger = Ledger(args.out, options + _course_digest(args.chapters))
    keys: dict[str, str] = {}

    def finished(learner, notebooks):
        keys[learner] = ledger.key(args.submissions, notebooks)
        return ledger.finished(learner, keys[learner])

    skipped: list[str] = []

    def done(learner, rows, notes):
        ledger.save(learner, keys[learner], rows, notes)
        write_report(*ledger.everything(skipped), args.out)

    learners = [name.strip() for name in args.learners.split(",")] if args.learners else None
    _, problems = grade_submissions(
        args.submissions, args.chapters, assign, args.time_limit, args.check_timeout,
        executed_dir=args.out / "executed", jobs=args.jobs, unsafe_no_sandbox=args.unsafe_no_sandbox,
        limits=limits, score_predictions=args.score_predictions, cache=args.out / ".cache",
        learners=learners, done=done, finished=finished,
    )
    skipped += problems.get(SKIPPED, [])
    table, text = write_report(*ledger.everything(skipped), args.out)
    print(text.read_text(encoding="utf-8"))
    print(f"wrote {table} and {text}")


def _course_digest(chapters: Path) -> str:
    import hashlib

    import attncourse

    digest = hashlib.sha256()
    for path in [*sorted(Path(chapters).glob("*.ipynb")), *sorted(Path(attncourse.__file__).parent.rglob("*.py"))]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status (2 for a usage error, 1 for a leak)."""
    args = _parser().parse_args(argv)
    assign = None
    if getattr(args, "assign", None):
        assign = [label.strip() for item in args.assign for label in item.split(",") if label.strip()]
    try:
        if args.command == "list":
            for path, nb in read_chapters(args.chapters).items():
                print(path.name)
                for label in exercise_labels(nb):
                    print(f"  {label:32} {exercise_title(nb, label)}")
        elif args.command == "student":
            for path in write_student_version(args.chapters, args.out, assign):
                labels = exercise_labels(nbformat.read(path, as_version=4))
                print(f"wrote {path}  ({', '.join(labels) or 'no exercises'})")
        else:
            _grade(args, assign)
    except SolutionLeak as leak:
        print(f"error: {leak}", file=sys.stderr)
        return 1
    except SandboxUnavailable as error:
        print(f"error: {error}\nNothing was graded. To grade anyway: --unsafe-no-sandbox.", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
