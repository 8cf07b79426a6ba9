"""Chapters 1-3's checks give the same verdict for every draw of their random inputs
(issue #21, item 13): with each random generator the checks create moved to 50 seeds, the
reference answer passes and each common wrong answer fails. (The tune and predict checks
have fixed inputs: tests/test_checks_ch*.py cover them.)"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from attncourse import checks
from attncourse.attention import (
    causal_mask,
    dot_product_scores,
    scaled_dot_product_attention,
    softmax,
)
from attncourse.reciprocity import log_normalisers
from tests.checks_feedback import feedback, learner_mode  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.slow

SHIFTS = range(50)


@pytest.fixture
def moved_seeds(monkeypatch):
    """Call with a shift: every default_rng(seed) made afterwards gets seed + shift."""
    original = np.random.default_rng

    def move(shift):
        @functools.wraps(original)
        def moved(seed=None, *args, **kwargs):
            return original(seed + shift if isinstance(seed, int) else seed, *args, **kwargs)

        monkeypatch.setattr(np.random, "default_rng", moved)

    return move


def _verdicts(capsys, moved_seeds, check, answers):
    """For each shift, the verdict word of every answer: {name: set of verdicts}."""
    seen = {name: set() for name in answers}
    for shift in SHIFTS:
        moved_seeds(shift)
        for name, answer in answers.items():
            line = feedback(capsys, check, answer)
            seen[name].add(line.split("] ", 1)[1].split(".", 1)[0])
    return seen


# --- ch1-stable-softmax ------------------------------------------------------------------


def _rows(e):
    return e / e.sum(axis=-1, keepdims=True)


SOFTMAXES = {
    "reference": lambda s: _rows(np.exp(s - np.max(s, axis=-1, keepdims=True))),
    "naive": lambda s: _rows(np.exp(s)),
    "shift by the minimum": lambda s: _rows(np.exp(s - np.min(s, axis=-1, keepdims=True))),
    "whole array": lambda s: np.exp(s - s.max()) / np.exp(s - s.max()).sum(),
    "columns": lambda s: (lambda e: e / e.sum(axis=0, keepdims=True))(np.exp(s - s.max(axis=0, keepdims=True))),
}


def test_stable_softmax_verdicts_do_not_depend_on_the_seed(capsys, moved_seeds):
    with np.errstate(all="ignore"):
        seen = _verdicts(capsys, moved_seeds, checks.stable_softmax, SOFTMAXES)
    assert seen.pop("reference") == {"Passed"}
    assert all(verdict == {"Not right yet"} for verdict in seen.values()), seen


# --- ch2-stationary-distribution ---------------------------------------------------------


def _Z(X):
    return np.exp(log_normalisers(dot_product_scores(X, X)))


STATIONARY = {
    "reference": lambda X: softmax(log_normalisers(dot_product_scores(X, X))),
    "Z itself": _Z,
    "1 / Z": lambda X: (1 / _Z(X)) / (1 / _Z(X)).sum(),
    "uniform": lambda X: np.full(len(X), 1 / len(X)),
    "one step from uniform": lambda X: softmax(dot_product_scores(X, X)).mean(axis=0),
}


def test_stationary_distribution_verdicts_do_not_depend_on_the_seed(capsys, moved_seeds):
    seen = _verdicts(capsys, moved_seeds, checks.stationary_distribution, STATIONARY)
    assert seen.pop("reference") == {"Passed"}
    assert all(verdict == {"Not right yet"} for verdict in seen.values()), seen


# --- ch3-attention-head --------------------------------------------------------------------


def _head(scale=None, mask_mode="given"):
    def head(X, W_q, W_k, W_v, mask=None):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (seq, d_k), (seq, d_k), (seq, d_v)
        s = 1 / np.sqrt(Q.shape[-1]) if scale is None else scale(X, W_q, W_v)
        if mask_mode == "ignored":
            mask = None
        elif mask_mode == "causal":
            mask = causal_mask(len(X))
        if mask_mode == "zero" and mask is not None:
            weights = softmax(np.where(mask, Q @ K.T * s, 0.0))
            return weights @ V, weights
        return scaled_dot_product_attention(Q, K, V, mask=mask, scale=s)

    return head


HEADS = {
    "reference": _head(),
    "no scale": _head(scale=lambda X, W_q, W_v: 1.0),
    "scale by d_k": _head(scale=lambda X, W_q, W_v: 1 / W_q.shape[1]),
    "scale by d_model": _head(scale=lambda X, W_q, W_v: 1 / np.sqrt(X.shape[1])),
    "scale by d_v": _head(scale=lambda X, W_q, W_v: 1 / np.sqrt(W_v.shape[1])),
    "mask ignored": _head(mask_mode="ignored"),
    "always causal": _head(mask_mode="causal"),
    "masked scores set to 0": _head(mask_mode="zero"),
}


def test_attention_head_verdicts_do_not_depend_on_the_seed(capsys, moved_seeds):
    seen = _verdicts(capsys, moved_seeds, checks.attention_head, HEADS)
    assert seen.pop("reference") == {"Passed"}
    assert all(verdict == {"Not right yet"} for verdict in seen.values()), seen
