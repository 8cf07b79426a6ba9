"""What attention by plain similarity forces, in numbers (chapter 2).

With scores S = X X^T the scores are symmetric. After the row softmax,

    W_ij = exp(S_ij) / Z_i,   Z_i = sum_k exp(S_ik),

so W_ij / W_ji = Z_j / Z_i: the weights of a pair can differ only through one number per
token, its row normaliser. ``log_normalisers`` computes log Z; ``repeated_attention``
applies similarity attention round after round, so a chapter can watch similarity spread
along chains. Rows are tokens throughout. Bad input is refused through
``attncourse.validation`` (``TypeError`` for the wrong kind of thing, ``ValueError`` naming
the value at fault).
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float

from attncourse.attention import dot_product_scores, softmax
from attncourse.validation import integer, number, real_array, same_size

__all__ = ["cosine_similarity", "log_normalisers", "repeated_attention"]


def log_normalisers(scores: Float[np.ndarray, "seq_q seq_k"]) -> Float[np.ndarray, " seq_q"]:
    """log Z_i = log sum_j exp(S_ij) for every row i, computed without overflow.

    >>> log_normalisers([[0.0, 0.0], [1000.0, 1000.0]]).round(4).tolist()
    [0.6931, 1000.6931]
    """
    scores = real_array(scores, "scores", ndim=2, non_empty=(1,), layout="(seq_q, seq_k)")
    row_max = scores.max(axis=-1)  # (seq_q,)
    return row_max + np.log(np.exp(scores - row_max[:, None]).sum(axis=-1))


def repeated_attention(
    X: Float[np.ndarray, "seq d_model"], steps: int, scale: float = 1.0
) -> tuple[Float[np.ndarray, "steps_plus_1 seq d_model"], Float[np.ndarray, "steps_plus_1 seq seq"]]:
    """Apply similarity attention ``steps`` times: X_{t+1} = softmax(scale X_t X_t^T) X_t.

    Returns ``(states, weights)``: states[t] is X_t (states[0] is X itself) and
    weights[t] = softmax(scale X_t X_t^T), the attention applied to X_t.

    >>> states, weights = repeated_attention([[1.0, 0.0], [0.0, 1.0]], steps=1)
    >>> states[1].round(3).tolist()
    [[0.731, 0.269], [0.269, 0.731]]
    """
    X = real_array(X, "X", ndim=2, non_empty=(0,), layout="(seq, d_model)")
    steps = integer(steps, "steps", minimum=0)
    scale = number(scale, "scale")
    attention = lambda current: softmax(scale * dot_product_scores(current, current))
    states = [X]
    for _ in range(steps):
        states.append(attention(states[-1]) @ states[-1])  # (seq, d_model)
    weights = [attention(state) for state in states]  # each (seq, seq)
    return np.stack(states), np.stack(weights)


def cosine_similarity(a: Float[np.ndarray, " d"], b: Float[np.ndarray, " d"]) -> float:
    """cos(a, b) = a . b / (|a| |b|), between -1 (opposite) and 1 (same direction).

    >>> cosine_similarity([1.0, 0.0], [-2.0, 0.0])
    -1.0
    """
    a, b = real_array(a, "a", ndim=1, layout="(d,)"), real_array(b, "b", ndim=1, layout="(d,)")
    same_size("d", ("a", a, 0), ("b", b, 0), "a cosine compares two vectors of one length")
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    if norms == 0:
        raise ValueError("the cosine of a zero vector is undefined")
    return float(a @ b / norms)
