"""Tests for the grader's bookkeeping (class E of the grading-integrity issue): regrading some
learners keeps the others' rows, a crash mid-class leaves every finished grade on disk and
a rerun continues, notes name their notebook, and predict exercises are completed by
default, scored on request, and flagged when the saved notebook shows the answer was
revealed or read. Each test grades a small class in the sandbox (slow)."""

from __future__ import annotations

import csv
import json
import shutil
from datetime import datetime

import nbformat
import pytest

from attncourse import instructor
from attncourse.checks.predict import ATTEMPTS_MIMETYPE
from attncourse.instructor import COMPLETED, ERROR, FAILED, NOT_ATTEMPTED, PASSED, grading
from attncourse.instructor.gradebook import ledger
from attncourse.instructor.submissions import write_submission_times
from tests.test_instructor_grading import (
    CHAPTER_1,
    CORRECT_SOFTMAX,
    DOUBLING,
    NAIVE_SOFTMAX,
    RIGHT_PREDICTION,
    ROOT,
    SOFTMAX,
    _cells,
    submission,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ledger")]  # one worker grades the class of two once
CHAPTERS = ROOT / "chapters"


def grade(tmp_path, *extra) -> int:
    return instructor.main(["grade", str(tmp_path / "subs"), "--chapters", str(CHAPTERS), "--out",
                            str(tmp_path / "report"), "--assign", f"{SOFTMAX},{DOUBLING}", "--jobs", "1",
                            "--time-limit", "60", *extra])


def rows(tmp_path) -> dict[tuple[str, str], dict]:
    with open(tmp_path / "report" / "grades.csv", newline="", encoding="utf-8") as file:
        return {(row["learner"], row["exercise"]): row for row in csv.DictReader(file)}


def write_class_of_two(folder):
    (folder / "subs").mkdir()
    nbformat.write(submission(CORRECT_SOFTMAX, RIGHT_PREDICTION), folder / "subs" / "ada.ipynb")
    nbformat.write(submission(NAIVE_SOFTMAX, "prediction = 0.3"), folder / "subs" / "bob.ipynb")
    return folder


@pytest.fixture
def class_of_two(tmp_path):
    return write_class_of_two(tmp_path)


@pytest.fixture(scope="module")
def graded_once(tmp_path_factory):
    """The class of two graded once for the module: the tests that begin by grading it start
    from a copy, so that their first ``grade`` finds every learner graded and runs nothing."""
    folder = write_class_of_two(tmp_path_factory.mktemp("class-of-two"))
    assert grade(folder) == 0
    return folder


@pytest.fixture
def graded_class_of_two(tmp_path, graded_once):
    shutil.copytree(graded_once, tmp_path, dirs_exist_ok=True, symlinks=True)
    return tmp_path


def counting_runs(monkeypatch) -> list[str]:
    ran = []
    run_notebook = grading._run_notebook

    def counted(submissions, relative, *args, **kwargs):
        ran.append(relative.name)
        return run_notebook(submissions, relative, *args, **kwargs)

    monkeypatch.setattr(grading, "_run_notebook", counted)
    return ran


def test_regrading_one_learner_keeps_every_other_row_and_when_it_was_graded(graded_class_of_two, monkeypatch, capsys):
    tmp_path = graded_class_of_two
    assert grade(tmp_path) == 0
    first = rows(tmp_path)
    assert first["bob", SOFTMAX]["status"] == FAILED and first["ada", SOFTMAX]["status"] == PASSED
    assert all(row["graded_at"] for row in first.values())
    nbformat.write(submission(CORRECT_SOFTMAX, RIGHT_PREDICTION), tmp_path / "subs" / "bob.ipynb")  # fixed
    ran = counting_runs(monkeypatch)
    assert grade(tmp_path, "--learners", "bob") == 0
    second = rows(tmp_path)
    assert ran == ["bob.ipynb"] and second["bob", SOFTMAX]["status"] == PASSED
    assert second["ada", SOFTMAX] == first["ada", SOFTMAX]  # untouched, with its time
    assert set(second) == set(first)


def test_regrading_one_exercise_of_one_learner_keeps_every_other_row_and_says_what_it_replaced(
        graded_class_of_two, monkeypatch, capsys):
    tmp_path = graded_class_of_two
    first = rows(tmp_path)
    nbformat.write(submission(CORRECT_SOFTMAX, "prediction = 0.3"), tmp_path / "subs" / "bob.ipynb")  # fixed, late
    ran = counting_runs(monkeypatch)
    capsys.readouterr()
    assert instructor.main(["grade", str(tmp_path / "subs"), "--chapters", str(CHAPTERS), "--out",
                            str(tmp_path / "report"), "--assign", SOFTMAX, "--learners", "bob", "--jobs", "1",
                            "--time-limit", "60"]) == 0
    out, err = capsys.readouterr()
    second = rows(tmp_path)
    assert ran == ["bob.ipynb"] and set(second) == set(first)  # bob's prediction row is still there
    assert second["bob", SOFTMAX]["status"] == PASSED and second["bob", DOUBLING] == first["bob", DOUBLING]
    assert all(second[key] == first[key] for key in first if key[0] == "ada")  # not flagged, not changed
    assert f"regraded: 'bob', {SOFTMAX}: failed (1.5 of 3) -> passed (3 of 3)" in out
    assert "3 row(s) of earlier gradings kept as they were" in out and "warning" not in err


def test_late_work_is_flagged_and_penalised_in_the_report_and_every_export_without_running_again(
        graded_class_of_two, monkeypatch, capsys):
    tmp_path = graded_class_of_two
    first = rows(tmp_path)
    write_submission_times(tmp_path / "subs", [("ada", datetime.fromisoformat("2026-12-01T20:00+01:00"), False, ""),
                                               ("bob", datetime.fromisoformat("2026-12-03T09:00+01:00"), True, "")])
    ran = counting_runs(monkeypatch)
    assert grade(tmp_path, "--due", "2026-12-01T23:59+01:00", "--late-penalty", "10") == 0
    late_rows = rows(tmp_path)
    assert ran == []  # a due date and a penalty change no verdict: nothing runs again
    assert late_rows["ada", SOFTMAX]["points"] == first["ada", SOFTMAX]["points"]
    for exercise in (SOFTMAX, DOUBLING):
        assert float(late_rows["bob", exercise]["points"]) == pytest.approx(
            round(float(first["bob", exercise]["points"]) * 0.8, 2))  # 2 days (a part counts): 20%
        assert late_rows["bob", exercise]["late"] == "2 days late: -20% of each exercise's points"
    summary = (tmp_path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "## Late work" in summary and "- bob: 2 days late" in summary and "- ada" not in summary.split(
        "## Late work")[1].split("##")[0]
    assert instructor.main(["export", "json", "--report", str(tmp_path / "report"), "--out",
                            str(tmp_path / "points.json"), "--chapters", str(CHAPTERS)]) == 0
    exported = json.loads((tmp_path / "points.json").read_text(encoding="utf-8"))
    bob = next(learner for learner in exported["learners"] if learner["learner"] == "bob")
    assert sum(row["points"] for row in bob["exercises"]) == pytest.approx(
        sum(float(late_rows["bob", e]["points"]) for e in (SOFTMAX, DOUBLING)))
    assert grade(tmp_path, "--learners", "ada") == 0  # a regrade of a few keeps the class's policy
    assert rows(tmp_path)["bob", SOFTMAX]["late"] == late_rows["bob", SOFTMAX]["late"]
    assert "the last grading's policy is kept" in capsys.readouterr().err
    assert grade(tmp_path, "--no-due") == 0 and rows(tmp_path)["bob", SOFTMAX]["late"] == ""  # none marked


def test_a_learner_whose_name_holds_a_comma_is_regraded_by_that_name(graded_class_of_two, monkeypatch):
    tmp_path = graded_class_of_two
    shutil.copy(tmp_path / "subs" / "bob.ipynb", tmp_path / "subs" / "smith, jo.ipynb")
    ran = counting_runs(monkeypatch)
    assert grade(tmp_path, "--learners", '"smith, jo"', "--learners", "ada") == 0  # quoted as in a CSV row
    assert ran == ["smith, jo.ipynb"]  # ada's notebook, graded and unchanged, is not run again
    assert rows(tmp_path)["smith, jo", SOFTMAX]["status"] == FAILED


def test_a_crash_mid_class_leaves_finished_grades_and_a_rerun_continues(class_of_two, monkeypatch):
    tmp_path = class_of_two
    grade_learner = grading._grade_learner

    def crashes_on_bob(learner, *args, **kwargs):
        if learner == "bob":
            raise KeyboardInterrupt  # the instructor's Ctrl-C, or the machine going down
        return grade_learner(learner, *args, **kwargs)

    monkeypatch.setattr(grading, "_grade_learner", crashes_on_bob)
    with pytest.raises(KeyboardInterrupt):
        grade(tmp_path)
    assert set(rows(tmp_path)) == {("ada", SOFTMAX), ("ada", DOUBLING)}  # ada's grades, on disk
    monkeypatch.setattr(grading, "_grade_learner", grade_learner)
    ran = counting_runs(monkeypatch)
    assert grade(tmp_path) == 0
    assert ran == ["bob.ipynb"] and set(rows(tmp_path)) == {(n, e) for n in ("ada", "bob") for e in (SOFTMAX, DOUBLING)}


def test_a_failure_of_the_grader_s_own_is_tried_again_by_the_next_grading(class_of_two, monkeypatch):
    """The fourth newcomer: "grade them again (--learners)" skipped bob, whose notebooks had
    not changed, and kept his error rows."""
    tmp_path = class_of_two
    grade_learner = grading._grade_learner

    def fails_on_bob(learner, *args, **kwargs):
        if learner == "bob":
            raise MemoryError("the machine ran out of memory")  # a failure that may pass
        return grade_learner(learner, *args, **kwargs)

    monkeypatch.setattr(grading, "_grade_learner", fails_on_bob)
    assert grade(tmp_path) == 0
    assert {rows(tmp_path)["bob", label]["status"] for label in (SOFTMAX, DOUBLING)} == {ERROR}
    monkeypatch.setattr(grading, "_grade_learner", grade_learner)
    ran = counting_runs(monkeypatch)
    assert grade(tmp_path, "--learners", "bob") == 0
    assert ran == ["bob.ipynb"] and rows(tmp_path)["bob", DOUBLING]["status"] == COMPLETED
    ran.clear()
    assert grade(tmp_path) == 0 and ran == []  # graded now: nothing to try again


def test_rerunning_unchanged_grades_nothing_again_and_changed_options_regrade(graded_class_of_two, monkeypatch):
    tmp_path = graded_class_of_two
    assert grade(tmp_path) == 0
    ran = counting_runs(monkeypatch)
    assert grade(tmp_path) == 0 and ran == []
    assert grade(tmp_path, "--score-predictions") == 0 and sorted(ran) == ["ada.ipynb", "bob.ipynb"]
    assert rows(tmp_path)["bob", DOUBLING]["status"] == FAILED


def with_attempts(nb, attempts, source=None):
    """``nb`` as saved after the learner's check calls: their attempts in the check's output."""
    check = _cells(nb, DOUBLING, "check")[0]
    check.outputs = [nbformat.v4.new_output("display_data", data={
        ATTEMPTS_MIMETYPE: {"exercise": DOUBLING, "attempts": attempts}, "text/plain": ""})]
    if source is not None:
        _cells(nb, DOUBLING, "stub")[0].source = source
    return nb


def test_predict_exercises_are_completed_by_default_and_flagged_when_revealed_or_read(tmp_path):
    (tmp_path / "subs").mkdir()
    right = {"value": 0.4053, "right": True, "revealed": False}
    learners = {
        "honest": with_attempts(submission(CORRECT_SOFTMAX, RIGHT_PREDICTION), [{"value": 0.3, "right": False, "revealed": False}, right]),
        "revealed": with_attempts(submission(CORRECT_SOFTMAX, RIGHT_PREDICTION), [
            {"value": 0.3, "right": False, "revealed": False}, {"value": 0.1, "right": False, "revealed": True}, right]),
        "reader": with_attempts(submission(CORRECT_SOFTMAX), [right], source=(
            "from attncourse.checks.predict import PREDICTIONS\n"
            f"prediction = PREDICTIONS[{DOUBLING!r}].answer")),
        "wrong": submission(CORRECT_SOFTMAX, "prediction = 0.3"),
        "blank": submission(CORRECT_SOFTMAX),
    }
    for name, nb in learners.items():
        nbformat.write(nb, tmp_path / "subs" / f"{name}.ipynb")
    assert grade(tmp_path) == 0
    graded = rows(tmp_path)
    assert [graded[name, DOUBLING]["status"] for name in learners] == [COMPLETED] * 4 + [NOT_ATTEMPTED]
    assert "first attempt: 0.3, 2 in all" in graded["honest", DOUBLING]["message"]
    assert graded["honest", DOUBLING]["review"] == ""
    assert graded["revealed", DOUBLING]["review"] == (
        "revealed.ipynb: the check showed the answer after 2 misses, before the first right attempt")
    assert graded["reader", DOUBLING]["review"].startswith("reader.ipynb: its source reads the course's declarations")
    summary = (tmp_path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "revealed.ipynb: the check showed the answer" in summary


def test_the_ledger_holds_one_file_per_learner(graded_class_of_two):
    tmp_path = graded_class_of_two
    assert grade(tmp_path) == 0
    files = sorted((tmp_path / "report" / "learners").glob("*.json"))
    assert [json.loads(f.read_text())["learner"] for f in files] == ["ada", "bob"]
    assert CHAPTER_1.exists()


def test_a_misspelt_learner_is_refused_and_rows_of_a_renamed_learner_or_other_options_are_flagged(
        graded_class_of_two, capsys):
    """Red team E (redC): a regrade names learners that exist; nothing graded is dropped, and
    what may be out of date says so in the report and the exports."""
    tmp_path = graded_class_of_two
    nbformat.write(submission(CORRECT_SOFTMAX, 'prediction = "about 0.4"'), tmp_path / "subs" / "cy.ipynb")
    assert grade(tmp_path) == 0
    assert rows(tmp_path)["cy", DOUBLING]["status"] == FAILED  # not a number: not completed
    (tmp_path / "subs" / "bob.ipynb").rename(tmp_path / "subs" / "rob.ipynb")  # bob renamed his file
    capsys.readouterr()
    assert grade(tmp_path, "--learners", "robb") == 2  # a typo: nothing graded, nothing changed
    assert "no learner 'robb' in" in capsys.readouterr().err
    assert grade(tmp_path, "--learners", "rob", "--score-predictions") == 0  # and a changed option
    graded = rows(tmp_path)
    assert set(graded) == {(n, e) for n in ("ada", "bob", "cy", "rob") for e in (SOFTMAX, DOUBLING)}  # nothing lost
    assert graded["bob", SOFTMAX]["review"] == ledger.STALE_LEARNER
    assert graded["ada", SOFTMAX]["review"] == ledger.STALE_OPTIONS and graded["rob", SOFTMAX]["review"] == ""
    assert f"'bob': {ledger.STALE_LEARNER}" in capsys.readouterr().err
    assert instructor.main(["export", "csv", "--report", str(tmp_path / "report"), "--out",
                            str(tmp_path / "points.csv"), "--chapters", str(CHAPTERS)]) == 0
    assert f"'ada', 'cy': {ledger.STALE_OPTIONS}" in capsys.readouterr().err  # the export says so too


def test_a_regrade_names_the_kept_rows_whose_late_penalty_it_changed():
    """The newcomer's finding: eve's fix, put in place later, made her 3 days late instead of 2;
    her other rows, kept as graded, lost points, and the regrade said they were kept as they were."""
    def row(exercise, graded_at, points, late):
        return instructor.Grade("eve", exercise, "passed", "", "", graded_at=graded_at, points=points, max_points=1.0, late=late)

    before = [row("a", "t1", 0.0, "2 days late"), row("b", "t0", 0.8, "2 days late"), row("c", "t0", 0.0, "2 days late")]
    after = [row("a", "t2", 0.7, "3 days late"), row("b", "t0", 0.7, "3 days late"), row("c", "t0", 0.0, "3 days late")]
    assert ledger.regraded(before, after) == [
        "'eve', a: passed (0 of 1) -> passed (0.7 of 1)",
        "'eve', b: kept as graded, but 0.8 -> 0.7 of 1: 3 days late (was: 2 days late)",
        "1 row(s) of earlier gradings kept as they were"]


def test_a_regraded_exercise_keeps_its_place_among_the_learner_s_rows(tmp_path):
    """The newcomers: a one-exercise regrade moved its row last in grades.csv and the feedback."""
    def row(exercise, status):
        return instructor.Grade("eve", exercise, status, "", "eve.ipynb")

    book = ledger.Ledger(tmp_path / "report", "")
    book.save("eve", "k1", [row("a", FAILED), row("b", FAILED), row("c", FAILED)], [])
    book.save("eve", "k2", [row("a", PASSED), row("d", PASSED)], [])
    rows, _ = book.everything([])
    assert [(r.exercise, r.status) for r in rows] == [("a", PASSED), ("b", FAILED), ("c", FAILED), ("d", PASSED)]


def test_grade_warns_of_every_row_that_is_no_grade(tmp_path, monkeypatch, capsys):
    """The third newcomer: a failure of the grader's own on one exercise exited 0, silent."""
    failed = instructor.Grade("kim", SOFTMAX, ERROR, "the grader failed on this exercise (KeyError: 'x'): not a grade",
                              "kim.ipynb", "", "2026-11-26T02:00:00+00:00")

    def graded_with_a_failure(out, *args, **kwargs):
        out.mkdir(parents=True, exist_ok=True)
        (out / "grades.csv").write_text("")
        (out / "summary.md").write_text("# Grades\n")
        return [failed], out / "grades.csv", out / "summary.md"

    monkeypatch.setattr(grading, "grade_into", graded_with_a_failure)
    (tmp_path / "submissions").mkdir()
    assert instructor.main(["grade", str(tmp_path / "submissions"), "--out", str(tmp_path / "report")]) == 0
    assert "warning: 'kim': row(s) that are no grade (error" in capsys.readouterr().err

