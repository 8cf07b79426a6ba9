"""Tests for ``attncourse.instructor.gradebook.canvas_csv``: Canvas's import file written only into
a column the roster (Canvas's own gradebook export: a BOM, a "Manual Posting" and a "Points
Possible" row, read-only totals, the Student View's test student) has, with the points it
says, and a stated policy for the students with no submission."""

from __future__ import annotations

import csv

import pytest

from attncourse import instructor
from attncourse.instructor.gradebook import canvas_csv, points
from attncourse.instructor.gradebook.ledger import Ledger
from attncourse.instructor.model import Grade
from tests.gradebook_class import ASSIGNED

ASSIGNMENT = "Attention homework (4321)"
HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Quiz 1 (1111)", ASSIGNMENT,
          "Assignments Current Score", "Assignments Final Score", "Current Score", "Unposted Current Score",
          "Final Score", "Current Grade", "Final Grade"]
READ_ONLY = ["(read only)"] * 7


def roster_rows(possible: str = "6.00") -> list[list[str]]:
    """A gradebook as Canvas exports it (newer exports: the "Manual Posting" row first)."""
    return [
        HEADER,
        ["", "", "", "", "", "", "Manual Posting", *[""] * 7],
        ["    Points Possible", "", "", "", "", "10.00", possible, *READ_ONLY],
        ["Lovelace, Ada", "101", "S101", "ada", "Section A", "9", "", "90", "90", "90", "90", "90", "A", "A"],
        ["Babbage, Bob", "102", "S102", "bob", "Section A", "5", "", "50", "50", "50", "50", "50", "F", "F"],
        ["Absent, Fay", "106", "S106", "fay", "Section B", "", "", "", "", "", "", "", "", ""],
        ["Student, Test", "999", "", "test", "", "", "", "", "", "", "", "", "", ""],
    ]


def write_roster(path, rows):
    with open(path, "w", newline="", encoding="utf-8-sig") as file:  # with a BOM, as Excel saves it
        csv.writer(file).writerows(rows)
    return path


@pytest.fixture
def roster(tmp_path):
    return write_roster(tmp_path / "canvas_export.csv", roster_rows())


def graded() -> list[Grade]:
    """ada right on all three exercises (6 of 6), bob on the prediction alone (1 of 6)."""
    rows = [Grade("ada", label, "passed" if label != ASSIGNED[1] else "completed", "", "") for label in ASSIGNED]
    rows += [Grade("bob", label, "completed" if label == ASSIGNED[1] else "not attempted", "", "") for label in ASSIGNED]
    return points.scored(rows)


def read(path):
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.reader(file))


def test_the_roster_s_column_is_written_with_each_total_and_the_empty_cells_are_explained(roster, tmp_path):
    out = tmp_path / "import.csv"
    notes = canvas_csv.write_canvas(graded(), roster, ASSIGNMENT, out)
    table = read(out)
    assert table[0] == [*canvas_csv.CANVAS_IDENTITY, ASSIGNMENT]
    assert [row[3] for row in table[1:]] == ["ada", "bob", "fay"]  # no test student, no Points Possible row
    assert [row[-1] for row in table[1:]] == ["6", "1", ""]
    policy = [note for note in notes if "no submission" in note]
    assert policy and "1 student(s)" in policy[0] and "unchanged" in policy[0] and "--missing zero" in policy[0]


def test_missing_zero_gives_0_to_the_students_with_no_submission(roster, tmp_path):
    out = tmp_path / "import.csv"
    notes = canvas_csv.write_canvas(graded(), roster, ASSIGNMENT, out, missing="zero")
    assert [row[-1] for row in read(out)[1:]] == ["6", "1", "0"]
    assert any("1 student(s)" in note and "get 0" in note for note in notes)


@pytest.mark.parametrize("title", ["Attention Homework (4321)", "Attention homework (9999)"])
def test_an_id_column_the_roster_lacks_is_refused_naming_the_closest_unless_forced(roster, tmp_path, title):
    out = tmp_path / "import.csv"
    with pytest.raises(ValueError, match=r"no column .*closest: 'Attention homework \(4321\)'.*--force"):
        canvas_csv.write_canvas(graded(), roster, title, out)
    assert not out.exists()
    notes = canvas_csv.write_canvas(graded(), roster, title, out, force=True)
    assert read(out)[0][-1] == title and any(note.startswith("--force") for note in notes)


def test_points_possible_that_differ_are_refused_naming_both_unless_forced(tmp_path):
    roster = write_roster(tmp_path / "r.csv", roster_rows(possible="10.00"))
    with pytest.raises(ValueError, match=r"worth 10.00 points in Canvas .*exercises 6"):
        canvas_csv.write_canvas(graded(), roster, ASSIGNMENT, tmp_path / "import.csv")
    canvas_csv.write_canvas(graded(), roster, ASSIGNMENT, tmp_path / "import.csv", force=True)
    assert read(tmp_path / "import.csv")[1][-1] == "6"


@pytest.mark.parametrize("title", ["Current Score", "Final Grade", "Assignments Final Score", "final score"])
def test_a_read_only_column_is_never_the_target(roster, tmp_path, title):
    with pytest.raises(ValueError, match="read only"):
        canvas_csv.write_canvas(graded(), roster, title, tmp_path / "import.csv", force=True)


def test_a_title_without_an_id_makes_a_new_assignment_and_says_so(roster, tmp_path):
    notes = canvas_csv.write_canvas(graded(), roster, "Attention homework", tmp_path / "import.csv")
    assert any("new assignment" in note and "'Attention homework (4321)'" in note for note in notes)
    assert read(tmp_path / "import.csv")[0][-1] == "Attention homework"


def test_a_match_column_that_matches_nobody_is_an_error_naming_both_sides(roster, tmp_path):
    with pytest.raises(ValueError, match=r"'ID' column: the learners are named like 'ada', 'bob', the column "
                                         r"holds values like '101', '102'"):
        canvas_csv.write_canvas(graded(), roster, ASSIGNMENT, tmp_path / "import.csv", match="ID")
    assert not (tmp_path / "import.csv").exists()


def test_the_command_refuses_with_a_non_zero_exit_and_writes_nothing(roster, tmp_path, capsys):
    report = tmp_path / "report"
    for learner in ("ada", "bob"):
        Ledger(report, "").save(learner, "key", [row for row in graded() if row.learner == learner], [])
    out = tmp_path / "import.csv"
    command = ["export", "canvas", "--report", str(report), "--out", str(out), "--roster", str(roster)]
    assert instructor.main([*command, "--assignment", "Attention homework (9999)"]) == 2
    assert "closest: 'Attention homework (4321)'" in capsys.readouterr().err
    assert instructor.main([*command, "--assignment", ASSIGNMENT, "--match", "ID"]) == 2
    assert "the column holds values like '101', '102'" in capsys.readouterr().err
    assert not out.exists()
    assert instructor.main([*command, "--assignment", ASSIGNMENT, "--missing", "zero"]) == 0
    assert [row[-1] for row in read(out)[1:]] == ["6", "1", "0"]


def test_two_students_one_learner_name_in_the_match_column_is_refused(tmp_path):
    rows = roster_rows()
    rows.insert(5, ["Jones, Bob", "107", "S107", " bob ", "Section B", *[""] * 9])  # written with spaces
    roster = write_roster(tmp_path / "canvas_export.csv", rows)
    with pytest.raises(ValueError, match=r"more than one student for the learner\(s\) 'bob' \(Babbage, Bob; Jones, "
                                         r"Bob\).*Nothing was written"):
        canvas_csv.write_canvas(graded(), roster, ASSIGNMENT, tmp_path / "import.csv")
    assert not (tmp_path / "import.csv").exists()
