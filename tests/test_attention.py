"""Unit tests for the numpy reference attention in ``attncourse.attention``.

Expectations are derived independently of the code under test: small cases are
worked out by hand, and random cases are compared in float64 with
``torch.nn.functional.scaled_dot_product_attention``. Hypothesis properties check
the invariances every chapter relies on (rows sum to 1, shift invariance of softmax,
permutation equivariance, exact zeros for masked entries). The module's doctests run
separately under ``pytest --doctest-modules``.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from beartype import beartype
from hypothesis import given, settings
from hypothesis import strategies as st
from jaxtyping import TypeCheckError, jaxtyped

from attncourse.attention import (
    causal_mask,
    dot_product_scores,
    scaled_dot_product_attention,
    softmax,
)
from tests.strategies import (
    BATCH_SHAPES,
    SCALES,
    SEEDS,
    SIZES,
    attention_problems,
    random_mask,
    score_arrays,
    sequences_and_permutations,
)

# torch's first call is slow, so no per-example deadline; few examples keep the file fast.
FAST = settings(max_examples=100, deadline=None)
THOROUGH = settings(max_examples=400, deadline=None)

def _torch_sdpa(Q, K, V, mask=None, scale=None) -> np.ndarray:
    """torch's scaled dot-product attention in float64, returned as a numpy array.

    torch wants a mask of at least 2 dimensions, so a (seq_k,) mask is passed as
    (1, seq_k), which broadcasts the same way.
    """
    as_tensor = lambda a: torch.tensor(np.asarray(a), dtype=torch.float64)
    attn_mask = None if mask is None else torch.tensor(np.atleast_2d(mask))
    out = F.scaled_dot_product_attention(
        as_tensor(Q), as_tensor(K), as_tensor(V), attn_mask=attn_mask, scale=scale
    )
    return out.numpy()


# --------------------------------------------------------------------------- softmax


def test_softmax_matches_hand_computed_probabilities():
    # exp(log 1), exp(log 2), exp(log 5) are 1, 2, 5, which sum to 8.
    weights = softmax(np.log([1.0, 2.0, 5.0]))
    np.testing.assert_allclose(weights, [1 / 8, 2 / 8, 5 / 8], rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    "scores, expected",
    [
        ([1e4, 1e4], [0.5, 0.5]),
        ([-1e4, -1e4], [0.5, 0.5]),
        ([1e4, 1e4 + math.log(3.0)], [0.25, 0.75]),
        ([-1e4, -1e4 + math.log(3.0)], [0.25, 0.75]),
        ([1e4, -1e4], [1.0, 0.0]),  # exp(-2e4) is far below float64 resolution
    ],
)
def test_softmax_does_not_overflow_for_huge_scores(scores, expected):
    weights = softmax(np.array(scores))
    assert np.all(np.isfinite(weights))
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(weights, expected, rtol=0, atol=1e-9)


def test_softmax_of_scores_at_the_ends_of_float64_warns_of_nothing():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # chapter 1's hidden test: -1e308 - 1e308 overflows to -inf
        np.testing.assert_array_equal(softmax(np.array([1e308, -1e308, 0.0])), [1.0, 0.0, 0.0])


def test_softmax_gives_exactly_zero_weight_to_minus_inf():
    weights = softmax(np.array([0.0, -np.inf, math.log(3.0)]))
    assert weights[1] == 0.0
    np.testing.assert_allclose(weights[[0, 2]], [0.25, 0.75], rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    "scores",
    [
        [-np.inf, -np.inf],
        [[0.0, 1.0], [-np.inf, -np.inf]],  # only the second row is fully masked
        [[[-np.inf]]],
    ],
)
def test_softmax_rejects_a_slice_that_is_entirely_minus_inf(scores):
    with pytest.raises(ValueError, match="entirely -inf"):
        softmax(np.array(scores))


@pytest.mark.parametrize(
    "scores", [[0.0, np.nan], [[1.0, 2.0], [np.nan, np.nan]], [np.nan]]
)
def test_softmax_rejects_nan(scores):
    with pytest.raises(ValueError, match="NaN"):
        softmax(np.array(scores))


def test_softmax_rejects_plus_inf():
    with pytest.raises(ValueError, match=re.escape("+inf")):
        softmax(np.array([0.0, np.inf]))


def test_softmax_along_axis_0_normalises_columns():
    x = np.array([[0.0, 0.0], [math.log(3.0), 0.0]])
    weights = softmax(x, axis=0)
    np.testing.assert_allclose(weights, [[0.25, 0.5], [0.75, 0.5]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(weights.sum(axis=0), [1.0, 1.0], rtol=0, atol=1e-15)


def test_softmax_along_axis_0_agrees_with_transposed_last_axis():
    x = np.random.default_rng(0).normal(size=(4, 3, 5))
    np.testing.assert_allclose(
        softmax(x, axis=0), np.moveaxis(softmax(np.moveaxis(x, 0, -1)), -1, 0), atol=1e-15
    )


def test_softmax_checks_full_masking_along_the_requested_axis():
    # Every row has a finite entry, but column 0 is entirely -inf.
    x = np.array([[-np.inf, 0.0], [-np.inf, 1.0]])
    weights = softmax(x, axis=-1)
    np.testing.assert_array_equal(weights[:, 0], [0.0, 0.0])
    with pytest.raises(ValueError, match="entirely -inf"):
        softmax(x, axis=0)


def test_softmax_accepts_lists():
    values = [[0.5, -1.0, 2.0], [3.0, 3.0, -4.0]]
    np.testing.assert_array_equal(softmax(values), softmax(np.array(values)))


def test_softmax_does_not_mutate_its_input():
    x = np.array([[3.0, -np.inf, 1.0], [1e4, 2.0, -1e4]])
    original = x.copy()
    softmax(x)
    softmax(x, axis=0)
    np.testing.assert_array_equal(x, original)


@pytest.mark.parametrize("bad", [["a", "b"], np.array(["1.0", "2.0"]), [None, 1.0], [True, False]])
def test_softmax_rejects_non_numeric_input_as_a_type_error(bad):
    with pytest.raises(TypeError, match="x must (be an array of real numbers|hold numbers)"):
        softmax(bad)


# ----------------------------------------------------------------- dot_product_scores


def test_dot_product_scores_by_hand():
    Q = [[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]]  # 3 queries
    K = [[4.0, 1.0], [-2.0, 2.0]]  # 2 keys
    expected = [
        [1 * 4 + 2 * 1, 1 * -2 + 2 * 2],
        [0 * 4 + -1 * 1, 0 * -2 + -1 * 2],
        [3 * 4 + 0.5 * 1, 3 * -2 + 0.5 * 2],
    ]
    scores = dot_product_scores(np.array(Q), np.array(K))
    assert scores.shape == (3, 2)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-15)


def test_dot_product_scores_accepts_lists():
    Q = [[1.0, 2.0], [0.0, -1.0]]
    K = [[4.0, 1.0], [-2.0, 2.0], [0.5, 0.5]]
    np.testing.assert_array_equal(
        dot_product_scores(Q, K), dot_product_scores(np.array(Q), np.array(K))
    )


@pytest.mark.parametrize(
    "q_shape, k_shape, expected_shape",
    [
        ((3, 4), (5, 4), (3, 5)),
        ((2, 3, 4), (2, 5, 4), (2, 3, 5)),
        ((2, 1, 3, 4), (6, 5, 4), (2, 6, 3, 5)),  # batch dims broadcast
        ((3, 4), (2, 5, 4), (2, 3, 5)),
    ],
)
def test_dot_product_scores_batched_entries_are_query_key_dot_products(
    q_shape, k_shape, expected_shape
):
    rng = np.random.default_rng(1)
    Q, K = rng.normal(size=q_shape), rng.normal(size=k_shape)
    scores = dot_product_scores(Q, K)
    assert scores.shape == expected_shape
    Qb = np.broadcast_to(Q, expected_shape[:-2] + Q.shape[-2:])
    Kb = np.broadcast_to(K, expected_shape[:-2] + K.shape[-2:])
    for batch in np.ndindex(*expected_shape[:-2]):
        for i in range(expected_shape[-2]):
            for j in range(expected_shape[-1]):
                expected = sum(a * b for a, b in zip(Qb[batch][i], Kb[batch][j]))
                assert scores[batch + (i, j)] == pytest.approx(expected, abs=1e-12)


def test_dot_product_scores_does_not_mutate_inputs():
    rng = np.random.default_rng(2)
    Q, K = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    Q0, K0 = Q.copy(), K.copy()
    dot_product_scores(Q, K)
    np.testing.assert_array_equal(Q, Q0)
    np.testing.assert_array_equal(K, K0)


# ------------------------------------------------------- scaled_dot_product_attention


def test_attention_by_hand_with_default_scale():
    # d_k = 4, so the default scale is 1/2: scores [0, 2 log 3] become [0, log 3].
    Q = np.array([[1.0, 0.0, 0.0, 0.0]])
    K = np.array([[0.0, 0.0, 0.0, 0.0], [2 * math.log(3.0), 0.0, 0.0, 0.0]])
    V = np.array([[4.0], [8.0]])
    result = scaled_dot_product_attention(Q, K, V)
    assert isinstance(result, tuple) and len(result) == 2
    output, weights = result
    np.testing.assert_allclose(weights, [[0.25, 0.75]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(output, [[0.25 * 4 + 0.75 * 8]], rtol=0, atol=1e-14)


def test_attention_default_scale_is_one_over_sqrt_d_k():
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(3, 9)), rng.normal(size=(4, 9)), rng.normal(size=(4, 2))
    out_default, w_default = scaled_dot_product_attention(Q, K, V)
    out_third, w_third = scaled_dot_product_attention(Q, K, V, scale=1 / 3)
    np.testing.assert_allclose(out_default, out_third, rtol=0, atol=1e-15)
    np.testing.assert_allclose(w_default, w_third, rtol=0, atol=1e-15)
    # ... and differs from an unscaled softmax, so the scale is really applied.
    _, w_unscaled = scaled_dot_product_attention(Q, K, V, scale=1.0)
    assert not np.allclose(w_default, w_unscaled)


def test_attention_explicit_scale_by_hand():
    Q = np.array([[1.0]])
    K = np.array([[0.0], [1.0]])
    V = np.array([[1.0, 0.0], [0.0, 1.0]])
    output, weights = scaled_dot_product_attention(Q, K, V, scale=math.log(3.0))
    np.testing.assert_allclose(weights, [[0.25, 0.75]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(output, [[0.25, 0.75]], rtol=0, atol=1e-15)


def test_attention_mask_true_means_may_attend():
    Q = np.array([[1.0, 0.0]])
    K = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 0.0]])
    V = np.array([[1.0, 2.0], [30.0, 40.0], [5.0, 6.0]])
    output, weights = scaled_dot_product_attention(
        Q, K, V, mask=np.array([[True, False, True]])
    )
    # Key 1 would dominate, but it is masked; keys 0 and 2 tie.
    assert weights[0, 1] == 0.0
    np.testing.assert_allclose(weights, [[0.5, 0.0, 0.5]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(output, [[3.0, 4.0]], rtol=0, atol=1e-14)


def test_attention_with_causal_mask_first_token_sees_only_itself():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(5, 3))
    output, weights = scaled_dot_product_attention(X, X, X, mask=causal_mask(5))
    np.testing.assert_array_equal(weights[0], [1.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(output[0], X[0], rtol=0, atol=1e-15)
    assert np.all(np.triu(weights, k=1) == 0.0)


def test_attention_rejects_a_mask_that_blocks_a_whole_row():
    X = np.eye(2)
    with pytest.raises(ValueError, match="entirely -inf"):
        scaled_dot_product_attention(X, X, X, mask=np.array([[True, True], [False, False]]))


def test_attention_accepts_lists():
    Q = [[1.0, 0.5], [0.0, -1.0]]
    K = [[2.0, 1.0], [0.5, 0.5], [-1.0, 3.0]]
    V = [[1.0], [2.0], [3.0]]
    mask = [[True, False, True], [True, True, False]]
    out_list, w_list = scaled_dot_product_attention(Q, K, V, mask=mask)
    out_arr, w_arr = scaled_dot_product_attention(
        np.array(Q), np.array(K), np.array(V), mask=np.array(mask)
    )
    np.testing.assert_array_equal(out_list, out_arr)
    np.testing.assert_array_equal(w_list, w_arr)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_attention_does_not_mutate_inputs(dtype):
    rng = np.random.default_rng(5)
    Q = rng.normal(size=(2, 3, 4)).astype(dtype)
    K = rng.normal(size=(2, 5, 4)).astype(dtype)
    V = rng.normal(size=(2, 5, 6)).astype(dtype)
    mask = random_mask(rng, (2, 3, 5))
    copies = [a.copy() for a in (Q, K, V, mask)]
    scaled_dot_product_attention(Q, K, V, mask=mask, scale=0.7)
    for after, before in zip((Q, K, V, mask), copies):
        np.testing.assert_array_equal(after, before)
        assert after.dtype == before.dtype


def test_self_attention_does_not_mutate_a_shared_input():
    X = np.random.default_rng(6).normal(size=(4, 3))
    X0 = X.copy()
    scaled_dot_product_attention(X, X, X, mask=causal_mask(4))
    np.testing.assert_array_equal(X, X0)


# ------------------------------------------------------------------------ causal_mask


@pytest.mark.parametrize("n", [1, 2, 3, 7, np.int64(4)])
def test_causal_mask_is_true_on_and_below_the_diagonal(n):
    mask = causal_mask(n)
    assert mask.dtype == np.bool_
    assert mask.shape == (n, n)
    for i in range(n):
        for j in range(n):
            assert mask[i, j] == (j <= i)


@pytest.mark.parametrize(("n", "error"), [(0, ValueError), (-1, ValueError), (2.5, TypeError),
                                          (True, TypeError), (False, TypeError), ("3", TypeError),
                                          (None, TypeError), (3.0, TypeError)])
def test_causal_mask_rejects_bad_lengths(n, error):
    with pytest.raises(error, match="n must be a positive integer"):
        causal_mask(n)


# --------------------------------------------------------------------- shape errors


def _ones(*shape):
    return np.ones(shape)


@pytest.mark.parametrize(
    "call, expected_fragments",
    [
        pytest.param(
            lambda: dot_product_scores(_ones(3, 4), _ones(5, 3)),
            ["Q has d_k=4 but K has d_k=3"],
            id="dot-product-d_k",
        ),
        pytest.param(
            lambda: scaled_dot_product_attention(_ones(3, 4), _ones(5, 3), _ones(5, 2)),
            ["Q has d_k=4 but K has d_k=3"],
            id="attention-d_k",
        ),
        pytest.param(
            lambda: scaled_dot_product_attention(_ones(2, 4), _ones(3, 4), _ones(2, 5)),
            ["K has seq_k=3 but V has seq_k=2"],
            id="key-value-seq_k",
        ),
        pytest.param(
            lambda: scaled_dot_product_attention(
                _ones(2, 3, 4), _ones(2, 5, 4), _ones(2, 5, 6), mask=np.ones((3, 4), bool)
            ),
            ["(3, 4)", "(2, 3, 5)"],
            id="mask-does-not-broadcast",
        ),
        pytest.param(
            lambda: scaled_dot_product_attention(
                _ones(2, 3, 4), _ones(2, 5, 4), _ones(2, 5, 6), mask=np.ones((2, 2, 5), bool)
            ),
            ["(2, 2, 5)", "(2, 3, 5)"],
            id="mask-batch-does-not-broadcast",
        ),
        pytest.param(
            lambda: dot_product_scores(_ones(2, 3, 4), _ones(3, 5, 4)),
            ["(2,)", "(3,)"],
            id="dot-product-batch",
        ),
        pytest.param(
            lambda: scaled_dot_product_attention(_ones(2, 3, 4), _ones(3, 5, 4), _ones(3, 5, 6)),
            ["(2,)", "(3,)"],
            id="query-key-batch",
        ),
        pytest.param(
            lambda: scaled_dot_product_attention(_ones(3, 4), _ones(2, 5, 4), _ones(4, 5, 6)),
            ["(2,)", "(4,)"],
            id="key-value-batch",
        ),
        pytest.param(
            lambda: scaled_dot_product_attention(
                _ones(2, 3, 4), _ones(1, 5, 4), _ones(3, 5, 6)
            ),
            ["(2,)", "(3,)"],
            id="query-value-batch",
        ),
    ],
)
def test_shape_mismatch_raises_value_error_naming_the_shapes(call, expected_fragments):
    with pytest.raises(ValueError) as excinfo:
        call()
    message = str(excinfo.value)
    for fragment in expected_fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


@pytest.mark.parametrize(
    "mask",
    [
        np.ones((2, 3), dtype=int),
        np.ones((2, 3), dtype=float),
        [[1, 0, 1], [1, 1, 1]],
    ],
)
def test_attention_rejects_non_boolean_masks(mask):
    with pytest.raises(TypeError, match="mask must be boolean"):
        scaled_dot_product_attention(_ones(2, 4), _ones(3, 4), _ones(3, 5), mask=mask)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: dot_product_scores(_ones(4), _ones(3, 4)), id="dot-product-Q"),
        pytest.param(lambda: dot_product_scores(_ones(3, 4), _ones(4)), id="dot-product-K"),
        pytest.param(
            lambda: scaled_dot_product_attention(_ones(4), _ones(3, 4), _ones(3, 2)),
            id="attention-Q",
        ),
        pytest.param(
            lambda: scaled_dot_product_attention(_ones(2, 4), _ones(4), _ones(3, 2)),
            id="attention-K",
        ),
        pytest.param(
            lambda: scaled_dot_product_attention(_ones(2, 4), _ones(3, 4), _ones(3)),
            id="attention-V",
        ),
    ],
)
def test_one_dimensional_inputs_are_rejected(call):
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        call()


@pytest.mark.parametrize("position", [0, 1, 2])
def test_attention_rejects_non_numeric_inputs(position):
    args = [_ones(2, 3), _ones(2, 3), _ones(2, 3)]
    args[position] = [["a", "b", "c"], ["d", "e", "f"]]
    with pytest.raises(TypeError, match=f"{'QKV'[position]} must be an array of real numbers"):
        scaled_dot_product_attention(*args)


def test_dot_product_scores_rejects_non_numeric_inputs():
    with pytest.raises(TypeError, match="Q must be an array of real numbers"):
        dot_product_scores([["x", "y"]], _ones(2, 2))


# ----------------------------------------------------------------- agreement with torch


def _assert_agrees_with_torch(Q, K, V, mask, scale):
    output, weights = scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)
    seq_q, seq_k = Q.shape[-2], K.shape[-2]
    assert output.shape == Q.shape[:-2] + (seq_q, V.shape[-1])
    assert weights.shape == Q.shape[:-2] + (seq_q, seq_k)
    np.testing.assert_allclose(output, _torch_sdpa(Q, K, V, mask, scale), rtol=0, atol=1e-6)
    # With V = identity, torch's output *is* torch's attention weights.
    identity = np.broadcast_to(np.eye(seq_k), K.shape[:-2] + (seq_k, seq_k))
    torch_weights = _torch_sdpa(Q, K, identity, mask, scale)
    np.testing.assert_allclose(weights, torch_weights, rtol=0, atol=1e-6)
    if mask is not None:
        assert np.all(weights[~np.broadcast_to(mask, weights.shape)] == 0.0)


@pytest.mark.slow  # `make unit` keeps the 100 broadcast-mask problems below
@THOROUGH
@given(attention_problems())
def test_attention_agrees_with_torch(problem):
    _assert_agrees_with_torch(*problem)


@FAST
@given(attention_problems(broadcast_mask=True))
def test_attention_agrees_with_torch_for_broadcast_masks(problem):
    _assert_agrees_with_torch(*problem)


def test_attention_agrees_with_torch_for_a_batched_causal_mask():
    rng = np.random.default_rng(7)
    Q, K, V = (rng.normal(size=(2, 3, 6, 4)) for _ in range(3))
    _assert_agrees_with_torch(Q, K, V, causal_mask(6), None)


@FAST
@given(attention_problems())
def test_the_shapes_in_the_signatures_hold(problem):
    """The jaxtyping annotations (seq_q, seq_k, d_k, d_v bound once per call) describe
    what the functions take and return: checked at run time here, not in the chapters,
    which pass lists too."""
    Q, K, V, mask, scale = problem
    checked = jaxtyped(typechecker=beartype)
    output, weights = checked(scaled_dot_product_attention)(Q, K, V, mask=mask, scale=scale)
    checked(softmax)(weights)
    checked(dot_product_scores)(Q, K)
    checked(causal_mask)(Q.shape[-2])


def test_the_shape_check_catches_a_mismatch():
    checked = jaxtyped(typechecker=beartype)(dot_product_scores)
    with pytest.raises(TypeCheckError):
        checked(np.ones((2, 3)), np.ones((2, 4)))


def test_identity_values_make_the_output_equal_the_weights():
    rng = np.random.default_rng(8)
    Q, K = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    output, weights = scaled_dot_product_attention(Q, K, np.eye(5), scale=0.9)
    np.testing.assert_allclose(output, weights, rtol=0, atol=1e-15)


# ---------------------------------------------------------------- hypothesis properties


@FAST
@given(attention_problems())
def test_attention_weight_rows_sum_to_one(problem):
    Q, K, V, mask, scale = problem
    _, weights = scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert np.all(weights >= 0.0)


@FAST
@given(score_arrays(with_minus_inf=True), SEEDS)
def test_softmax_is_unchanged_by_adding_a_constant_to_each_row(x, seed):
    c = np.random.default_rng(seed).uniform(-1e3, 1e3, size=x.shape[:-1])
    np.testing.assert_allclose(softmax(x + c[..., None]), softmax(x), rtol=0, atol=1e-10)


@FAST
@given(score_arrays(with_minus_inf=True))
def test_softmax_gives_minus_inf_exactly_zero_weight(x):
    weights = softmax(x)
    masked = np.isneginf(x)
    assert np.all(weights[masked] == 0.0)
    # Finite entries are within 100 of the row maximum, so none underflows to 0.
    assert np.all(weights[~masked] > 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)


@FAST
@given(sequences_and_permutations())
def test_self_attention_is_permutation_equivariant(problem):
    X, perm, scale = problem
    output, weights = scaled_dot_product_attention(X, X, X, scale=scale)
    X_perm = X[perm]
    output_perm, weights_perm = scaled_dot_product_attention(
        X_perm, X_perm, X_perm, scale=scale
    )
    np.testing.assert_allclose(output_perm, output[perm], rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights_perm, weights[np.ix_(perm, perm)], rtol=0, atol=1e-12)


@FAST
@given(attention_problems(), SEEDS)
def test_permuting_keys_and_values_together_leaves_the_output_unchanged(problem, seed):
    Q, K, V, mask, scale = problem
    perm = np.random.default_rng(seed).permutation(K.shape[-2])
    # The mask's key columns travel with their keys.
    mask_perm = None if mask is None else mask[..., perm]
    output, weights = scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale)
    output_perm, weights_perm = scaled_dot_product_attention(
        Q, K[..., perm, :], V[..., perm, :], mask=mask_perm, scale=scale
    )
    np.testing.assert_allclose(output_perm, output, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weights_perm, weights[..., perm], rtol=0, atol=1e-12)


# --- what the reference refuses to compute ------------------------------------------------

EYE = np.eye(2)


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: softmax([1.0, 1j]), "x"),
        (lambda: dot_product_scores(1j * EYE, EYE), "Q"),
        (lambda: dot_product_scores(EYE, EYE.astype(complex)), "K"),
        (lambda: scaled_dot_product_attention(EYE, EYE, 1j * EYE), "V"),
    ],
)
def test_complex_inputs_are_refused_not_silently_made_real(call, argument):
    with pytest.raises(TypeError, match=f"{argument} must be real, got dtype complex128"):
        call()


@pytest.mark.parametrize("position", [0, 1, 2, 3])
def test_masked_arrays_are_refused_because_their_mask_would_be_ignored(position):
    arguments = [EYE, EYE, EYE, np.ones((2, 2), bool)]
    arguments[position] = np.ma.masked_array(arguments[position], mask=np.eye(2, dtype=bool))
    name = ("Q", "K", "V", "mask")[position]
    with pytest.raises(TypeError, match=f"{name} is a numpy masked array.*mask="):
        scaled_dot_product_attention(*arguments)
    with pytest.raises(TypeError, match="x is a numpy masked array"):
        softmax(np.ma.masked_array([1.0, 2.0], mask=[False, True]))


@pytest.mark.parametrize("empty", [[], np.zeros((3, 0))])
def test_softmax_over_nothing_is_refused(empty):
    with pytest.raises(ValueError, match=r"x of shape \(.*\) has no entries along axis -1 to normalise"):
        softmax(empty)


def test_softmax_names_an_axis_out_of_range():
    with pytest.raises(ValueError, match=r"axis 2 is out of range: x has shape \(2, 2\), so axis must be from -2 to 1"):
        softmax(EYE, axis=2)


def test_attention_needs_at_least_one_key():
    with pytest.raises(ValueError, match=r"K has seq_k=0 keys .*shape \(0, 2\)"):
        scaled_dot_product_attention(EYE, np.zeros((0, 2)), np.zeros((0, 2)))


def test_attention_needs_at_least_one_query_key_dimension():
    empty = np.zeros((2, 0))
    with pytest.raises(ValueError, match=r"d_k=0 .*Q shape \(2, 0\)"):
        scaled_dot_product_attention(empty, empty, EYE)


@pytest.mark.parametrize("scale", ["2", [1.0, 2.0], 1j, True, None.__class__])
def test_a_non_numeric_scale_is_refused_by_name(scale):
    with pytest.raises(TypeError, match="scale must be a finite number"):
        scaled_dot_product_attention(EYE, EYE, EYE, scale=scale)


@pytest.mark.parametrize("scale", [2, np.float32(0.5), np.int64(3), 0.0])
def test_any_real_scale_is_accepted(scale):
    _, weights = scaled_dot_product_attention(EYE, EYE, EYE, scale=scale)
    assert np.allclose(weights, softmax(float(scale) * EYE))


def test_no_query_is_still_computable():
    output, weights = scaled_dot_product_attention(np.zeros((0, 2)), EYE, EYE)
    assert output.shape == (0, 2) and weights.shape == (0, 2)


# ------------------------------------------------------------------- a bias on the scores


def _torch_sdpa_with_bias(Q, K, V, bias, mask=None, scale=None) -> np.ndarray:
    """torch's attention with a float attn_mask: the bias, plus -inf where ``mask`` is False
    (torch takes one attn_mask; a float one is added to the scaled scores)."""
    float_mask = np.asarray(bias, dtype=np.float64)
    if mask is not None:
        float_mask = float_mask + np.where(mask, 0.0, -np.inf)
    as_tensor = lambda a: torch.tensor(np.asarray(a), dtype=torch.float64)
    out = F.scaled_dot_product_attention(as_tensor(Q), as_tensor(K), as_tensor(V),
                                         attn_mask=as_tensor(np.atleast_2d(float_mask)), scale=scale)
    return out.numpy()


@st.composite
def biased_problems(draw):
    """(Q, K, V, bias, mask or None, scale): the bias of a broadcastable shape, the mask too."""
    rng = np.random.default_rng(draw(SEEDS))
    batch = draw(BATCH_SHAPES)
    seq_q, seq_k, d_k, d_v = draw(SIZES), draw(SIZES), draw(SIZES), draw(SIZES)
    Q = rng.normal(size=batch + (seq_q, d_k))
    K = rng.normal(size=batch + (seq_k, d_k))
    V = rng.normal(size=batch + (seq_k, d_v))
    full = batch + (seq_q, seq_k)
    # any suffix of the scores' shape, with any of its dimensions set to 1
    bias_shape = tuple(1 if draw(st.booleans()) else size
                       for size in full[len(full) - draw(st.integers(0, len(full))):])
    bias = 3.0 * rng.normal(size=bias_shape)
    mask = random_mask(rng, full) if draw(st.booleans()) else None
    return Q, K, V, bias, mask, draw(SCALES)


@FAST
@given(biased_problems())
def test_a_bias_agrees_with_torchs_float_attn_mask_to_1e_12(problem):
    Q, K, V, bias, mask, scale = problem
    output, weights = scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale, bias=bias)
    np.testing.assert_allclose(output, _torch_sdpa_with_bias(Q, K, V, bias, mask, scale),
                               rtol=0, atol=1e-12)
    identity = np.broadcast_to(np.eye(K.shape[-2]), K.shape[:-2] + (K.shape[-2],) * 2)
    np.testing.assert_allclose(weights, _torch_sdpa_with_bias(Q, K, identity, bias, mask, scale),
                               rtol=0, atol=1e-12)
    if mask is not None:
        assert np.all(weights[~mask] == 0.0)


def test_a_bias_is_added_after_the_scale_and_before_the_softmax():
    # One query, two keys: scores 2 * (1, 0) = (2, 0), plus the bias (0, 2 - log 3): the
    # weights are softmax(2, 2 - log 3) = (3/4, 1/4), computed by hand.
    Q, K = np.array([[1.0, 0.0]]), np.eye(2)
    _, weights = scaled_dot_product_attention(Q, K, np.eye(2), scale=2.0, bias=[0.0, 2.0 - np.log(3.0)])
    np.testing.assert_allclose(weights, [[0.75, 0.25]], rtol=0, atol=1e-15)


def test_a_minus_infinity_bias_blocks_like_a_mask():
    rng = np.random.default_rng(11)
    Q, K, V = (rng.normal(size=(4, 3)) for _ in range(3))
    blocked = np.where(causal_mask(4), 0.0, -np.inf)
    with_bias = scaled_dot_product_attention(Q, K, V, bias=blocked)
    with_mask = scaled_dot_product_attention(Q, K, V, mask=causal_mask(4))
    for biased, masked in zip(with_bias, with_mask):
        np.testing.assert_array_equal(biased, masked)


def test_a_bias_never_changes_its_argument():
    bias = np.zeros((2, 2))
    scaled_dot_product_attention(EYE, EYE, EYE, bias=bias, mask=causal_mask(2))
    assert np.array_equal(bias, np.zeros((2, 2)))


@pytest.mark.parametrize("where", [(0, 1), (1, 0)])  # (0, 1) is masked by the causal mask
def test_nan_in_a_bias_is_refused_even_where_the_mask_hides_it(where):
    bias = np.zeros((2, 2))
    bias[where] = np.nan
    with pytest.raises(ValueError, match=rf"bias of shape \(2, 2\) contains NaN at index \({where[0]}, {where[1]}\)"):
        scaled_dot_product_attention(EYE, EYE, EYE, mask=causal_mask(2), bias=bias)


def test_plus_infinity_in_a_bias_is_refused():
    with pytest.raises(ValueError, match=r"bias of shape \(2,\) contains \+inf"):
        scaled_dot_product_attention(EYE, EYE, EYE, bias=[0.0, np.inf])


@pytest.mark.parametrize("shape", [(3,), (2, 3), (3, 2), (2, 2, 2), (1, 2, 2), (4, 1, 1)])
def test_a_bias_that_does_not_fit_or_would_enlarge_the_scores_is_refused(shape):
    # the scores are (2, 2): (1, 2, 2) broadcasts but adds a batch dimension
    with pytest.raises(ValueError, match=rf"bias of shape \({shape[0]},.*does not broadcast to "
                                         r"the scores' shape \(\.\.\., seq_q, seq_k\) = \(2, 2\)"):
        scaled_dot_product_attention(EYE, EYE, EYE, bias=np.zeros(shape))


def test_a_bias_may_match_batch_dimensions_the_queries_bring():
    rng = np.random.default_rng(12)
    Q = rng.normal(size=(3, 4, 2))  # (n_heads, seq, d_k)
    K, V = rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    bias = rng.normal(size=(3, 4, 4))  # (n_heads, seq, seq): one bias per head
    _, weights = scaled_dot_product_attention(Q, K, V, bias=bias)
    for h in range(3):
        np.testing.assert_allclose(weights[h], scaled_dot_product_attention(Q[h], K, V, bias=bias[h])[1],
                                   rtol=0, atol=1e-15)


def test_a_boolean_bias_is_refused_with_a_pointer_to_mask():
    with pytest.raises(TypeError, match="bias is boolean.*pass the boolean array as mask="):
        scaled_dot_product_attention(EYE, EYE, EYE, bias=causal_mask(2))


def test_a_non_numeric_bias_is_refused():
    with pytest.raises(TypeError, match="bias must be an array of real numbers"):
        scaled_dot_product_attention(EYE, EYE, EYE, bias=np.array([["a", "b"], ["c", "d"]]))


@pytest.mark.parametrize("name", ["Q", "K", "V"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_infinity_in_q_k_or_v_is_refused_naming_the_argument_and_the_index(name, bad):
    """Issue 36: NaN in V reached the output unseen; NaN in Q or K was refused by the
    softmax, in words about its input rather than the argument."""
    arguments = {"Q": np.ones((2, 3)), "K": np.ones((4, 3)), "V": np.ones((4, 5))}
    arguments[name][1, 2] = bad
    with pytest.raises(ValueError, match=rf"{name} of shape \(\d, \d\) contains (NaN|[+-]inf) at index \(1, 2\)"):
        scaled_dot_product_attention(**arguments)


def test_booleans_where_numbers_are_meant_are_a_type_error():
    with pytest.raises(TypeError, match=r"Q must hold numbers, got a boolean array of shape \(2, 2\)"):
        scaled_dot_product_attention(np.eye(2, dtype=bool), EYE, EYE)
    with pytest.raises(TypeError, match="axis must be an integer, got '0' of type str"):
        softmax(EYE, axis="0")


def test_scores_that_overflow_from_finite_inputs_are_named_as_such():
    huge = np.full((2, 2), 1e200)
    with pytest.raises(ValueError, match=r"the scores scale \* Q K\^T of shape \(2, 2\) overflow to \+inf"):
        scaled_dot_product_attention(huge, huge, EYE)
