"""Chapter 2's claims about random quantities, over ten seeds (issue #21, item 12).

The rest of the chapter is deterministic (hand-made embeddings, gradient descent from a
fixed start); its notebook pins those numbers."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.attention import dot_product_scores, softmax
from attncourse.examples import hot_cold_words, tennis_sentence
from attncourse.one_space import fit_similarity_attention
from attncourse.reciprocity import cosine_similarity, repeated_attention

pytestmark = pytest.mark.slow

SEEDS = np.arange(10)


@pytest.mark.parametrize("seed", SEEDS)
def test_in_8_dimensions_the_antonyms_still_merge_without_a_meaning_term(seed):
    words = hot_cold_words()
    the, temperature, is_, hot, cold = (words.index(w) for w in ("the", "temperature", "is", "hot", "cold"))
    sentences = [[the, temperature, is_, hot], [the, temperature, is_, cold]]
    start = 0.5 * np.random.default_rng(seed).standard_normal((5, 8))  # (vocab, d_model)
    start[cold] = -start[hot]
    history, losses = fit_similarity_attention(start, sentences, [3, 3], [1, 1], steps=100, learning_rate=0.05)
    assert cosine_similarity(history[-1, hot], history[-1, cold]) > 0.9
    assert losses[-1] < losses[0]


def test_the_link_one_round_makes_is_typical_of_random_queries_and_keys():
    sentence = tennis_sentence()
    X = sentence.X  # (seq, d_model)
    it, picked = sentence.index("it"), sentence.index("picked")
    states, _ = repeated_attention(X, steps=1)
    similarity_link = (states[1] @ states[1].T)[it, picked]
    d = X.shape[-1]
    draws = np.stack([np.random.default_rng(seed).standard_normal((2, 1000, d, d)) for seed in SEEDS])
    W_Q, W_K = draws[:, 0], draws[:, 1]  # (seeds, draws, d_model, d_k) each
    A = softmax((X @ W_Q) @ (X @ W_K).swapaxes(-1, -2) / np.sqrt(d))  # (seeds, draws, seq, seq)
    Y = A @ X  # (seeds, draws, seq, d_model)
    links = (Y[..., it, :] * Y[..., picked, :]).sum(axis=-1)  # (seeds, draws)
    q1, q3 = np.quantile(links, [0.25, 0.75], axis=-1)  # (seeds,) each
    assert (links > 0).all()
    assert ((q1 < similarity_link) & (similarity_link < q3)).all()
    assert dot_product_scores(X, X)[it, picked] == 0
