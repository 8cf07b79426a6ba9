"""What every maths module checks of its arguments, in one place.

Two kinds of fault, told apart as numpy and torch tell them apart:

* ``TypeError``: the wrong kind of thing. Not an array of real numbers (strings, None,
  objects, complex numbers, booleans where numbers are meant, a numpy masked array); a
  string, a float or a bool where an integer is meant ('3' is not 3, and neither is 3.0);
  anything but True or False where a flag is meant.
* ``ValueError``: the right kind of thing with a wrong value: a wrong shape, an empty axis,
  NaN or infinity, a size below its minimum, an index out of range, sizes that disagree.

Every message names the argument and says what it got: its shape, and the value at fault
and where it sits.

>>> V = real_array([[1.0, 0.0], [float("nan"), 2.0]], "V", ndim=2, layout="(seq_k, d_v)")
Traceback (most recent call last):
...
ValueError: V of shape (2, 2) contains NaN at index (1, 0)
>>> integer("3", "n_heads", minimum=1)
Traceback (most recent call last):
...
TypeError: n_heads must be a positive integer, got '3' of type str

A check is one line where it is used; chapter 10's layer norm, for instance:

>>> x = real_array(np.ones((3, 4)), "x", min_ndim=1, non_empty=(-1,), layout="(..., d_model)")
>>> eps = number(1e-5, "eps", above=0)
>>> weight = real_array(np.ones(4), "weight", shape=x.shape[-1:], layout="(d_model,)")
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "boolean_array",
    "broadcastable",
    "choice",
    "divides",
    "flag",
    "function",
    "index_array",
    "instance",
    "integer",
    "number",
    "real_array",
    "same_size",
    "sequence",
    "text",
]


def _kind(value) -> str:
    return f"{value!r} of type {type(value).__name__}"


def _shown(value) -> str:
    """A value as a message shows it: short arrays in full, long ones by their shape."""
    if isinstance(value, np.ndarray) and value.size > 8:
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return _kind(value)


def _where(mask: np.ndarray) -> tuple[int, ...]:
    """The index of the first True entry of ``mask``."""
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _as_array(value, name: str) -> np.ndarray:
    """``np.asarray(value)``, its failures told as a TypeError or ValueError naming ``name``."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(
            f"{name} is a numpy masked array, whose mask this function would ignore: "
            "pass plain arrays (and say which keys each query may see with mask=)"
        )
    try:
        return np.asarray(value)
    except ValueError as error:  # numpy's words for a ragged nest of lists
        raise ValueError(f"{name} is ragged (its rows differ in length), not an array: {error}") from None
    except (TypeError, RuntimeError) as error:  # e.g. a torch tensor that requires grad
        raise TypeError(f"{name} cannot be read as an array of numbers: {error}") from None


def real_array(
    value,
    name: str,
    *,
    ndim: int | None = None,
    min_ndim: int | None = None,
    shape: Sequence[int | None] | None = None,
    layout: str | None = None,
    non_empty: bool | tuple[int, ...] = False,
    minus_inf: bool = False,
) -> np.ndarray:
    """``value`` as an array of real floats: floats keep their dtype (float32 stays float32),
    integers become float64. Never a copy when none is needed; the input is never changed.

    TypeError unless ``value`` holds real numbers: strings, None, objects, complex numbers,
    booleans and masked arrays are refused. ValueError for a ragged nest of lists, a rank
    other than ``ndim`` (or below ``min_ndim``), a shape other than ``shape`` (None
    entries match any length), an empty axis (``non_empty``: True for every axis, or a
    tuple of axes) and any NaN or infinity (-inf is let through with ``minus_inf``, the
    score of a masked key). ``layout`` names the axes in the messages, e.g.
    ``"(seq, d_model)"``.

    >>> real_array([1, 2], "x").tolist()
    [1.0, 2.0]
    >>> real_array(np.ones(3), "x", ndim=2, layout="(seq, d_model)")
    Traceback (most recent call last):
    ...
    ValueError: x must have shape (seq, d_model), got shape (3,)
    """
    array = _as_array(value, name)
    dtype = array.dtype
    if np.issubdtype(dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {dtype}")
    if dtype == np.bool_:
        raise TypeError(
            f"{name} must hold numbers, got a boolean array of shape {array.shape} "
            f"(pass {name}.astype(float) if the 0s and 1s are meant as numbers)"
        )
    if not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)):
        what = "None" if value is None else f"dtype {dtype}"
        raise TypeError(f"{name} must be an array of real numbers, got {what}: {_shown(value)}")
    if not np.issubdtype(dtype, np.floating):
        array = array.astype(np.float64)
    described = f"shape {layout}" if layout else None
    if ndim is not None and array.ndim != ndim:
        wanted = described or f"{ndim} dimension{'s' * (ndim != 1)}"
        raise ValueError(f"{name} must have {wanted}, got shape {array.shape}")
    if min_ndim is not None and array.ndim < min_ndim:
        wanted = f"at least {min_ndim} dimension{'s' * (min_ndim != 1)}"
        raise ValueError(
            f"{name} must have {wanted}{f', {described}' if described else ''}, got shape {array.shape}"
        )
    if shape is not None:
        _check_shape(array, name, tuple(shape), layout)
    _check_non_empty(array, name, non_empty, layout)
    _check_finite(array, name, minus_inf)
    return array


def _check_shape(array: np.ndarray, name: str, shape: tuple[int | None, ...], layout: str | None) -> None:
    fits = array.ndim == len(shape) and all(want is None or want == got
                                            for want, got in zip(shape, array.shape))
    if not fits:
        raise ValueError(f"{name} must have shape {_described_shape(shape, layout)}, got shape {array.shape}")


def _described_shape(shape: tuple[int | None, ...], layout: str | None) -> str:
    """``(d_model=4, ...)`` from shape (4, None) and layout "(d_model, ...)"."""
    names = [part.strip() for part in (layout or "").strip("()").split(",") if part.strip()]
    if len(names) != len(shape):
        names = ["..."] * len(shape)
    parts = [name if size is None else (f"{name}={size}" if name != "..." else str(size))
             for name, size in zip(names, shape)]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _check_non_empty(array: np.ndarray, name: str, non_empty: bool | tuple[int, ...],
                     layout: str | None) -> None:
    if non_empty is False:
        return
    axes = range(array.ndim) if non_empty is True else non_empty
    for axis in axes:
        if -array.ndim <= axis < array.ndim and array.shape[axis] == 0:  # a missing axis: the rank's check
            within = f" {layout}" if layout else ""
            raise ValueError(f"{name} of shape{within} {array.shape} is empty along axis {axis}: "
                             "there is nothing to compute with")


def _check_finite(array: np.ndarray, name: str, minus_inf: bool) -> None:
    if np.isfinite(array).all():
        return
    for fault, found in (("NaN", np.isnan(array)), ("+inf", np.isposinf(array)),
                         ("-inf", None if minus_inf else np.isneginf(array))):
        if found is not None and found.any():
            raise ValueError(f"{name} of shape {array.shape} contains {fault} at index {_where(found)}")


def boolean_array(value, name: str, meaning: str = "True = may attend") -> np.ndarray:
    """``value`` as a boolean array, or a TypeError naming its dtype and what True means
    (``meaning``: a mask's True lets a query attend; padding flags say "True where a
    position holds padding"). Shapes are the caller's to check (masks broadcast).

    >>> boolean_array([[True, False]], "mask").dtype
    dtype('bool')
    """
    array = _as_array(value, name)
    if array.dtype != bool:
        raise TypeError(f"{name} must be boolean ({meaning}), got dtype {array.dtype}: "
                        f"{_shown(value)}")
    return array


def index_array(value, name: str, size: int, *, ndim: int = 1, layout: str | None = None) -> np.ndarray:
    """``value`` as an integer array whose entries all lie in 0 .. size - 1 (token or node
    indices). TypeError unless its entries are integers (1.0 and True are not); ValueError
    for another rank or an index out of range.

    >>> index_array([0, 2], "targets", size=3).tolist()
    [0, 2]
    """
    array = _as_array(value, name)
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        if not (array.size == 0 and array.dtype == np.float64):  # [] reads as float64
            raise TypeError(f"{name} must hold integer indices, got dtype {array.dtype}: {_shown(value)}")
        array = array.astype(int)
    if array.ndim != ndim:
        wanted = f"shape {layout}" if layout else f"{ndim} dimension{'s' * (ndim != 1)}"
        raise ValueError(f"{name} must have {wanted}, got shape {array.shape}")
    outside = (array < 0) | (array >= size)
    if outside.any():
        where = _where(outside)
        raise ValueError(f"{name}[{', '.join(map(str, where))}] = {array[where]} is outside 0..{size - 1}")
    return array


def _range_words(minimum, maximum, above=None) -> str:
    if above is not None:
        return f" > {above}"
    if minimum is not None and maximum is not None:
        return f" from {minimum} to {maximum}"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


def integer(value, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as a Python int: anything Python itself takes as an integer (numpy integers
    too), never a bool, a float (even 3.0) or a string ('3'), which raise TypeError.
    ValueError below ``minimum`` or above ``maximum``.

    >>> integer(np.int64(4), "n_heads", minimum=1)
    4
    >>> integer(0, "n_heads", minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: n_heads must be a positive integer, got 0
    """
    if minimum == 1 and maximum is None:
        wanted = "a positive integer"
    elif minimum == 0 and maximum is None:
        wanted = "a non-negative integer"
    else:
        wanted = "an integer" + _range_words(minimum, maximum)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be {wanted}, got {_kind(value)}")
    try:
        whole = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be {wanted}, got {_shown(value)}") from None
    if (minimum is not None and whole < minimum) or (maximum is not None and whole > maximum):
        raise ValueError(f"{name} must be {wanted}, got {whole}")
    return whole


def number(value, name: str, *, minimum: float | None = None, maximum: float | None = None,
           above: float | None = None) -> float:
    """``value`` as a finite Python float: any real number (numpy's too, or a 0-d array of
    one), never a bool, a string or a complex number, which raise TypeError. ValueError for
    NaN or infinity, below ``minimum``, not above ``above``, above ``maximum``.

    >>> number(np.float32(0.5), "alpha", minimum=0)
    0.5
    >>> number(float("nan"), "scale")
    Traceback (most recent call last):
    ...
    ValueError: scale must be a finite number, got nan
    """
    wanted = "a finite number" + _range_words(minimum, maximum, above)
    zero_d = isinstance(value, np.ndarray) and value.ndim == 0 and (
        np.issubdtype(value.dtype, np.integer) or np.issubdtype(value.dtype, np.floating))
    if isinstance(value, (bool, np.bool_)) or not (isinstance(value, numbers.Real) or zero_d):
        raise TypeError(f"{name} must be {wanted}, got {_shown(value)}")
    real = float(value)
    if not (np.isfinite(real)
            and (minimum is None or real >= minimum)
            and (maximum is None or real <= maximum)
            and (above is None or real > above)):
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return real


def flag(value, name: str) -> bool:
    """``value`` if it is True or False (numpy's too), else a TypeError: 1, 'yes' and None
    are not flags.

    >>> flag(np.True_, "causal")
    True
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {_shown(value)}")
    return bool(value)


def choice(value, name: str, options: Sequence[str]) -> str:
    """``value`` if it is one of the strings ``options``: TypeError for anything but a
    string, ValueError for another string.

    >>> choice("mean", "how", ("zero", "mean"))
    'mean'
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {list(options)}, got {_shown(value)}")
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")
    return value


def text(value, name: str) -> str:
    """``value`` if it is a string with something in it: TypeError for anything but a
    string, ValueError for an empty or blank one."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {_shown(value)}")
    if not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def instance(value, name: str, kind: type, made_by: str = "") -> Any:
    """``value`` if it is a ``kind``, else a TypeError naming what to pass (``made_by``: the
    function that makes one, e.g. ``"make_role_task"``)."""
    if not isinstance(value, kind):
        source = f" (as {made_by} returns)" if made_by else ""
        raise TypeError(f"{name} must be a {kind.__name__}{source}, got {_shown(value)}")
    return value


def function(value, name: str) -> Callable:
    """``value`` if it can be called, else a TypeError."""
    if not callable(value):
        raise TypeError(f"{name} must be a function, got {_shown(value)}")
    return value


def sequence(value, name: str) -> list:
    """``value`` as a list if it is a list, a tuple, an array or another sequence of
    items; a string, a number or None raise TypeError (a string is not a list of words).

    >>> sequence((1, 2), "queries")
    [1, 2]
    """
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a sequence (a list, tuple or array), got {_shown(value)}")
    return list(value)


def same_size(dimension: str, first: tuple[str, np.ndarray, int], second: tuple[str, np.ndarray, int],
              why: str) -> int:
    """The length two arrays must share along an axis each, or a ValueError naming both
    arrays, their shapes and ``why`` they must agree. ``first`` and ``second`` are
    (name, array, axis).

    >>> same_size("d_k", ("Q", np.ones((2, 3)), -1), ("K", np.ones((4, 5)), -1), "queries meet keys")
    Traceback (most recent call last):
    ...
    ValueError: Q has d_k=3 but K has d_k=5 (Q shape (2, 3), K shape (4, 5)); queries meet keys
    """
    (name_a, a, axis_a), (name_b, b, axis_b) = first, second
    if a.shape[axis_a] != b.shape[axis_b]:
        raise ValueError(f"{name_a} has {dimension}={a.shape[axis_a]} but {name_b} has "
                         f"{dimension}={b.shape[axis_b]} ({name_a} shape {a.shape}, {name_b} shape "
                         f"{b.shape}); {why}")
    return int(a.shape[axis_a])


def broadcastable(shape_a: tuple[int, ...], shape_b: tuple[int, ...], name_a: str,
                  name_b: str) -> tuple[int, ...]:
    """The broadcast of two batch shapes, or a ValueError naming both."""
    try:
        return np.broadcast_shapes(shape_a, shape_b)
    except ValueError:
        raise ValueError(f"batch dimensions of {name_a} {shape_a} and {name_b} {shape_b} "
                         "do not broadcast") from None


def divides(part: int, part_name: str, whole: int, whole_name: str, why: str = "") -> None:
    """A ValueError unless ``part`` divides ``whole`` (both positive ints already).

    >>> divides(5, "n_kv_heads", 12, "n_heads", "each key/value head serves a whole group of query heads")
    Traceback (most recent call last):
    ...
    ValueError: n_kv_heads=5 must divide n_heads=12: each key/value head serves a whole group of query heads
    """
    if whole % part:
        raise ValueError(f"{part_name}={part} must divide {whole_name}={whole}{f': {why}' if why else ''}")
