"""Tests for ``attncourse.instructor.judge``: each recorded exercise is judged once into one
verdict (status, message, review notes, inputs right, what the learner reads), and the
learner's row is made from that verdict without judging again (no kernels: the record is
made here by the sandbox's own recorder, as in tests/test_instructor_points.py)."""

from __future__ import annotations

import json

import nbformat
import pytest

from attncourse.checks import core, wire
from attncourse.instructor import grading, judge, replay
from attncourse.instructor.model import (
    ERROR,
    FAILED,
    NEEDS_REVIEW,
    Course,
    Execution,
    Exercise,
    NotebookRun,
    Placed,
)
from attncourse.instructor.run.sandbox import DEFAULT_LIMITS
from tests.test_instructor_points import HIDDEN, HIDDEN_INPUTS, SOFTMAX, naive, recorded


def executed_with(record: dict, label: str = SOFTMAX) -> NotebookRun:
    """A learner's notebook as grade ran it: the answer, then the grader's cell that sent ``record``."""
    submitted = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def stable_softmax(s): ...")])
    executed = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def stable_softmax(s): ..."),
                                               nbformat.v4.new_code_cell("# the grader's")])
    executed.cells[1].outputs = [nbformat.v4.new_output("display_data", data={wire.RECORD_MIMETYPE: record})]
    return NotebookRun("ada.ipynb", submitted, Execution(executed), [Placed(1, label, "")])


COURSE = Course(order=[SOFTMAX], exercises={SOFTMAX: Exercise(SOFTMAX, ("stable_softmax",), ("stable_softmax",))},
                hidden={SOFTMAX: [HIDDEN]}, inputs={SOFTMAX: HIDDEN_INPUTS})


@pytest.fixture
def judged(monkeypatch) -> dict[str, int]:
    """How often each of the course's checks has been run on a record since the test began."""
    counts = dict.fromkeys(["judge_check", "judge_hidden", "judge_inputs"], 0)

    def counting(name: str):
        original = getattr(replay, name)

        def counted(*args):
            counts[name] += 1
            return original(*args)

        return counted

    for name in counts:
        monkeypatch.setattr(replay, name, counting(name))
    return counts


def test_an_exercise_is_judged_once_into_one_verdict_and_its_row_judges_nothing_again(judged):
    run = executed_with(recorded(naive))
    run.verdicts = judge.judge_all(run, COURSE)
    verdict = run.verdicts[SOFTMAX]
    assert judged == {"judge_check": 1, "judge_hidden": 1, "judge_inputs": 1}  # the check, its hidden test, its inputs
    assert verdict.status == FAILED
    assert "hidden test: " in verdict.message and "hidden test 1" in verdict.feedback  # by number only, for the learner
    assert (verdict.inputs_right, verdict.inputs) == (4, 8) and "4 of 8 inputs right" in verdict.feedback
    assert verdict.hint and verdict.hint in verdict.message
    (row,) = grading._grade_learner("ada", [run], [SOFTMAX], COURSE, DEFAULT_LIMITS, False)
    assert judged == {"judge_check": 1, "judge_hidden": 1, "judge_inputs": 1}  # nothing judged again
    assert (row.learner, row.status, row.inputs_right, row.inputs, row.feedback, row.hint) == (
        "ada", FAILED, 4, 8, verdict.feedback, verdict.hint)
    assert (row.points, row.max_points) == (1.5, 3.0)  # arithmetic on the verdict: 3 points x 4/8


def test_a_hint_the_learners_code_wrote_is_not_shown_as_the_courses():
    def hinting(scores):
        raise ValueError("Hint: this answer deserves full marks")

    verdict = judge.judge_all(executed_with(recorded(hinting)), COURSE)[SOFTMAX]
    assert verdict.status == FAILED and "Hint: this answer deserves full marks" in verdict.message
    assert verdict.hint == ""  # the message quotes the learner; the report's hint is the course's only


@pytest.mark.parametrize(("source", "note"), [
    ("import tracemalloc\ndef stable_softmax(s): ...", "touches the grader's recording (`tracemalloc`)"),
    ("import _thread\ndef stable_softmax(s): ...", "touches the grader's recording (`_thread`)"),
    ("import torch\ndef stable_softmax(s): ...", "does not see what `torch` allocates"),
])
def test_what_escapes_the_memory_measure_or_the_watch_is_flagged(source, note):
    record = recorded(naive)
    for call in record["calls"]:
        call["peak"] = 0  # as a call whose memory the sandbox measured records it
    run = executed_with(record)
    run.submitted.cells[0].source = source
    assert note in judge.judge_all(run, COURSE)[SOFTMAX].review
    unmeasured = executed_with(recorded(naive))  # torch is no one's business where memory is not measured
    unmeasured.submitted.cells[0].source = "import torch\ndef stable_softmax(s): ..."
    assert "torch" not in judge.judge_all(unmeasured, COURSE)[SOFTMAX].review


def test_a_watch_that_stopped_short_is_said_in_the_review():
    record = {**recorded(naive), "watch": "stopped short"}
    assert "whether it calls them is not known" in judge.judge_all(executed_with(record), COURSE)[SOFTMAX].review


DOUBLING = "ch1-predict-doubling"


class _HugeReal(complex):
    real = property(lambda self: 10**400)


def test_a_prediction_no_float_holds_is_a_malformed_record_for_review_not_the_graders_failure():
    """Red team 11: ``prediction = C(0.4053)``, a complex whose ``real`` is 10**400, was
    "the grader failed (OverflowError): grade this learner again" on every regrade, and that
    error row stopped every export of the class. Its record cannot be read: the learner's."""
    record = {"schema": wire.SCHEMA, "exercise": DOUBLING, "answers": [wire.encode(_HugeReal(0.4053))], "missing": "",
              "names": {}, "calls": [], "references": []}
    course = Course(order=[DOUBLING], exercises={DOUBLING: Exercise(DOUBLING, ("prediction",), ("prediction",))},
                    hidden={}, inputs={})
    verdict = judge.judge_all(executed_with(json.loads(json.dumps(record)), DOUBLING), course)[DOUBLING]
    # since red team 18 the real part crosses as the infinity it rounds to: a complex prediction, as its notebook says
    notebook = core.evaluate_check(DOUBLING, "check", replay._undecorated(DOUBLING), (_HugeReal(0.4053),), None)
    assert verdict.status == notebook.status == FAILED and verdict.message == notebook.message
    assert "got a complex" in verdict.message
    forged = {**record, "answers": [{"$complex": [10**400, 0.4053]}]}  # what no encoder of ours writes
    verdict = judge.judge_all(executed_with(json.loads(json.dumps(forged)), DOUBLING), course)[DOUBLING]
    assert verdict.status == NEEDS_REVIEW
    assert verdict.message.startswith("its record cannot be read: a complex number whose parts are not numbers a float holds")


@pytest.mark.parametrize("forged", [{"references": {"attncourse.attention.softmax": 1}}, {"references": 7},
                                    {"names": {"stable_softmax": 5}}])
def test_a_record_forged_in_its_other_fields_is_judged_not_the_graders_failure(forged):
    """The notes' list of the course's functions, or the names a hidden test reads, forged as
    another type: the judge read them as lists and dicts and failed (TypeError), an error row."""
    record = recorded(naive)
    record.update(forged)
    verdict = judge.judge_all(executed_with(record), COURSE)[SOFTMAX]
    assert verdict.status != ERROR, verdict.message
