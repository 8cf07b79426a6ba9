"""Checks of chapter 8's exercises: the reference passes, stubs are not implemented, and
each typical mistake gets the message that names it."""

from __future__ import annotations

import nbformat
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attncourse import checks
from attncourse.checks import ch8
from attncourse.checks.predict import PREDICTIONS
from attncourse.positions import rope, sinusoidal_positions
from tests.checks_feedback import feedback, learner_mode  # noqa: F401 (an autouse fixture)
from tools import ROOT

ANY_ANSWER = st.one_of(st.none(), st.integers(), st.floats(), st.text(), st.lists(st.floats()))
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _stub_cell(label: str) -> str:
    notebook = nbformat.read(ROOT / "chapters" / "08_positions.ipynb", 4)
    (stub,) = [cell.source for cell in notebook.cells
               if {"stub", f"exercise:{label}"} <= set(cell.metadata.get("tags", []))]
    return stub


# --- predict: a sinusoidal dot product ------------------------------------------------------


def test_the_predicted_dot_product_comes_from_the_table():
    table = sinusoidal_positions(14, 4, base=100.0)
    assert PREDICTIONS["ch8-predict-sinusoidal-dot"].answer == pytest.approx(table[10] @ table[13], abs=1e-15)
    assert PREDICTIONS["ch8-predict-sinusoidal-dot"].answer == pytest.approx(np.cos(3) + np.cos(0.3), abs=1e-12)


def test_predicting_the_dot_product_gives_the_hint_first(capsys):
    check, answer = checks.predict_sinusoidal_dot, np.cos(3) + np.cos(0.3)
    assert "Not implemented yet." in feedback(capsys, check, None)
    first_miss = feedback(capsys, check, 2.0)  # the dot product at offset 0
    assert "Hint:" in first_miss and "-0.03" not in first_miss
    assert "the answer is -0.03466" in feedback(capsys, check, 2.0)
    assert "Passed." in feedback(capsys, check, round(answer, 2))


# --- implement: rope ------------------------------------------------------------------------


def stub(X, positions=None, base=10000.0):
    raise NotImplementedError("write rope")


def turned_the_wrong_way(X, positions=None, base=10000.0):
    seq = np.shape(X)[-2]
    positions = np.arange(seq) if positions is None else np.asarray(positions)
    return rope(X, -positions, base)


def rotate_half(X, positions=None, base=10000.0):
    return ch8._rotate_half(np.asarray(X), np.arange(np.shape(X)[-2]) if positions is None else positions, base)


def theta_without_the_2(X, positions=None, base=10000.0):
    return rope(X, positions, base ** 0.5)


def in_place(X, positions=None, base=10000.0):
    X[...] = rope(X, positions, base)
    return X


def ignores_positions(X, positions=None, base=10000.0):
    return np.array(X, dtype=float)


def always_default_positions(X, positions=None, base=10000.0):
    return rope(X, None, base)


def test_rope_passes_the_reference(capsys):
    assert "Passed." in feedback(capsys, checks.rope, rope)


def test_rope_reports_the_stub_as_not_implemented(capsys):
    assert "Not implemented yet." in feedback(capsys, checks.rope, stub)
    assert 'raise NotImplementedError("write rope")' in _stub_cell("ch8-rope")


@pytest.mark.parametrize(("answer", "expected"), [
    (turned_the_wrong_way, "the wrong way"),
    (rotate_half, "rotate half"),
    (theta_without_the_2, "-2i/d"),
    (in_place, "changed its input X"),
    (ignores_positions, "X unchanged"),
    (always_default_positions, "Hint: theta_i"),
    (np.zeros(3), "Pass the function itself"),
    (lambda X, positions=None, base=10000.0: np.zeros(2), "expected shape"),
])
def test_rope_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.rope, answer)
    assert "Not right yet." in line and expected in line, line


def positions_cast_to_int(X, positions=None, base=10000.0):
    seq = np.shape(X)[-2]
    return rope(X, np.arange(seq) if positions is None else np.asarray(positions).astype(int), base)


def test_a_wrong_rope_is_shown_the_row_that_differs(capsys):
    """Sceptic ch7-8, finding 9: row 1 was always shown, here the same as expected (position
    -1 is whole); the difference is in row 2, position 2.5."""
    line = feedback(capsys, checks.rope, positions_cast_to_int)
    assert "positions [3, -1, 2.5, 40]" in line and ": row 2 is " in line, line
    shown, expected = line.split(": row 2 is ")[1].split(", expected ")
    assert shown.split("...")[0] != expected.split("...")[0]


def test_the_row_shown_in_a_batch_names_its_head():
    output, expected = np.zeros((2, 3, 7, 4)), np.zeros((2, 3, 7, 4))
    output[1, 2, 5, 3] = 0.5
    output[0, 0, 1, 0] = 0.1
    assert ch8._worst_row(output, expected) == (1, 2, 5)
    output[0, 1, 2, 0] = np.nan
    assert ch8._worst_row(output, expected) == (0, 1, 2)


def test_the_rope_cases_cover_the_exercise():
    cases = ch8._rope_cases()
    assert any(not kwargs for _, _, kwargs in cases)  # default positions
    assert any("positions" in kwargs for _, _, kwargs in cases)
    assert any(X.ndim > 2 for _, X, _ in cases) and any(X.shape[-1] == 2 for _, X, _ in cases)


# --- tune: a previous-token head --------------------------------------------------------------


def test_the_stub_starts_where_the_check_says_untouched():
    source = _stub_cell("ch8-tune-previous-token")
    assert "query = TUNE_KEY.copy()  # change this" in source and "scale = 1.0" in source


def solution_query():
    return rope(ch8.TUNE_KEY[None], [-1.0], base=ch8.TUNE_BASE)[0]


@pytest.mark.parametrize(("query", "scale", "expected"), [
    (None, None, "Not implemented yet."),
    (ch8.TUNE_KEY, 1.0, "Not implemented yet."),
    (solution_query(), 10.0, "Passed."),
    (3 * solution_query(), 3.0, "Passed."),
    (solution_query(), 1.0, "a larger scale"),
    (ch8.TUNE_KEY, 50.0, "not all -1"),
    (rope(ch8.TUNE_KEY[None], [1.0], base=ch8.TUNE_BASE)[0], 50.0, "not all -1"),
    (solution_query(), 1e6, "within 1000"),
    (np.zeros(3), 5.0, "expected shape (4,)"),
    (solution_query(), "ten", "one number"),
    (solution_query(), -2.0, "scale a finite number > 0"),
    ([np.nan, 0, 0, 0], 2.0, "must be finite"),
])
def test_tune_previous_token(capsys, query, scale, expected):
    assert expected in feedback(capsys, checks.tune_previous_token, query, scale)


def test_the_previous_token_head_is_reached_from_a_finite_scale_on():
    weights = [ch8.previous_token_weight(ch8.tuning_weights(solution_query(), s)).min() for s in (2.0, 6.0, 12.0)]
    assert weights[0] < ch8.TUNE_TARGET <= weights[1] < weights[2]


@FUZZ
@given(ANY_ANSWER, ANY_ANSWER)
def test_no_answer_crashes_the_chapter_8_checks(capsys, first, second):
    lines = [feedback(capsys, checks.tune_previous_token, first, second),
             feedback(capsys, checks.predict_sinusoidal_dot, first),
             feedback(capsys, checks.rope, first)]
    for line in lines:
        assert line.split("] ", 1)[1].startswith(("Passed.", "Not right yet.", "Not implemented yet.")), line
        assert "the check itself" not in line, line


@FUZZ
@given(st.one_of(st.none(), st.floats(), st.just(np.full((6, 8), np.nan)), st.just([[1.0, 2.0], [3.0]]),
                 st.just(np.zeros((6, 8), dtype=complex))))
def test_arbitrary_results_never_crash_the_rope_check(capsys, result):
    line = feedback(capsys, checks.rope, lambda X, positions=None, base=10000.0: result)
    assert "Not right yet." in line and "the check itself" not in line, line


def test_the_hidden_test_fails_a_rope_that_knows_only_the_check_s_inputs():
    """Red team 20: a rope that returned outputs looked up for the check's inputs (seeded,
    so known) and X itself for any other input passed the hidden test, which asked only for
    the relative-position property, one the identity has too. It now also compares with the
    course's rope on an input of its own."""
    from types import SimpleNamespace

    nb = nbformat.read(ROOT / "chapters" / "08_positions.ipynb", as_version=4)
    [source] = [c.source for c in nb.cells if {"hidden-test", "exercise:ch8-rope"} <= set(c.metadata.get("tags", []))]

    def verdict_of(answer) -> bool:
        ran = []

        def hidden_test(label):
            def run(test):
                try:
                    test()
                    ran.append(True)
                except AssertionError:
                    ran.append(False)
            return run

        exec(source, {"check": SimpleNamespace(hidden_test=hidden_test), "rope": answer})  # noqa: S102 (the course's cell)
        return ran == [True]

    assert verdict_of(rope)
    assert not verdict_of(lambda X, positions=None, base=10000.0: np.array(X, copy=True))
