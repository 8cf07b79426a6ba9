"""Tests of ``attncourse.positions`` against independent formulations: the sinusoidal table
written as PyTorch's tutorial writes it, RoPE with complex numbers and with RoFormer's
block-diagonal rotation matrix, ALiBi's slopes with the reference implementation's rule
(start * ratio**i, recursion on log2), and the relative properties as hypothesis properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attncourse.positions import (
    alibi_bias,
    alibi_slopes,
    offsets,
    rope,
    rope_decay_bound,
    rope_frequencies,
    sinusoidal_dot_product,
    sinusoidal_frequencies,
    sinusoidal_positions,
)

PROPERTIES = settings(max_examples=100, deadline=None)
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
HALF_WIDTHS = st.integers(min_value=1, max_value=16)
BASES = st.sampled_from([10.0, 100.0, 10000.0, 500000.0])


# ------------------------------------------------------------------ the sinusoidal table


def torch_tutorial_table(n_positions, d_model, base=10000.0):
    """The table as PyTorch's transformer tutorial builds it: div_term = exp(-2i log(base)/d)."""
    position = torch.arange(n_positions, dtype=torch.float64)[:, None]
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(base) / d_model))
    table = torch.zeros(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table.numpy()


@pytest.mark.parametrize(("n_positions", "d_model", "base"), [(1, 2, 10000.0), (50, 16, 10000.0),
                                                              (7, 6, 10.0), (128, 384, 500000.0)])
def test_the_table_agrees_with_pytorchs_tutorial(n_positions, d_model, base):
    np.testing.assert_allclose(sinusoidal_positions(n_positions, d_model, base),
                               torch_tutorial_table(n_positions, d_model, base), rtol=0, atol=1e-12)


def test_the_table_entry_by_entry_as_the_paper_writes_it():
    table = sinusoidal_positions(5, 6, base=100.0)
    for p in range(5):
        for i in range(3):
            assert table[p, 2 * i] == pytest.approx(math.sin(p / 100.0 ** (2 * i / 6)), abs=1e-15)
            assert table[p, 2 * i + 1] == pytest.approx(math.cos(p / 100.0 ** (2 * i / 6)), abs=1e-15)


@PROPERTIES
@given(SEEDS, HALF_WIDTHS, BASES)
def test_the_dot_product_of_two_rows_depends_on_their_offset_only(seed, half, base):
    rng = np.random.default_rng(seed)
    p, q, k = (int(v) for v in rng.integers(0, 200, size=3))
    table = sinusoidal_positions(max(p, q) + k + 1, 2 * half, base)
    assert table[p] @ table[p + k] == pytest.approx(table[q] @ table[q + k], abs=1e-9)
    assert table[p] @ table[p + k] == pytest.approx(float(sinusoidal_dot_product(k, 2 * half, base)), abs=1e-9)


def test_the_frequencies_fall_geometrically_from_1():
    w = sinusoidal_frequencies(8, base=10000.0)
    np.testing.assert_allclose(w, [1.0, 0.1, 0.01, 0.001], rtol=1e-14)


@pytest.mark.parametrize(("args", "message", "error"), [
    ((0, 4), r"n_positions must be a positive integer, got 0", ValueError),
    ((2.0, 4), r"n_positions must be a positive integer, got 2\.0 of type float", TypeError),
    ((3, 5), r"d_model must be even .* got 5", ValueError),
    ((3, 0), r"d_model must be an integer >= 2, got 0", ValueError),
    ((3, "4"), r"d_model must be an integer >= 2, got '4' of type str", TypeError),
    ((3, 4, 0.0), r"base must be a finite number > 0, got 0\.0", ValueError),
    ((3, 4, float("nan")), r"base must be a finite number > 0, got nan", ValueError),
    ((3, 4, "100"), r"base must be a finite number > 0, got '100' of type str", TypeError),
])
def test_the_table_refuses_bad_sizes(args, message, error):
    with pytest.raises(error, match=message):
        sinusoidal_positions(*args)


# ------------------------------------------------------------------------------- RoPE


def complex_rope(X, positions, base=10000.0):
    """RoPE as complex multiplication: (x[2i] + j x[2i+1]) * exp(j p theta_i)."""
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[-1]
    theta = 1.0 / base ** (np.arange(d // 2) * 2.0 / d)
    pairs = X[..., 0::2] + 1j * X[..., 1::2]
    turned = pairs * np.exp(1j * np.asarray(positions, dtype=np.float64)[:, None] * theta)
    return np.stack([turned.real, turned.imag], axis=-1).reshape(X.shape)


def roformer_matrix(position, d, base=10000.0):
    """RoFormer's equation (15): the block-diagonal rotation R^d_{Theta, m} (d, d)."""
    R = np.zeros((d, d))
    for i in range(d // 2):
        angle = position * base ** (-2 * i / d)
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(angle), -math.sin(angle)],
                                               [math.sin(angle), math.cos(angle)]]
    return R


@PROPERTIES
@given(SEEDS, HALF_WIDTHS, BASES, st.integers(1, 6), st.lists(st.integers(1, 3), max_size=2))
def test_rope_is_the_complex_rotation(seed, half, base, seq, batch):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(*batch, seq, 2 * half))
    positions = rng.uniform(-100, 1000, size=seq)
    np.testing.assert_allclose(rope(X, positions, base), complex_rope(X, positions, base),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(rope(X, base=base), complex_rope(X, np.arange(seq), base), rtol=0, atol=1e-12)


def test_rope_is_roformers_rotation_matrix():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 8))  # (seq, d)
    expected = np.stack([roformer_matrix(p, 8, base=100.0) @ X[p] for p in range(5)])
    np.testing.assert_allclose(rope(X, base=100.0), expected, rtol=0, atol=1e-13)


@PROPERTIES
@given(SEEDS, HALF_WIDTHS, BASES)
def test_a_rope_score_depends_on_the_content_and_the_offset_only(seed, half, base):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, 1, 2 * half))
    m, n, shift = rng.uniform(-500, 500, size=3)
    score = (rope(q, [m], base) @ rope(k, [n], base).T).item()
    shifted = (rope(q, [m + shift], base) @ rope(k, [n + shift], base).T).item()
    assert score == pytest.approx(shifted, abs=1e-8)
    # and it is q^T R(n - m) k with one rotation by the offset (R(m)^T R(n) = R(n - m))
    d = 2 * half
    assert score == pytest.approx(q[0] @ roformer_matrix(n - m, d, base) @ k[0], abs=1e-8)


def test_rope_keeps_lengths_and_never_changes_its_input():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2, 6, 4))
    before = X.copy()
    rotated = rope(X)
    assert np.array_equal(X, before) and rotated is not X
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(X, axis=-1), rtol=1e-13)
    np.testing.assert_array_equal(rotated[..., 0, :], X[..., 0, :])  # position 0: no turn


def test_rope_accepts_lists_and_integers():
    np.testing.assert_allclose(rope([[1, 0], [1, 0]], base=10.0),
                               [[1.0, 0.0], [math.cos(1.0), math.sin(1.0)]], rtol=0, atol=1e-15)


@pytest.mark.parametrize(("X", "kwargs", "message", "error"), [
    (np.ones((3, 5)), {}, r"d must be even and positive .*got shape \(3, 5\)", ValueError),
    (np.ones((3, 0)), {}, r"d must be even and positive .*got shape \(3, 0\)", ValueError),
    (np.ones(4), {}, r"X must have at least 2 dimensions, shape \(\.\.\., seq, d\), got shape \(4,\)", ValueError),
    (np.ones((3, 4)), {"positions": [0, 1]}, r"positions must have shape \(seq=3,\), got shape \(2,\)", ValueError),
    (np.ones((3, 4)), {"positions": [[0, 1, 2]]}, r"shape \(seq=3,\), got shape \(1, 3\)", ValueError),
    (np.ones((3, 4)), {"positions": [0, np.nan, 2]}, r"positions of shape \(3,\) contains NaN at index \(1,\)", ValueError),
    (np.ones((3, 4)), {"positions": ["a", "b", "c"]}, r"positions must be an array of real numbers", TypeError),
    (np.ones((3, 4)), {"base": -1.0}, r"base must be a finite number > 0, got -1\.0", ValueError),
    (np.ones((3, 4)) * 1j, {}, r"X must be real, got dtype complex128", TypeError),
])
def test_rope_refuses_bad_input(X, kwargs, message, error):
    with pytest.raises(error, match=message):
        rope(X, **kwargs)


def test_the_frequencies_need_an_even_width():
    assert rope_frequencies(4, base=100.0).tolist() == [1.0, 0.1]
    with pytest.raises(ValueError, match="must be even"):
        rope_frequencies(3)


# ------------------------------------------------------------------ RoPE's decay bound


def test_the_bound_is_half_of_d_over_2_plus_1_at_offset_0():
    for d in (2, 8, 64, 128):
        assert float(rope_decay_bound(0, d)) == pytest.approx((d // 2 + 1) / 2, rel=1e-14)


@PROPERTIES
@given(SEEDS, st.integers(2, 32), st.floats(-2000, 2000))
def test_the_bound_bounds_every_rope_score(seed, half, offset):
    """Abel summation: |sum h_i e^{j k theta_i}| <= max_i |h_{i+1} - h_i| * sum_i |S_i|, with
    h_{d/2} = 0, for h_i = q_i conj(k_i) and the score q rotated at k, k at 0."""
    rng = np.random.default_rng(seed)
    d = 2 * half
    q, k = rng.normal(size=(2, 1, d))
    score = (rope(q, [offset]) @ rope(k, [0.0]).T).item()
    h = (q[0, 0::2] + 1j * q[0, 1::2]) * np.conj(k[0, 0::2] + 1j * k[0, 1::2])
    steps = np.abs(np.diff(np.append(h, 0.0))).max()
    assert abs(score) <= steps * half * float(rope_decay_bound(offset, d)) + 1e-9


def test_the_bound_decays_with_the_offset():
    far = rope_decay_bound(np.arange(200, 256), 128)
    near = rope_decay_bound(np.arange(0, 8), 128)
    assert far.max() < 0.5 * near.min()


# ---------------------------------------------------------------------------- ALiBi


def reference_slopes(n):
    """The rule of ALiBi's reference implementation (ofirpress/attention_with_linear_biases)."""
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + reference_slopes(2 * closest)[0::2][: n - closest]


@pytest.mark.parametrize("n_heads", range(1, 65))
def test_the_slopes_follow_the_reference_rule(n_heads):
    np.testing.assert_allclose(alibi_slopes(n_heads), reference_slopes(n_heads), rtol=1e-14, atol=0)


def test_the_slopes_of_8_heads_are_the_papers():
    assert alibi_slopes(8).tolist() == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]
    # 6 heads: the 4 slopes of 4 heads, then every other slope of 8 heads, the first 2
    assert alibi_slopes(6).tolist() == [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3]


@pytest.mark.parametrize(("n_heads", "error"), [(0, ValueError), (-2, ValueError), (2.0, TypeError),
                                                (True, TypeError), ("8", TypeError)])
def test_the_slopes_refuse_a_bad_number_of_heads(n_heads, error):
    with pytest.raises(error, match="n_heads must be a positive integer"):
        alibi_slopes(n_heads)


def test_the_bias_below_the_diagonal_is_minus_slope_times_distance():
    n, n_heads = 7, 3
    bias = alibi_bias(n, n_heads)
    assert bias.shape == (n_heads, n, n)
    slopes = reference_slopes(n_heads)
    for h in range(n_heads):
        for i in range(n):
            for j in range(i + 1):
                assert bias[h, i, j] == pytest.approx(-slopes[h] * (i - j), abs=1e-15)
            for j in range(i + 1, n):  # the documented choice above it: the same distance penalty
                assert bias[h, i, j] == bias[h, j, i]
    assert np.isfinite(bias).all() and not np.signbit(np.diagonal(bias, axis1=1, axis2=2)).any()


@pytest.mark.parametrize(("args", "message"), [((0, 2), r"n must be a positive integer, got 0"),
                                               ((3, 0), r"n_heads must be a positive integer, got 0")])
def test_the_bias_refuses_bad_sizes(args, message):
    with pytest.raises(ValueError, match=message):
        alibi_bias(*args)


def test_offsets_are_query_minus_key():
    np.testing.assert_array_equal(offsets(4), np.subtract.outer(np.arange(4), np.arange(4)))
