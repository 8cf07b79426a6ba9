"""Tests for ``attncourse.checks``: the feedback learners get on their exercises.

Each check is tried with the reference answer (passed), the untouched stub (not
implemented) and the typical mistakes its hints are about (the message must name the
mistake). The machinery is tried with answers that misbehave (raise, loop forever,
return nonsense) and fuzzed with hypothesis: a check must always print one line and
return None, and raise only in the CI modes.
"""

from __future__ import annotations

import json
import threading
import time
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attncourse import checks
from attncourse.checks import CheckError

A = np.array([[0.5, 0.1, 0.1, 0.2], [0.1, 0.5, 0.2, 0.1], [0.5, 0.1, 0.2, 0.1]])
POOL, BEATS, BADMINTON = 0, 1, 2


@pytest.fixture(autouse=True)
def learner_mode(monkeypatch):
    for variable in (checks.MODE_VARIABLE, checks.LOG_VARIABLE, checks.TIMEOUT_VARIABLE):
        monkeypatch.delenv(variable, raising=False)


def feedback(capsys, check, *answers, **options) -> str:
    """Run a check; assert it returned None and printed exactly one line; return that line."""
    assert check(*answers, **options) is None
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# --- answers -----------------------------------------------------------------------------


def reference_softmax(scores):
    scores = np.asarray(scores, dtype=float)
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def stub(scores):
    raise NotImplementedError("write stable_softmax")


def naive_softmax(scores):
    exponentials = np.exp(scores)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def shift_by_min(scores):  # fixes underflow by accident, overflows on large scores
    exponentials = np.exp(scores - np.min(scores, axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def whole_array(scores):
    exponentials = np.exp(scores - scores.max())
    return exponentials / exponentials.sum()


def columns(scores):
    exponentials = np.exp(scores - scores.max(axis=0, keepdims=True))
    return exponentials / exponentials.sum(axis=0, keepdims=True)


def in_place(scores):
    scores -= scores.max(axis=-1, keepdims=True)
    exponentials = np.exp(scores)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def forgets_return(scores):
    reference_softmax(scores)


def endless(scores):
    while True:
        pass


# --- ch1-stable-softmax ------------------------------------------------------------------


def test_stable_softmax_passes_the_reference(capsys):
    line = feedback(capsys, checks.stable_softmax, reference_softmax)
    assert line.startswith("[ch1-stable-softmax] Passed. ")


def test_stable_softmax_reports_the_stub_as_not_implemented(capsys):
    line = feedback(capsys, checks.stable_softmax, stub)
    assert line.startswith("[ch1-stable-softmax] Not implemented yet. ")


@pytest.mark.parametrize(
    "answer, expected",
    [
        (naive_softmax, "np.exp(1000) overflows to inf"),
        (shift_by_min, "np.exp(1000) overflows to inf"),
        (whole_array, "You normalised the whole array at once"),
        (columns, "You normalised the columns"),
        (in_place, "changed its input"),
        (forgets_return, "returned None: did you forget `return`?"),
        (lambda scores: reference_softmax(scores)[..., :1], "expected shape (3,)"),
        (lambda scores: "weights", "returned a str, expected an array of numbers"),
        (lambda scores: reference_softmax(scores) + 0j, "expected an array of numbers"),
        (lambda scores: 1 / 0, "raised ZeroDivisionError: division by zero"),
        (lambda scores: reference_softmax(scores) * 2, "the rows sum to"),
        (lambda scores: np.full(np.shape(scores), np.nan), "Every weight should be a finite number"),
        (lambda scores: reference_softmax(scores)[..., ::-1], "gave [0.665, 0.245, 0.09 ]; expected [0.09 , 0.245, 0.665]"),
        (reference_softmax(np.zeros(3)), "Pass the function itself: check.stable_softmax(stable_softmax)"),
        (None, "expected the function stable_softmax, got a NoneType"),
    ],
)
def test_stable_softmax_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.stable_softmax, answer)
    assert line.startswith("[ch1-stable-softmax] Not right yet. ")
    assert expected in line


def test_stable_softmax_explains_underflow(capsys):
    def underflows(scores):  # correct except when every score is very negative
        scores = np.asarray(scores, dtype=float)
        if scores.max() < -700:
            return naive_softmax(scores)
        return reference_softmax(scores)

    assert "np.exp(-1000) underflows to 0, and 0 / 0 is nan" in feedback(capsys, checks.stable_softmax, underflows)


def test_an_endless_function_is_stopped_within_the_time_budget(capsys):
    start = time.monotonic()
    line = feedback(capsys, checks.stable_softmax, endless, timeout=0.3)
    assert time.monotonic() - start < 2.0
    assert "did not return within the time budget of 0.3 s" in line
    assert not [t for t in threading.enumerate() if t.name.startswith("attncourse check")]


def test_the_time_budget_comes_from_the_environment(capsys, monkeypatch):
    monkeypatch.setenv(checks.TIMEOUT_VARIABLE, "0.2")
    assert "time budget of 0.2 s" in feedback(capsys, checks.stable_softmax, endless)
    monkeypatch.setenv(checks.TIMEOUT_VARIABLE, "soon")
    with pytest.raises(ValueError, match="ATTNCOURSE_CHECK_TIMEOUT='soon' is not a number"):
        checks.stable_softmax(reference_softmax)


def test_a_learner_function_that_exits_or_recurses_forever_is_a_message(capsys):
    def exits(scores):
        raise SystemExit(3)

    def recurses(scores):
        return recurses(scores)

    assert "raised SystemExit: 3" in feedback(capsys, checks.stable_softmax, exits)
    assert "raised RecursionError" in feedback(capsys, checks.stable_softmax, recurses)


def test_warnings_from_the_learners_code_do_not_reach_the_page(capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        feedback(capsys, checks.stable_softmax, naive_softmax)  # np.exp(1000) overflows
    assert caught == []


# --- ch1-pool-prefers-badminton ----------------------------------------------------------


def tuned(row):
    A_tuned = A.copy()
    A_tuned[BADMINTON] = row
    return A_tuned


def test_pool_prefers_badminton_passes_a_longer_badminton(capsys):
    line = feedback(capsys, checks.pool_prefers_badminton, tuned([0.8, 0.0, 0.0, 0.0]))
    assert line.startswith("[ch1-pool-prefers-badminton] Passed. pool now gives badminton 0.372")


def test_pool_prefers_badminton_reports_the_untouched_start_as_not_implemented(capsys):
    line = feedback(capsys, checks.pool_prefers_badminton, A.copy())
    assert line == "[ch1-pool-prefers-badminton] Not implemented yet. A_tuned is still the starting matrix A: edit badminton's row."


@pytest.mark.parametrize(
    "answer, expected",
    [
        (tuned([0.5, 0.1, 0.25, 0.1]), "badminton must score higher with pool than pool does with itself"),
        (tuned([0.6, 0.7, 0.0, 0.0]), "beats no longer attends to itself most"),
        (tuned([2.0, 0.0, 0.0, 0.0]), "has an entry outside [-1, 1]"),
        (np.vstack([A[:2] + 0.1, [[0.8, 0, 0, 0]]]), "you changed the row of pool"),
        (tuned([np.nan, 0, 0, 0]), "contains nan or inf"),
        (A[:2], "A_tuned returned an array of shape (2, 4), expected shape (3, 4)"),
        ("A", "expected an array of numbers"),
    ],
)
def test_pool_prefers_badminton_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.pool_prefers_badminton, answer)
    assert line.startswith("[ch1-pool-prefers-badminton] Not right yet. ")
    assert expected in line


def test_pool_prefers_badminton_does_not_mutate_the_answer(capsys):
    answer = tuned([0.8, 0.0, 0.0, 0.0])
    before = answer.copy()
    feedback(capsys, checks.pool_prefers_badminton, answer)
    assert np.array_equal(answer, before)


# --- ch1-predict-doubling ----------------------------------------------------------------


@pytest.mark.parametrize("prediction", ["sharper", " Sharper "])
def test_predict_doubling_passes_sharper(capsys, prediction):
    line = feedback(capsys, checks.predict_doubling, prediction)
    assert line.startswith("[ch1-predict-doubling] Passed. Doubling A multiplies every score by 4")
    assert "to [0.405, 0.205, 0.389]" in line


@pytest.mark.parametrize("prediction", [None, ...])
def test_predict_doubling_reports_no_prediction_as_not_implemented(capsys, prediction):
    assert "Not implemented yet." in feedback(capsys, checks.predict_doubling, prediction)


@pytest.mark.parametrize(
    "prediction, expected",
    [("flatter", "you predicted 'flatter'. Doubling A"), ("same", "you predicted 'same'"),
     ("sharp", "should be one of 'sharper', 'flatter', 'same', got 'sharp'"), (4, "got 4")],
)
def test_predict_doubling_explains_a_wrong_prediction(capsys, prediction, expected):
    line = feedback(capsys, checks.predict_doubling, prediction)
    assert line.startswith("[ch1-predict-doubling] Not right yet. ") and expected in line


# --- hidden tests --------------------------------------------------------------------------


def test_hidden_test_records_a_pass_a_failed_assert_a_stub_and_a_loop(capsys):
    outcomes = []
    for body in (lambda: None, _fails, lambda: stub(None), lambda: endless(None)):
        assert checks.hidden_test("ch1-stable-softmax", timeout=0.3)(body) is None
        outcomes.append(capsys.readouterr().out.strip())
    assert outcomes[0] == "[ch1-stable-softmax] hidden test: Passed. a hidden test passed"
    assert outcomes[1] == "[ch1-stable-softmax] hidden test: Not right yet. a hidden test raised AssertionError: float32 scores"
    assert outcomes[2].startswith("[ch1-stable-softmax] hidden test: Not implemented yet.")
    assert "did not return within the time budget of 0.3 s" in outcomes[3]


def _fails():
    raise AssertionError("float32 scores")  # what `assert ..., "float32 scores"` raises in a notebook


# --- modes and the log -------------------------------------------------------------------


def test_solved_mode_raises_unless_the_check_passes(capsys, monkeypatch):
    monkeypatch.setenv(checks.MODE_VARIABLE, "solved")
    checks.stable_softmax(reference_softmax)
    with pytest.raises(CheckError, match="ch1-stable-softmax should be 'passed', got 'failed'"):
        checks.stable_softmax(naive_softmax)
    with pytest.raises(CheckError, match="got 'not implemented'"):
        checks.stable_softmax(stub)


def test_student_mode_raises_unless_the_stub_is_not_implemented(capsys, monkeypatch):
    monkeypatch.setenv(checks.MODE_VARIABLE, "student")
    checks.stable_softmax(stub)
    checks.pool_prefers_badminton(A.copy())
    checks.predict_doubling(None)
    with pytest.raises(CheckError, match="got 'passed'.*A solution may have leaked"):
        checks.stable_softmax(reference_softmax)
    with pytest.raises(CheckError, match="got 'failed'"):
        checks.predict_doubling("flatter")


def test_an_unknown_mode_is_an_error_naming_it(monkeypatch):
    monkeypatch.setenv(checks.MODE_VARIABLE, "strict")
    with pytest.raises(ValueError, match="ATTNCOURSE_CHECK_MODE='strict'"):
        checks.predict_doubling("sharper")


def test_every_result_is_appended_to_the_log(capsys, monkeypatch, tmp_path):
    log = tmp_path / "checks.jsonl"
    monkeypatch.setenv(checks.LOG_VARIABLE, str(log))
    checks.stable_softmax(stub)
    checks.predict_doubling("sharper")
    checks.hidden_test("ch1-stable-softmax")(_fails)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["exercise"], r["status"], r["kind"]) for r in records] == [
        ("ch1-stable-softmax", "not implemented", "check"),
        ("ch1-predict-doubling", "passed", "check"),
        ("ch1-stable-softmax", "failed", "hidden"),
    ]


# --- registering checks ------------------------------------------------------------------


def test_exercise_registers_a_check_named_after_its_label(capsys, monkeypatch):
    monkeypatch.setattr(checks, "CHECKS", {})

    @checks.exercise("ch9-half")
    def half(run, fn):
        """Exercise ch9-half: halve a number."""
        if run(checks.expect_function(fn, "half"), 4) != 2:
            raise checks.Failed("half(4) should be 2")
        return "half(4) is 2"

    assert checks.CHECKS == {"ch9-half": half}
    assert str(__import__("inspect").signature(half)) == "(fn, *, timeout: 'float | None' = None) -> None"
    assert feedback(capsys, half, lambda x: x / 2) == "[ch9-half] Passed. half(4) is 2"
    assert feedback(capsys, half, lambda x: x) == "[ch9-half] Not right yet. half(4) should be 2"
    with pytest.raises(ValueError, match="must be named 'double'"):
        checks.exercise("ch9-double")(half)
    with pytest.raises(ValueError, match="already has a check"):
        checks.exercise("ch9-half")(half)


def test_a_bug_in_a_check_is_reported_not_raised(capsys, monkeypatch):
    monkeypatch.setattr(checks, "CHECKS", {})

    @checks.exercise("ch9-buggy")
    def buggy(run, answer):
        return {}["missing"]

    line = feedback(capsys, buggy, 1)
    assert line == "[ch9-buggy] Not right yet. the check itself hit an error (please report it): KeyError: 'missing'"


# --- fuzzing: whatever the answer, one line and no exception ------------------------------

ARRAYS = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.float32, np.int64, np.bool_, np.complex128]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
)
VALUES = st.one_of(
    st.none(), st.just(...), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
    ARRAYS, st.lists(st.floats() | st.integers(), max_size=5), st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
    st.builds(object), st.builds(lambda: np.float64("nan")),
)
EXCEPTIONS = st.sampled_from([ValueError, TypeError, IndexError, KeyError, ZeroDivisionError,
                              NotImplementedError, AssertionError, MemoryError, SystemExit, RecursionError])
ANSWERS = st.one_of(
    VALUES,
    VALUES.map(lambda value: lambda *args, **kwargs: value),
    EXCEPTIONS.map(lambda error: lambda *args, **kwargs: (_ for _ in ()).throw(error("learner's bug"))),
)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(answer=ANSWERS, check=st.sampled_from(sorted(checks.CHECKS)))
def test_no_answer_crashes_a_check(capsys, answer, check):
    line = feedback(capsys, checks.CHECKS[check], answer, timeout=2.0)
    assert line.startswith(f"[{check}] ")
    assert any(headline in line for headline in ("Passed.", "Not right yet.", "Not implemented yet."))
    assert "the check itself hit an error" not in line


@FUZZ
@given(answer=ARRAYS)
def test_arbitrary_matrices_never_crash_the_tuning_check(capsys, answer):
    line = feedback(capsys, checks.pool_prefers_badminton, answer)
    assert "the check itself hit an error" not in line


@FUZZ
@given(row=hnp.arrays(np.float64, 4, elements=st.floats(-1, 1)))
def test_the_tuning_check_agrees_with_the_two_conditions(capsys, row):
    A_tuned = tuned(row)
    weights = np.exp(A_tuned @ A_tuned.T)
    weights /= weights.sum(axis=-1, keepdims=True)
    holds = weights[POOL, BADMINTON] > weights[POOL, POOL] and weights[BEATS].argmax() == BEATS
    line = feedback(capsys, checks.pool_prefers_badminton, A_tuned)
    if np.array_equal(A_tuned, A):
        assert "Not implemented yet." in line
    else:
        assert ("Passed." in line) == holds
