"""Canvas's "Download Submissions" zip, read into submissions: each file's learner from
its name and the course's gradebook export (the roster ``export canvas`` reads).

What Canvas writes, from its source (instructure/canvas-lms, ``lib/content_zipper.rb``:
``ContentZipper#zip_assignment``, ``get_filename``, ``add_upload_submission``):

* One file per uploaded file, at the top of the zip, named
  ``NAME[_LATE]_USERID_FILEID_FILENAME``: NAME the student's sortable name ("Last,
  First") with every character but letters, digits and ``_`` removed; LATE when Canvas
  marks the submission late; USERID the student's Canvas user id (the gradebook
  export's "ID" column); FILEID the id of the uploaded file (not of the submission); then
  the name the student gave the file. Canvas lower-cases all but FILENAME, so the mark
  arrives as ``late``; either case is read. With anonymous grading there is no NAME.
* The ids are the first two parts between underscores made of digits alone, as Canvas
  reads them back when the instructor uploads the files again (``app/models/assignment.rb``,
  ``infer_comment_context_from_filename``). A sortable name may itself end in ``_123``
  (Canvas keeps ``_`` and digits), and the name a student gives the file may hold a
  classmate's ids (``103_1_hw.ipynb``), so every such reading is tried against the roster
  (``whose``): a file whose readings name two students is imported for neither, and said
  so; one naming one student is theirs if it is Canvas's own reading or has their NAME
  before it. A student who enrolled after the roster was exported and named themselves
  after a classmate's ids is the case this cannot tell: export the roster after the due
  date.
* Several files of one student are the files of their current attempt
  (``submission.attachment_ids``): earlier attempts are not in the zip. A file a student
  uploaded again under the same name reaches Canvas as ``hw-1.ipynb``, and a name repeated
  in the zip gets ``-1``, ``-2`` before its extension (``Attachment.make_unique_filename``,
  ``app/models/attachment.rb``): such names are kept as they are.
* A text entry or a link is written as ``..._text.html`` or ``..._link.html``, with no
  file id: not a notebook, not imported. A group assignment's files come once, under one
  member's user id: only that member is imported (the roster does not say who is in
  which group).

The file names carry no time. Canvas records each submission's ``submitted_at`` (and
``late``) on the submission itself, shown in SpeedGrader and returned by the Submissions
API (``GET /api/v1/courses/:course_id/assignments/:assignment_id/submissions``,
https://canvas.instructure.com/doc/api/submissions.html): ``--times`` reads that address's
JSON, as a browser signed in to Canvas saves it (``read_times``; a page per 100 students:
``&page=2`` and on), or a CSV of its ``user_id`` and ``submitted_at`` fields; without it the time is left empty and the
LATE mark kept. The Student View's "Test Student" (``Course#student_view_student``) is
the instructor trying the assignment: skipped, with a note.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from attncourse.instructor.gradebook.canvas_csv import CANVAS_IDENTITY, TEST_STUDENT, read_roster
from attncourse.instructor.lms.archive import is_notebook
from attncourse.instructor.lms.plan import Reading, Submission


@dataclass(frozen=True)
class CanvasName:
    """What Canvas wrote in one file's name."""

    user_id: str
    file_id: str
    late: bool
    given: str  # the name the student gave the file
    name: str = ""  # NAME, the student's sortable name as Canvas wrote it ("" under anonymous grading)


def parse_canvas_name(name: str) -> CanvasName | None:
    """The parts of a Canvas bulk-download file name (see the module doc) as Canvas reads
    them back, or None for a name Canvas does not write (in a folder, no two ids, nothing
    after them)."""
    readings = canvas_readings(name)
    return readings[0] if readings else None


def canvas_readings(name: str) -> list[CanvasName]:
    """Every way ``name`` splits as NAME[_LATE]_USERID_FILEID_FILENAME, the first as Canvas
    reads it back: a sortable name may end in ``_123`` (Canvas keeps ``_`` and digits), and
    then more than one pair of ids is possible."""
    if "/" in name:
        return []
    parts = name.split("_")
    digits = [bool(re.fullmatch(r"[0-9]+", part)) for part in parts]
    readings = []
    for i in range(len(parts) - 2):
        if digits[i] and digits[i + 1]:
            late = i > 0 and parts[i - 1].lower() == "late"
            readings.append(CanvasName(parts[i], parts[i + 1], late, "_".join(parts[i + 2:]),
                                       "_".join(parts[:i - 1 if late else i])))
    return readings


def written_alike(name: str, sortable: str) -> bool:
    """Whether ``name``, a NAME of a file name, is the roster's ``sortable`` name ("Last,
    First") as Canvas writes it: compared by their ASCII letters and digits, lower-cased
    (an accent dropped or kept, a space or comma removed)."""
    def letters(text: str) -> str:
        return re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKD", text).lower())
    return bool(letters(name)) and letters(name) == letters(sortable)


AMBIGUOUS = "ambiguous"


def whose(readings: list[CanvasName], students: dict[str, dict]) -> tuple[CanvasName | None, str]:
    """The reading of a file name that names its student, or (None, why not). The student
    chooses the name of the file, after the ids, and may choose their own name in Canvas,
    before them: either may hold a classmate's ids. So a file whose readings name two
    students of the roster is ``AMBIGUOUS``: filed under neither. One that names one is
    theirs if the name before its ids is theirs in the roster, or if it is Canvas's own
    reading (the first: anonymous grading, a name changed since the roster was exported); a
    later reading, with another's name before it, is refused. None of them a student's:
    Canvas's own reading, a user id the roster lacks (reported as such)."""
    plausible = [reading for reading in readings if reading.user_id in students]
    if not plausible:
        return readings[0], ""
    if len(plausible) > 1:
        names = " or ".join(f"{r.user_id} ({(students[r.user_id].get('Student') or '').strip()})" for r in plausible)
        return None, (f"{AMBIGUOUS}: its name holds the ids of Canvas users {names}, and either part of it may be "
                      "a student's own choosing: not imported; ask them, and put it in place by hand")
    (reading,) = plausible
    if reading is readings[0] or written_alike(reading.name, students[reading.user_id].get("Student") or ""):
        return reading, ""
    return None, (f"its name reads as the file of Canvas user {readings[0].user_id}, who is not in the roster, and "
                  f"holds the ids of user {reading.user_id} after that: export the roster again (after the due "
                  "date, so that every student is in it), or leave it out")


def read_times(paths: Path | list[Path]) -> dict[str, datetime | None]:
    """Canvas user id -> when they submitted, from Canvas's Submissions API: the JSON its
    address returns (opened in a browser signed in to Canvas and saved as a file; Canvas
    puts ``while(1);`` before it, which is read past), one file per page of a class of more
    than 100, or a CSV with its ``user_id`` and ``submitted_at`` (ISO 8601) columns."""
    times: dict[str, datetime | None] = {}
    for path in [paths] if isinstance(paths, Path) else paths:
        text = Path(path).read_text(encoding="utf-8-sig")
        entries = _json_entries(path, text) if text.lstrip().startswith(("[", "{", "while(1);")) else _csv_entries(path, text)
        for where, user_id, submitted_at in entries:
            times[user_id] = _moment(submitted_at, where)
    return times


def _json_entries(path: Path, text: str) -> list[tuple[str, str, str]]:
    try:
        data = json.loads(text.lstrip().removeprefix("while(1);"))
    except ValueError as error:
        raise ValueError(f"{path} is not the JSON of Canvas's Submissions API ({error})") from None
    if not isinstance(data, list) or not all(isinstance(entry, dict) and "user_id" in entry for entry in data):
        raise ValueError(f"{path} is not the JSON of Canvas's Submissions API: a list of submissions, each with "
                         "its user_id and submitted_at")
    return [(f"{path}, submission {number}", str(entry["user_id"]).strip(), entry.get("submitted_at") or "")
            for number, entry in enumerate(data, 1)]


def _csv_entries(path: Path, text: str) -> list[tuple[str, str, str]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not {"user_id", "submitted_at"} <= set(reader.fieldnames or []):
        raise ValueError(f"{path} needs the columns user_id and submitted_at (as Canvas's Submissions API names "
                         "them), or is the API's JSON")
    return [(f"{path}, line {reader.line_num}", (row["user_id"] or "").strip(), row["submitted_at"] or "")
            for row in reader]


def _moment(text: object, where: str) -> datetime | None:
    text = str(text).strip()
    try:
        moment = datetime.fromisoformat(text) if text else None
    except ValueError:
        raise ValueError(f"{where}: submitted_at {text!r} is not ISO 8601") from None
    if moment is not None and moment.utcoffset() is None:
        raise ValueError(f"{where}: submitted_at {text!r} has no offset from UTC")
    return moment


def canvas_submissions(entries: list[zipfile.ZipInfo], roster: Path, match: str = "SIS Login ID",
                       times: dict[str, datetime | None] | None = None) -> Reading:
    """The zip's submissions, one per Canvas user id, each learner the roster's ``match``
    column of the student whose "ID" is that user id."""
    if match not in CANVAS_IDENTITY:
        raise ValueError(f"--match must be one of {', '.join(CANVAS_IDENTITY)}, not {match!r}")
    students = {(row.get("ID") or "").strip(): row for row in read_roster(roster)[1]}
    reading = Reading()
    imported: list[str] = []
    files: dict[str, list[tuple[zipfile.ZipInfo, CanvasName]]] = {}
    for info in entries:
        readings = canvas_readings(info.filename)
        if not readings:
            reading.skipped.append(f"{info.filename}: not named as Canvas names a submitted file "
                                   "(NAME_[LATE_]USERID_FILEID_FILENAME)")
            continue
        parsed, why = whose(readings, students)
        if parsed is None:
            (reading.skipped if why.startswith(AMBIGUOUS) else reading.unmatched).append(f"{info.filename}: {why}")
        else:
            files.setdefault(parsed.user_id, []).append((info, parsed))
    for user_id, theirs in files.items():
        source = "; ".join(info.filename for info, _ in theirs)
        student = students.get(user_id)
        login = (student.get(match) or "").strip() if student else ""
        if student and (student.get("Student") or "").strip() in TEST_STUDENT:
            reading.notes.append(f"{source}: the Test Student's (Canvas's Student View): not imported")
            continue
        if not login:
            reading.unmatched.append(f"{source}: " + (f"student {student.get('Student')!r} (ID {user_id}) has no {match} "
                                                      f"in {roster}" if student else
                                                      f"Canvas user id {user_id} is not in {roster}"))
            continue
        notebooks = [(info, parsed.given) for info, parsed in theirs if is_notebook(parsed.given)]
        reading.skipped += [f"{info.filename}: not a notebook (.ipynb)" for info, parsed in theirs
                            if not is_notebook(parsed.given)]
        reading.submissions.append(Submission(source, (login,), tuple(notebooks), (times or {}).get(user_id),
                                              any(parsed.late for _, parsed in theirs)))
        imported.append(user_id)
    absent = [(row.get(match) or "").strip() or (row.get("Student") or "").strip() for user_id, row in students.items()
              if user_id and user_id not in files and (row.get("Student") or "").strip() not in TEST_STUDENT]
    if absent:  # known now, not first when export canvas leaves their cells empty
        reading.notes.append(f"{len(absent)} student(s) of the roster submitted nothing: {', '.join(absent)}")
    if times is not None:
        reading.notes += [f"Canvas user id {user_id} ({files[user_id][0][0].filename}) has no row in --times: "
                          "submitted_at left empty" for user_id in imported if user_id not in times]
    elif imported:  # a late penalty needs a time: say so now, not when grade cannot apply it
        reading.notes.append("Canvas's zip carries no submission times: submitted.csv keeps each LATE mark with no "
                             "time, and grade can flag late work but not penalise it; give --times (a CSV of the "
                             "Submissions API's user_id, submitted_at) to record them")
    return reading
