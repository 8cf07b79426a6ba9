"""Tests for ``attncourse.instructor.gradebook.export``: the Canvas gradebook CSV checked column by
column against Canvas's import format, and the plain CSV and JSON of every learner and
exercise with points (the test class's files, written by the guide's walkthrough)."""

from __future__ import annotations

import csv
import json
import re

import pytest

from attncourse import instructor
from attncourse.instructor.gradebook import export, ledger, points
from attncourse.instructor.gradebook.report import OVERRIDDEN_SUMMARY, OVERRIDES_USED, write_report
from attncourse.instructor.model import Grade
from tests.gradebook_class import (
    ASSIGNED,
    EXPECTED_POINTS,
    EXPECTED_STATUS,
    ROSTER,
    exported_points,
    walkthrough,
)

ASSIGNMENT = "Attention homework (4321)"


def write_roster(path, rows=ROSTER):
    with open(path, "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows(rows)
    return path


def test_a_learner_missing_from_the_roster_is_reported_and_a_title_without_an_id_too(tmp_path):
    rows = points.scored([Grade("zed", "ch1-stable-softmax", "passed", "", "")])
    table, problems = export.canvas_gradebook(rows, write_roster(tmp_path / "r.csv"), "Homework", "SIS Login ID")
    assert table[0] == [*export.CANVAS_IDENTITY, "Homework"]
    assert any("'zed'" in p for p in problems) and any("no Canvas assignment id" in p for p in problems)
    assert all(row[-1] == "" for row in table[1:])


def test_a_roster_that_is_not_canvas_s_export_is_refused(tmp_path):
    path = write_roster(tmp_path / "r.csv", [["name", "login"], ["Ada", "ada"]])
    with pytest.raises(ValueError, match="not a gradebook exported from Canvas"):
        export.read_roster(path)


def test_a_formula_in_the_roster_stays_text(tmp_path):
    rows = [ROSTER[0], ["=HYPERLINK(1)", "1", "", "ada", "", ""]]
    table, _ = export.canvas_gradebook(points.scored([Grade("ada", "ch1-stable-softmax", "passed", "", "")]),
                                       write_roster(tmp_path / "r.csv", rows), ASSIGNMENT)
    assert table[1][0] == "'=HYPERLINK(1)" and table[1][-1] == "3"


@pytest.fixture(scope="module")
def term():
    folder, ran = walkthrough()
    assert all(done.returncode == 0 for _, done in ran), ran[-1]
    return folder


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.reader(file))


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
def test_the_canvas_file_follows_canvas_s_import_format_column_by_column(term):
    table = read_csv(term / "canvas_import.csv")
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", ASSIGNMENT]
    students = [row for row in ROSTER[1:] if "Points Possible" not in row[0]]
    assert [row[:5] for row in table[1:]] == [row[:5] for row in students]  # copied unchanged, in order
    for row in table[1:]:
        login = row[3]
        expected = f"{sum(exported_points(login, label) for label in ASSIGNED):g}" if login in EXPECTED_POINTS else ""
        assert row[5] == expected, login
    assert all(len(row) == 6 for row in table)


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
def test_the_plain_csv_has_every_learner_and_exercise_with_points(term):
    header, *rows = read_csv(term / "points.csv")
    assert header[:6] == ["learner", "exercise", "title", "status", "points", "max_points"]
    found = {(row[0], row[1]): dict(zip(header, row)) for row in rows}
    assert set(found) == {(learner, label) for learner in EXPECTED_POINTS for label in ASSIGNED}
    for (learner, label), row in found.items():
        assert float(row["points"]) == exported_points(learner, label)
        assert float(row["max_points"]) == points.points_of(label)
        assert row["status"] == EXPECTED_STATUS[learner][label]
    assert found["bob", "ch1-stable-softmax"]["inputs_right"] == "4" and found["bob", "ch1-stable-softmax"]["inputs"] == "8"
    assert found["dee", "ch1-stable-softmax"]["override"].startswith("Your stable_softmax")


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
def test_the_json_has_totals_means_and_the_distribution(term):
    data = json.loads((term / "points.json").read_text(encoding="utf-8"))
    totals = {entry["learner"]: (entry["points"], entry["max_points"]) for entry in data["learners"]}
    assert totals == {learner: (sum(exported_points(learner, label) for label in ASSIGNED), 6.0)
                      for learner in EXPECTED_POINTS}
    assert [e["exercise"] for e in data["exercises"]] == list(ASSIGNED)
    assert sum(band["learners"] for band in data["distribution"]) == len(EXPECTED_POINTS)
    softmax = data["exercises"][0]
    assert softmax["max_points"] == 3 and softmax["full_points"] == 2  # ada and eve (dee overridden)


@pytest.mark.parametrize("title, plain", [
    ("Tune: make *pool* prefer *badminton*", "Tune: make pool prefer badminton"),
    ("the `stable_softmax` of **X**", "the stable_softmax of X"),
    ("a_b and 2 * 3 * 4", "a_b and 2 * 3 * 4"),
])
def test_titles_lose_their_markdown_marks(title, plain):
    assert export.plain_title(title) == plain


def _summary_totals(text):
    return {found[1]: float(found[2]) for found in re.finditer(r"^- (\w+): ([\d.]+) of 6$", text, re.M)}


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
def test_every_export_and_the_summary_with_the_overrides_give_each_learner_one_total(term):
    expected = {learner: sum(exported_points(learner, label) for label in ASSIGNED) for learner in EXPECTED_POINTS}
    graded = (term / "report" / "summary.md").read_text(encoding="utf-8")
    assert graded.startswith("# Grades, as graded: before the overrides (with them: summary-with-overrides.md)")
    found = {"summary": _summary_totals((term / "report" / "summary-with-overrides.md").read_text(encoding="utf-8")),
             "canvas": {row[3]: float(row[5]) for row in read_csv(term / "canvas_import.csv")[1:] if row[5]},
             "gradescope": {learner: json.loads((term / "gradescope" / learner / "results.json").read_text())["score"]
                            for learner in EXPECTED_POINTS},
             "json": {entry["learner"]: entry["points"]
                      for entry in json.loads((term / "points.json").read_text(encoding="utf-8"))["learners"]},
             "feedback": {learner: float(re.search(r"\*\*([\d.]+) of 6 points\*\*",
                                                   (term / "feedback" / f"{learner}.md").read_text())[1])
                          for learner in EXPECTED_POINTS}}
    csv_totals: dict[str, float] = {}
    for row in read_csv(term / "points.csv")[1:]:
        csv_totals[row[0]] = csv_totals.get(row[0], 0) + float(row[4])
    found["csv"] = csv_totals
    assert expected["dee"] != sum(EXPECTED_POINTS["dee"].values())  # the class has an override that counts
    for source, totals in found.items():
        assert totals == expected, source


def _one_row_report(folder):
    row = Grade("dee", "ch1-stable-softmax", "passed", "", "dee.ipynb", "", "2026-11-26T02:00:00+00:00")
    ledger.Ledger(folder, "").save("dee", "k", [row], [])
    return folder


def test_a_report_exported_with_overrides_needs_them_again_or_as_graded(tmp_path):
    """The newcomer's finding: one export without --overrides uploaded other totals than
    every other export's, and said nothing."""
    report = _one_row_report(tmp_path / "report")
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("learner,exercise,points,note\ndee,ch1-stable-softmax,0,calls the course's own\n")
    export.export("json", report, tmp_path / "with.json", overrides=overrides)
    with pytest.raises(ValueError, match="exported with overrides before .* --as-graded .* Nothing was exported"):
        export.export("csv", report, tmp_path / "forgot.csv")
    assert not (tmp_path / "forgot.csv").exists()
    rows, problems = ledger.Ledger(report, "").everything([])
    write_report(rows, problems, report)  # a regrade: it removes the summary with the overrides (red team 9)
    assert not (report / OVERRIDDEN_SUMMARY).exists()
    with pytest.raises(ValueError, match="exported with overrides before"):
        export.export("csv", report, tmp_path / "forgot.csv")
    export.export("csv", report, tmp_path / "as_graded.csv", as_graded=True)
    with open(tmp_path / "as_graded.csv", newline="", encoding="utf-8") as file:
        assert [(row["points"], row["override"]) for row in csv.DictReader(file)] == [("3.0", "")]


@pytest.mark.parametrize("fmt", ["feedback", "gradescope", "csv"])
def test_an_export_into_the_report_folder_is_refused(tmp_path, fmt):
    """Red team 8: a learner named "summary" overwrote report/summary.md with their feedback."""
    report = _one_row_report(tmp_path / "report")
    for out in (report, report / "learners", report / "points.csv"):
        with pytest.raises(ValueError, match="inside the report folder"):
            export.export(fmt, report, out)


def test_the_gradescope_folders_have_an_index_of_whose_each_is(tmp_path):
    report = tmp_path / "report"
    for learner in ("dee", "jose.garcia"):
        row = Grade(learner, "ch1-stable-softmax", "passed", "", "x.ipynb", "", "2026-11-26T02:00:00+00:00")
        ledger.Ledger(report, "").save(learner, "k", [row], [])
    written, _ = export.export("gradescope", report, tmp_path / "gradescope")
    with open(tmp_path / "gradescope" / "index.csv", newline="", encoding="utf-8") as file:
        index = {row["learner"]: row["results"] for row in csv.DictReader(file)}
    assert index == {"dee": "dee/results.json", "jose.garcia": f"{ledger.file_name('jose.garcia')}/results.json"}
    assert all((tmp_path / "gradescope" / path).is_file() for path in index.values())


@pytest.mark.parametrize(("line", "said"), [("dee,ch1-stable-softmax,9,generous", "extra credit"),
                                            ("dee,ch1-stable-softmax,x,why", "not a number")])
def test_every_refused_override_says_nothing_was_exported(tmp_path, line, said):
    report = _one_row_report(tmp_path / "report")
    overrides = tmp_path / "overrides.csv"
    overrides.write_text(f"learner,exercise,points,note\n{line}\n")
    with pytest.raises(ValueError, match=f"{said}.*Nothing was exported"):
        export.export("csv", report, tmp_path / "points.csv", overrides=overrides)


def test_an_export_into_the_graded_submissions_folder_is_refused(tmp_path):
    """Red team 9: feedback files among the learners' folders, or a results.json in each."""
    report = _one_row_report(tmp_path / "report")
    (tmp_path / "submissions" / "dee").mkdir(parents=True)
    ledger.Ledger(report, "").begin({"dee"}, tmp_path / "submissions")
    for out in (tmp_path / "submissions", tmp_path / "submissions" / "dee"):
        with pytest.raises(ValueError, match="inside the submissions folder"):
            export.export("gradescope", report, out)
    export.export("gradescope", report, tmp_path / "gradescope")  # anywhere else


def test_a_row_the_grader_failed_on_is_flagged_and_exported_by_no_one_until_decided(tmp_path):
    """The third newcomer: a bug of the grader's own on one exercise reached Canvas as a 0,
    unflagged, with exit 0."""
    report = tmp_path / "report"
    failed = Grade("kim", "ch1-stable-softmax", "error", "the grader failed on this exercise (KeyError: 'x'): not a "
                   "grade; grade this learner again", "kim.ipynb", "", "2026-11-26T02:00:00+00:00")
    ledger.Ledger(report, "").save("kim", "k", [failed], [])
    rows, problems = ledger.Ledger(report, "").everything([])
    write_report(rows, problems, report)
    flagged = (report / "summary.md").read_text().split("## Flagged for review")[1].split("## ")[0]
    assert "- kim, ch1-stable-softmax (error): the grader failed" in flagged
    with pytest.raises(ValueError, match=r"1 row\(s\) of .* are no grade \(error\): 'kim'.*Nothing was exported"):
        export.export("csv", report, tmp_path / "points.csv")
    assert not (tmp_path / "points.csv").exists()
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("learner,exercise,points,note\nkim,ch1-stable-softmax,3,graded by hand\n")
    export.export("csv", report, tmp_path / "points.csv", overrides=overrides)  # decided: exported


def test_no_message_lets_a_learner_s_file_name_drive_the_instructor_s_terminal(tmp_path, capsys):
    """Red team 11: an export's refusal quoted a notebook named with a terminal's escape
    sequences raw on standard error (its title changed, the screen cleared)."""
    report = tmp_path / "report"
    name = "\x1b]0;OWNED-TITLE\x07\x1b[2J\x1b[41mREAD-ME.ipynb"
    twice = Grade("mal", "ch1-stable-softmax", "error", f"duplicate submissions hold this exercise: mal/{name} "
                  "(passed), mal/ch1.ipynb (failed); keep one and grade again", f"mal/{name} mal/ch1.ipynb")
    ledger.Ledger(report, "").save("mal", "k", [twice], [])
    assert instructor.main(["export", "csv", "--report", str(report), "--out", str(tmp_path / "points.csv")]) == 2
    printed = capsys.readouterr().err
    assert "\x1b" not in printed and "\x07" not in printed
    assert "mal/\\x1b]0;OWNED-TITLE\\x07\\x1b[2J\\x1b[41mREAD-ME.ipynb (passed)" in printed


def test_an_override_given_twice_is_refused_naming_both_lines(tmp_path):
    report = _one_row_report(tmp_path / "report")
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("learner,exercise,points,note\ndee,ch1-stable-softmax,1,a\ndee,ch1-stable-softmax,2,b\n")
    with pytest.raises(ValueError, match=r"line 3: 'dee', ch1-stable-softmax again \(line 2\).*Nothing was exported"):
        export.export("csv", report, tmp_path / "points.csv", overrides=overrides)


def test_a_csv_saved_in_another_encoding_is_named(tmp_path):
    report = _one_row_report(tmp_path / "report")
    overrides = tmp_path / "overrides.csv"
    overrides.write_bytes("learner,exercise,points,note\ndee,ch1-stable-softmax,1,Jos\u00e9 asked\n".encode("cp1252"))
    with pytest.raises(ValueError, match=r"overrides.csv is not UTF-8 \(byte 0xe9 at \d+\): save it as UTF-8"):
        export.export("csv", report, tmp_path / "points.csv", overrides=overrides)


def test_changed_overrides_say_the_files_exported_before_disagree(tmp_path):
    report = _one_row_report(tmp_path / "report")
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("learner,exercise,points,note\ndee,ch1-stable-softmax,1,first\n")
    _, problems = export.export("csv", report, tmp_path / "a.csv", overrides=overrides)
    assert problems == []
    copy = tmp_path / "same" / "overrides.csv"
    copy.parent.mkdir()
    copy.write_bytes(overrides.read_bytes())
    assert export.export("csv", report, tmp_path / "c.csv", overrides=copy)[1] == []  # the same, elsewhere
    overrides.write_text("learner,exercise,points,note\ndee,ch1-stable-softmax,1.5,second thoughts\n")
    _, problems = export.export("csv", report, tmp_path / "b.csv", overrides=overrides)
    assert any("the overrides differ from those of the last export" in problem for problem in problems)
    named = next(problem for problem in problems if "the overrides differ" in problem)
    assert str(tmp_path / "a.csv") in named and str(tmp_path / "c.csv") in named  # which files to export again


def test_a_refused_export_changes_nothing_and_a_return_to_the_old_overrides_says_nothing(tmp_path):
    """Red team 11 and the fourth newcomer: a Canvas export refused for its assignment had
    recorded its overrides, and the next one lost the warning; going back to the overrides
    every other file was exported with warned that those files disagreed."""
    report = _one_row_report(tmp_path / "report")
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    first.write_text("learner,exercise,points,note\ndee,ch1-stable-softmax,1,first\n")
    second.write_text("learner,exercise,points,note\ndee,ch1-stable-softmax,2,second\n")
    assert export.export("json", report, tmp_path / "points.json", overrides=first)[1] == []
    marker = (report / OVERRIDES_USED).read_bytes()
    with pytest.raises(ValueError, match=r"missing\.csv cannot be read: No such file or directory"):
        export.export("canvas", report, tmp_path / "canvas.csv", overrides=second, roster=tmp_path / "missing.csv",
                      assignment="Homework (1)")
    with pytest.raises(ValueError, match="the roster has no column .Not the homework"):
        export.export("canvas", report, tmp_path / "canvas.csv", overrides=second,
                      roster=write_roster(tmp_path / "roster.csv"), assignment="Not the homework (1)")
    assert (report / OVERRIDES_USED).read_bytes() == marker  # as the last export that was written left it
    _, problems = export.export("csv", report, tmp_path / "points.csv", overrides=second)
    assert any(str(tmp_path / "points.json") in problem for problem in problems)  # the warning is kept
    _, problems = export.export("csv", report, tmp_path / "points.csv", overrides=first)  # back: json agrees
    assert not any("the overrides differ" in problem for problem in problems)
