"""The checks of chapter 7's exercises: right answers pass, each typical mistake is named,
stubs are "not implemented", and no answer crashes a check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attncourse import checks
from attncourse.attention import scaled_dot_product_attention
from attncourse.checks import ch7
from attncourse.pretrained import (
    N_HEADS,
    bilinear_form,
    head_ablation_changes,
    layer_parameters,
    run_model,
)
from tests.checks_feedback import (  # noqa: F401 (an autouse fixture)
    feedback,
    learner_mode,
    verdicts_hold_on_seeds,
)

# --- ch7-predict-rank ----------------------------------------------------------------------


def test_the_rank_is_d_head_and_the_check_hints_before_it_tells(capsys):
    assert checks.predict.PREDICTIONS["ch7-predict-rank"].answer == 32 == ch7._previous_token_rank()
    assert np.linalg.matrix_rank(bilinear_form(*ch7.PREVIOUS_TOKEN_HEAD)) == 32
    assert "Not implemented" in feedback(capsys, checks.predict_rank, None)
    first = feedback(capsys, checks.predict_rank, 384)
    assert "Hint:" in first and "32" not in first.split("Hint:")[0]
    assert "d_head = 32" in feedback(capsys, checks.predict_rank, 384)
    assert "Passed." in feedback(capsys, checks.predict_rank, 32)


# --- ch7-layer-attention -------------------------------------------------------------------


def _to_heads(M, n_heads):
    return np.swapaxes(M.reshape(M.shape[0], n_heads, -1), 0, 1)  # (n_heads, seq, d_head)


def solution(X, W_q, b_q, W_k, b_k, W_v, b_v, n_heads):
    Q, K, V = (_to_heads(X @ W + b, n_heads) for W, b in ((W_q, b_q), (W_k, b_k), (W_v, b_v)))
    return scaled_dot_product_attention(Q, K, V)[1]


def no_biases(X, W_q, b_q, W_k, b_k, W_v, b_v, n_heads):
    return solution(X, W_q, 0 * b_q, W_k, 0 * b_k, W_v, 0 * b_v, n_heads)


def unscaled(X, W_q, b_q, W_k, b_k, W_v, b_v, n_heads):
    Q, K, V = (_to_heads(X @ W + b, n_heads) for W, b in ((W_q, b_q), (W_k, b_k), (W_v, b_v)))
    return scaled_dot_product_attention(Q, K, V, scale=1.0)[1]


def transposed(X, W_q, b_q, W_k, b_k, W_v, b_v, n_heads):
    return solution(X, W_q.T, b_q, W_k.T, b_k, W_v.T, b_v, n_heads)


def in_place(X, W_q, b_q, W_k, b_k, W_v, b_v, n_heads):
    X += 0.0 * X + 1.0
    return solution(X - 1.0, W_q, b_q, W_k, b_k, W_v, b_v, n_heads)


@pytest.mark.slow  # loads the real model
def test_the_solution_passes_and_reproduces_the_real_model(capsys):
    assert "Passed." in feedback(capsys, checks.layer_attention, solution)
    X, p = run_model("Dogs chase cats.").hidden[3], layer_parameters(3)
    real = solution(X, p.W_q, p.b_q, p.W_k, p.b_k, p.W_v, p.b_v, N_HEADS)
    assert np.abs(real - run_model("Dogs chase cats.").weights[3]).max() < 1e-5


@pytest.mark.parametrize(("mistake", "named"), [
    (no_biases, "biases are missing"),
    (unscaled, "not scaled"),
    (transposed, "transposed"),
    (in_place, "changed one of its inputs"),
])
def test_each_typical_mistake_is_named(capsys, mistake, named):
    line = feedback(capsys, checks.layer_attention, mistake)
    assert "Not right yet." in line and named in line


def float32_projections_float64_scores(X, W_q, b_q, W_k, b_k, W_v, b_v, n_heads):
    """Right, but projected in float32 and scaled by a float64 np.sqrt: float32's error
    (about 2e-7) in a float64 array."""
    Q, K, _ = (_to_heads((X.astype(np.float32) @ W.astype(np.float32) + b.astype(np.float32)), n_heads)
               for W, b in ((W_q, b_q), (W_k, b_k), (W_v, b_v)))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (n_heads, seq, seq), float64
    return np.exp(scores - scores.max(-1, keepdims=True)) / np.exp(scores - scores.max(-1, keepdims=True)).sum(-1, keepdims=True)


def test_a_right_answer_partly_in_float32_is_told_it_lost_precision(capsys):
    """Sceptic ch7-8, finding 5: it was given the hint about biases and heads."""
    line = feedback(capsys, checks.layer_attention, float32_projections_float64_scores)
    assert "Not right yet." in line and "only to about float32's precision" in line and "biases" not in line


def test_stub_and_nonsense_answers(capsys):
    def stub(*args):
        raise NotImplementedError("write layer_attention_weights")

    assert "Not implemented" in feedback(capsys, checks.layer_attention, stub)
    assert "expected the function" in feedback(capsys, checks.layer_attention, 3)
    assert "shape" in feedback(capsys, checks.layer_attention, lambda *args: np.zeros(3))
    assert "None" in feedback(capsys, checks.layer_attention, lambda *args: None)


# --- ch7-most-important-head ---------------------------------------------------------------


@pytest.mark.slow  # loads the real model
def test_the_head_that_changes_the_pair_most_passes_and_others_do_not(capsys):
    changes = head_ablation_changes(*ch7.ABLATION_PAIR)
    best = tuple(int(i) for i in np.unravel_index(np.abs(changes).argmax(), changes.shape))
    assert "Passed." in feedback(capsys, checks.most_important_head, best)
    assert "Passed." in feedback(capsys, checks.most_important_head, list(best))
    assert "Passed." in feedback(capsys, checks.most_important_head, np.array(best))  # an integer array
    other = (best[0], (best[1] + 1) % N_HEADS)
    line = feedback(capsys, checks.most_important_head, other)
    assert "Not right yet." in line and "another head changes it more" in line


@pytest.mark.slow  # loads the real model in a fresh process
def test_a_right_head_passes_from_a_cold_start_under_a_short_budget():
    """Loading torch, transformers and the model (about 10 s of processor time on a shared
    machine) is the check's own work, done before the learner's budget starts: a right
    answer passes in a fresh process even under a 2 s budget (it failed under the default
    10 s, told it looped)."""
    probe = ("from attncourse import checks\n"
             "checks.most_important_head((5, 8), timeout=2.0)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600,
                         cwd=Path(__file__).resolve().parents[1],
                         env={**os.environ, "ATTNCOURSE_CHECK_MODE": "solved"})
    assert out.returncode == 0 and "Passed." in out.stdout, out.stdout + out.stderr


def test_the_grader_judges_the_check_itself():
    """The grader and the recorder call ``__wrapped__``: the check's own evaluate function,
    not the learner's wrapper that warms the model."""
    assert checks.load_all()["ch7-most-important-head"].__wrapped__.__code__.co_varnames[:2] == ("run", "answer")


@pytest.mark.parametrize(("answer", "said"), [
    (None, "Not implemented"), (5, "pair of whole numbers"), ((1.0, 2), "pair of whole numbers"),
    (np.array([5.0, 8.0]), "pair of whole numbers"), (np.array([[5, 8]]), "pair of whole numbers"),
    ((6, 0), "layers are numbered 0 to 5"), ((0, 12), "heads 0 to 11"), ("5, 11", "pair"),
])
def test_malformed_heads_get_a_friendly_line(capsys, answer, said):
    assert said in feedback(capsys, checks.most_important_head, answer)


def test_layer_attention_verdicts_hold_on_50_draws_of_its_inputs(capsys, monkeypatch):
    """The check draws its layers from seed 7; no other seed may let a mistake pass or
    fail the solution."""
    verdicts_hold_on_seeds(capsys, monkeypatch, ch7, "_layer_cases", checks.layer_attention, solution,
                           [no_biases, unscaled, transposed], ["biases are missing", "not scaled", "transposed"])
