"""Tests for ``attncourse.instructor.gradebook.late``: late work against the due date, a
part of a day counting as a day, the penalty only when the instructor gives one, capped."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from attncourse.instructor.gradebook import late, points
from attncourse.instructor.model import Grade
from attncourse.instructor.submissions import IMPORT_RECORD, file_digests, write_submission_times

DUE = datetime(2026, 12, 1, 23, 59, tzinfo=timezone(timedelta(hours=1)))
SOFTMAX = "ch1-stable-softmax"


def learner(after: timedelta | None, flagged: bool | None = None, source: str = "import") -> dict:
    return {"submitted_at": (DUE + after).isoformat() if after is not None else "", "source": source,
            "late_in_lms": flagged}


@pytest.mark.parametrize(("after", "days"), [
    (timedelta(seconds=-1), 0), (timedelta(0), 0), (timedelta(seconds=1), 1), (timedelta(hours=24), 1),
    (timedelta(hours=24, seconds=1), 2), (timedelta(days=30), 30)])
def test_a_part_of_a_day_late_counts_as_a_day(after, days):
    marked = late.lateness(learner(after), late.Policy(DUE, per_day=0.1, cap=0.5))
    assert marked.get("late_penalty", 0.0) == pytest.approx(min(0.5, 0.1 * days))
    assert (f"{days} day" in marked["late"]) == (days > 0) and bool(marked["late"]) == (days > 0)


def test_late_work_is_flagged_and_penalised_only_when_the_instructor_gives_a_penalty():
    unpenalised = late.lateness(learner(timedelta(days=2)), late.Policy(DUE))
    assert unpenalised["late"] == "2 days late" and unpenalised["late_penalty"] == 0.0
    assert late.lateness(learner(None, flagged=True), late.Policy(DUE))["late"].startswith("marked late by")
    unknown = late.lateness(learner(None, flagged=False), late.Policy(DUE))  # not late, says the LMS: listed
    assert unknown == {"late": "submission time unknown (the import recorded none): not marked late by the "
                               "learning platform"}


def test_a_learner_reads_nothing_of_a_time_nobody_recorded_and_what_a_platform_marked():
    from attncourse.instructor.gradebook import export, feedback

    def row(after, flagged):
        return Grade("jo", SOFTMAX, "passed", "", "", points=3.0, max_points=3.0,
                     **late.lateness(learner(after, flagged), late.Policy(DUE, 0.1)))

    for flagged in (None, False):
        unknown = row(None, flagged)
        assert unknown.late.startswith("submission time unknown") and late.for_the_learner(unknown) == ""
        assert feedback.assignment_line([unknown], None) == "Exercises ch1-stable-softmax."
        assert "Late" not in export.gradescope_results([unknown], {})["tests"][0]["output"]
    marked = row(None, True)
    assert feedback.assignment_line([marked], None) == (
        "Exercises ch1-stable-softmax. Marked late by the learning platform, with no submission time: no penalty "
        "without it (import with --times).")
    assert "Late: marked late by" in export.gradescope_results([marked], {})["tests"][0]["output"]


def test_a_penalty_takes_its_share_of_what_each_row_earned():
    row = Grade("bob", SOFTMAX, "failed", "", "", inputs_right=4, inputs=8, late_penalty=0.2)
    assert points.earned(row) == pytest.approx(points.points_of(SOFTMAX) * 0.5 * 0.8)


def test_a_due_date_needs_its_offset_and_a_penalty_is_a_percentage():
    with pytest.raises(ValueError, match="no offset"):
        late.Policy(datetime(2026, 12, 1))
    with pytest.raises(ValueError, match="from 0 to 100"):
        late.Policy(DUE, per_day=1.5)


def test_the_times_come_from_the_import_else_from_the_notebooks(tmp_path):
    for name in ("ada", "bob"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ch1.ipynb").write_text("{}")
    os.utime(tmp_path / "bob" / "ch1.ipynb", (0, (DUE + timedelta(hours=3)).timestamp()))
    write_submission_times(tmp_path, [("ada", DUE - timedelta(hours=1), False, "ada.ipynb")])
    kept = json.loads(late.recorded(tmp_path, late.Policy(DUE, 0.1)))
    assert kept["learners"]["ada"]["source"] == "import" and kept["learners"]["bob"]["source"] == "file time"
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / late.LATE).write_text(late.recorded(tmp_path, late.Policy(DUE, 0.1)))
    rows = late.marked([Grade("ada", SOFTMAX, "passed", "", ""), Grade("bob", SOFTMAX, "passed", "", "")],
                       tmp_path / "report")
    assert [(row.late, row.late_penalty) for row in rows] == [
        ("", 0.0), ("1 day late: -10% of each exercise's points", 0.1)]
    assert "(file time)" in rows[1].submitted_at


def test_a_notebook_put_in_place_after_the_import_has_its_file_s_time_not_the_import_s(tmp_path):
    """(Step 6 of the guide: a late notebook copied over the one the import wrote.)"""
    for name in ("ada", "bob"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ch1.ipynb").write_text("{}")
    write_submission_times(tmp_path, [(name, DUE - timedelta(hours=1), False, "") for name in ("ada", "bob")])
    (tmp_path / IMPORT_RECORD).write_text(json.dumps({"files": file_digests(tmp_path)}))
    (tmp_path / "bob" / "ch1.ipynb").write_text('{"cells": []}')
    os.utime(tmp_path / "bob" / "ch1.ipynb", (0, (DUE + timedelta(hours=3)).timestamp()))
    kept = json.loads(late.recorded(tmp_path, late.Policy(DUE, 0.1)))["learners"]
    assert kept["ada"]["source"] == "import" and kept["ada"]["late_in_lms"] is False
    assert kept["bob"] == {"submitted_at": (DUE + timedelta(hours=3)).astimezone(timezone.utc).isoformat(),
                           "source": "file time, changed since the import", "late_in_lms": None}
    assert late.lateness(kept["bob"], late.Policy(DUE, 0.1))["late"].startswith("1 day late")
    marked = late.lateness(kept["bob"], late.Policy(DUE, 0.1))
    assert late.timed_by_hand([Grade("bob", SOFTMAX, "passed", "", "", **marked)]) == ["bob"]  # grade warns of them


def test_files_grade_passes_over_or_a_notebook_removed_keep_the_import_s_time(tmp_path):
    """Red team 9: a Finder's .DS_Store, Jupyter's checkpoints, or a duplicate removed as the
    report asked, timed on-time learners by the import's own file times: -80%."""
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "ch1.ipynb").write_text("{}")
    (tmp_path / "ada" / "draft.ipynb").write_text("{}")
    write_submission_times(tmp_path, [("ada", DUE - timedelta(hours=1), False, "")])
    (tmp_path / IMPORT_RECORD).write_text(json.dumps({"files": file_digests(tmp_path)}))
    (tmp_path / "ada" / "draft.ipynb").unlink()
    (tmp_path / "ada" / ".DS_Store").write_text("finder")
    (tmp_path / "ada" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "ada" / ".ipynb_checkpoints" / "ch1-checkpoint.ipynb").write_text("{}")
    os.utime(tmp_path / "ada" / "ch1.ipynb", (0, (DUE + timedelta(days=8)).timestamp()))
    kept = json.loads(late.recorded(tmp_path, late.Policy(DUE, 0.1)))["learners"]["ada"]
    assert kept["source"] == "import" and kept["submitted_at"] == (DUE - timedelta(hours=1)).isoformat()


def test_the_feedback_says_when_late_work_was_submitted_and_what_it_cost():
    from attncourse.instructor.gradebook.feedback import assignment_line

    rows = [Grade("bob", SOFTMAX, "passed", "", "", graded_at="2026-12-04T10:00:00+00:00",
                  submitted_at="2026-12-03T09:00+01:00 (import)", late="2 days late: -20% of each exercise's points")]
    assert assignment_line(rows, "Homework 1 (4321)") == (
        "Homework 1 (exercises ch1-stable-softmax), graded on 2026-12-04. Submitted 2026-12-03T09:00+01:00: "
        "2 days late: -20% of each exercise's points.")


def test_a_learner_the_import_has_no_time_for_keeps_no_time(tmp_path):
    """(Not the notebook's file time, which is when import wrote it: a class late by the import's date.)"""
    (tmp_path / "jo").mkdir()
    (tmp_path / "jo" / "ch1.ipynb").write_text("{}")
    write_submission_times(tmp_path, [("jo", None, None, "jo_1001_5001_ch1.ipynb")])
    kept = json.loads(late.recorded(tmp_path, late.Policy(DUE, 0.1)))["learners"]["jo"]
    assert kept["submitted_at"] == "" and kept["source"] == "import"
    marked = late.lateness(kept, late.Policy(DUE, 0.1))
    assert marked["late"].startswith("submission time unknown") and "late_penalty" not in marked


def test_gradescope_says_a_late_pass_is_a_pass_and_what_lateness_cost():
    from attncourse.instructor.gradebook import export

    late_pass = Grade("eve", SOFTMAX, "passed", "", "", points=2.4, max_points=3.0, late="2 days late: -20%")
    overridden = Grade("jo", SOFTMAX, "failed", "", "", points=3.0, max_points=3.0, override="regraded by hand")
    (test,) = export.gradescope_results([late_pass], {})["tests"]
    assert test["status"] == "passed" and "Late: 2 days late: -20%." in test["output"]
    assert export.gradescope_results([overridden], {})["tests"][0]["status"] == "passed"  # what the instructor gave


def test_a_late_mark_without_a_time_says_the_penalty_asked_for_is_not_applied():
    marked = late.lateness(learner(None, flagged=True), late.Policy(DUE, per_day=0.1))
    assert "no penalty without it (import with --times)" in marked["late"] and "late_penalty" not in marked
    rows = [Grade("jo", SOFTMAX, "passed", "", "", **marked), Grade("al", SOFTMAX, "passed", "", "")]
    assert late.unpenalised(rows) == ["jo"]  # grade warns of them on its standard error


def test_a_submission_time_is_shown_in_the_due_date_s_offset():
    """(The newcomer's finding: due at +01:00, eve's time was shown in UTC.)"""
    marked = late.lateness({"submitted_at": "2026-12-03T07:00:00+00:00", "source": "import"}, late.Policy(DUE))
    assert marked["submitted_at"].startswith("2026-12-03T08:00+01:00")


def test_a_notebook_renamed_in_its_folder_keeps_the_import_s_time(tmp_path):
    """Red team 10: mv ada/attention.ipynb ada/homework.ipynb made an on-time learner late."""
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "attention.ipynb").write_text("{}")
    write_submission_times(tmp_path, [("ada", DUE - timedelta(hours=1), False, "")])
    (tmp_path / IMPORT_RECORD).write_text(json.dumps({"files": file_digests(tmp_path)}))
    (tmp_path / "ada" / "attention.ipynb").rename(tmp_path / "ada" / "homework.ipynb")
    os.utime(tmp_path / "ada" / "homework.ipynb", (0, (DUE + timedelta(days=8)).timestamp()))
    assert json.loads(late.recorded(tmp_path, late.Policy(DUE, 0.1)))["learners"]["ada"]["source"] == "import"


@pytest.mark.parametrize("copy", ["ada/attention-Copy1.ipynb", "ada/original/attention.ipynb"])
def test_a_copy_of_an_imported_notebook_keeps_the_import_s_time(tmp_path, copy):
    """Red team 11: cp ada/attention.ipynb ada/original/ (a backup), or Jupyter's -Copy1
    beside it, timed an on-time learner by the moment of copying: 8 days late, -80%."""
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "attention.ipynb").write_text("{}")
    write_submission_times(tmp_path, [("ada", DUE - timedelta(hours=1), False, "")])
    (tmp_path / IMPORT_RECORD).write_text(json.dumps({"files": file_digests(tmp_path)}))
    (tmp_path / copy).parent.mkdir(exist_ok=True)
    (tmp_path / copy).write_bytes((tmp_path / "ada" / "attention.ipynb").read_bytes())
    os.utime(tmp_path / copy, (0, (DUE + timedelta(days=8)).timestamp()))
    assert json.loads(late.recorded(tmp_path, late.Policy(DUE, 0.1)))["learners"]["ada"]["source"] == "import"


def test_a_notebook_with_new_content_beside_the_imported_one_is_timed_by_its_file(tmp_path):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "attention.ipynb").write_text("{}")
    write_submission_times(tmp_path, [("ada", DUE - timedelta(hours=1), False, "")])
    (tmp_path / IMPORT_RECORD).write_text(json.dumps({"files": file_digests(tmp_path)}))
    (tmp_path / "ada" / "original").mkdir()
    (tmp_path / "ada" / "original" / "attention.ipynb").write_text('{"cells": []}')  # not what the import wrote
    os.utime(tmp_path / "ada" / "original" / "attention.ipynb", (0, (DUE + timedelta(days=8)).timestamp()))
    kept = json.loads(late.recorded(tmp_path, late.Policy(DUE, 0.1)))["learners"]["ada"]
    assert kept["source"] == late.CHANGED_SINCE_IMPORT
    assert late.lateness(kept, late.Policy(DUE, 0.1))["late"].startswith("8 days late")
