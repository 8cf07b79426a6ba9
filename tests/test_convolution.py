"""attncourse.convolution: K attention heads with positional scores against torch's convolutions."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attncourse.convolution import (
    conv1d_as_attention,
    conv1d_reference,
    conv2d_as_attention,
    conv2d_reference,
    largest_error,
    shift_weights,
    shifts,
)


def torch_conv1d(x, kernel):
    """x (seq, c_in), kernel (c_out, c_in, K) -> (seq, c_out), float64, padding K//2."""
    out = F.conv1d(torch.tensor(x.T[None]), torch.tensor(kernel), padding=kernel.shape[-1] // 2)
    return out[0].numpy().T


def torch_conv2d(image, kernel):
    """image (height, width, c_in), kernel (c_out, c_in, K, K) -> (height, width, c_out)."""
    batch = torch.tensor(image.transpose(2, 0, 1)[None])  # (1, c_in, height, width)
    out = F.conv2d(batch, torch.tensor(kernel), padding=kernel.shape[-1] // 2)
    return out[0].numpy().transpose(1, 2, 0)


def problem_1d(seq=12, c_in=3, c_out=2, K=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((seq, c_in)), rng.standard_normal((c_out, c_in, K))


def problem_2d(height=6, width=7, c_in=2, c_out=3, K=3, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((height, width, c_in)), rng.standard_normal((c_out, c_in, K, K))


@pytest.mark.parametrize("K", [1, 3, 5, 7])
def test_conv1d_matches_torch_to_machine_precision_at_large_alpha(K):
    x, kernel = problem_1d(K=K)
    assert np.allclose(conv1d_as_attention(x, kernel, alpha=60.0), torch_conv1d(x, kernel),
                       rtol=0, atol=1e-12)


@pytest.mark.parametrize("K", [1, 3, 5])
def test_conv2d_matches_torch_to_machine_precision_at_large_alpha(K):
    image, kernel = problem_2d(K=K)
    result = conv2d_as_attention(image, kernel, alpha=60.0)
    assert result.shape == (6, 7, 3)
    assert np.allclose(result, torch_conv2d(image, kernel), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("seq", "c_in", "c_out", "K"), [(12, 3, 2, 5), (1, 1, 1, 3), (4, 2, 3, 7),
                                                        (9, 1, 1, 1)])
def test_the_conv1d_reference_is_torchs_conv1d(seq, c_in, c_out, K):
    """To 1e-12 in float64, a kernel wider than the sequence included."""
    x, kernel = problem_1d(seq, c_in, c_out, K, seed=seq + K)
    assert np.allclose(conv1d_reference(x, kernel), torch_conv1d(x, kernel), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("height", "width", "K"), [(6, 7, 3), (5, 4, 5), (1, 3, 3), (3, 3, 1)])
def test_the_conv2d_reference_is_torchs_conv2d(height, width, K):
    image, kernel = problem_2d(height, width, K=K, seed=height * width)
    assert np.allclose(conv2d_reference(image, kernel), torch_conv2d(image, kernel),
                       rtol=0, atol=1e-12)


def test_the_references_refuse_what_the_constructions_refuse():
    with pytest.raises(ValueError, match="odd"):
        conv1d_reference(np.ones((5, 1)), np.ones((1, 1, 4)))
    with pytest.raises(ValueError, match="c_in=3"):
        conv1d_reference(np.ones((5, 2)), np.ones((1, 3, 3)))
    with pytest.raises(ValueError, match="square"):
        conv2d_reference(np.ones((4, 4, 1)), np.ones((1, 1, 3, 5)))


def errors_1d(alphas, K=3):
    x, kernel = problem_1d(K=K)
    reference = torch_conv1d(x, kernel)
    return np.array([np.abs(conv1d_as_attention(x, kernel, a) - reference).max() for a in alphas])


def test_it_is_attention_soft_at_small_alpha_and_the_error_falls_like_exp_minus_alpha():
    alphas = np.array([0.5, 2.0, 5.0, 10.0, 15.0, 20.0, 50.0])
    errors = errors_1d(alphas)
    assert errors[0] > 0.5  # far from the convolution: the weights are soft
    assert np.all(np.diff(errors[:-1]) < 0)  # falls at every step
    # e^-alpha: from 10 to 20 the error shrinks by about e^10 (the nearest wrong key
    # scores -alpha, the next -4 alpha)
    ratio = errors[3] / errors[5]
    assert np.exp(9) < ratio < np.exp(11)
    assert errors[-1] < 1e-13


def test_conv2d_is_soft_at_small_alpha_and_converges():
    image, kernel = problem_2d()
    reference = torch_conv2d(image, kernel)
    errors = [np.abs(conv2d_as_attention(image, kernel, a) - reference).max() for a in (1, 5, 20)]
    assert errors[0] > 1.0 and errors[0] > errors[1] > errors[2]
    assert errors[2] < 1e-6


def test_cross_correlation_not_convolution():
    x = np.zeros((7, 1))
    x[3] = 1.0  # an impulse
    kernel = np.array([[[1.0, 2.0, 3.0]]])  # (1, 1, 3)
    out = conv1d_as_attention(x, kernel, alpha=60.0).ravel()
    # cross-correlation: out[i] = sum_k w[k] x[i + k - 1], so the impulse comes out reversed
    assert np.allclose(out, [0, 0, 3, 2, 1, 0, 0], atol=1e-12)
    assert np.allclose(out, np.correlate(x.ravel(), kernel.ravel(), mode="same"), atol=1e-12)
    assert not np.allclose(out, np.convolve(x.ravel(), kernel.ravel(), mode="same"))


def test_the_weights_become_one_hot_shifts_and_rows_sum_to_one():
    weights = shift_weights(6, 5, alpha=60.0)  # (K, seq, seq + 4)
    assert weights.shape == (5, 6, 10)
    assert np.allclose(weights.sum(-1), 1.0)
    for h, delta in enumerate(shifts(5)):
        expected = np.zeros((6, 10))
        expected[np.arange(6), np.arange(6) + 2 + delta] = 1.0
        assert np.allclose(weights[h], expected, atol=1e-15)
    soft = shift_weights(6, 5, alpha=0.1)
    assert soft.max() < 0.5  # bumps, not shifts


def test_alpha_zero_is_uniform_attention():
    x, kernel = problem_1d(seq=4, K=3)
    padded = np.pad(x, ((1, 1), (0, 0)))
    expected = padded.mean(0) @ kernel.sum(-1).T  # every head averages all tokens
    assert np.allclose(conv1d_as_attention(x, kernel, 0.0), np.tile(expected, (4, 1)))


def test_inputs_are_not_mutated_and_lists_work():
    x, kernel = problem_1d()
    x_copy, kernel_copy = x.copy(), kernel.copy()
    result = conv1d_as_attention(x.tolist(), kernel.tolist(), 30)
    assert np.array_equal(x, x_copy) and np.array_equal(kernel, kernel_copy)
    assert np.allclose(result, conv1d_as_attention(x, kernel, 30))


@pytest.mark.parametrize(
    ("x", "kernel", "alpha", "message"),
    [
        (np.ones((5, 1)), np.ones((1, 1, 4)), 1.0, "odd"),
        (np.ones((5, 1)), np.ones((1, 1, 0)), 1.0, "empty"),
        (np.ones(5), np.ones((1, 1, 3)), 1.0, r"\(seq, c_in\)"),
        (np.ones((5, 2)), np.ones((1, 3)), 1.0, r"\(c_out, c_in, K\)"),
        (np.ones((5, 2)), np.ones((1, 3, 3)), 1.0, "c_in=3"),
        (np.ones((5, 1)), np.ones((1, 1, 3)), -1.0, "alpha"),
        (np.ones((5, 1)), np.ones((1, 1, 3)), np.inf, "alpha"),
        (np.ones((0, 1)), np.ones((1, 1, 3)), 1.0, "empty"),
    ],
)
def test_conv1d_bad_input_names_the_fault(x, kernel, alpha, message):
    with pytest.raises(ValueError, match=message):
        conv1d_as_attention(x, kernel, alpha)


@pytest.mark.parametrize(
    ("x", "kernel", "alpha", "message"),
    [
        (np.ones((5, 1)), np.ones((1, 1, 3)), "big", r"alpha must be a finite number >= 0, got 'big'"),
        (np.ones((5, 1)), np.ones((1, 1, 3)), "2.5", r"alpha must be a finite number >= 0, got '2.5'"),
        (np.array([["a"]]), np.ones((1, 1, 3)), 1.0, r"x must be an array of real numbers"),
        (np.ones((5, 1), dtype=bool), np.ones((1, 1, 3)), 1.0, r"x must hold numbers, got a boolean array"),
    ],
)
def test_conv1d_refuses_the_wrong_kind_of_input_as_a_type_error(x, kernel, alpha, message):
    with pytest.raises(TypeError, match=message):
        conv1d_as_attention(x, kernel, alpha)


@pytest.mark.parametrize(("function", "arguments"), [
    (conv1d_reference, (np.ones((3, 1)) * (1 + 2j), np.ones((1, 1, 3)))),
    (conv1d_reference, (np.ones((3, 1)), np.ones((1, 1, 3)) * 1j)),
    (conv2d_reference, (np.ones((3, 3, 1)) * 1j, np.ones((1, 1, 3, 3)))),
    (conv1d_as_attention, (np.ones((3, 1)) * (1 + 2j), np.ones((1, 1, 3)), 10.0)),
    (conv2d_as_attention, (np.ones((3, 3, 1)), np.ones((1, 1, 3, 3)) * 1j, 10.0)),
    (largest_error, (np.ones((3, 1)) * (1 + 2j), np.ones((1, 1, 3)), 10.0)),
])
def test_complex_input_is_refused_not_made_real_with_a_warning(function, arguments):
    """Issue 36: the reference dropped the imaginary part of complex input, with only a
    ComplexWarning, and returned the convolution of the real part."""
    with pytest.raises(TypeError, match=r"(x|image|kernel) must be real, got dtype complex128"):
        function(*arguments)


@pytest.mark.parametrize(
    ("image", "kernel", "message"),
    [
        (np.ones((4, 4)), np.ones((1, 1, 3, 3)), r"\(height, width, c_in\)"),
        (np.ones((4, 4, 1)), np.ones((1, 1, 3, 5)), "square"),
        (np.ones((4, 4, 1)), np.ones((1, 1, 2, 2)), "odd"),
        (np.ones((4, 4, 2)), np.ones((1, 1, 3, 3)), "c_in=1"),
    ],
)
def test_conv2d_bad_input_names_the_fault(image, kernel, message):
    with pytest.raises(ValueError, match=message):
        conv2d_as_attention(image, kernel, 1.0)


@pytest.mark.parametrize(("bad", "error"), [(4, ValueError), (0, ValueError), (-3, ValueError),
                                            (2.0, TypeError), (True, TypeError)])
def test_shifts_refuse_even_or_non_integer_sizes(bad, error):
    with pytest.raises(error, match="kernel_size must be"):
        shifts(bad)


def test_without_padding_the_border_never_converges():
    """What padding is for: attention over the unpadded tokens sends the border's missing
    shift to the nearest existing token instead of to a zero."""
    x, kernel = problem_1d(K=3)
    reference = torch_conv1d(x, kernel)
    assert shift_weights(len(x), 3, 1.0, padding=False).shape == (3, len(x), len(x))
    unpadded = conv1d_as_attention(x, kernel, alpha=60.0, padding=False)
    error = np.abs(unpadded - reference).max(axis=1)
    assert error[1:-1].max() < 1e-12 and error[0] > 0.1 and error[-1] > 0.1


@pytest.mark.parametrize(("K", "dilation"), [(3, 2), (3, 3), (5, 2), (1, 4)])
def test_a_dilated_conv2d_is_k_squared_heads_with_spread_shifts(K, dilation):
    """K**2 heads, not (dilation (K - 1) + 1)**2: only the shifts spread out."""
    image, kernel = problem_2d(height=7, width=8, K=K)
    batch = torch.tensor(image.transpose(2, 0, 1)[None])  # (1, c_in, height, width)
    torch_dilated = F.conv2d(batch, torch.tensor(kernel), padding=dilation * (K // 2),
                             dilation=dilation)[0].numpy().transpose(1, 2, 0)
    result = conv2d_as_attention(image, kernel, alpha=60.0, dilation=dilation)
    assert np.allclose(result, torch_dilated, rtol=0, atol=1e-12)
    assert not np.allclose(conv2d_as_attention(image, kernel, alpha=1.0, dilation=dilation), torch_dilated)


@pytest.mark.parametrize(("bad", "error"), [(0, ValueError), (-1, ValueError), (1.5, TypeError),
                                            (True, TypeError)])
def test_conv2d_refuses_a_dilation_that_is_not_a_positive_integer(bad, error):
    with pytest.raises(error, match="dilation must be a positive integer"):
        conv2d_as_attention(np.ones((4, 4, 1)), np.ones((1, 1, 3, 3)), 1.0, dilation=bad)


def test_without_padding_each_border_row_is_off_by_its_missing_tap():
    """The head of Delta = -1 at token 0 finds no padding zero and settles on token 0
    itself: the row is off by exactly kernel[:, :, 0] applied to x_0 (and the last row by
    the last tap applied to x_{seq-1}), whatever the draw."""
    for seed in range(10):
        x, kernel = problem_1d(K=3, seed=seed)
        unpadded = conv1d_as_attention(x, kernel, alpha=60.0, padding=False)
        off = unpadded - torch_conv1d(x, kernel)  # (seq, c_out)
        assert np.allclose(off[0], kernel[:, :, 0] @ x[0], atol=1e-12)
        assert np.allclose(off[-1], kernel[:, :, 2] @ x[-1], atol=1e-12)
