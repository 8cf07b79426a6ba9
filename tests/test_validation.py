"""attncourse.validation, and the sweep of every maths module's public functions with bad input.

The sweep (``test_bad_input_is_refused_by_name``) takes one valid call of each function
(tests/maths_calls.py) and replaces one argument at a time by something wrong: the wrong kind
of thing (a string, None, complex numbers, booleans, an object array, a float where an
integer is meant, '3' for 3) must raise TypeError; a wrong value (NaN, infinity, an empty
or 0-d array, an array of the wrong rank, a ragged list, a negative or zero size) must raise
ValueError. Either way the message names the argument: never a bare numpy error, never a
silent NaN. A case a parameter legitimately accepts is listed with its reason, and must
then give a finite answer without a warning.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attncourse
from attncourse import pretrained, validation
from attncourse.attention import scaled_dot_product_attention
from attncourse.flash import tiled_attention
from attncourse.kv_cache import decode_with_cache
from attncourse.validation import (
    boolean_array,
    choice,
    divides,
    flag,
    function,
    index_array,
    instance,
    integer,
    number,
    real_array,
    same_size,
    sequence,
    text,
)
from tests.maths_calls import CALLS, MATHS_MODULES, NOT_MATHS_MODULES
from tests.strategies import SEEDS, attention_problems, random_problem

FAST = settings(max_examples=60, deadline=None)  # no per-example deadline: the machine is shared

# ------------------------------------------------------------------ real_array


def test_real_array_keeps_floats_as_they_are_and_makes_integers_float64():
    x32 = np.ones((2, 3), dtype=np.float32)
    assert real_array(x32, "x") is x32  # no copy, float32 kept
    assert real_array([[1, 2]], "x").dtype == np.float64
    assert real_array(np.arange(3, dtype=np.uint8), "x").tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize(("value", "message"), [
    (None, r"x must be an array of real numbers, got None"),
    ("abc", r"x must be an array of real numbers, got dtype <U3"),
    ([["a", "b"]], r"x must be an array of real numbers, got dtype <U1"),
    ([None, 1.0], r"x must be an array of real numbers, got dtype object"),
    (np.ones(2, dtype=object), r"x must be an array of real numbers, got dtype object"),
    (np.ones(2) * 1j, r"x must be real, got dtype complex128"),
    (np.ones(2, dtype=bool), r"x must hold numbers, got a boolean array of shape \(2,\)"),
    (np.ma.masked_array([1.0, 2.0], mask=[False, True]), r"x is a numpy masked array"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), r"x must be an array of real numbers, got dtype datetime64"),
])
def test_real_array_refuses_the_wrong_kind_of_thing_as_a_type_error(value, message):
    with pytest.raises(TypeError, match=message):
        real_array(value, "x")


@pytest.mark.parametrize(("value", "options", "message"), [
    ([[1.0, 2.0], [3.0]], {}, r"x is ragged \(its rows differ in length\)"),
    (np.ones(3), {"ndim": 2, "layout": "(seq, d_model)"}, r"x must have shape \(seq, d_model\), got shape \(3,\)"),
    (np.ones(3), {"ndim": 2}, r"x must have 2 dimensions, got shape \(3,\)"),
    (np.ones(3), {"min_ndim": 2}, r"x must have at least 2 dimensions, got shape \(3,\)"),
    (np.ones((2, 3)), {"shape": (2, 4), "layout": "(seq, d_model)"},
     r"x must have shape \(seq=2, d_model=4\), got shape \(2, 3\)"),
    (np.ones((2, 3)), {"shape": (None, 4), "layout": "(seq, d_model)"},
     r"x must have shape \(seq, d_model=4\), got shape \(2, 3\)"),
    (np.ones(3), {"shape": (4,)}, r"x must have shape \(4,\), got shape \(3,\)"),
    (np.ones((2, 0)), {"non_empty": (-1,)}, r"x of shape \(2, 0\) is empty along axis -1"),
    (np.ones((0, 2)), {"non_empty": True}, r"x of shape \(0, 2\) is empty along axis 0"),
    ([1.0, float("nan")], {}, r"x of shape \(2,\) contains NaN at index \(1,\)"),
    ([[1.0, 2.0], [np.inf, 0.0]], {}, r"x of shape \(2, 2\) contains \+inf at index \(1, 0\)"),
    ([-np.inf, 0.0], {}, r"x of shape \(2,\) contains -inf at index \(0,\)"),
    ([-np.inf, np.nan], {"minus_inf": True}, r"contains NaN at index \(1,\)"),
])
def test_real_array_refuses_a_wrong_value_as_a_value_error(value, options, message):
    with pytest.raises(ValueError, match=message):
        real_array(value, "x", **options)


def test_real_array_lets_minus_inf_through_when_asked_and_never_changes_its_input():
    scores = np.array([[0.0, -np.inf]])
    assert real_array(scores, "scores", minus_inf=True) is scores
    np.testing.assert_array_equal(scores, [[0.0, -np.inf]])


def test_a_tensor_that_requires_grad_is_a_type_error_naming_it():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="W cannot be read as an array of numbers"):
        real_array(torch.ones(2, requires_grad=True), "W")


# ------------------------------------------------------------------ numbers, flags, words


@pytest.mark.parametrize(("value", "error", "message"), [
    ("3", TypeError, r"n must be a positive integer, got '3' of type str"),
    (3.0, TypeError, r"n must be a positive integer, got 3.0 of type float"),
    (np.float64(3.0), TypeError, r"n must be a positive integer"),
    (True, TypeError, r"n must be a positive integer, got True of type bool"),
    (np.bool_(True), TypeError, r"n must be a positive integer"),
    (None, TypeError, r"n must be a positive integer, got None"),
    (np.array([3]), TypeError, r"n must be a positive integer"),
    (0, ValueError, r"n must be a positive integer, got 0"),
    (-2, ValueError, r"n must be a positive integer, got -2"),
])
def test_integer_refuses_what_is_not_a_positive_integer(value, error, message):
    with pytest.raises(error, match=message):
        integer(value, "n", minimum=1)


def test_integer_accepts_python_and_numpy_integers_and_names_its_range():
    assert integer(np.int64(3), "n") == 3 and type(integer(np.int32(3), "n")) is int
    assert integer(np.array(3), "n") == 3  # a 0-d integer array is an integer to Python too
    with pytest.raises(ValueError, match="t must be a non-negative integer, got -1"):
        integer(-1, "t", minimum=0)
    with pytest.raises(ValueError, match="layer must be an integer from 0 to 5, got 6"):
        integer(6, "layer", minimum=0, maximum=5)
    with pytest.raises(ValueError, match="k must be an integer <= 2, got 3"):
        integer(3, "k", maximum=2)


@pytest.mark.parametrize(("value", "options", "error", "message"), [
    ("0.5", {}, TypeError, r"scale must be a finite number, got '0.5' of type str"),
    (True, {}, TypeError, r"scale must be a finite number, got True of type bool"),
    (1j, {}, TypeError, r"scale must be a finite number, got 1j of type complex"),
    (None, {}, TypeError, r"scale must be a finite number, got None"),
    (np.ones(2), {}, TypeError, r"scale must be a finite number, got array"),
    (float("nan"), {}, ValueError, r"scale must be a finite number, got nan"),
    (-np.inf, {}, ValueError, r"scale must be a finite number, got -inf"),
    (0.0, {"above": 0}, ValueError, r"scale must be a finite number > 0, got 0.0"),
    (-1, {"minimum": 0}, ValueError, r"scale must be a finite number >= 0, got -1"),
    (1.5, {"minimum": 0, "maximum": 1}, ValueError, r"scale must be a finite number from 0 to 1, got 1.5"),
])
def test_number_refuses_what_is_not_a_finite_number_in_range(value, options, error, message):
    with pytest.raises(error, match=message):
        number(value, "scale", **options)


def test_number_accepts_every_real_number_as_a_float():
    for value in (2, np.float32(0.5), np.int64(3), np.array(0.25), 1e300):
        assert type(number(value, "x")) is float and number(value, "x") == float(value)


def test_flags_choices_texts_instances_functions_and_sequences():
    assert flag(np.True_, "causal") is True and flag(False, "causal") is False
    for bad in (1, "yes", None, np.array([True])):
        with pytest.raises(TypeError, match="causal must be True or False"):
            flag(bad, "causal")
    assert choice("zero", "how", ("zero", "mean")) == "zero"
    with pytest.raises(ValueError, match=r"how must be one of \['zero', 'mean'\], got 'half'"):
        choice("half", "how", ("zero", "mean"))
    with pytest.raises(TypeError, match=r"how must be one of \['zero', 'mean'\], got 0"):
        choice(0, "how", ("zero", "mean"))
    with pytest.raises(ValueError, match="text must be a non-empty string, got ' '"):
        text(" ", "text")
    with pytest.raises(TypeError, match="text must be a string, got b'a' of type bytes"):
        text(b"a", "text")
    with pytest.raises(TypeError, match=r"task must be a Path \(as make_path returns\), got 3"):
        instance(3, "task", Path, "make_path")
    with pytest.raises(TypeError, match="progress must be a function, got 3"):
        function(3, "progress")
    assert sequence(np.arange(2), "seeds") == [0, 1]
    for bad in ("ab", 3, None):
        with pytest.raises(TypeError, match="seeds must be a sequence"):
            sequence(bad, "seeds")


def test_masks_indices_sizes_and_divisors():
    with pytest.raises(TypeError, match=r"mask must be boolean \(True = may attend\), got dtype float64"):
        boolean_array(np.ones(2), "mask")
    with pytest.raises(TypeError, match="targets must hold integer indices, got dtype float64"):
        index_array([0.0, 1.0], "targets", size=3)
    with pytest.raises(TypeError, match="targets must hold integer indices, got dtype bool"):
        index_array([True, False], "targets", size=3)
    with pytest.raises(ValueError, match=r"targets\[1\] = 3 is outside 0..2"):
        index_array([0, 3], "targets", size=3)
    assert index_array([], "targets", size=3).dtype.kind == "i"
    with pytest.raises(ValueError, match=r"Q has d_k=2 but K has d_k=3 \(Q shape \(1, 2\), K shape \(1, 3\)\); why"):
        same_size("d_k", ("Q", np.ones((1, 2)), -1), ("K", np.ones((1, 3)), -1), "why")
    with pytest.raises(ValueError, match="n_kv_heads=5 must divide n_heads=12"):
        divides(5, "n_kv_heads", 12, "n_heads")
    divides(4, "n_kv_heads", 12, "n_heads")


# ------------------------------------------------------------------ chapter 10's layer norm


def layer_norm(x, weight, bias, eps=1e-5):
    """What chapter 10's layer norm checks, one line per argument (a test of the module's API)."""
    x = real_array(x, "x", min_ndim=1, non_empty=(-1,), layout="(..., d_model)")
    weight = real_array(weight, "weight", shape=x.shape[-1:], layout="(d_model,)")
    bias = real_array(bias, "bias", shape=x.shape[-1:], layout="(d_model,)")
    eps = number(eps, "eps", above=0)
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + eps) * weight + bias


@pytest.mark.parametrize(("change", "error", "message"), [
    ({"x": [[1.0, np.nan]]}, ValueError, r"x of shape \(1, 2\) contains NaN at index \(0, 1\)"),
    ({"x": [[1.0, np.inf]]}, ValueError, r"x of shape \(1, 2\) contains \+inf"),
    ({"x": np.ones((3, 0))}, ValueError, r"x of shape \(\.\.\., d_model\) \(3, 0\) is empty along axis -1"),
    ({"x": np.float64(1.0)}, ValueError, r"x must have at least 1 dimension"),
    ({"eps": 0.0}, ValueError, r"eps must be a finite number > 0, got 0.0"),
    ({"eps": -1e-5}, ValueError, r"eps must be a finite number > 0"),
    ({"eps": "1e-5"}, TypeError, r"eps must be a finite number > 0, got '1e-5' of type str"),
    ({"weight": np.ones(3)}, ValueError, r"weight must have shape \(d_model=2,\), got shape \(3,\)"),
    ({"bias": np.ones((1, 2))}, ValueError, r"bias must have shape \(d_model=2,\), got shape \(1, 2\)"),
    ({"weight": ["a", "b"]}, TypeError, r"weight must be an array of real numbers"),
    ({"x": [["1", "2"]]}, TypeError, r"x must be an array of real numbers"),
])
def test_chapter_10s_layer_norm_checks_are_one_liners(change, error, message):
    arguments = {"x": [[1.0, 3.0]], "weight": np.ones(2), "bias": np.zeros(2)} | change
    with pytest.raises(error, match=message):
        layer_norm(**arguments)
    np.testing.assert_allclose(layer_norm([[1.0, 3.0]], np.ones(2), np.zeros(2), eps=1e-12), [[-1.0, 1.0]])


# ------------------------------------------------------------------ the registry of maths modules


def public_functions(module_name: str) -> dict[str, object]:
    module = importlib.import_module(f"attncourse.{module_name}")
    return {f"{module_name}.{name}": value for name, value in vars(module).items()
            if not name.startswith("_") and inspect.isfunction(value) and value.__module__ == module.__name__}


def test_every_module_is_registered():
    """A new module in attncourse/ is either a maths module (swept) or listed as not one."""
    found = {path.stem for path in Path(attncourse.__file__).parent.glob("*.py")}
    assert found == set(MATHS_MODULES) | set(NOT_MATHS_MODULES), (
        f"register {sorted(found - set(MATHS_MODULES) - set(NOT_MATHS_MODULES))} in tests/maths_calls.py")


def swept_functions() -> dict[str, object]:
    functions = {}
    for module in MATHS_MODULES:
        functions |= {name: fn for name, fn in public_functions(module).items()
                      if inspect.signature(fn).parameters}
    return functions


def test_every_public_function_has_a_valid_call():
    functions = swept_functions()
    assert set(functions) == set(CALLS), (
        f"no valid call for {sorted(set(functions) - set(CALLS))}; "
        f"calls of no public function: {sorted(set(CALLS) - set(functions))}")
    for name, call in CALLS.items():
        parameters = inspect.signature(functions[name]).parameters
        arguments = call.arguments()
        assert set(arguments) <= set(parameters), name
        required = {p for p, spec in parameters.items() if spec.default is inspect.Parameter.empty}
        assert required <= set(arguments), f"{name}: give {sorted(required - set(arguments))}"
        for parameter, cases in call.accepts.items():
            known = {case for case, _, _ in bad_cases(arguments[parameter], parameters[parameter].default)}
            assert set(cases) <= known, f"{name}({parameter}): {sorted(set(cases) - known)} is not a case"


# ------------------------------------------------------------------ the bad values


def _with(array: np.ndarray, value: float) -> np.ndarray:
    changed = array.astype(float)  # a copy
    changed.flat[-1] = value
    return changed


def bad_cases(value, default=inspect.Parameter.empty) -> list[tuple[str, object, type]]:
    """(case, bad value, expected error) for an argument whose valid value is ``value``."""
    cases: list[tuple[str, object, type]]
    if isinstance(value, (bool, np.bool_)):
        cases = [("1", 1, TypeError), ("'yes'", "yes", TypeError), ("None", None, TypeError)]
    elif isinstance(value, int):
        cases = [("a string", str(value), TypeError), ("a float", float(value), TypeError),
                 ("True", True, TypeError), ("None", None, TypeError), ("an array", np.array([value]), TypeError),
                 ("-1", -1, ValueError), ("0", 0, ValueError)]
    elif isinstance(value, float):
        cases = [("a string", str(value), TypeError), ("True", True, TypeError), ("None", None, TypeError),
                 ("complex", complex(value, 1.0), TypeError), ("NaN", math.nan, ValueError),
                 ("+inf", math.inf, ValueError), ("-inf", -math.inf, ValueError)]
    elif isinstance(value, str):
        cases = [("a number", 3, TypeError), ("empty", "", ValueError), ("None", None, TypeError)]
    elif isinstance(value, np.ndarray) and value.dtype == bool:
        cases = [("floats", value.astype(float), TypeError), ("strings", value.astype(str), TypeError)]
    elif isinstance(value, np.ndarray) and value.dtype.kind == "i":
        cases = [("floats", value.astype(float), TypeError), ("strings", value.astype(str), TypeError),
                 ("booleans", value > 0, TypeError), ("None", None, TypeError),
                 ("negative", np.where(np.arange(value.size) == 0, -1, value.ravel()).reshape(value.shape), ValueError)]
    elif isinstance(value, np.ndarray):
        empty = np.zeros((0,) * value.ndim)
        wrong_rank = value.ravel() if value.ndim >= 2 else value[None]
        cases = [("None", None, TypeError), ("a string", "abc", TypeError), ("strings", value.astype(str), TypeError),
                 ("objects", value.astype(object), TypeError), ("complex", value + 1j, TypeError),
                 ("booleans", value > 0, TypeError), ("a masked array", np.ma.masked_array(value), TypeError),
                 ("ragged", [[1.0, 2.0], [3.0]], ValueError), ("NaN", _with(value, math.nan), ValueError),
                 ("+inf", _with(value, math.inf), ValueError), ("-inf", _with(value, -math.inf), ValueError),
                 ("0-d", np.array(1.0), ValueError), ("empty", empty, ValueError),
                 ("wrong rank", wrong_rank, ValueError)]
    elif callable(value):
        cases = [("not a function", 3, TypeError)]
    elif isinstance(value, (list, tuple)):
        cases = [("a string", "abc", TypeError), ("None", None, TypeError), ("a number", 3, TypeError)]
    else:
        cases = [("a string", "abc", TypeError), ("None", None, TypeError)]
    return [case for case in cases if not (case[0] == "None" and default is None)]


def names(message: str, parameter: str) -> bool:
    """Whether ``message`` names ``parameter`` as the thing at fault (not, say, the article "a")."""
    return re.search(rf"(^|[\s(]){re.escape(parameter)}(\[|'s|\s(must|has|of|is|=)|\s\()", message) is not None


def finite(result) -> bool:
    if isinstance(result, (list, tuple)):
        return all(finite(item) for item in result)
    if isinstance(result, (np.ndarray, float, np.floating)):
        return bool(np.isfinite(result).all())
    return True


def _swept(heavy: bool):
    return [pytest.param(name, id=name) for name, call in CALLS.items() if call.heavy == heavy]


def test_the_sentinel_recognises_a_name():
    assert names("a must have shape (2 * d_out=6,), got shape (3,)", "a")
    assert not names("must be a finite number, got nan", "a")
    assert names("K has seq_k=5 but V has seq_k=0 (K shape (5, 2), V shape (0, 0))", "V")
    assert names("ablate[0]'s layer must be an integer", "ablate")


@pytest.mark.parametrize("name", _swept(heavy=False) + _swept(heavy=True))
def test_bad_input_is_refused_by_name(name, monkeypatch):
    """Every public function of every maths module, every argument, every bad value: a
    TypeError or ValueError of the right kind naming the argument (or, for a case the
    argument accepts, a finite answer without a warning). Refused before any model runs."""

    def no_model():
        raise AssertionError("the real model was loaded for bad input")

    monkeypatch.setattr(pretrained, "_model", no_model)
    function_ = swept_functions()[name]
    call = CALLS[name]
    defaults = {p: spec.default for p, spec in inspect.signature(function_).parameters.items()}
    failures = []
    for parameter, valid in call.arguments().items():
        cases = bad_cases(valid, defaults[parameter]) + call.bad.get(parameter, [])
        for case, bad, expected in cases:
            arguments = call.arguments() | {parameter: bad}
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                try:
                    result = function_(**arguments)
                except (TypeError, ValueError) as error:
                    if case in call.accepts.get(parameter, {}):
                        failures.append(f"{parameter}={case}: accepted case raised {error!r}")
                    elif type(error) is not expected:
                        failures.append(f"{parameter}={case}: {type(error).__name__} ({error}), "
                                        f"expected {expected.__name__}")
                    elif not names(str(error), parameter):
                        failures.append(f"{parameter}={case}: the message does not name {parameter}: {error}")
                    continue
                except Exception as error:  # what the sweep exists to catch
                    failures.append(f"{parameter}={case}: bare {type(error).__name__}: {error}")
                    continue
            if case not in call.accepts.get(parameter, {}):
                failures.append(f"{parameter}={case}: accepted, expected {expected.__name__}")
            elif not finite(result):
                failures.append(f"{parameter}={case}: accepted and answered with NaN or infinity")
    assert not failures, f"{name}:\n" + "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("name", _swept(heavy=False) + _swept(heavy=True))
def test_every_registered_call_is_valid(name):
    """The sweep's starting points are right: each valid call runs and answers finitely."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = swept_functions()[name](**CALLS[name].arguments())
    assert finite(result)


# ------------------------------------------------------------------ random problems, NaN anywhere


@FAST
@given(attention_problems(), st.sampled_from(["Q", "K", "V"]), SEEDS, st.sampled_from([np.nan, np.inf, -np.inf]))
def test_a_nan_or_infinity_anywhere_in_q_k_or_v_is_refused_by_name(problem, name, seed, bad):
    """Issue 36: NaN in V reached the output of both attention functions unseen."""
    Q, K, V, mask, scale = problem
    arrays = {"Q": Q, "K": K, "V": V}
    spoiled = arrays[name].copy()
    spoiled.flat[np.random.default_rng(seed).integers(spoiled.size)] = bad
    arrays[name] = spoiled
    pattern = rf"{name} of shape \({', '.join(map(str, spoiled.shape))},?\) contains (NaN|[+-]inf) at index"
    with pytest.raises(ValueError, match=pattern):
        scaled_dot_product_attention(**arrays, mask=mask, scale=scale)
    if Q.shape[-2] <= K.shape[-2]:
        with pytest.raises(ValueError, match=pattern):
            tiled_attention(**arrays, block_q=2, block_k=3, causal=True, scale=scale)


@FAST
@given(SEEDS, st.sampled_from(["X", "W_q", "W_k", "W_v", "W_o"]), st.sampled_from([np.nan, np.inf]))
def test_a_nan_anywhere_in_a_cached_decode_is_refused_by_name(seed, name, bad):
    rng = np.random.default_rng(seed)
    X, W_q, W_k, W_v, W_o = random_problem(rng, seq=4, d_model=6, n_heads=4, n_kv_heads=2, d_head=2)
    arrays = {"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o}
    arrays[name].flat[rng.integers(arrays[name].size)] = bad
    with pytest.raises(ValueError, match=rf"{name} of shape .* contains (NaN|\+inf) at index"):
        decode_with_cache(**arrays, n_heads=4, n_kv_heads=2)


def test_the_module_lists_what_it_offers():
    assert sorted(validation.__all__) == sorted(
        name for name, value in vars(validation).items()
        if not name.startswith("_") and inspect.isfunction(value) and value.__module__ == validation.__name__)
