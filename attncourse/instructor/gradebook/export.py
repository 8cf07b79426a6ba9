"""Exports of a graded class (``grade --out REPORT``) for a gradebook: points per learner and
exercise as plain CSV and JSON, Canvas's gradebook CSV, Gradescope's results.json, and the
feedback files (``feedback``).

Formats, as their publishers document them:

* Gradescope (https://gradescope-autograders.readthedocs.io/en/latest/specs/): results.json
  holds a top-level ``score`` (optional when every test has one; we give both), and
  ``tests``, each with ``name``, ``score``, ``max_score``, ``output`` (shown to the learner)
  and ``visibility`` (``visible``, ``hidden``, ``after_due_date`` or ``after_published``);
  optional ``status`` (``passed``/``failed``), ``output_format`` and top-level
  ``stdout_visibility`` (we hide the grader's own output from learners). A top-level
  ``visibility`` applies to the whole result: with tests shown only after the due date (or
  hidden), it is set to the same, and the top-level ``output`` (the total) is left out.
* Canvas (Grades > Import): ``canvas_csv``, from the gradebook Canvas exports (the roster),
  its assignment column and points possible checked against it.

With overrides, every export also writes the report's summary with them
(``report.OVERRIDDEN_SUMMARY``): every total an instructor reads comes from the same rows.
It does so once its own files are written (a refused export changes nothing), and notes
which overrides each file was exported with, so that an export with other overrides names
the files that now disagree with it.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from attncourse.instructor.course.tags import exercise_titles
from attncourse.instructor.gradebook import late, points
from attncourse.instructor.gradebook.canvas_csv import (
    CANVAS_IDENTITY,
    MISSING,
    canvas_gradebook,
    read_roster,
    write_canvas,
)
from attncourse.instructor.gradebook.ledger import Ledger, file_name, graded_from, stale_rows
from attncourse.instructor.gradebook.report import (
    OVERRIDES_USED,
    csv_cell,
    exported_with,
    overrides_digest,
    overrides_used,
    write_index,
    write_overridden_summary,
)
from attncourse.instructor.judge import learner_message
from attncourse.instructor.learner_text import the_learner
from attncourse.instructor.model import EARNS_ALL, ERROR, FAILED, PASSED, Grade

# Canvas's names, from canvas_csv, are this module's too: an export is reached from here.
__all__ = ["CANVAS_IDENTITY", "FORMATS", "GRADESCOPE_VISIBILITY", "MISSING", "canvas_gradebook", "export",
           "gradescope_results", "graded_rows", "plain_title", "read_roster", "titles_of", "write_csv",
           "write_gradescope", "write_json"]

FORMATS = {
    "csv": "OUT is a CSV file: one row per learner and exercise with its points",
    "json": "OUT is a JSON file: every learner's exercises with points, totals, the class's distribution",
    "canvas": "OUT is a CSV for Canvas's gradebook import, from --roster (Canvas's own export) and "
              "--assignment 'NAME (ID)'",
    "gradescope": "OUT is a folder: LEARNER/results.json in Gradescope's autograder format "
                  "(with --learner, OUT is that one results.json)",
    "feedback": "OUT is a folder: LEARNER.html and LEARNER.md, each learner's feedback",
}
GRADESCOPE_VISIBILITY = ("visible", "hidden", "after_due_date", "after_published")


def graded_rows(report: Path, overrides: Path | None = None,
                allow_extra_credit: bool = False) -> tuple[list[Grade], dict[str, list[str]], points.Overrides]:
    """Every row graded into ``report`` (``grade --out``), its problems and the decisions of
    ``overrides``; refuses a report with a row that is no grade and no decision."""
    grades, problems = Ledger(Path(report), "").everything([])
    if not grades:
        raise ValueError(f"{report} holds no grades: grade into it first (grade SUBMISSIONS --out {report})")
    decided: points.Overrides = {}
    if overrides:
        try:
            decided = points.read_overrides(overrides, grades, allow_extra_credit)
        except ValueError as error:
            raise ValueError(f"{error}. Nothing was exported.") from None
    undecided = [row for row in grades if row.status == ERROR and (row.learner, row.exercise) not in decided]
    if undecided:  # a failure of the grader's own, or two notebooks that disagree: no grade, and never a 0
        listed = "; ".join(f"{row.learner!r}, {row.exercise}: {row.message}" for row in undecided[:5])
        raise ValueError(f"{len(undecided)} row(s) of {report} are no grade ({ERROR}): {listed}"
                         f"{' ...' if len(undecided) > 5 else ''}. Grade those learners again (grade --learners), "
                         "or decide their points in the overrides. Nothing was exported.")
    return grades, problems, decided


def _written_with_other_overrides(report: Path, overrides: Path, out: Path) -> list[str]:
    """The files and folders exported from ``report`` with overrides other than ``overrides``
    (``out``, about to be replaced, aside): they disagree with what is exported now."""
    digest = overrides_digest(overrides)
    return [path for path, used in exported_with(report).items() if used != digest and path != str(Path(out).resolve())]


def titles_of(chapters: Path) -> dict[str, str]:
    """label -> the exercise's title, from the solved chapters (empty if there are none)."""
    if not Path(chapters).is_dir():
        return {}
    return {label: plain_title(title) for label, title in exercise_titles(Path(chapters)).items()}


def plain_title(title: str) -> str:
    """A title without its markdown emphasis and code marks ("make *pool* prefer" -> "make pool
    prefer"): the feedback files, Gradescope and the CSV show it as plain text."""
    return re.sub(r"(\*{1,2}|`)(\S(?:.*?\S)?)\1", r"\2", title)


def _row(row: Grade, titles: dict[str, str]) -> dict:
    return {"learner": row.learner, "exercise": row.exercise, "title": titles.get(row.exercise, ""),
            "status": row.status, "points": row.points, "max_points": row.max_points,
            "inputs_right": row.inputs_right, "inputs": row.inputs, "override": row.override,
            "feedback": learner_message(row), "review": row.review, "notebook": row.notebook,
            "graded_at": row.graded_at, "submitted_at": row.submitted_at, "late": row.late}


def write_csv(rows: list[Grade], titles: dict[str, str], out: Path) -> Path:
    with open(out, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        fields = list(_row(rows[0], titles))
        writer.writerow(fields)
        for row in rows:
            writer.writerow([csv_cell(str(value)) for value in _row(row, titles).values()])
    return Path(out)


def write_json(rows: list[Grade], titles: dict[str, str], out: Path) -> Path:
    totals = points.totals(rows)
    exercises = points.by_exercise(rows)
    data = {
        "exercises": [{"exercise": label, "title": titles.get(label, ""), "max_points": worth,
                       "mean_points": mean, "full_points": full} for label, (mean, worth, full) in exercises.items()],
        "learners": [{"learner": learner, "points": got, "max_points": worth,
                      "exercises": [_row(row, titles) for row in rows if row.learner == learner]}
                     for learner, (got, worth) in totals.items()],
        "distribution": [{"band": band, "learners": count} for band, count in points.distribution(rows)],
    }
    Path(out).write_text(json.dumps(data, indent=1), encoding="utf-8")
    return Path(out)


def gradescope_results(rows: list[Grade], titles: dict[str, str], visibility: str = "visible") -> dict:
    """One learner's ``rows`` as Gradescope's results.json (see the module doc)."""
    if visibility not in GRADESCOPE_VISIBILITY:
        raise ValueError(f"visibility must be one of {', '.join(GRADESCOPE_VISIBILITY)}, not {visibility!r}")
    tests: list[dict[str, Any]] = []
    for row in rows:
        label = row.exercise
        title = titles.get(label, "")
        output = learner_message(row)
        if late.for_the_learner(row):
            output += f" Late: {row.late}."
        if row.override:
            output += f" Your instructor's note: {row.override}"
        # What the row says (a late pass is a pass), or, overridden, what the instructor gave.
        passed = row.points >= row.max_points if row.override else row.status in EARNS_ALL
        tests.append({"name": f"{label}: {title}" if title else label, "score": row.points,
                      "max_score": row.max_points, "status": PASSED if passed else FAILED,
                      "output": f"{row.status}. {output}".strip(), "visibility": visibility})
    score = round(sum(test["score"] for test in tests), 2)
    if visibility != "visible":  # the total would tell what the hidden tests hide: it waits with them
        return {"score": score, "visibility": visibility, "stdout_visibility": "hidden", "tests": tests}
    return {"score": score, "output": f"{score:g} of {points.in_words(sum(t['max_score'] for t in tests))}.",
            "stdout_visibility": "hidden", "tests": tests}


def write_gradescope(rows: list[Grade], titles: dict[str, str], out: Path, learner: str | None = None,
                     visibility: str = "visible") -> list[Path]:
    """results.json for ``learner`` at ``out``, or for every learner at ``out/LEARNER/results.json``
    with ``out``'s INDEX of whose each folder is."""
    if learner:  # as typed: 'zed' for a folder 'zed '
        learner = the_learner(learner, (row.learner for row in rows)) or learner
    learners = [learner] if learner else list(dict.fromkeys(row.learner for row in rows))
    written = []
    for name in learners:
        mine = [row for row in rows if row.learner == name]
        if not mine:
            raise ValueError(f"no learner {name!r} in the report; it has: "
                             + ", ".join(dict.fromkeys(row.learner for row in rows)))
        path = Path(out) if learner else Path(out) / file_name(name) / "results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(gradescope_results(mine, titles, visibility), indent=1), encoding="utf-8")
        written.append(path)
    if learner:
        return written
    return [*written, write_index(Path(out), ["results"], [[name, f"{file_name(name)}/results.json"]
                                                           for name in learners])]


def _refuse_out(out: Path, report: Path) -> None:
    """Raise ValueError for an ``out`` inside ``report`` (a learner named "summary" would
    replace its summary) or inside the submissions folder it was graded from (a file there
    would be a learner's, and change their time)."""
    for folder, what in ((report.resolve(), "the report folder"), (graded_from(report), "the submissions folder "
                                                                                        "the report was graded from")):
        if folder is not None and out.resolve().is_relative_to(folder):
            raise ValueError(f"--out {out} is inside {what} ({folder}): write exports elsewhere")


def export(fmt: str, report: Path, out: Path, chapters: Path = Path("chapters"), *, overrides: Path | None = None,
           roster: Path | None = None, assignment: str | None = None, match: str = "SIS Login ID",
           learner: str | None = None, visibility: str = "visible", missing: str = "empty", force: bool = False,
           allow_extra_credit: bool = False, as_graded: bool = False) -> tuple[list[Path], list[str]]:
    """Write ``report``'s grades as ``fmt`` (one of FORMATS) to ``out``: (files written, what
    the instructor should know). Refuses an ``out`` where a learner's file could land
    (``_refuse_out``), and a report exported with overrides before
    unless given them again or ``as_graded`` (one forgotten option would upload other
    totals than every other export's)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; the formats are {', '.join(FORMATS)}")
    _refuse_out(Path(out), Path(report))
    before = overrides_used(report)
    if overrides is None and not as_graded and before is not None:
        raise ValueError(f"{report} was exported with overrides before ({Path(report) / OVERRIDES_USED}): "
                         "give --overrides again, or --as-graded to export the grades without them. "
                         "Nothing was exported.")
    if fmt == "canvas" and (roster is None or not assignment):
        raise ValueError("canvas needs --roster (the gradebook CSV exported from Canvas) and "
                         "--assignment 'NAME (ID)' (the assignment's column title)")
    grades, problems_of, decided = graded_rows(report, overrides, allow_extra_credit)
    rows = points.scored(grades, decided)
    stale = _written_with_other_overrides(report, overrides, out) if overrides else []
    problems = stale_rows(rows) + ([f"the overrides differ from those of the last export with them: {', '.join(stale)} "
                                    "disagree with this export; export them again with these"] if stale else [])
    written, notes = _write(fmt, rows, titles_of(chapters), Path(out), roster=roster, assignment=assignment,
                            match=match, learner=learner, visibility=visibility, missing=missing, force=force)
    if overrides:  # only once the export is written: a refused one changes nothing
        write_overridden_summary(Path(report), grades, problems_of, decided, overrides, Path(out))
    return written, problems + notes


def _write(fmt: str, rows: list[Grade], titles: dict[str, str], out: Path, *, roster: Path | None,
           assignment: str | None, match: str, learner: str | None, visibility: str, missing: str,
           force: bool) -> tuple[list[Path], list[str]]:
    """Write ``rows`` as ``fmt`` to ``out``: (files written, what the instructor should know)."""
    if fmt == "csv":
        return [write_csv(rows, titles, out)], []
    if fmt == "json":
        return [write_json(rows, titles, out)], []
    if fmt == "gradescope":
        return write_gradescope(rows, titles, out, learner, visibility), []
    if fmt == "feedback":
        # Imported here: jinja2 and the templates, for this format alone.
        from attncourse.instructor.gradebook.feedback import write_feedback

        return write_feedback(rows, titles, out, assignment=assignment), []
    assert roster is not None and assignment  # canvas, checked by export
    return [out], write_canvas(rows, roster, assignment, out, match, missing, force)

