"""The instructor guide's walkthrough of a term, run as written: every command of its
section "The whole term, step by step", in order, on the test class (tests/gradebook_class.py),
succeeds and does what the guide says. The other gradebook tests read the files it wrote."""

from __future__ import annotations

import subprocess

import nbformat
import pytest

from attncourse.instructor.course.tags import exercise_labels
from attncourse.instructor.gradebook import points
from tests.gradebook_class import (
    ASSIGNED,
    EXPECTED_POINTS,
    GUIDE,
    ROOT,
    guide_commands,
    walkthrough,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gradebook-term")]


@pytest.fixture(scope="module")
def term():
    return walkthrough()


def outputs(term, word: str) -> list:
    return [done for command, done in term[1] if word in command]


def test_the_walkthrough_covers_the_whole_term():
    commands = guide_commands()
    for step in (" list", " student ", " grade ", "Flagged for review", "overrides.csv", "--learners",
                 "export feedback", "export canvas", "export gradescope", " autograder ", "export csv", "export json"):
        assert any(step in command for command in commands), step


def test_every_command_of_the_guide_succeeds(term):
    _, ran = term
    assert len(ran) == len(guide_commands())
    for command, done in ran:
        assert done.returncode == 0, f"{command}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}"


def test_list_shows_each_exercise_s_points(term):
    listed = outputs(term, "instructor list")[0].stdout
    for label in ASSIGNED:
        line = next(line for line in listed.splitlines() if label in line)
        assert f"{points.points_of(label):g} pt" in line


def test_the_handout_holds_the_assigned_exercises(term):
    folder, _ = term
    handout = nbformat.read(folder / "handout" / "01_dot_product_similarity.ipynb", as_version=4)
    assert sorted(exercise_labels(handout)) == sorted(ASSIGNED)


def test_review_shows_the_flagged_learner_and_the_report_its_points(term):
    folder, _ = term
    flagged = outputs(term, "Flagged for review")[0].stdout
    assert "dee, ch1-stable-softmax" in flagged and "called the course's own" in flagged
    assert "- bob," not in flagged and "- ada," not in flagged
    summary = (folder / "report" / "summary.md").read_text(encoding="utf-8")
    for learner, earned in EXPECTED_POINTS.items():
        assert f"- {learner}: {sum(earned.values()):g} of 6" in summary
    assert "Distribution of the totals: 0-20%: 1, 20-40%: 0, 40-60%: 2, 60-80%: 1, 80-100%: 1." in summary


def test_regrading_one_learner_keeps_everyone_else_s_rows(term):
    regrade = outputs(term, "--learners eve")[0]
    assert "eve" in regrade.stdout and "| ada |" in regrade.stdout  # the report, rebuilt with every learner


def test_the_flagged_section_is_printed_alone(term):
    flagged = outputs(term, "Flagged for review")[0].stdout
    assert [line for line in flagged.splitlines() if line.startswith("## ")] == ["## Flagged for review"]


def test_the_guide_names_what_the_set_up_and_the_handout_need():
    guide = GUIDE.read_text(encoding="utf-8")
    set_up, handout = guide[:guide.index("## The exercises")], guide[guide.index("### Step 2"):guide.index("### Step 3")]
    assert "make system-packages" in set_up and "bubblewrap" in set_up
    assert "python -m site_ext.set_repository https://github.com/OWNER/NAME" in handout



def test_what_the_term_writes_at_the_root_is_kept_out_of_git():
    """The third newcomer: one `git add .` on a published fork would have committed the class."""
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "handout/x.ipynb", "submissions/ada/x.ipynb",
                              "report/grades.csv", "feedback/ada.html", "gradescope/ada/results.json",
                              "overrides.csv", "canvas_import.csv", "points.csv", "points.json", "autograder.zip",
                              # the platform's downloads (the fourth newcomer): submissions, roster, times
                              "submissions.zip", "export.zip", "canvas_export.csv", "page.json", "page2.json"],
                             cwd=ROOT, capture_output=True, text=True)
    assert len(ignored.stdout.split()) == 15, ignored.stdout
