"""Where is each word? Positional encodings: sinusoidal tables, ALiBi's biases, RoPE's rotations.

Attention without a causal mask is permutation-equivariant (chapter 3): it cannot tell
"dog bites man" from "man bites dog". The encodings here give it positions, in three ways:

* ``sinusoidal_positions``: a table added to the embeddings (Vaswani et al. 2017). Each
  pair of columns (2i, 2i + 1) is a point on a circle turning at the frequency
  ``base**(-2i/d_model)``, so ``PE[p] . PE[p + k] = sum_i cos(k * frequency_i)``, a function
  of the offset k alone (``sinusoidal_dot_product``).
* ``alibi_slopes`` and ``alibi_bias``: a bias ``-slope_h * (i - j)`` on the scores of head h
  (Press et al. 2022), passed to ``attention.scaled_dot_product_attention(..., bias=)``.
* ``rope``: each pair of dimensions of a query or key rotated by an angle proportional to
  its position (Su et al. 2021, the interleaved pairs of RoFormer), so that the score of a
  rotated query and key depends on their content and on the offset between them only.
  ``rope_decay_bound`` is the paper's upper bound on how much that score can keep at a
  distance.

Rows are tokens: a table is ``(n_positions, d_model)``, queries and keys ``(..., seq, d)``.
Every function is pure (inputs are never changed); bad input is refused through
``attncourse.validation``: ``TypeError`` for the wrong kind of thing ('3' is not an
offset), ``ValueError`` naming the value at fault (NaN, an odd width, a size below 1).
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float

from attncourse.validation import integer, number, real_array

__all__ = [
    "alibi_bias",
    "alibi_slopes",
    "learned_position_table",
    "offsets",
    "rope",
    "rope_decay_bound",
    "rope_frequencies",
    "sinusoidal_dot_product",
    "sinusoidal_frequencies",
    "sinusoidal_positions",
]


def _even_width(value, name: str) -> int:
    width = integer(value, name, minimum=2)
    if width % 2:
        raise ValueError(
            f"{name} must be even (the dimensions go in pairs, one angle per pair), got {width}"
        )
    return width


def _base(base) -> float:
    return number(base, "base", above=0)


def _offsets(offset) -> np.ndarray:
    """``offset`` (a number or an array of them) as finite floats: an offset of NaN or
    infinity has no dot product, and '3' is not 3."""
    return real_array(offset, "offset").astype(np.float64, copy=False)


def sinusoidal_frequencies(d_model: int, base: float = 10000.0) -> Float[np.ndarray, " half"]:
    """The angular frequencies w_i = base**(-2i/d_model), i = 0 .. d_model/2 - 1: column
    pair (2i, 2i + 1) of the sinusoidal table turns by w_i radians per position.

    >>> sinusoidal_frequencies(4, base=100.0).tolist()
    [1.0, 0.1]
    """
    d_model = _even_width(d_model, "d_model")
    return _base(base) ** (-np.arange(0, d_model, 2) / d_model)  # (d_model / 2,)


def sinusoidal_positions(
    n_positions: int, d_model: int, base: float = 10000.0
) -> Float[np.ndarray, "n_positions d_model"]:
    """The sinusoidal table of Vaswani et al.: PE[p, 2i] = sin(p w_i), PE[p, 2i+1] = cos(p w_i)
    with w_i = base**(-2i/d_model). Shape (n_positions, d_model); row p is added to the
    embedding of the token at position p.

    >>> sinusoidal_positions(2, 2).round(4).tolist()
    [[0.0, 1.0], [0.8415, 0.5403]]
    """
    n_positions = integer(n_positions, "n_positions", minimum=1)
    angles = np.arange(n_positions)[:, None] * sinusoidal_frequencies(d_model, base)  # (n_positions, d_model / 2)
    table = np.empty((n_positions, 2 * angles.shape[1]))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def sinusoidal_dot_product(
    offset, d_model: int, base: float = 10000.0
) -> Float[np.ndarray, ...]:
    """PE[p] . PE[p + k] for an offset k (a number or an array of them), whatever p is:
    sum_i cos(k w_i), since sin(a) sin(b) + cos(a) cos(b) = cos(b - a) in each pair.

    >>> float(sinusoidal_dot_product(0, 8))  # each pair is a unit vector: d_model / 2
    4.0
    """
    k = _offsets(offset)
    return np.cos(k[..., None] * sinusoidal_frequencies(d_model, base)).sum(axis=-1)


def rope_frequencies(d: int, base: float = 10000.0) -> Float[np.ndarray, " half"]:
    """RoPE's theta_i = base**(-2i/d), i = 0 .. d/2 - 1: the angle, in radians, by which pair
    (2i, 2i + 1) of a query or key turns per position (the sinusoidal table's frequencies)."""
    return sinusoidal_frequencies(_even_width(d, "d (the width of the queries and keys)"), base)


def _positions(positions, seq: int) -> np.ndarray:
    if positions is None:
        return np.arange(seq, dtype=np.float64)
    values = real_array(positions, "positions", shape=(seq,), layout="(seq,)")
    return values.astype(np.float64, copy=False)


def rope(
    X: Float[np.ndarray, "... seq d"], positions=None, base: float = 10000.0
) -> Float[np.ndarray, "... seq d"]:
    """Rotary position embedding (Su et al. 2021, RoFormer's interleaved pairs).

    Pair (2i, 2i + 1) of row p is rotated by the angle positions[p] * theta_i with
    theta_i = base**(-2i/d): read as the complex number x[2i] + j x[2i+1], it is multiplied
    by exp(j positions[p] theta_i). X is (..., seq, d) with d even (queries or keys after
    their projection); positions (seq,) defaults to 0 .. seq - 1. Returns a new array of
    X's shape; X is never changed.

    >>> rope([[1.0, 0.0], [1.0, 0.0]], base=10.0).round(4).tolist()  # row 1 turned by 1 rad
    [[1.0, 0.0], [0.5403, 0.8415]]
    """
    array = real_array(X, "X", min_ndim=2, layout="(..., seq, d)")
    seq, d = array.shape[-2:]
    if d % 2 or d == 0:
        raise ValueError(
            f"X's last dimension d must be even and positive (RoPE rotates pairs of "
            f"dimensions), got shape {array.shape}"
        )
    angles = _positions(positions, seq)[:, None] * rope_frequencies(d, base)  # (seq, d / 2)
    cos, sin = np.cos(angles), np.sin(angles)
    even, odd = array[..., 0::2], array[..., 1::2]  # (..., seq, d / 2) each: real and imaginary parts
    rotated = np.empty(array.shape, dtype=np.result_type(array.dtype, np.float64))
    rotated[..., 0::2] = even * cos - odd * sin
    rotated[..., 1::2] = even * sin + odd * cos
    return rotated


def rope_decay_bound(offset, d: int, base: float = 10000.0) -> Float[np.ndarray, ...]:
    """Su et al.'s long-range bound (their section 3.4.3), relative to its value at offset 0.

    With the pairs as complex numbers, q_i = q[2i] + j q[2i+1] and the same for k, the score
    of q rotated at position m and k rotated at n is Re sum_i h_i e^{j k theta_i} with
    h_i = q_i conj(k_i) and k = m - n the offset. Abel summation gives
    |sum_i h_i e^{j k theta_i}| <= max_i |h_{i+1} - h_i| * sum_{i=1}^{d/2} |S_i| with
    S_i = sum_{l<i} e^{j k theta_l}. This returns the factor (2/d) sum_i |S_i|: (d/2 + 1)/2
    at offset 0, it decays (not monotonically) as |k| grows.

    >>> float(rope_decay_bound(0, 8))  # |S_i| = i at offset 0: mean of 1..4
    2.5
    """
    k = _offsets(offset)
    turns = np.exp(1j * k[..., None] * rope_frequencies(d, base))  # (..., d / 2)
    partial_sums = np.cumsum(turns, axis=-1)  # (..., d / 2): S_1 .. S_{d/2}
    return np.abs(partial_sums).mean(axis=-1)


def alibi_slopes(n_heads: int) -> Float[np.ndarray, " n_heads"]:
    """ALiBi's per-head slopes (Press et al. 2022).

    For n_heads a power of two: 2**(-8k/n_heads), k = 1 .. n_heads, a geometric sequence
    from 2**(-8/n) down to 2**-8. Otherwise, as the paper's reference implementation does:
    with c the largest power of two <= n_heads, the c slopes of c heads followed by every
    other slope of 2c heads, the first n_heads - c of them.

    >>> alibi_slopes(4).tolist()
    [0.25, 0.0625, 0.015625, 0.00390625]
    """
    n_heads = integer(n_heads, "n_heads", minimum=1)
    power = 1 << (n_heads.bit_length() - 1)  # the largest power of two <= n_heads
    slopes = 2.0 ** (-8.0 * np.arange(1, power + 1) / power)  # (power,)
    if power == n_heads:
        return slopes
    return np.concatenate([slopes, alibi_slopes(2 * power)[0::2][: n_heads - power]])


def offsets(n: int) -> np.ndarray:
    """The (n, n) matrix of offsets i - j of query i from key j: how far back key j is.

    >>> offsets(3).tolist()
    [[0, -1, -2], [1, 0, -1], [2, 1, 0]]
    """
    n = integer(n, "n", minimum=1)
    return np.arange(n)[:, None] - np.arange(n)[None, :]


def alibi_bias(n: int, n_heads: int) -> Float[np.ndarray, "n_heads n n"]:
    """ALiBi's biases (n_heads, n, n): bias[h, i, j] = -slope_h * |i - j|.

    On and below the diagonal (key j at or before query i) this is the paper's
    -slope_h * (i - j). Above it, the choice here is the same penalty on the distance,
    -slope_h * (j - i): finite and symmetric, so the bias can be used without a causal mask
    (attention that looks both ways, as in an encoder) and a causal mask hides it anyway.

    >>> (alibi_bias(3, 2)[0] * 16).tolist()  # head 0's slope is 2**-4
    [[0.0, -1.0, -2.0], [-1.0, 0.0, -1.0], [-2.0, -1.0, 0.0]]
    """
    distance = np.abs(offsets(n))  # (n, n)
    # adding 0.0 turns the diagonal's -0.0 into 0.0, which prints as a reader expects
    return -alibi_slopes(n_heads)[:, None, None] * distance + 0.0  # (n_heads, n, n)


def learned_position_table() -> Float[np.ndarray, "n_positions d_model"]:
    """The learned position table of chapter 7's model, all-MiniLM-L6-v2: (512, 384), float64,
    row p the vector BERT adds to the embedding of the token at position p. Read from the
    bundled safetensors file with numpy (no torch)."""
    from safetensors import safe_open

    from attncourse.pretrained import model_path

    with safe_open(model_path() / "model.safetensors", framework="numpy") as tensors:
        table = tensors.get_tensor("embeddings.position_embeddings.weight").astype(np.float64)
    return table  # (n_positions, d_model)
