"""Tests for the machinery of ``attncourse.checks``: whatever a learner's answer does (raise,
loop forever, exit, warn, return nonsense), a check prints one line and returns None, and
raises only in the CI modes; hidden tests, the modes, the log and registering a check.
Each chapter's checks are tested in tests/test_checks_chN.py.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pathlib
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attncourse import checks
from attncourse.checks import CheckError
from tests.checks_feedback import (  # noqa: F401 (an autouse fixture)
    FUZZ,
    empty_registries,
    feedback,
    learner_mode,
)
from tests.test_checks_ch1 import A, endless, naive_softmax, reference_softmax, stub

ROOT = pathlib.Path(__file__).resolve().parents[1]


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
        checks.predict_doubling(0.1)


def test_an_unknown_mode_is_an_error_naming_it(monkeypatch):
    monkeypatch.setenv(checks.MODE_VARIABLE, "strict")
    with pytest.raises(ValueError, match="ATTNCOURSE_CHECK_MODE='strict'"):
        checks.predict_doubling(0.405)


def test_every_result_is_appended_to_the_log(capsys, monkeypatch, tmp_path):
    log = tmp_path / "checks.jsonl"
    monkeypatch.setenv(checks.LOG_VARIABLE, str(log))
    checks.stable_softmax(stub)
    checks.predict_doubling(0.405)
    checks.hidden_test("ch1-stable-softmax")(_fails)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["exercise"], r["status"], r["kind"]) for r in records] == [
        ("ch1-stable-softmax", "not implemented", "check"),
        ("ch1-predict-doubling", "passed", "check"),
        ("ch1-stable-softmax", "failed", "hidden"),
    ]


# --- registering checks ------------------------------------------------------------------


def test_exercise_registers_a_check_named_after_its_label(capsys, monkeypatch):
    empty_registries(monkeypatch)

    @checks.exercise("ch9-half")
    def half(run, fn):
        """Exercise ch9-half: halve a number."""
        if run(checks.expect_function(fn, "half"), 4) != 2:
            raise checks.Failed("half(4) should be 2")
        return "half(4) is 2"

    assert checks.core.CHECKS == {"ch9-half": half}
    assert str(inspect.signature(half)) == "(fn, *, timeout: 'float | None' = None) -> None"
    assert feedback(capsys, half, lambda x: x / 2) == "[ch9-half] Passed. half(4) is 2"
    assert feedback(capsys, half, lambda x: x) == "[ch9-half] Not right yet. half(4) should be 2"
    with pytest.raises(ValueError, match="must be named 'double'"):
        checks.exercise("ch9-double")(half)
    with pytest.raises(ValueError, match="already has a check"):
        checks.exercise("ch9-half")(half)


def test_a_bug_in_a_check_is_reported_not_raised(capsys, monkeypatch):
    empty_registries(monkeypatch)

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


def _positional_parameters(check) -> tuple[int, int]:
    """How many answers ``check`` takes: (required, at most)."""
    parameters = [p for p in inspect.signature(check).parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD]
    return sum(p.default is p.empty for p in parameters), len(parameters)


@FUZZ
@given(data=st.data(), check=st.sampled_from(sorted(checks.load_all())))
def test_no_answer_crashes_a_check(capsys, data, check):
    required, most = _positional_parameters(checks.load_all()[check])
    answers = data.draw(st.lists(ANSWERS, min_size=required, max_size=most))
    line = feedback(capsys, checks.load_all()[check], *answers, timeout=2.0)
    assert line.startswith(f"[{check}] ")
    assert any(headline in line for headline in ("Passed.", "Not right yet.", "Not implemented yet."))
    assert "the check itself hit an error" not in line


TUNING_CHECKS = [checks.pool_prefers_badminton, checks.ball_ignores_it, checks.it_attends_to_ball]


@FUZZ
@given(data=st.data(), check=st.sampled_from(TUNING_CHECKS))
def test_arbitrary_matrices_never_crash_the_tuning_checks(capsys, data, check):
    required, _ = _positional_parameters(check)
    answers = data.draw(st.lists(ARRAYS, min_size=required, max_size=required))
    line = feedback(capsys, check, *answers)
    assert "the check itself hit an error" not in line


@FUZZ
@given(
    output=ARRAYS | hnp.arrays(np.float64, (4, 2)),
    weights=ARRAYS | hnp.arrays(np.float64, (4, 4)) | hnp.arrays(np.float64, (4, 4), elements=st.floats(0, 1)),
)
def test_arbitrary_results_never_crash_the_head_check(capsys, output, weights):
    line = feedback(capsys, checks.attention_head, lambda *args: (output, weights))
    assert line.startswith("[ch3-attention-head] Not right yet. ")
    assert "the check itself hit an error" not in line




def test_homes_lists_every_check_of_every_chapter_module_and_nothing_else():
    """``_HOMES`` (what ``check.NAME`` loads, and what tools/chapter_cache.py reads) names
    every check the chapter modules declare, in the module that declares it."""
    declared = {check.__name__: label.split("-", 1)[0] for label, check in checks.load_all().items()}
    assert checks._HOMES == declared
    modules = {path.stem for path in (ROOT / "attncourse" / "checks").glob("ch*.py")}
    assert set(checks._HOMES.values()) == modules  # no chapter's module left out of load_all
    for name, home in checks._HOMES.items():
        assert getattr(importlib.import_module(f"attncourse.checks.{home}"), name) is getattr(checks, name)
    assert set(checks._HOMES) <= set(checks.__all__) and set(checks._HOMES) <= set(dir(checks))


def _loaded_after(code: str) -> list[str]:
    """The chapter check modules and maths modules a fresh interpreter holds after ``code``."""
    probe = (f"import sys\n{code}\n"
             "print(sorted(m for m in sys.modules if m.startswith('attncourse.') and m.count('.') <= 2"
             " and not m.startswith(('attncourse.checks.core', 'attncourse.checks.predict'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


def test_a_chapter_loads_its_own_checks_and_maths_alone():
    assert "attncourse.checks.ch1" not in _loaded_after("from attncourse import checks")
    after_rope = _loaded_after("from attncourse import checks as check\ncheck.rope")
    assert "attncourse.checks.ch8" in after_rope and "attncourse.positions" in after_rope
    assert not {"attncourse.checks.ch9", "attncourse.flash", "attncourse.checks.ch7", "attncourse.pretrained"} & set(after_rope)
    after_box = _loaded_after("from attncourse.explorers.answer_box import answer_box\n"
                              "answer_box('ch9-predict-cache-size')")
    assert "attncourse.checks.ch9" in after_box
    assert not [m for m in after_box if m.startswith("attncourse.checks.ch") and m != "attncourse.checks.ch9"]
    assert "attncourse.checks.ch7" in _loaded_after("from attncourse import checks\nchecks.ch7.PREVIOUS_TOKEN_HEAD")


def test_load_all_declares_every_chapters_checks_and_an_unknown_name_is_an_attribute_error():
    everything = _loaded_after("from attncourse import checks\nchecks.load_all()")
    assert {f"attncourse.checks.ch{n}" for n in range(1, 10)} <= set(everything)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_check'"):
        checks.no_such_check  # noqa: B018
