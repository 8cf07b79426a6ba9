"""The command line, ``python -m attncourse.instructor {list,student,import,grade,export,autograder,autograde}``:
it parses the arguments, calls the library (``grading.grade_into``, ``gradebook.export``,
``gradescope``, ``course.student``, ``lms.importing``) and prints what it did."""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from datetime import datetime
from pathlib import Path

from attncourse import checks
from attncourse.instructor.course.tags import (
    TAG_CONVENTION,
    exercise_labels,
    exercise_title,
    read_chapters,
)
from attncourse.instructor.gradebook import late
from attncourse.instructor.gradebook.export import (
    CANVAS_IDENTITY,
    FORMATS,
    GRADESCOPE_VISIBILITY,
    MISSING,
    export,
)
from attncourse.instructor.gradebook.ledger import Ledger, regraded, stale_rows
from attncourse.instructor.gradebook.points import in_words, points_of, scored
from attncourse.instructor.gradebook.report import OVERRIDDEN_SUMMARY, shown_controls
from attncourse.instructor.gradescope import GradingFailed, autograde, build_zip, self_test
from attncourse.instructor.lms.archive import DEFAULT_MAX_BYTES
from attncourse.instructor.lms.importing import KINDS, import_export
from attncourse.instructor.model import ERROR
from attncourse.instructor.run.sandbox import (
    DEFAULT_LIMITS,
    UNSAFE_MEANS,
    Limits,
    MiB,
    SandboxUnavailable,
)
from attncourse.instructor.submissions import SAVED_OUTPUTS_FACTOR, SUBMITTED_TIMES

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
     one file per learner (submissions/ada.ipynb): import turns Canvas's "Download
     Submissions" zip or Gradescope's "Export Submissions" zip into that folder,
       python -m attncourse.instructor import canvas submissions.zip --out submissions \\
           --roster canvas_export.csv
     and grade them:
       python -m attncourse.instructor grade submissions --out report --assign ...
     Each notebook runs in a fresh kernel inside a bubblewrap sandbox, in parallel,
     with limits on its time, memory, processes, files and output; the course's own
     check cells and hidden tests run after each exercise. report/grades.csv and
     report/summary.md give, per learner and exercise: passed, failed (with the
     check's message), not attempted, notebook crashed, or error, and flag for review
     what looks like tampering with the checks.
     report/executed/ keeps the executed notebooks.
  4. Export the points: feedback files for the learners, a gradebook for Canvas,
     Gradescope's results.json, or plain CSV/JSON:
       python -m attncourse.instructor export feedback --report report --out feedback
       python -m attncourse.instructor export canvas --report report --out canvas.csv \\
           --roster canvas_export.csv --assignment "Attention homework (12345)"
     Or let Gradescope grade each submission in a container of its own (large classes):
       python -m attncourse.instructor autograder --out autograder.zip --assign ...
"""


def say(message: str, error: bool = False) -> None:
    """Print ``message`` on the instructor's terminal (standard error if ``error``), its
    control characters written out (``report.shown_controls``): a learner's file or folder
    name may hold a terminal's escape sequences, which printed raw would retitle, clear or
    recolour the terminal."""
    print(shown_controls(message), file=sys.stderr if error else sys.stdout)


def _parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="python -m attncourse.instructor", description=_DESCRIPTION,
        epilog=TAG_CONVENTION, formatter_class=formatter,
    )
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="{list,student,import,grade,export,autograder,autograde}")
    chapters = argparse.ArgumentParser(add_help=False)
    chapters.add_argument("--chapters", type=Path, default=Path("chapters"),
                          help="folder of the solved chapter notebooks (default: chapters)")
    assign = argparse.ArgumentParser(add_help=False)
    assign.add_argument("--assign", action="append", metavar="LABEL[,LABEL...]",
                        help="only these exercises (comma-separated or repeated); default: all")

    commands.add_parser("list", parents=[chapters], formatter_class=formatter,
                        help="list the exercises of the chapters, by label, with their points",
                        description="List every exercise of the chapters: its label, points and title. "
                                    "An implement exercise earns the fraction of its inputs it gets right; "
                                    "any other, all its points when passed (completed, for a prediction).")
    student = commands.add_parser(
        "student", parents=[chapters, assign], formatter_class=formatter,
        help="make the student version of the chapters",
        description="Write the student version: solutions and hidden tests removed, stubs and "
                    "checks kept, outputs and widget state cleared. With --assign, only the "
                    "chapters holding an assigned exercise, and only those exercises. Made from "
                    "the reader edition `make book` writes (_build/reader/chapters beside "
                    "--chapters), so it shows no MyST: run `make book` first.",
        epilog=TAG_CONVENTION,
    )
    student.add_argument("--out", type=Path, required=True, help="a new or empty folder to write into")
    _import_parser(commands, formatter)
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
                    "the notebook is stopped and its output cut), and notebooks whose cells hold up to "
                    f"{DEFAULT_LIMITS.output // MiB} MiB are read (a file of up to "
                    f"{SAVED_OUTPUTS_FACTOR * DEFAULT_LIMITS.output // MiB} MiB with its saved outputs).",
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
                       help="notebooks run at once, and solved chapters, for their hidden tests' inputs (default: "
                            f"the number of processors, {os.cpu_count()})")
    grade.add_argument("--learners", metavar="NAME[,NAME...]", action="append", type=_names, default=None,
                       help="grade only these learners (comma-separated or repeated; a name with a comma "
                            "in double quotes: '\"smith, jo\",bob'); the other learners' rows already in "
                            "--out are kept")
    grade.add_argument("--due", type=_moment, metavar="WHEN",
                       help="the due date, ISO 8601 with its offset (2026-12-01T23:59+01:00): late work is "
                            "flagged in the report, from the submission times `import` recorded (else the "
                            "notebooks' modification times)")
    grade.add_argument("--no-due", action="store_true",
                       help="mark no work late (without --due or --no-due, the late policy of the last "
                            "grading into --out is kept)")
    grade.add_argument("--late-penalty", type=_percent, default=0.0, metavar="PERCENT",
                       help="with --due: the percentage of each exercise's points taken per day late, a part "
                            "of a day counting as one (default: 0, late work flagged, never penalised)")
    grade.add_argument("--late-cap", type=_percent, default=1.0, metavar="PERCENT",
                       help="with --late-penalty: the most it takes (default: 100)")
    grade.add_argument("--score-predictions", action="store_true",
                       help="grade predict exercises passed/failed (default: completed once a number "
                            "is given, since their answer can be computed by design)")
    grade.add_argument("--unsafe-no-sandbox", action="store_true",
                       help="run the notebooks even where no sandbox can start. " + UNSAFE_MEANS)
    grade.add_argument("--container", action="store_true",
                       help="this machine is a throwaway container, one per submission (Gradescope's, a CI "
                            "job's): it is the sandbox. No bubblewrap; grade runs as root and each kernel as "
                            "an unprivileged uid of its own (65533), with the limits on memory and processes")
    _export_parser(commands, chapters, formatter)
    return parser


def _import_parser(commands, formatter) -> None:
    imported = commands.add_parser(
        "import", formatter_class=formatter,
        help="turn a Canvas or Gradescope submissions zip into the folder grade reads",
        description="Write ZIP, Canvas's \"Download Submissions\" zip or Gradescope's \"Export Submissions\" zip, "
                    "as the folder grade reads: OUT/LEARNER/*.ipynb, with OUT/submitted.csv (learner, submitted_at, "
                    "late_in_lms, source), which grade passes over. Canvas names each file after the student's user "
                    "id, which --roster (the gradebook CSV exported from Canvas) turns into the --match column; "
                    "its file names carry no time: give --times (the Submissions API's JSON, or its user_id,submitted_at) "
                    "or submitted_at stays empty, and late_in_lms is Canvas's LATE mark. Gradescope's export names "
                    "each submission's submitters and time in its submission_metadata.yml; each member of a group "
                    "gets the group's notebooks. Only notebooks are imported; every other entry is listed with why. "
                    "OUT must be new, empty, or an earlier import of the same kind, left as it was written.",
    )
    imported.add_argument("kind", choices=KINDS, help="whose export ZIP is")
    imported.add_argument("zip", type=Path, metavar="ZIP", help="the zip downloaded from the platform")
    imported.add_argument("--out", type=Path, required=True, help="the submissions folder to write")
    imported.add_argument("--roster", type=Path, help="canvas: the gradebook CSV exported from Canvas (as export canvas)")
    imported.add_argument("--match", default=None,
                          help="canvas: the roster column that names a learner (default: SIS Login ID); gradescope: "
                               "email (the part before the @, the default), address (the whole e-mail) or sid")
    imported.add_argument("--times", type=Path, action="append",
                          help="canvas: when each student submitted, from Canvas's Submissions API: the JSON page a "
                               "browser signed in to Canvas shows at https://CANVAS/api/v1/courses/COURSE/assignments/"
                               "ASSIGNMENT/submissions?per_page=100, saved (one --times per page past 100 students), "
                               "or a CSV of its user_id and submitted_at")
    imported.add_argument("--keep-latest", action="store_true",
                          help="when two submissions name one learner, keep the later (refused without it)")
    imported.add_argument("--skip-unmatched", action="store_true",
                          help="import the others when a submission names no learner, and list it (refused without it)")
    imported.add_argument("--max-size", type=_positive(int), default=DEFAULT_MAX_BYTES // MiB, metavar="MIB",
                          help=f"refuse a zip that unpacks to more (default: {DEFAULT_MAX_BYTES // MiB})")


def _export_parser(commands, chapters, formatter) -> None:
    listed = "\n".join(f"  {name:11} {what}" for name, what in FORMATS.items())
    export = commands.add_parser(
        "export", parents=[chapters], formatter_class=formatter,
        help="write the points of a graded class: feedback, Canvas, Gradescope, CSV, JSON",
        description="Write what `grade --out REPORT` graded, with each exercise's points, as FORMAT:\n"
                    + listed + "\n  (and Gradescope's autograder zip, which grades each submission in a "
                    "container of its own: the `autograder` command)\n\nImplement exercises earn the "
                    "fraction of their inputs right; rows that need review earn nothing until regraded or "
                    "overridden (--overrides).",
    )
    export.add_argument("format", choices=list(FORMATS), metavar="FORMAT", help=", ".join(FORMATS))
    export.add_argument("--report", type=Path, default=Path("report"), help="the folder grade wrote (default: report)")
    export.add_argument("--out", type=Path, required=True, help="the file or folder to write (see FORMAT)")
    export.add_argument("--overrides", type=Path, default=None,
                        help="a CSV of your decisions after review: learner,exercise,points,note (any capitals); "
                             "a learner or exercise the report has no row of stops the export. The report's "
                             f"summary with them is written as REPORT/{OVERRIDDEN_SUMMARY}")
    export.add_argument("--as-graded", action="store_true",
                        help="export without overrides a report that was exported with them before "
                             "(without this, such an export stops: one forgotten --overrides would disagree)")
    export.add_argument("--allow-extra-credit", action="store_true",
                        help="let an override give more points than the exercise is worth")
    export.add_argument("--roster", type=Path, help="canvas: the gradebook CSV exported from Canvas")
    export.add_argument("--assignment",
                        help="canvas: the assignment's column title in the roster, 'NAME (ID)', exactly (a title "
                             "without an id makes a new assignment); feedback: the assignment's name shown")
    export.add_argument("--match", default="SIS Login ID", choices=CANVAS_IDENTITY,
                        help="canvas: the roster column that holds the learners' names as grade saw them "
                             "(default: SIS Login ID); matching no learner is an error")
    export.add_argument("--missing", choices=MISSING, default="empty",
                        help="canvas: what a student of the roster with no submission gets: an empty cell, which "
                             "Canvas's import leaves as it was (default), or 0")
    export.add_argument("--force", action="store_true",
                        help="canvas: write an assignment column the roster does not have, or whose points "
                             "possible differ from the exercises' (never a read-only column)")
    export.add_argument("--learner", help="gradescope: only this learner, and --out is its results.json")
    export.add_argument("--visibility", choices=GRADESCOPE_VISIBILITY, default="visible",
                        help="gradescope: when learners see each exercise's result (default: visible)")
    zipped = commands.add_parser(
        "autograder", parents=[chapters], formatter_class=formatter,
        help="make the Gradescope autograder zip (one container per submission: large classes)",
        description="Write the zip to upload as a Gradescope programming assignment's autograder "
                    "(Ubuntu 22.04 base image): setup.sh, run_autograder, the package and the solved "
                    "chapters of the assigned exercises. Each submission is graded as `grade` would, in a "
                    "container of its own, the learner's code as an unprivileged user.",
    )
    zipped.add_argument("--out", type=Path, required=True, help="the zip to write")
    zipped.add_argument("--assign", action="append", metavar="LABEL[,LABEL...]",
                        help="only these exercises (comma-separated or repeated); default: all")
    zipped.add_argument("--time-limit", type=_positive(float), default=120.0, metavar="SECONDS",
                        help="processor time of each submitted notebook, as grade --time-limit (default: 120); "
                             "keep Gradescope's own timeout for the assignment above the notebooks' sum")
    zipped.add_argument("--score-predictions", action="store_true",
                        help="grade predict exercises passed/failed, as grade --score-predictions (default: "
                             "completed once a number is given)")
    zipped.add_argument("--visibility", choices=GRADESCOPE_VISIBILITY, default="visible",
                        help="when learners see their results on Gradescope: visible (default), hidden, "
                             "after_due_date or after_published; the total waits with the tests")
    one = commands.add_parser(
        "autograde", parents=[chapters], formatter_class=formatter,
        help="grade one submission into Gradescope's results.json (what run_autograder runs; any job queue)",
        description="Grade one submission, a folder of notebooks, and write RESULTS in Gradescope's "
                    "format: the per-submission command for Gradescope's run_autograder, a job queue or "
                    "a CI matrix (one job per submission).",
    )
    one.add_argument("submission", type=Path, nargs="?", help="the folder of one learner's notebooks")
    one.add_argument("--results", type=Path, help="the results.json to write (with SUBMISSION)")
    one.add_argument("--self-test", action="store_true",
                     help="grade the solved chapters instead, and fail unless they earn every point "
                          "(setup.sh runs it: an image that cannot grade fails when it is built)")
    one.add_argument("--config", type=Path, help="the autograder.json of the zip (exercises and options)")
    one.add_argument("--assign", action="append", metavar="LABEL[,LABEL...]")
    one.add_argument("--container", action="store_true", help="as grade --container")


def _names(text: str) -> list[str]:
    """Learners' names, comma-separated as one CSV row: a name holding a comma is quoted."""
    try:
        row = next(csv.reader([text], skipinitialspace=True, strict=True), [])
    except csv.Error as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of names ({error})") from None
    return [name.strip() for name in row if name.strip()]


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time (2026-12-01T23:59+01:00)") from None
    if moment.utcoffset() is None:  # a time without its offset is a different moment in each zone
        raise argparse.ArgumentTypeError(f"{text!r} has no offset from UTC: add yours (+01:00) or +00:00")
    return moment


def _percent(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"a percentage from 0 to 100, got {text}")
    return value / 100


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


def _grade(args, assign: list[str] | None) -> None:
    from attncourse.instructor.grading import (
        grade_into,  # it runs kernels: its machinery loads only to grade
    )
    from attncourse.instructor.progress import ProgressBar

    if (args.late_penalty or args.late_cap != 1.0) and args.due is None:
        raise ValueError("--late-penalty and --late-cap need --due, the due date")
    if args.no_due and args.due:
        raise ValueError("--due and --no-due: give one")
    policy = late.Policy(args.due, args.late_penalty, args.late_cap) if args.due else None
    if policy is None and not args.no_due and args.out.is_dir():
        policy = late.kept_policy(args.out)  # a regrade of a few keeps the class's policy
        if policy is not None:
            say(f"late work: the last grading's policy is kept (due {policy.due.isoformat()}, "
                  f"{policy.per_day:.0%} a day, at most {policy.cap:.0%}); --no-due drops it", error=True)
    before = Ledger(args.out, "").everything([])[0] if args.out.is_dir() else []
    with ProgressBar() as bar:
        grades, table, text = grade_into(
            args.out, args.submissions, args.chapters, assign, time_limit=args.time_limit,
            check_timeout=args.check_timeout, jobs=args.jobs, limits=Limits(memory=args.memory_limit * MiB),
            learners=[name for names in args.learners for name in names] if args.learners else None,
            score_predictions=args.score_predictions, unsafe_no_sandbox=args.unsafe_no_sandbox,
            contained=args.container, progress=bar, late_policy=policy)
    say(text.read_text(encoding="utf-8"))
    for line in regraded(scored(before), scored(grades)):  # the points as the report shows them
        say(f"regraded: {line}")
    for warning in stale_rows(grades):
        say(f"warning: {warning}", error=True)
    if late.timed_by_hand(grades):
        say(f"warning: {', '.join(map(repr, late.timed_by_hand(grades)))}: a notebook put in place since the import, "
              "timed by its file (a copy sets it to the moment of copying; touch -d sets the time it was sent)",
              error=True)
    if late.unpenalised(grades):
        say(f"warning: {', '.join(map(repr, late.unpenalised(grades)))}: marked late by the learning platform "
              f"with no submission time, so no late penalty is applied (import with --times)", error=True)
    no_grade = list(dict.fromkeys(row.learner for row in grades if row.status == ERROR))
    if no_grade:
        say(f"warning: {', '.join(map(repr, no_grade))}: row(s) that are no grade ({ERROR}: a failure of the "
              "grader's own, which grading them again tries again, or two notebooks that disagree: keep one first); "
              "grade them again (--learners) or decide them in the overrides: no export writes this report until then",
              error=True)
    say(f"wrote {table} and {text}")


def _list(chapters: Path) -> None:
    for path, nb in read_chapters(chapters).items():
        say(path.name)
        for label in exercise_labels(nb):
            worth = f"{points_of(label):g} pt" + ("s" if points_of(label) != 1 else "")
            say(f"  {label:36} {worth:>6}  {exercise_title(nb, label)}")


def _export(args) -> None:
    written, problems = export(args.format, args.report, args.out, args.chapters, overrides=args.overrides,
                               roster=args.roster, assignment=args.assignment, match=args.match,
                               learner=args.learner, visibility=args.visibility, missing=args.missing,
                               force=args.force, allow_extra_credit=args.allow_extra_credit,
                               as_graded=args.as_graded)
    for problem in problems:
        say(f"warning: {problem}", error=True)
    if args.overrides:
        say(f"wrote {args.report / OVERRIDDEN_SUMMARY}: the report's summary with the overrides")
    say(f"wrote {len(written)} file(s): {', '.join(map(str, written[:4]))}{' ...' if len(written) > 4 else ''}")


def _import(args) -> None:
    done = import_export(args.kind, args.zip, args.out, roster=args.roster, match=args.match, times=args.times,
                         keep_latest=args.keep_latest, skip_unmatched=args.skip_unmatched,
                         max_bytes=args.max_size * MiB)
    for line in [*(f"not imported: {why}" for why in done.skipped), *done.notes]:
        say(f"warning: {line}", error=True)
    notebooks = sum(len(names) for names in done.learners.values())
    say(f"wrote {args.out}: {len(done.learners)} learner(s), {notebooks} notebook(s), and "
          f"{args.out / SUBMITTED_TIMES}")


def _autograder(args, assign: list[str] | None) -> None:
    options = {"time_limit": args.time_limit, "score_predictions": args.score_predictions,
               "visibility": args.visibility}
    out = build_zip(args.chapters, args.out, assign, options, args.chapters.resolve().parent)
    say(f"wrote {out}: upload it as the autograder of a Gradescope programming assignment")


def _autograde(args, assign: list[str] | None) -> None:
    if args.self_test == bool(args.submission or args.results):
        raise ValueError("autograde takes SUBMISSION and --results, or --self-test alone")
    if args.submission and not args.results:
        raise ValueError("autograde SUBMISSION needs --results, the results.json to write")
    options = json.loads(args.config.read_text(encoding="utf-8")) if args.config else {}
    if assign:
        options["assign"] = assign
    if args.self_test:
        say(f"self-test passed: {self_test(args.chapters, options, args.container)}")
        return
    data = autograde(args.submission, args.results, args.chapters, options, args.container)
    say(f"wrote {args.results}: {in_words(data['score'])}")


def _student(args, assign: list[str] | None) -> int:
    # Imported here: nbformat's validator takes seconds to import, and only this command reads notebooks.
    import nbformat

    from attncourse.instructor.course.student import SolutionLeak, write_student_version

    try:
        written = write_student_version(args.chapters, args.out, assign)
    except SolutionLeak as leak:
        say(f"error: {leak}", error=True)
        return 1
    for path in written:
        labels = exercise_labels(nbformat.read(path, as_version=4))
        say(f"wrote {path}  ({', '.join(labels) or 'no exercises'})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status (2 for a usage error, 1 for a leak, 3 for
    an autograder that could not grade)."""
    args = _parser().parse_args(argv)
    assign = None
    if getattr(args, "assign", None):
        assign = [label.strip() for item in args.assign for label in item.split(",") if label.strip()]
    try:
        if args.command == "list":
            _list(args.chapters)
        elif args.command == "student":
            return _student(args, assign)
        elif args.command == "import":
            _import(args)
        elif args.command == "grade":
            _grade(args, assign)
        elif args.command == "export":
            _export(args)
        elif args.command == "autograder":
            _autograder(args, assign)
        else:
            _autograde(args, assign)
    except GradingFailed as failure:
        say(f"error: the autograder itself failed, so this submission has no grade (nothing was written): "
              f"{failure}", error=True)
        return 3
    except SandboxUnavailable as error:
        say(f"error: {error}\nNothing was graded. To grade anyway: --unsafe-no-sandbox.", error=True)
        return 2
    except ValueError as error:
        say(f"error: {error}", error=True)
        return 2
    return 0
