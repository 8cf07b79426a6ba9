"""The course's toy sentences, with hand-made embeddings whose dimensions have names.

Every function returns a fresh ``ToyEmbeddings``, so a chapter may edit its copy freely.
Rows are tokens: ``X`` has shape (seq, d_model) and ``dims`` names its columns.

The sentences come from the seeds (see references.bib): "pool beats badminton" of
intuition_attention_head (chapter 1), "He picked up the tennis ball and found it was
wet" and the hot/cold/temperature example of mehta2022demystified (chapters 2 and 3).
The numbers are ours, chosen so that plain dot-product similarity does what the seed
describes (for instance, "it" is most similar to "ball").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from jaxtyping import Float

from attncourse.validation import real_array, sequence, text

__all__ = ["ToyEmbeddings", "hot_cold_general", "hot_cold_words", "keys_and_locks", "pool_beats_badminton", "tennis_sentence"]


@dataclass(frozen=True, eq=False)
class ToyEmbeddings:
    """Token labels, dimension names and the embedding matrix X (seq, d_model)."""

    tokens: tuple[str, ...]
    dims: tuple[str, ...]
    X: Float[np.ndarray, "seq d_model"]

    def __post_init__(self):
        for name in ("tokens", "dims"):
            labels = sequence(getattr(self, name), name)
            object.__setattr__(self, name, tuple(text(label, f"{name}[{k}]") for k, label in enumerate(labels)))
        object.__setattr__(self, "X", real_array(self.X, "X", ndim=2, layout="(seq, d_model)"))
        if self.X.shape != (len(self.tokens), len(self.dims)):
            raise ValueError(
                f"X has shape {self.X.shape} but there are {len(self.tokens)} tokens "
                f"and {len(self.dims)} dimension names"
            )

    def index(self, token: str) -> int:
        """Row of ``token`` in X (the first one if the token occurs twice)."""
        token = text(token, "token")
        if token not in self.tokens:
            raise ValueError(f"{token!r} is not one of the tokens {list(self.tokens)}")
        return self.tokens.index(token)


def pool_beats_badminton() -> ToyEmbeddings:
    """"pool beats badminton": 3 tokens, d_model = 4, the numbers of the seed post.

    Only the first dimension has a meaning, "sports"; pool and badminton are high there.

    >>> sentence = pool_beats_badminton()
    >>> sentence.X.shape, sentence.dims[0]
    ((3, 4), 'sports')
    """
    rows = {
        #            sports d1   d2   d3
        "pool":      [0.5, 0.1, 0.1, 0.2],
        "beats":     [0.1, 0.5, 0.2, 0.1],
        "badminton": [0.5, 0.1, 0.2, 0.1],
    }
    return ToyEmbeddings(
        tokens=tuple(rows), dims=("sports", "d1", "d2", "d3"), X=np.array(list(rows.values()))
    )


def tennis_sentence() -> ToyEmbeddings:
    """"He picked up the tennis ball and found it was wet": 11 tokens, d_model = 5.

    Dimensions: thing (a physical object), person, pronoun, sport, action. "it" is a
    pronoun for a thing, so plain similarity makes it closest to "ball".

    >>> sentence = tennis_sentence()
    >>> sentence.X.shape, sentence.index("ball")
    ((11, 5), 5)
    """
    rows = {
        #         thing person pronoun sport action
        "He":     [0.0, 1.0, 1.0, 0.0, 0.0],
        "picked": [0.0, 0.0, 0.0, 0.0, 1.5],
        "up":     [0.0, 0.0, 0.0, 0.0, 0.8],
        "the":    [0.3, 0.0, 0.0, 0.0, 0.0],
        "tennis": [0.5, 0.0, 0.0, 1.5, 0.0],
        "ball":   [1.5, 0.0, 0.0, 1.0, 0.0],
        "and":    [0.0, 0.0, 0.0, 0.0, 0.0],
        "found":  [0.0, 0.0, 0.0, 0.0, 1.2],
        "it":     [1.2, 0.0, 0.5, 0.0, 0.0],
        "was":    [0.0, 0.0, 0.0, 0.0, 0.5],
        "wet":    [0.6, 0.0, 0.0, 0.0, 0.4],
    }
    return ToyEmbeddings(
        tokens=tuple(rows),
        dims=("thing", "person", "pronoun", "sport", "action"),
        X=np.array(list(rows.values())),
    )


def keys_and_locks() -> tuple[Float[np.ndarray, "d_model d_k"], Float[np.ndarray, "d_model d_k"]]:
    """Chapter 3's hand-built W_Q and W_K for ``tennis_sentence``, (d_model, d_k) = (5, 2).

    Query columns: "wants a thing", "wants a sport"; key columns: "is a thing", "is a
    sport". A pronoun wants the thing it stands for (unless it stands for a person), a
    thing wants the sport it belongs to.

    >>> W_Q, W_K = keys_and_locks()
    >>> X = tennis_sentence().X
    >>> float((X @ W_Q @ W_K.T @ X.T)[8, 5])  # it on ball
    3.4
    """
    thing, person, pronoun, sport, _ = range(5)  # the dimensions of tennis_sentence
    W_Q = np.zeros((5, 2))  # (d_model, d_k)
    W_Q[pronoun, 0] = 4.0   # a pronoun wants the thing it stands for...
    W_Q[person, 0] = -4.0   # ...unless it stands for a person ("He")
    W_Q[thing, 1] = 2.0     # a thing wants the sport it belongs to...
    W_Q[pronoun, 1] = -4.0  # ...but a pronoun does not
    W_K = np.zeros((5, 2))  # (d_model, d_k)
    W_K[thing, 0] = 1.0     # things say "I am a thing"...
    W_K[pronoun, 0] = -3.0  # ...pronouns are not the thing itself
    W_K[sport, 1] = 1.0     # sports say "I am a sport"
    return W_Q, W_K


def hot_cold_words() -> ToyEmbeddings:
    """The vocabulary of "the temperature is hot / cold" in ONE 2-D space, d_model = 2.

    "hot" and "cold" are antonyms, so they start exactly opposite (cosine -1);
    "temperature" is perpendicular to both.

    >>> words = hot_cold_words()
    >>> words.X[words.index("hot")] @ words.X[words.index("cold")]
    np.float64(-1.0)
    """
    rows = {
        "the":         [0.3, -0.4],
        "temperature": [0.0, 1.0],
        "is":          [-0.3, -0.4],
        "hot":         [1.0, 0.0],
        "cold":        [-1.0, 0.0],
    }
    return ToyEmbeddings(tokens=tuple(rows), dims=("e0", "e1"), X=np.array(list(rows.values())))


def hot_cold_general() -> ToyEmbeddings:
    """The same words in a richer *general* representation, d_model = 3.

    Dimensions: "warmth" (+1 hot, -1 cold), "describes a temperature" (shared by hot
    and cold) and "is a temperature" (the word temperature itself). Meaning and attention
    live on different axes, so projections can pick out one or the other.
    """
    rows = {
        #              warmth describes-a-temperature is-a-temperature
        "the":         [0.0, 0.0, 0.0],
        "temperature": [0.0, 0.0, 1.0],
        "is":          [0.0, 0.0, 0.0],
        "hot":         [1.0, 1.0, 0.0],
        "cold":        [-1.0, 1.0, 0.0],
    }
    return ToyEmbeddings(
        tokens=tuple(rows),
        dims=("warmth", "describes a temperature", "is a temperature"),
        X=np.array(list(rows.values())),
    )
