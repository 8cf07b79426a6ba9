"""One embedding space asked to hold attention: gradient steps on the embeddings (torch).

Chapter 2's hot/cold/temperature demonstration. With plain similarity attention
W = softmax(X X^T), the only way to make a word attend to another is to move the
embeddings themselves. ``fit_similarity_attention`` does exactly that by gradient
descent and returns every intermediate embedding matrix, so a chapter can measure what
the moves did to meaning (for instance the cosine of two antonyms). Bad input is refused through
``attncourse.validation``, naming the argument at fault.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from jaxtyping import Float

from attncourse.validation import index_array, integer, number, real_array, sequence

__all__ = ["fit_similarity_attention"]


def _checked_examples(vocab_size: int, sentences, queries, targets):
    """``(sentences, queries, targets)`` as lists of index arrays and of ints, each index a
    word of the vocabulary and each position inside its sentence."""
    sentences, queries, targets = (sequence(v, name) for v, name in
                                   ((sentences, "sentences"), (queries, "queries"), (targets, "targets")))
    if not (len(sentences) == len(queries) == len(targets)) or not sentences:
        raise ValueError(
            f"need one query and one target position per sentence, got {len(sentences)} "
            f"sentences, {len(queries)} queries, {len(targets)} targets"
        )
    sentences = [index_array(sentence, f"sentences[{k}]", size=vocab_size)
                 for k, sentence in enumerate(sentences)]
    queries, targets = ([integer(position, f"{name}[{k}]", minimum=0, maximum=len(sentences[k]) - 1)
                         for k, position in enumerate(positions)]
                        for positions, name in ((queries, "queries"), (targets, "targets")))
    return sentences, queries, targets


def fit_similarity_attention(
    embeddings: Float[np.ndarray, "vocab d_model"],
    sentences: Sequence[Sequence[int]],
    queries: Sequence[int],
    targets: Sequence[int],
    steps: int = 100,
    learning_rate: float = 0.05,
    opposites: Sequence[tuple[int, int]] = (),
    meaning_weight: float = 0.0,
) -> tuple[Float[np.ndarray, "steps_plus_1 vocab d_model"], Float[np.ndarray, " steps"]]:
    """Gradient descent on the embeddings so that each query word attends to its target.

    ``sentences[k]`` lists vocabulary indices (rows of ``embeddings``); in sentence k the
    word at position ``queries[k]`` should attend to the word at position ``targets[k]``.
    The loss is the sum over sentences of -log W_k[query, target] with
    W_k = softmax(X_k X_k^T), X_k = embeddings[sentences[k]] (seq, d_model).

    With ``meaning_weight`` > 0 the loss also asks the pairs of vocabulary indices in
    ``opposites`` to stay opposite: it adds meaning_weight * (1 + cos(x_a, x_b)) for each
    pair (a, b), which is 0 for exact opposites and grows as they turn towards each other.
    Without it, nothing in the loss mentions meaning.

    Plain gradient steps (no momentum), float64, no randomness: the result depends only
    on the inputs. Returns ``(history, losses)``: history[t] is the embedding matrix
    after t steps (history[0] equals the input), losses[t] the loss of history[t].

    >>> history, losses = fit_similarity_attention(np.eye(2), [[0, 1]], [0], [1], steps=5)
    >>> bool(losses[-1] < losses[0])
    True
    """
    start = real_array(embeddings, "embeddings", ndim=2, non_empty=True, layout="(vocab, d_model)")
    start = start.astype(float)  # float64: the embeddings are trained in float64
    sentences, queries, targets = _checked_examples(start.shape[0], sentences, queries, targets)
    steps = integer(steps, "steps", minimum=1)
    learning_rate = number(learning_rate, "learning_rate", above=0)
    meaning_weight = number(meaning_weight, "meaning_weight", minimum=0)
    opposites = sequence(opposites, "opposites")
    pairs = (index_array(opposites, "opposites", size=start.shape[0], ndim=2, layout="(n_pairs, 2)")
             if opposites else np.zeros((0, 2), dtype=int))
    if pairs.shape[1] != 2:
        raise ValueError(f"opposites must be pairs of words, shape (n_pairs, 2), got shape {pairs.shape}")

    table = torch.tensor(start, dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.SGD([table], lr=learning_rate)
    history, losses = [start.copy()], []
    for _ in range(steps):
        loss = torch.zeros((), dtype=torch.float64)
        for sentence, query, target in zip(sentences, queries, targets):
            X = table[sentence]  # (seq, d_model)
            log_weights = torch.log_softmax(X @ X.T, dim=-1)  # (seq, seq)
            loss = loss - log_weights[query, target]
        for a, b in pairs.tolist():
            loss = loss + meaning_weight * (1 + torch.cosine_similarity(table[a], table[b], dim=0))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
        history.append(table.detach().numpy().copy())
    return np.stack(history), np.array(losses)
