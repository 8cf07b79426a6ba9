"""Checks of chapter 6's exercises: the reference passes, stubs are not implemented, and
each typical mistake gets the message that names it."""

from __future__ import annotations

import re

import nbformat
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attncourse import checks
from attncourse.checks import ch6
from attncourse.convolution import conv1d_as_attention, shift_weights
from tests.checks_feedback import (  # noqa: F401 (an autouse fixture)
    feedback,
    learner_mode,
    verdicts_hold_on_seeds,
)
from tools import ROOT

# --- predict: how many heads ---------------------------------------------------------------


@pytest.mark.parametrize(("check", "answer", "wrong"), [(checks.predict_heads_for_5x5, 25, 9),
                                                        (checks.predict_heads_for_dilated_3x3, 9, 25)])
def test_predicting_the_number_of_heads(capsys, check, answer, wrong):
    assert "Not implemented yet." in feedback(capsys, check, None)
    first_miss = feedback(capsys, check, wrong)
    assert "Hint:" in first_miss and f"the answer is {answer}" not in first_miss
    assert str(answer) not in first_miss.split("Hint:")[1]  # the hint does not give it away
    assert f"the answer is {answer}" in feedback(capsys, check, wrong)
    assert "Passed." in feedback(capsys, check, answer)
    assert "Passed." in feedback(capsys, check, float(answer) + 0.4)


def test_the_answers_come_from_the_construction():
    assert checks.CHECKS["ch6-predict-heads-for-5x5"] is checks.predict_heads_for_5x5
    from attncourse.checks.predict import PREDICTIONS
    assert PREDICTIONS["ch6-predict-heads-for-5x5"].answer == 25.0
    assert PREDICTIONS["ch6-predict-heads-for-dilated-3x3"].answer == 9.0


# --- implement: conv1d_as_attention ---------------------------------------------------------


def reference(x, kernel, alpha):
    return conv1d_as_attention(x, kernel, alpha), shift_weights(len(x), kernel.shape[-1], alpha)


def stub(x, kernel, alpha):
    raise NotImplementedError("write conv1d_as_attention")


def kernel_flipped(x, kernel, alpha):
    return conv1d_as_attention(x, kernel[..., ::-1], alpha), shift_weights(len(x), kernel.shape[-1], alpha)


def shift_reversed(x, kernel, alpha):
    """Scores -alpha (j - i + Delta)²: the heads' order reversed. Its output is right only
    together with a flipped kernel, so the output alone cannot show the mistake."""
    weights = shift_weights(len(x), kernel.shape[-1], alpha)[::-1]
    return conv1d_as_attention(x, kernel[..., ::-1], alpha), weights


def shift_reversed_alone(x, kernel, alpha):
    weights = shift_weights(len(x), kernel.shape[-1], alpha)[::-1]
    return conv1d_as_attention(x, kernel, alpha), weights


def no_padding(x, kernel, alpha):
    K = kernel.shape[-1]
    return (conv1d_as_attention(x, kernel, alpha, padding=False),
            shift_weights(len(x), K, alpha, padding=False))


def torch_style_shortcut(x, kernel, alpha):
    """The exact convolution whatever alpha is: not attention."""
    return conv1d_as_attention(x, kernel, 1e6), shift_weights(len(x), kernel.shape[-1], alpha)


def weights_without_alpha(x, kernel, alpha):
    return conv1d_as_attention(x, kernel, 1.0), shift_weights(len(x), kernel.shape[-1], 1.0)


def output_only(x, kernel, alpha):
    return conv1d_as_attention(x, kernel, alpha)


def swapped(x, kernel, alpha):
    output, weights = reference(x, kernel, alpha)
    return weights, output


def test_conv1d_as_attention_passes_the_reference(capsys):
    assert "Passed." in feedback(capsys, checks.conv1d_as_attention, reference)


def test_conv1d_as_attention_reports_the_stub_as_not_implemented(capsys):
    assert "Not implemented yet." in feedback(capsys, checks.conv1d_as_attention, stub)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (kernel_flipped, "kernel is flipped"),
        (shift_reversed, "sign is reversed"),
        (shift_reversed_alone, "sign is reversed"),
        (no_padding, "Pad x with K//2"),
        (torch_style_shortcut, "still soft"),
        (weights_without_alpha, "do not depend on alpha"),
        (output_only, "return the pair (output, weights)"),
        (swapped, "shape"),
        (np.zeros(3), "Pass the function itself"),
    ],
)
def test_conv1d_as_attention_names_the_mistake(capsys, answer, expected):
    line = feedback(capsys, checks.conv1d_as_attention, answer)
    assert "Not right yet." in line and expected in line, line


def test_the_conv_cases_include_what_the_exercise_is_about():
    cases = ch6._conv_cases()
    sizes = {kernel.shape[-1] for _, _, kernel, _ in cases}
    assert {3, 5, 7} <= sizes
    assert min(alpha for *_, alpha in cases) <= 2 and max(alpha for *_, alpha in cases) >= 40
    assert any(len(x) == 1 for _, x, _, _ in cases)
    # a soft case, where the exact convolution is far from the attention
    _, x, kernel, alpha = cases[2]
    assert np.abs(conv1d_as_attention(x, kernel, alpha) - conv1d_as_attention(x, kernel, 1e6)).max() > 0.1


# --- tune: alpha -----------------------------------------------------------------------------


def test_the_notebook_stub_starts_at_the_value_the_check_calls_untouched():
    notebook = nbformat.read(ROOT / "chapters" / "06_attention_versus_convolution.ipynb", 4)
    (stub,) = [cell.source for cell in notebook.cells
               if {"stub", "exercise:ch6-tune-alpha"} <= set(cell.metadata.get("tags", []))]
    assert f"alpha = {ch6.STARTING_ALPHA!r}  # change this" in stub


def test_the_smallest_alpha_meets_the_target_and_the_gradient_falls_with_the_error():
    best = ch6.smallest_alpha()
    assert 5 < best < 15
    assert ch6.construction_error(best) < 1e-3 <= ch6.construction_error(best - 0.01)
    assert ch6.score_gradient(best + 5) < ch6.score_gradient(best) * np.exp(-4)


def test_the_error_falls_as_alpha_grows_so_bisection_finds_the_smallest_alpha():
    """The goal bisects for the smallest alpha below the target: right only if the error,
    once below, stays below over the explorer's whole alpha range."""
    alphas = np.arange(0.0, 30.0, 0.01)
    errors = np.array([ch6.construction_error(alpha) for alpha in alphas])
    assert (np.diff(errors) <= 0).all()
    assert alphas[np.argmax(errors < ch6.ERROR_TARGET)] == pytest.approx(ch6.smallest_alpha(), abs=0.01)


def test_the_tuning_problem_is_the_one_channel_problem_its_explorer_shows():
    x, kernel = ch6.tuning_problem()
    assert x.shape == (16, 1) and kernel.shape == (1, 1, 5)
    goal = ch6.goal_sharp_enough
    assert goal.fixed == {"x": tuple(x[:, 0]), "kernel": tuple(kernel[0, 0])}
    assert goal.search[0] < ch6.smallest_alpha() < goal.search[1]


@pytest.mark.parametrize(
    ("alpha", "expected"),
    [(None, "Not implemented yet."), (1.0, "Not implemented yet."), (10.0, "Passed."), (5, "not below 1e-3"),
     (25.0, "saturated"), ("ten", "one number"), (-1.0, ">= 0"), (np.nan, ">= 0")],
)
def test_tune_alpha(capsys, alpha, expected):
    assert expected in feedback(capsys, checks.tune_alpha, alpha)


def test_tune_alpha_s_numbers_at_the_window_s_edges_read_on_the_right_side(capsys):
    best = ch6.smallest_alpha()
    just_in = feedback(capsys, checks.tune_alpha, best + 1e-9)
    error = re.search(r"the error is ([0-9.e-]+)", just_in).group(1)
    assert "Passed." in just_in and float(error) < 1e-3
    just_out = feedback(capsys, checks.tune_alpha, best + 1 + 1e-7)
    above = re.search(r"alpha is ([0-9.e+-]+) above the smallest", just_out).group(1)
    assert "Not right yet." in just_out and float(above) > 1 and "times less than at" in just_out


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.floats(min_value=0, max_value=60))
def test_tune_alpha_passes_exactly_in_its_window(capsys, alpha):
    line = feedback(capsys, checks.tune_alpha, alpha)
    best = ch6.smallest_alpha()
    passes = ch6.construction_error(alpha) < 1e-3 and alpha <= best + 1
    assert ("Passed." in line) == passes
    assert ("Not implemented yet." in line) == (alpha == ch6.STARTING_ALPHA)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.none(), st.integers(), st.floats(), st.text(), st.lists(st.floats())))
def test_no_answer_crashes_the_chapter_6_checks(capsys, answer):
    for check in (checks.tune_alpha, checks.predict_heads_for_5x5, checks.conv1d_as_attention):
        line = feedback(capsys, check, answer)
        assert line.split("] ", 1)[1].startswith(("Passed.", "Not right yet.", "Not implemented yet."))
        assert "the check itself" not in line, line


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.none(), st.floats(), st.tuples(st.floats(), st.floats()),
                 st.tuples(st.just(np.zeros((8, 1))), st.just(np.full((3, 8, 10), np.nan))),
                 st.tuples(st.just(np.zeros((8, 1))), st.just([[1.0, 2.0], [3.0]]))))
def test_arbitrary_results_never_crash_the_conv_check(capsys, result):
    line = feedback(capsys, checks.conv1d_as_attention, lambda x, kernel, alpha: result)
    assert "Not right yet." in line and "the check itself" not in line, line


# --- every verdict holds on 50 draws of the check's inputs ---------------------------------


@pytest.mark.slow
def test_conv1d_check_verdicts_hold_on_50_draws_of_its_inputs(capsys, monkeypatch):
    """The check draws its problems from seed 606; a seed sweep (or another seed) must not
    turn the reference into a failure or a typical mistake into a pass."""
    mistakes = [(kernel_flipped, "kernel is flipped"), (shift_reversed, "sign is reversed"),
                (no_padding, "Pad x with K//2"), (torch_style_shortcut, "still soft"),
                (weights_without_alpha, "do not depend on alpha")]
    verdicts_hold_on_seeds(capsys, monkeypatch, ch6, "_conv_cases", checks.conv1d_as_attention, reference,
                           [mistake for mistake, _ in mistakes], [named for _, named in mistakes])
