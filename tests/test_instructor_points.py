"""Tests for ``attncourse.instructor.gradebook.points``: points declared next to each check, partial
credit judged one input at a time on recorded data (no kernels: the records are made here
by the sandbox's own recorder, as in tests/test_instructor_wire.py), totals and the class's
distribution, the instructor's overrides."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attncourse import checks
from attncourse.checks import core, wire
from attncourse.instructor.gradebook import points
from attncourse.instructor.gradebook.report import summary
from attncourse.instructor.model import Grade

SOFTMAX = "ch1-stable-softmax"
HIDDEN = '''@check.hidden_test("ch1-stable-softmax")
def _():
    extreme = stable_softmax(np.array([[1e308, -1e308, 0.0]]))
    assert np.allclose(extreme, [[1.0, 0.0, 0.0]]), "scores near the largest float64"
'''
HIDDEN_ARGS = (np.array([[1e308, -1e308, 0.0]]),)
HIDDEN_INPUTS = {"modules": {"np": "numpy"}, "values": [],
                 "calls": [{"function": "stable_softmax", "args": wire.encode(HIDDEN_ARGS), "kwargs": wire.encode({})}]}
IMPLEMENT = {"ch1-stable-softmax", "ch2-stationary-distribution", "ch3-attention-head", "ch4-multi-head-attention",
             "ch5-attention-rollout", "ch6-conv1d-as-attention", "ch7-layer-attention", "ch8-rope",
             "ch9-online-softmax"}


def right(scores):
    scores = np.asarray(scores, dtype=float)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def naive(scores):  # overflows on 3 of the check's 7 inputs and on the hidden test
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True)


def stub(scores):
    raise NotImplementedError("write stable_softmax")


def recorded(fn) -> dict:
    """The record the grader's cell sends for ``fn`` as the answer (as JSON travels)."""
    record = {"schema": wire.SCHEMA, "exercise": SOFTMAX, "answers": [wire.encode(fn)], "missing": "",
              "names": {"stable_softmax": wire.encode(fn)}, "calls": [], "references": []}
    recorder = wire._Recorder(record)
    recorder.check(SOFTMAX, [fn], {id(fn): "answer:0"})
    recorder.call("name:stable_softmax", fn, HIDDEN_ARGS, {})
    recorder.look_for_references()  # as the grader's cell does once every call is made
    return json.loads(json.dumps(record))


def view(fn) -> dict:
    return points.learner_view(SOFTMAX, recorded(fn), [HIDDEN], HIDDEN_INPUTS)


def test_every_exercise_declares_its_points_next_to_its_check():
    assert set(checks.load_all()) == set(core.POINTS)
    assert {label for label, worth in core.POINTS.items() if worth == 3} == IMPLEMENT
    assert all(core.POINTS[label] == 1 for label in checks.predict.PREDICTIONS)
    assert points.points_of("not-an-exercise") == 1  # the default


@pytest.mark.parametrize("worth", [0, -1, True, "3"])
def test_an_exercise_must_be_worth_a_positive_number_of_points(worth):
    def nothing(run):
        return ""

    with pytest.raises(ValueError, match="positive number of points"):
        core.exercise("ch0-nothing", points=worth)(nothing)
    assert "ch0-nothing" not in checks.CHECKS


def test_a_check_sees_one_input_at_a_time_only_when_asked():
    cases = [("first", 1), ("second", 2), ("third", 3)]
    assert core.inputs(cases) == cases
    with core.one_input(1) as selection:
        assert core.inputs(cases) == [("second", 2)]
    assert selection.described == ["first", "second", "third"]
    assert core.inputs(cases) == cases  # the selection ends with the block


def test_the_sandbox_records_every_input_even_after_a_wrong_one():
    calls = recorded(naive)["calls"]
    check_calls = [call for call in calls if call["function"] == "answer:0"]
    assert len(check_calls) == 7  # the check stops at its fifth input; the record does not
    assert sum("returned" in call["outcome"] for call in check_calls) == 7


def test_a_wrong_answer_earns_the_fraction_of_inputs_it_gets_right_named_as_the_learner_sees_them():
    found = view(naive)
    assert (found["inputs_right"], found["inputs"]) == (4, 8)
    feedback = found["feedback"]
    assert "4 of 8 inputs right" in feedback
    for described in ("the large scores [1000, 999, 0]", "the very negative scores [-1000, -1001]", "hidden test 1"):
        assert described in feedback
    assert "the scores [1, 2, 3]" not in feedback.split("not right on:")[1]
    # the hidden test by its number only: neither its message nor its input
    assert "largest float64" not in feedback and "308" not in feedback


def test_a_right_answer_earns_every_input_and_a_stub_none():
    assert view(right)["inputs_right"] == view(right)["inputs"] == 8
    untouched = view(stub)
    assert untouched["inputs_right"] == 0 and "NotImplementedError" in untouched["feedback"]
    assert "inputs right" not in untouched["feedback"]


def test_an_input_that_runs_out_of_time_ends_the_sweep_and_the_rest_earn_nothing(monkeypatch):
    monkeypatch.setenv(core.TIMEOUT_VARIABLE, "0.5")

    def loops_on_large_scores(scores):
        if np.max(scores) > 100:
            while True:
                pass
        return right(scores)

    found = points.learner_view(SOFTMAX, recorded(loops_on_large_scores), [], {})
    assert (found["inputs_right"], found["inputs"]) == (4, 7)
    assert "time budget" in found["feedback"]


def test_an_exercise_without_inputs_one_by_one_has_no_partial_credit():
    record = {"schema": wire.SCHEMA, "exercise": "ch1-predict-doubling", "answers": [0.5], "missing": "",
              "names": {}, "calls": [], "references": []}
    assert "inputs" not in points.learner_view("ch1-predict-doubling", record, [], {})


def grade(learner, label, status, right_=0, inputs=0):
    return Grade(learner, label, status, "", "", inputs_right=right_, inputs=inputs)


def test_points_earned_by_status_and_partial_credit():
    assert points.earned(grade("a", SOFTMAX, "passed", 8, 8)) == 3
    assert points.earned(grade("a", SOFTMAX, "failed", 4, 8)) == 1.5
    assert points.earned(grade("a", SOFTMAX, "failed")) == 0  # judged without inputs
    assert points.earned(grade("a", "ch1-predict-doubling", "completed")) == 1
    assert points.earned(grade("a", "ch1-pool-prefers-badminton", "failed")) == 0
    for status in ("needs review", "notebook crashed", "error", "not attempted"):
        assert points.earned(grade("a", SOFTMAX, status, 7, 8)) == 0


CLASS = [grade("ada", SOFTMAX, "passed", 8, 8), grade("ada", "ch1-predict-doubling", "completed"),
         grade("bob", SOFTMAX, "failed", 4, 8), grade("bob", "ch1-predict-doubling", "not attempted"),
         grade("cy", SOFTMAX, "failed", 0, 8), grade("cy", "ch1-predict-doubling", "completed")]


def test_totals_per_learner_and_exercise_and_the_distribution():
    rows = points.scored(CLASS)
    assert points.totals(rows) == {"ada": (4, 4), "bob": (1.5, 4), "cy": (1, 4)}
    assert points.by_exercise(rows) == {SOFTMAX: (1.5, 3, 1), "ch1-predict-doubling": (0.67, 1, 2)}
    assert points.distribution(rows) == [("0-20%", 0), ("20-40%", 2), ("40-60%", 0), ("60-80%", 0), ("80-100%", 1)]


def test_the_summary_shows_the_points():
    text = summary(CLASS, {})
    assert "## Points" in text and "- bob: 1.5 of 4" in text and "20-40%: 2" in text
    assert f"- {SOFTMAX}: 1.5 of 3, 1 with every point" in text


def test_a_sum_holding_a_row_to_decide_says_it_is_not_final_until_an_override_decides_it(tmp_path):
    """The fourth newcomer: "- ada: 4 of 6" counted an error row as 0 with no mark."""
    broken = Grade("ada", "ch1-predict-doubling", "error", "the grader failed: not a grade", "ada.ipynb")
    rows = [grade("ada", SOFTMAX, "passed"), broken, grade("bob", SOFTMAX, "passed")]
    text = summary(rows, {})
    assert "- ada: 3 of 4 (not final: 1 row to decide, under Flagged for review)" in text
    assert "- bob: 3 of 3\n" in text and "- ch1-predict-doubling: 0 of 1, 0 with every point (not final: 1 row" in text
    path = tmp_path / "overrides.csv"
    path.write_text("learner,exercise,points,note\nada,ch1-predict-doubling,1,graded by hand\n")
    assert "not final" not in summary(rows, {}, points.read_overrides(path, rows))


def test_each_learner_s_section_gives_every_exercise_s_points_and_an_override_in_words(tmp_path):
    path = tmp_path / "overrides.csv"
    path.write_text('learner,exercise,points,note\nbob,ch1-stable-softmax,1,"regraded by hand"\n')
    text = summary(CLASS, {}, points.read_overrides(path))
    bob = text[text.index("## bob"):]
    assert "- ch1-stable-softmax: **failed**, 1 of 3 points" in bob and "overridden: regraded by hand" in bob
    assert "- ch1-predict-doubling: **not attempted**, 0 of 1 point" in bob


def test_the_flagged_section_says_when_nothing_is_flagged():
    flagged = summary(CLASS, {}).split("## Flagged for review")[1].split("## ")[0]
    assert flagged.strip() == "Nothing."
    flagged = summary([Grade("ada", SOFTMAX, "passed", "", "", review="calls the course's own")], {})
    assert "- ada, ch1-stable-softmax (passed): calls the course's own" in flagged and "Nothing." not in flagged


def test_points_in_words():
    assert [points.in_words(n) for n in (0, 0.5, 1, 3)] == ["0 points", "0.5 points", "1 point", "3 points"]


def test_an_override_replaces_the_points_with_a_note(tmp_path):
    path = tmp_path / "overrides.csv"
    path.write_text('learner,exercise,points,note\nbob,ch1-stable-softmax,2.5,"regraded by hand"\n')
    rows = points.scored(CLASS, points.read_overrides(path))
    bob = next(row for row in rows if (row.learner, row.exercise) == ("bob", SOFTMAX))
    assert (bob.points, bob.override) == (2.5, "regraded by hand")


@pytest.mark.parametrize("text, problem", [
    ("learner,exercise,points\nbob,ch1-stable-softmax,1\n", "missing note"),
    ("learner,exercise,points,note\nbob,ch1-stable-softmax,4,too many\n", "worth 0 to 3"),
    ("learner,exercise,points,note\nbob,ch1-stable-softmax,x,why\n", "not a number"),
    ("learner,exercise,points,note\nbob,ch1-stable-softmax,1,\n", "say why"),
])
def test_a_malformed_override_is_refused_with_its_line(tmp_path, text, problem):
    path = tmp_path / "overrides.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=problem):
        points.read_overrides(path)


def test_the_overrides_headers_take_any_capitals_and_spaces(tmp_path):
    path = tmp_path / "overrides.csv"
    path.write_text(' Learner ,EXERCISE,Points,  Note\nbob,ch1-stable-softmax,2.5,"regraded by hand"\n')
    assert points.read_overrides(path, CLASS) == {("bob", SOFTMAX): (2.5, "regraded by hand")}


@pytest.mark.parametrize("row, problem", [
    ("bob,ch1-stable-sofmax,1,why", r"exercise 'ch1-stable-sofmax'.*closest: ch1-stable-softmax"),
    ("bbo,ch1-stable-softmax,1,why", r"learner 'bbo'.*closest: bob"),
])
def test_an_override_no_row_has_stops_the_export_naming_the_closest(tmp_path, row, problem):
    path = tmp_path / "overrides.csv"
    path.write_text(f"learner,exercise,points,note\n{row}\n")
    with pytest.raises(ValueError, match=problem):
        points.read_overrides(path, CLASS)


def test_extra_credit_needs_to_be_allowed(tmp_path):
    path = tmp_path / "overrides.csv"
    path.write_text("learner,exercise,points,note\nbob,ch1-stable-softmax,4,an excellent write-up\n")
    with pytest.raises(ValueError, match="worth 0 to 3 points, not 4 .*--allow-extra-credit"):
        points.read_overrides(path, CLASS)
    rows = points.scored(CLASS, points.read_overrides(path, CLASS, allow_extra_credit=True))
    assert points.totals(rows)["bob"] == (4.0, 4.0)


def test_a_total_of_exactly_80_percent_is_in_the_top_band():
    """4.8 / 6 is 0.7999999999999999 in floating point: it was counted in 60-80%."""
    rows = [Grade("eve", "ch1-stable-softmax", "passed", "", "", points=3.0, max_points=3.0),
            Grade("eve", "ch1-pool-prefers-badminton", "failed", "", "", points=1.8, max_points=3.0)]
    assert dict(points.distribution(rows))["80-100%"] == 1


def test_points_are_rounded_half_up_as_a_gradebook_rounds():
    """(The newcomer's jose.garcia: 7 of 8 inputs of 3 points is 2.625, shown as 2.62.)"""
    assert points.earned(grade("jose.garcia", SOFTMAX, "failed", 7, 8)) == 2.63
    assert [points.in_hundredths(v) for v in (0.125, 1.005, 2.675, 1 / 3, 0.0)] == [0.13, 1.01, 2.68, 0.33, 0.0]
