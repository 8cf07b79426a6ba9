"""Canvas's gradebook CSV: the export an instructor downloads (the roster, Grades > Export
Entire Gradebook) read, and the file Canvas's import reads (Grades > Import) written from it,
its assignment column checked against the roster first.

What Canvas writes and reads, from its guides ("How do I export grades in the Gradebook?",
"How do I import grades in the Gradebook?", community.canvaslms.com, and the same rules as
universities restate them, e.g. ts.vcu.edu/askit, "Gradebook Action Menu";
teaching.resources.osu.edu, "Import a CSV file to Carmen Grades"):

* The first row names the columns: Student, ID, SIS User ID, SIS Login ID, Section (some
  institutions add Integration ID or Root Account), then one column per assignment titled
  ``NAME (ID)``, ID being Canvas's assignment id, then read-only columns Canvas computes:
  each assignment group's and the course's Current, Final and Unposted Score, Points and
  Grade, and an Override Score or Grade. Their "Points Possible" cell reads "(read only)";
  changes to them are ignored on import.
* A second row may say "Manual Posting" under the assignments with a manual posting policy
  (newer exports); then a row whose Student is "Points Possible", with each assignment's
  points. Excel's UTF-8 files, and Canvas's own with the byte-order mark option, start with
  a BOM.
* The Student View's "Test Student" ("Student, Test") is a student row of its own.
* On import, a column whose title carries an id updates that assignment; a title with no
  id (or an id Canvas does not know) makes a new assignment of that name. An empty cell
  leaves the student's grade as it was; a row left out changes nothing.
"""

from __future__ import annotations

import csv
import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from attncourse.instructor.gradebook import points
from attncourse.instructor.gradebook.instructor_csv import read_rows
from attncourse.instructor.gradebook.report import csv_cell
from attncourse.instructor.model import Grade

CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
TEST_STUDENT = ("Test Student", "Student, Test")  # Student View's user, by name and sortable name
POINTS_POSSIBLE = "Points Possible"
READ_ONLY_MARK = "(read only)"
MISSING = ("empty", "zero")  # what a student of the roster with no submission gets: --missing
_ASSIGNMENT = re.compile(r"^(?P<name>.*\S)\s*\((?P<id>\d+)\)$")
# The columns Canvas computes (read only), by their end: "Current Score", "Assignments Final Points", ...
_COMPUTED = re.compile(r"\b(?:Current|Final|Unposted Current|Unposted Final|Override) (?:Score|Points|Grade)$",
                       re.IGNORECASE)


@dataclass(frozen=True)
class Roster:
    """A gradebook exported from Canvas."""

    columns: list[str]
    students: list[dict[str, str]]  # every student row, the test student too
    possible: dict[str, str]  # column -> its "Points Possible" cell (none if the row is missing)


def read_gradebook(path: Path) -> Roster:
    """``path``, a gradebook exported from Canvas (see the module doc); raises ValueError
    if it lacks Canvas's identifying columns."""
    columns, rows = read_rows(path)
    missing = [c for c in CANVAS_IDENTITY if c not in columns]
    if missing:
        raise ValueError(f"{path} is not a gradebook exported from Canvas: it lacks the column(s) "
                         f"{', '.join(missing)} (expected {', '.join(CANVAS_IDENTITY)} first)")
    possible = next((row for row in rows if (row.get("Student") or "").strip() == POINTS_POSSIBLE), {})
    students = [row for row in rows if (row.get("Student") or "").strip() != POINTS_POSSIBLE
                and (row.get("ID") or "").strip()]  # the "Manual Posting" row has no ID
    return Roster(columns, students, {column: (value or "").strip() for column, value in possible.items()})


def read_roster(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """(the columns, the students) of a gradebook CSV exported from Canvas; its "Points
    Possible" row (and any other row that is not a student) is left out."""
    roster = read_gradebook(path)
    return roster.columns, roster.students


def read_only(column: str, roster: Roster) -> bool:
    """A column Canvas computes or keeps for itself, which an import never changes."""
    identity = {*CANVAS_IDENTITY, "Integration ID", "Root Account"}
    return (column in identity or bool(_COMPUTED.search(column))
            or roster.possible.get(column, "").lower() == READ_ONLY_MARK)


def assignment_problems(title: str, roster: Roster, worth: float, force: bool = False) -> list[str]:
    """What is wrong with writing the points (``worth`` possible) into the column ``title``
    of ``roster``. A read-only column is refused; so are, unless ``force``, a title with an id
    that is not the roster's column exactly, and points possible that differ from ``worth``
    (each named; what was forced is returned). A title without an id is a new assignment."""
    if read_only(title, roster) or any(read_only(c, roster) and c.lower() == title.lower() for c in roster.columns):
        raise ValueError(f"{title!r} is a column Canvas computes or keeps for itself (read only: an import "
                         "ignores it); name the assignment's column, 'NAME (ID)'")
    if not _ASSIGNMENT.match(title):
        return []  # a new assignment: Canvas makes it, with no points to compare (canvas_gradebook says so)
    problems = []
    if title not in roster.columns:
        problems.append(f"the roster has no column {title!r} (the assignment's title and id exactly, capitals "
                        f"too); the closest: {_closest(title, assignment_columns(roster)) or 'none'}")
    elif not roster.possible:
        problems.append(f"the roster has no {POINTS_POSSIBLE!r} row: the points possible of {title!r} "
                        "are not checked")
    elif not _same_points(roster.possible.get(title, ""), worth):
        problems.append(f"{title!r} is worth {roster.possible.get(title) or 'nothing'} points in Canvas "
                        f"(the roster's {POINTS_POSSIBLE}), and the exported exercises {worth:g}: change the "
                        "assignment's points in Canvas, or export other exercises")
    if problems and not force:
        raise ValueError("; ".join(problems) + ". Write it anyway with --force")
    return [f"--force: {problem}" for problem in problems]


def assignment_columns(roster: Roster) -> list[str]:
    return [column for column in roster.columns if _ASSIGNMENT.match(column) and not read_only(column, roster)]


def _same_points(cell: str, worth: float) -> bool:
    try:
        return abs(float(cell) - worth) < 1e-9
    except ValueError:
        return False


def _closest(title: str, columns: list[str]) -> str:
    """The columns nearest ``title`` (capitals aside), quoted, for a message."""
    lowered = {column.lower(): column for column in columns}
    near = difflib.get_close_matches(title.lower(), list(lowered), n=3, cutoff=0.4)
    return ", ".join(repr(lowered[column]) for column in near)


def canvas_gradebook(rows: list[Grade], roster: Path, assignment: str, match: str = "SIS Login ID",
                     missing: str = "empty") -> tuple[list[list[str]], list[str]]:
    """(the CSV's rows, problems): Canvas's five identifying columns of every student of
    ``roster`` but the test student, then the assignment's column holding each learner's
    total points. A learner is the student whose ``match`` column equals the learner's
    name (the name of their submission). A student without a submission gets an empty cell
    (which Canvas's import leaves unchanged) or, with ``missing="zero"``, 0; learners not in
    the roster are listed as problems. ``write_canvas`` checks the column first."""
    title = assignment.strip()
    if not title:
        raise ValueError("--assignment is the Canvas column title 'NAME (ID)'")
    if match not in CANVAS_IDENTITY:
        raise ValueError(f"--match must be one of {', '.join(CANVAS_IDENTITY)}, not {match!r}")
    if missing not in MISSING:
        raise ValueError(f"--missing must be one of {', '.join(MISSING)}, not {missing!r}")
    gradebook = read_gradebook(roster)
    totals = points.totals(rows)
    keys = {key for key, _ in _students(gradebook, match)}
    shared = {key: [row.get("Student", "") for value, row in _students(gradebook, match) if value == key]
              for key in totals}
    twice = [f"{key!r} ({'; '.join(students)})" for key, students in shared.items() if len(students) > 1]
    if twice:  # one learner's points would go to every one of them
        raise ValueError(f"the roster's {match!r} column names more than one student for the learner(s) "
                         f"{', '.join(twice)}: choose a --match column that tells them apart. Nothing was written")
    problems = [f"learner {learner!r} has no student with {match} {learner!r} in {roster}"
                for learner in totals if learner not in keys]
    if not _ASSIGNMENT.match(title):
        known = _closest(title, assignment_columns(gradebook))
        problems.append(f"the column {title!r} names no Canvas assignment id, 'NAME (ID)': Canvas's import will "
                        "make a new assignment of that name" + (f" (the roster has {known})" if known else ""))
    table = [[*CANVAS_IDENTITY, title]]
    for key, student in _students(gradebook, match):
        got = f"{totals[key][0]:g}" if key in totals else ("0" if missing == "zero" else "")
        table.append([csv_cell(student.get(column) or "") for column in CANVAS_IDENTITY] + [got])
    return table, problems


def _students(gradebook: Roster, match: str) -> list[tuple[str, dict[str, str]]]:
    """(the ``match`` column's value, the row) of every student but the Student View's."""
    return [((student.get(match) or "").strip(), student) for student in gradebook.students
            if (student.get("Student") or "").strip() not in TEST_STUDENT]


def unmatched(learners: list[str], gradebook: Roster, match: str) -> str:
    """Why no learner is a student of ``gradebook`` by ``match``, naming two learners and
    two values of the column; "" if some are."""
    values = [key for key, _ in _students(gradebook, match)]
    if set(learners) & set(values):
        return ""
    return (f"no learner is a student of the roster by its {match!r} column: the learners are named like "
            f"{', '.join(map(repr, learners[:2]))}, the column holds values like {', '.join(map(repr, values[:2]))} "
            "(--match names the roster's column that holds the names grade saw)")


def write_canvas(rows: list[Grade], roster: Path, assignment: str, out: Path, match: str = "SIS Login ID",
                 missing: str = "empty", force: bool = False) -> list[str]:
    """Check the assignment's column against ``roster`` (``assignment_problems``) and refuse a
    ``match`` that finds no learner, then write Canvas's import file at ``out``; returns what
    the instructor should know: learners not in the roster, a new assignment, what was
    forced, and how many students got an empty cell (or 0) and what Canvas does with it."""
    gradebook = read_gradebook(roster)
    totals = points.totals(rows)
    worth = sum(possible for _, possible, _ in points.by_exercise(rows).values())
    notes = assignment_problems(assignment.strip(), gradebook, worth, force)
    if match in CANVAS_IDENTITY and (why := unmatched(list(totals), gradebook, match)):
        raise ValueError(why)
    table, problems = canvas_gradebook(rows, roster, assignment, match, missing)
    with open(out, "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows(table)
    absent = sum(1 for key, _ in _students(gradebook, match) if key not in totals)
    if missing == "zero":
        policy = f"{absent} student(s) of the roster with no submission get 0 (--missing zero)"
    else:
        policy = (f"{absent} student(s) of the roster with no submission get an empty cell, which Canvas's import "
                  "leaves as it was: their grade is unchanged (--missing zero gives them 0)")
    return [*problems, *notes] + ([policy] if absent else [])
