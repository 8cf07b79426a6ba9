"""Tests for ``attncourse.examples``: the toy sentences keep the properties the chapters
build on, and every call hands out a fresh copy."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.examples import (
    ToyEmbeddings,
    hot_cold_general,
    hot_cold_words,
    keys_and_locks,
    pool_beats_badminton,
    tennis_sentence,
)


def _cosine(a, b):
    return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))


def test_pool_beats_badminton_reproduces_the_seed_post():
    sentence = pool_beats_badminton()
    assert sentence.tokens == ("pool", "beats", "badminton") and sentence.dims[0] == "sports"
    scores = sentence.X @ sentence.X.T
    # The similarity scores printed in the seed post (intuition_attention_head), to the digit.
    assert np.array_equal(scores.round(2), [[0.31, 0.14, 0.30], [0.14, 0.31, 0.15], [0.30, 0.15, 0.31]])


def test_keys_and_locks_make_it_look_at_ball_and_ball_not_back():
    sentence = tennis_sentence()
    W_Q, W_K = keys_and_locks()
    assert W_Q.shape == W_K.shape == (len(sentence.dims), 2)
    scores = (sentence.X @ W_Q) @ (sentence.X @ W_K).T  # (seq, seq)
    it, ball, tennis = (sentence.index(w) for w in ("it", "ball", "tennis"))
    assert scores[it].argmax() == ball and scores[ball].argmax() == tennis
    assert scores[ball, it] == 0.0 < scores[it, ball]


def test_the_temperature_words_share_one_vocabulary_of_dimensions():
    general = hot_cold_general()
    assert general.dims == ("warmth", "describes a temperature", "is a temperature")
    temperature = general.X[general.index("temperature")]
    assert temperature.tolist() == [0.0, 0.0, 1.0]  # the word that *is* a temperature


def test_tennis_sentence_is_the_seed_sentence_with_named_dimensions():
    sentence = tennis_sentence()
    assert " ".join(sentence.tokens) == "He picked up the tennis ball and found it was wet"
    assert sentence.X.shape == (len(sentence.tokens), len(sentence.dims)) == (11, 5)


def test_it_is_most_similar_to_ball():
    sentence = tennis_sentence()
    it, ball = sentence.index("it"), sentence.index("ball")
    scores = sentence.X @ sentence.X.T
    assert scores[it].argmax() == ball


def test_hot_and_cold_start_opposite_and_perpendicular_to_temperature():
    words = hot_cold_words()
    hot, cold, temperature = (words.X[words.index(w)] for w in ("hot", "cold", "temperature"))
    assert _cosine(hot, cold) == -1.0
    assert hot @ temperature == 0.0 and cold @ temperature == 0.0


def test_general_representation_keeps_warmth_opposite_and_shares_a_dimension():
    general = hot_cold_general()
    hot, cold = general.X[general.index("hot")], general.X[general.index("cold")]
    warmth, describes = general.dims.index("warmth"), general.dims.index("describes a temperature")
    assert hot[warmth] == -cold[warmth] != 0
    assert hot[describes] == cold[describes] != 0


def test_every_call_returns_a_fresh_copy():
    first = tennis_sentence()
    first.X[:] = 0.0
    assert tennis_sentence().X.any()


def test_unknown_token_names_the_tokens():
    with pytest.raises(ValueError, match="'racket' is not one of the tokens"):
        tennis_sentence().index("racket")


def test_mismatched_labels_are_rejected():
    with pytest.raises(ValueError, match=r"X has shape \(2, 2\) but there are 3 tokens"):
        ToyEmbeddings(tokens=("a", "b", "c"), dims=("x", "y"), X=np.zeros((2, 2)))
