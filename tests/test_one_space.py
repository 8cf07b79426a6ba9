"""Tests for ``attncourse.one_space``. The gradient torch computes is checked against a
finite-difference gradient of the same loss written in numpy, so the test does not trust
the code under test to define the loss."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.attention import softmax
from attncourse.examples import hot_cold_words
from attncourse.one_space import fit_similarity_attention

SENTENCES, QUERIES, TARGETS = [[0, 1, 2, 3], [0, 1, 2, 4]], [3, 3], [1, 1]


def _numpy_loss(embeddings, sentences, queries, targets):
    total = 0.0
    for sentence, query, target in zip(sentences, queries, targets):
        X = embeddings[sentence]
        total -= np.log(softmax(X @ X.T)[query, target])
    return total


def _finite_difference_gradient(embeddings, h=1e-6):
    gradient = np.zeros_like(embeddings)
    for index in np.ndindex(embeddings.shape):
        up, down = embeddings.copy(), embeddings.copy()
        up[index] += h
        down[index] -= h
        gradient[index] = (_numpy_loss(up, SENTENCES, QUERIES, TARGETS)
                           - _numpy_loss(down, SENTENCES, QUERIES, TARGETS)) / (2 * h)
    return gradient


def test_one_step_is_a_plain_gradient_step_on_the_attention_loss():
    start = hot_cold_words().X
    history, losses = fit_similarity_attention(start, SENTENCES, QUERIES, TARGETS,
                                               steps=1, learning_rate=0.05)
    assert np.isclose(losses[0], _numpy_loss(start, SENTENCES, QUERIES, TARGETS))
    expected = start - 0.05 * _finite_difference_gradient(start)
    assert np.allclose(history[1], expected, atol=1e-7)


def test_history_starts_at_the_input_and_the_input_is_not_mutated():
    start = hot_cold_words().X
    copy = start.copy()
    history, losses = fit_similarity_attention(start, SENTENCES, QUERIES, TARGETS, steps=5)
    assert history.shape == (6, 5, 2) and losses.shape == (5,)
    assert np.array_equal(history[0], copy) and np.array_equal(start, copy)


def test_attention_is_learned_and_the_antonyms_merge():
    words = hot_cold_words()
    history, losses = fit_similarity_attention(words.X, SENTENCES, QUERIES, TARGETS, steps=100)
    hot, cold = words.index("hot"), words.index("cold")
    cosine = lambda X: X[hot] @ X[cold] / np.linalg.norm(X[hot]) / np.linalg.norm(X[cold])
    assert losses[-1] < losses[0] / 10
    assert cosine(history[0]) == -1.0 and cosine(history[-1]) > 0.9


def test_deterministic():
    start = hot_cold_words().X
    first = fit_similarity_attention(start, SENTENCES, QUERIES, TARGETS, steps=10)
    second = fit_similarity_attention(start, SENTENCES, QUERIES, TARGETS, steps=10)
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])


@pytest.mark.parametrize(
    "sentences, queries, targets, message",
    [
        ([[0, 9]], [0], [1], r"sentences\[0\]\[1\] = 9 is outside 0..4"),
        ([[0, 1]], [0, 1], [1], "one query and one target position per sentence"),
        ([[0, 1]], [2], [1], r"queries\[0\] must be an integer from 0 to 1, got 2"),
        ([[0, 1]], [0], [-1], r"targets\[0\] must be an integer from 0 to 1, got -1"),
    ],
)
def test_bad_examples_are_named(sentences, queries, targets, message):
    with pytest.raises(ValueError, match=message):
        fit_similarity_attention(hot_cold_words().X, sentences, queries, targets)


def test_bad_embeddings_and_settings():
    with pytest.raises(ValueError, match=r"\(vocab, d_model\)"):
        fit_similarity_attention(np.zeros(5), SENTENCES, QUERIES, TARGETS)
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        fit_similarity_attention(hot_cold_words().X, SENTENCES, QUERIES, TARGETS, steps=0)
    with pytest.raises(TypeError, match="steps must be a positive integer, got '5'"):
        fit_similarity_attention(hot_cold_words().X, SENTENCES, QUERIES, TARGETS, steps="5")
    with pytest.raises(TypeError, match="sentences must be a sequence"):
        fit_similarity_attention(hot_cold_words().X, "the hot", QUERIES, TARGETS)
    with pytest.raises(TypeError, match=r"queries\[0\] must be an integer"):
        fit_similarity_attention(hot_cold_words().X, [[0, 1]], [0.0], [1])
    with pytest.raises(ValueError, match=r"learning_rate must be a finite number > 0, got nan"):
        fit_similarity_attention(hot_cold_words().X, SENTENCES, QUERIES, TARGETS, learning_rate=np.nan)


def test_the_meaning_term_is_one_plus_the_cosine_and_keeps_the_antonyms_apart():
    start = hot_cold_words().X  # (vocab, 2): hot and cold exact opposites
    history, losses = fit_similarity_attention(start, SENTENCES, QUERIES, TARGETS, steps=1,
                                               opposites=[(3, 4)], meaning_weight=2.0)
    cosine = start[3] @ start[4] / (np.linalg.norm(start[3]) * np.linalg.norm(start[4]))
    assert np.isclose(losses[0], _numpy_loss(start, SENTENCES, QUERIES, TARGETS) + 2.0 * (1 + cosine))
    free, _ = fit_similarity_attention(start, SENTENCES, QUERIES, TARGETS, steps=300)
    kept, _ = fit_similarity_attention(start, SENTENCES, QUERIES, TARGETS, steps=300,
                                       opposites=[(3, 4)], meaning_weight=1.0)
    cos = lambda E: E[3] @ E[4] / (np.linalg.norm(E[3]) * np.linalg.norm(E[4]))
    assert cos(kept[-1]) < 0 < cos(free[-1])


@pytest.mark.parametrize(("options", "message"), [
    (dict(meaning_weight=-1.0), "meaning_weight must be a finite number >= 0, got -1.0"),
    (dict(opposites=[(3, 9)], meaning_weight=1.0), r"opposites\[0, 1\] = 9 is outside 0..4"),
    (dict(opposites=[(3, 4, 1)], meaning_weight=1.0), r"opposites must be pairs of words"),
])
def test_a_bad_meaning_term_is_named(options, message):
    with pytest.raises(ValueError, match=message):
        fit_similarity_attention(hot_cold_words().X, SENTENCES, QUERIES, TARGETS, **options)
