"""Tests for ``attncourse.instructor.gradebook.feedback``: one file per learner in HTML and Markdown with
the same content; the HTML self-contained and accessible; no solution, hidden-test code or
hidden input in any of them (the test class's files, written by the guide's walkthrough)."""

from __future__ import annotations

import ast
import csv
import html
import io
import re

import nbformat
import pytest

from attncourse.checks.predict import PREDICTIONS, format_number
from attncourse.instructor.course.tags import HIDDEN_TEST, SOLUTION, role_of
from attncourse.instructor.gradebook import feedback, points, report
from attncourse.instructor.model import Grade
from tests.gradebook_class import (
    ASSIGNED,
    DOUBLING,
    EXPECTED_POINTS,
    EXPECTED_STATUS,
    ROOT,
    exported_points,
    walkthrough,
)

HOSTILE_NAME = '<script>alert("x")</script> & | *bold*'


def rows_of(learner=HOSTILE_NAME):
    grades = [Grade(learner, "ch1-stable-softmax", "failed", "m", "n.ipynb", inputs_right=4, inputs=8,
                    feedback="4 of 8 inputs right; not right on: the large scores [1000, 999, 0]; hidden test 1. "
                             "Hint: subtract each row's maximum <b>first</b>."),
              Grade(learner, "ch1-predict-doubling", "completed", "m", "n.ipynb", feedback="you predicted 0.3")]
    return points.scored(grades)


def test_the_html_is_self_contained_accessible_and_escapes_what_the_learner_wrote():
    page, _ = feedback.render(HOSTILE_NAME, rows_of(), {"ch1-stable-softmax": "Implement: a softmax"}, "A course")
    assert page.startswith("<!DOCTYPE html>") and '<html lang="en">' in page and '<meta charset="utf-8">' in page
    assert "<h1>" in page and page.count("<h2") == 2 and "<caption>" in page and 'scope="col"' in page
    assert "prefers-color-scheme: dark" in page and "color-scheme" in page
    for external in ("http://", "https://", "<script", "<link", "src=", "@import", "url("):
        assert external not in page
    assert "&lt;script&gt;alert(" in page and "&lt;b&gt;first&lt;/b&gt;" in page and "<b>" not in page


def test_the_markdown_holds_the_same_content_escaped():
    _, text = feedback.render(HOSTILE_NAME, rows_of(), {}, "A course")
    assert text.startswith("# Feedback for ") and "<script>" not in text and "\\<script\\>" in text
    assert "**2.5 of 4 points**" in text and "| 1.5 / 3 |" in text and "hidden test 1" in text


def test_points_an_instructor_set_are_said_to_be_theirs_beside_what_the_grader_found():
    nothing = Grade("a", "ch1-stable-softmax", "not attempted", "", "")
    decided = points.scored([nothing], {("a", "ch1-stable-softmax"): (2.0, "answered on paper")})[0]
    assert feedback.result(points.scored([nothing])[0]) == "not attempted"
    assert feedback.result(decided) == "not attempted; points set by your instructor"
    _, text = feedback.render("a", [decided], {}, "A course")
    assert "**Result:** not attempted; points set by your instructor. **Points:** 2 of 3." in text


def test_a_hidden_test_message_is_cut_where_no_feedback_was_recorded():
    grade = Grade("a", "ch1-stable-softmax", "failed",
                  "check message. hidden test: a hidden test raised AssertionError: secret text", "n")
    assert feedback.learner_message(grade) == "check message. A hidden test did not pass."


# ---------------------------------------------------------------------------------------
# The test class's feedback files (the walkthrough grades the class once per session)



def _course_cells(role: str) -> list[str]:
    return [cell.source for path in sorted((ROOT / "chapters").glob("*.ipynb"))
            for cell in nbformat.read(path, as_version=4).cells
            if cell.cell_type == "code" and role_of(cell) == role]


def _non_trivial_lines(sources: list[str]) -> set[str]:
    """Lines of code long enough to be telling (not `return x`, `else:` or a bracket)."""
    return {line.strip() for source in sources for line in source.splitlines()
            if len(line.strip()) >= 16 and not line.strip().startswith("#")}


def _string_literals(sources: list[str]) -> set[str]:
    found = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) >= 8
                    and not re.fullmatch(r"ch\d+-[a-z0-9-]+", node.value)):  # an exercise's label is no secret
                found.add(node.value)
    return found


@pytest.fixture(scope="module")
def files():
    folder, ran = walkthrough()
    assert all(done.returncode == 0 for _, done in ran), ran[-1]
    return {path.name: path.read_text(encoding="utf-8") for path in sorted((folder / "feedback").iterdir())}


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
def test_one_feedback_file_per_learner_in_both_formats(files):
    assert set(files) == {f"{learner}.{suffix}" for learner in EXPECTED_POINTS for suffix in ("html", "md")} | {
        report.INDEX}


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
def test_the_index_says_which_files_are_whose(files):
    rows = list(csv.DictReader(io.StringIO(files[report.INDEX])))
    assert [(row["learner"], row["html"], row["markdown"]) for row in rows] == [
        (learner, f"{learner}.html", f"{learner}.md") for learner in EXPECTED_POINTS]


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
def test_a_completed_prediction_reads_the_answer_not_try_again(files):
    answer = f"the answer is {format_number(PREDICTIONS[DOUBLING].answer)}"
    assert answer in files["bob.md"] and "try again" not in files["bob.md"]  # a wrong number, counted
    assert answer not in files["cy.md"]  # none made: the hint, never the answer


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
@pytest.mark.parametrize("learner", sorted(EXPECTED_POINTS))
def test_each_file_shows_every_exercise_with_its_result_and_points(files, learner):
    total = sum(exported_points(learner, label) for label in ASSIGNED)
    for suffix in ("html", "md"):
        text = files[f"{learner}.{suffix}"]
        assert f"{total:g} of 6 points" in text
        for label in ASSIGNED:
            result = feedback.RESULTS[EXPECTED_STATUS[learner][label]]
            assert f"Exercise {label}" in text and result in text
            assert f"{exported_points(learner, label):g} of {points.points_of(label):g}" in text


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
def test_the_partial_learner_reads_which_inputs_failed_and_a_hint(files):
    text = files["bob.md"]
    assert "4 of 8 inputs right" in text and "hidden test 1" in text
    assert "**Hint:** softmax(s) = softmax(s - c)" in text
    assert "Doubling both vectors" in files["cy.md"]  # the prediction's own hint, for one who made none
    assert "Your instructor's note" in files["dee.html"] and "come and see me" in files["dee.html"]


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
def test_the_inputs_counted_say_what_they_add_to_the_check_s_own(files):
    assert "matches the reference on 7 inputs" in files["ada.md"]  # the check's message counts its own
    assert "8 of 8 inputs right (the check's 7 and 1 hidden test)" in files["ada.md"]
    assert "Attention homework (exercises ch1-stable-softmax, ch1-predict-doubling, ch1-pool-prefers-badminton), " \
           "graded on 20" in files["ada.md"]


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
def test_no_feedback_file_holds_a_solution_a_hidden_test_or_its_inputs(files):
    solutions, hidden = _course_cells(SOLUTION), _course_cells(HIDDEN_TEST)
    assert solutions and hidden
    forbidden = _non_trivial_lines(solutions) | _non_trivial_lines(hidden) | _string_literals(hidden)
    assert len(forbidden) > 100
    for name, text in files.items():
        plain = html.unescape(text) if name.endswith(".html") else re.sub(r"\\(.)", r"\1", text)
        leaked = sorted(line for line in forbidden if line in plain)
        assert not leaked, f"{name} holds {leaked[:3]}"
        assert "1e+308" not in plain and "1e308" not in plain  # the hidden test's input


def test_the_hint_is_shown_once_and_a_completed_prediction_earns_its_point_in_green():
    grades = [Grade("bob", "ch1-stable-softmax", "failed", "m", "n.ipynb", graded_at="2025-03-14T10:00:00+00:00",
                    inputs_right=4, inputs=8, hint="subtract each row's maximum first.",
                    feedback="gave nan. Hint: subtract each row's maximum first. 4 of 8 inputs right."),
              Grade("bob", "ch1-predict-doubling", "completed", "m", "n.ipynb", feedback="you predicted 0.3",
                    graded_at="2025-03-15T09:00:00+00:00")]
    page, text = feedback.render("bob", points.scored(grades), {}, "A course", "Attention homework (4321)")
    for shown in (html.unescape(page), text.replace("\\", "")):
        assert shown.count("subtract each row's maximum first") == 1
        assert "Attention homework (exercises ch1-stable-softmax, ch1-predict-doubling), graded on 2025-03-15" in shown
        assert "(4321)" not in shown
    assert '<td class="full">completed</td><td class="points">1 / 1</td>' in page
