"""The wire between a learner's notebook and the grader: data only, never a verdict.

``grade`` never trusts anything computed where the learner's code ran. In the sandbox,
after each exercise, a cell the grader wrote calls :func:`export`: it reads the learner's
answers, calls the learner's functions on the inputs the course's checks and hidden tests
use, and sends back only what came out, as plain data (numbers, strings, lists, arrays as
bytes). The grader then runs the course's checks and hidden tests in its own process
(:mod:`attncourse.instructor.replay`) with the learner's functions replaced by a replay
of those outputs. The expected values and the hidden tests' code never enter the sandbox:
only their inputs do (found by :func:`discover` on the solved chapter, which the grader
runs as its own, trusted code).

What travels, as JSON (``SCHEMA``; the grader refuses anything else):

* a value: ``null``, ``true``/``false``, an integer, a finite float, a string, a list;
  or an object with one tag: ``{"$float": "nan"|"inf"|"-inf"}``, ``{"$complex": [re, im]}``,
  ``{"$tuple": [...]}``, ``{"$dict": [[key, value], ...]}``, ``{"$ellipsis": null}``,
  ``{"$array": {"dtype": "float64", "shape": [2, 3], "base64": "..."}}`` (C order; dtypes
  in ``DTYPES``; a numpy scalar is an array of shape ``[]`` with ``"scalar": true``),
  ``{"$object": "TypeName", "fields": {...}}`` (a dataclass or namespace of values),
  ``{"$namedtuple": "TypeName", "fields": {...}}`` (a tuple whose items have names), ``{"$function": "name"}`` (a callable: the grader replays its recorded calls),
  ``{"$iterator": [value, ...]}`` (a stream of values, read once: only in the inputs file,
  for a hidden test that passes a generator), ``{"$opaque": "a description"}`` (anything
  else: not data, so never a pass).
* a record (:data:`RECORD_MIMETYPE`, one per exercise, the output of the grader's cell)::

    {"schema": 1, "exercise": "ch1-stable-softmax",
     "answers": [value, ...],            # the check's arguments, in order
     "missing": "NameError: ...",        # or "": why the answers could not be read
     "names": {"name": value, ...},      # the learner's names the hidden tests read
     "calls": [{"function": "answer:0" or "name:NAME", "args": DIGEST,
                "outcome": {"returned": value} | {"raised": "Type: text", "not_implemented": bool}
                           | {"stopped": seconds},
                "changed": [value or null, ...],    # each argument after the call, if it changed
                "drawn": [count or null, ...],      # how often it asked each stream argument for an item
                "written": [[[k, value], ...] or null, ...],  # each stream's items it wrote into, by position
                "input": k},                        # the check's input it was made on (core.inputs)
               ...],
     "references": ["attncourse.graph.attention_rollout", ...],   # course functions it used
     "watch": "stopped short"}           # only if the watch for them did not finish

  ``DIGEST`` is :func:`digest` of the call's ``(args, kwargs)``: the grader looks a call up
  by the digest of the inputs *it* computed, so the learner cannot choose the inputs. Every
  call the check makes to the learner's function is recorded, however it makes it (through
  a lambda, in a loop, with keywords). A stream (an iterator, a generator) is read by the
  learner's function, not by the digest, so every stream digests alike: calls on streams
  are matched in the order the check made them, the same order on both sides.
* the inputs of the hidden tests (:data:`INPUTS_FILE`, read-only in the sandbox, written
  by the grader from :func:`discover`'s :data:`DISCOVERY_MIMETYPE` output)::

    {"schema": 1, "tests": {"LABEL": {"modules": {"np": "numpy"}, "values": ["three_heads"],
                                      "calls": [{"function": "NAME", "args": [positional],
                                                 "kwargs": {"name": value}}]}}}

Points and partial credit can be added on the grader's side alone: every call of every
input is in the record, so the fraction of inputs a function gets right is computable
without another run.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import decimal
import fractions
import functools
import hashlib
import itertools
import json
import math
import numbers
import operator
import symtable
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable, ItemsView, Iterator, KeysView, ValuesView
from pathlib import Path
from typing import Any

import numpy as np

from attncourse.checks import core

# The recorder runs beside the learner's code, which may patch numpy or hashlib (with
# ``np.array_equal = ...``, a change to an argument would go unnoted): what it calls to
# notice changes and to digest inputs is bound here, when the notebook imports the checks,
# before any cell of the learner's runs.
_array_equal, _copy_of, _contiguous, _rows = np.array_equal, np.array, np.ascontiguousarray, np.ndindex
_ndarray, _generic = np.ndarray, np.generic  # what is an array: `N.ndarray = ...` would watch nothing
_blake2b, _sha256, _json_text = hashlib.blake2b, hashlib.sha256, json.dumps
_b64encode, _b64decode = base64.b64encode, base64.b64decode
_thread_time, _monotonic = time.thread_time, time.monotonic

SCHEMA = 1
RECORD_MIMETYPE = "application/vnd.attncourse.answers+json"
DISCOVERY_MIMETYPE = "application/vnd.attncourse.hidden-inputs+json"
INPUTS_FILE = "hidden_inputs.json"
# The record travels in the grader's cell's execute reply, as a payload of this source: the
# shell channel never drops a message, where the output channel, which Jupyter lets drop
# messages when it is flooded, may lose it to a burst of the learner's output.
RECORD_PAYLOAD = "attncourse.record"
REFERENCE_PASS = 5.0  # the watch for the course's functions may take this many times the graded calls' time
OUTPUT_WHILE_RECORDING = 20_000  # characters of the learner's output shown while the grader records
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128")
MAX_DEPTH = 32
MAX_BYTES = 64 * 1024 ** 2  # of array data in one value; the grader's output limit is lower


class WireError(ValueError):
    """Data that does not follow the format (a bug, or a learner's forgery)."""


# ---------------------------------------------------------------------------------------
# Values


MAX_INT_BITS = 1024  # a whole number this wide or wider is no float: it crosses as the infinity it rounds to


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-able data (see the module doc). Never raises for a strange object:
    what is not data becomes ``$opaque``, and so does an object that breaks the reading
    (one that claims to be a ``float`` through ``__class__``, a field that raises)."""
    try:
        return _encode(value, depth)
    except Exception as error:  # noqa: BLE001 (whatever the learner's object raised; Stop passes)
        return {"$opaque": f"a {type(value).__name__} that could not be read ({type(error).__name__})"}


def _encode(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return {"$opaque": "a value nested too deeply"}
    if value is Ellipsis:  # a stub's "not yet" (``prediction = ...``), as None is
        return {"$ellipsis": None}
    if type(value) is core.Opaque:  # read once already (as_sent in the grader): it keeps what it was
        return {"$opaque": str.__str__(value.description) if isinstance(value.description, str) else "a value"}
    if value is None or isinstance(value, bool):
        return bool(value) if value is not None else None
    if isinstance(value, str):  # a subclass's own __str__ is the learner's code; a lone surrogate no kernel sends
        return core._LONE_SURROGATE.sub("\ufffd", str.__str__(value))
    if isinstance(value, int):
        whole = int.__int__(value)
        if whole.bit_length() > MAX_INT_BITS:  # past every float, and past what JSON writes (4,300 digits)
            return {"$float": "inf" if whole > 0 else "-inf"}  # as the checks read it (core.as_float)
        return whole
    if isinstance(value, float):
        number = float.__float__(value)  # never a subclass's __float__
        return number if math.isfinite(number) else {"$float": repr(number)}
    if isinstance(value, complex):
        # its parts one level down: a part that is the number itself (a subclass's property) ends at MAX_DEPTH
        return {"$complex": [encode(value.real, depth + 1), encode(value.imag, depth + 1)]}
    if isinstance(value, fractions.Fraction):  # a number to the checks, which take any real number
        return _encode(fractions.Fraction.__float__(value), depth)
    if isinstance(value, decimal.Decimal):  # so is a Decimal (not a numbers.Real)
        return _encode(decimal.Decimal.__float__(value), depth)
    if isinstance(value, (_ndarray, _generic)):
        return _encode_array(value)
    if isinstance(value, numbers.Integral) and not callable(value):  # sympy's Integer: a whole number to the checks
        return _encode(operator.index(value), depth)
    if isinstance(value, numbers.Real) and not callable(value):  # sympy's Float, mpmath's mpf: a number to the checks
        return _encode(float(value), depth)
    if type(value) is Named:  # read once already (as_sent in the grader): named as it was
        return {"$namedtuple": value.__dict__["_typename"],
                "fields": {name: encode(value[k], depth + 1) for name, k in value.__dict__["_index"].items()}}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple: a tuple to the checks, named
        names = [str.__str__(name) if isinstance(name, str) else f"field{k}" for k, name in enumerate(value._fields)]
        items = list(tuple.__iter__(value))  # never its own __iter__
        return {"$namedtuple": type(value).__name__,
                "fields": {name: encode(item, depth + 1) for name, item in zip(names, items)}}
    if isinstance(value, tuple):
        return {"$tuple": [encode(item, depth + 1) for item in value]}
    if isinstance(value, (list, KeysView, ValuesView, ItemsView, range)):  # a dict's view: its items, in order
        return [encode(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {"$dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach"):
        return _encode_array(value.detach().cpu().numpy())
    if callable(value):  # before the records: a dataclass with __call__ is a function to the checks
        return {"$function": str(getattr(value, "__name__", type(value).__name__))}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _object(value, {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, depth)
    if isinstance(value, types.SimpleNamespace):
        return _object(value, vars(value), depth)
    traits = _declared_traits(value)
    if traits is not None:  # an explorer: a check reads its inputs (explorer.W_q) as a namespace's
        return _object(value, {name: getattr(value, name) for name in traits}, depth)
    as_array = _as_numbers(value)  # a deque, a memoryview, an object with __array__: numbers to the checks
    return _encode_array(as_array) if as_array is not None else {"$opaque": f"a {type(value).__name__}"}


def _declared_traits(value) -> list[str] | None:
    """The public traits a widget's own classes declare (an explorer's X, W_q, scale...),
    not the widget machinery's (comm, layout...); None for what is no traitlets object."""
    traitlets = sys.modules.get("traitlets")  # not loaded: no value can be one
    if traitlets is None or not isinstance(value, traitlets.HasTraits):
        return None
    machinery = ("traitlets", "ipywidgets", "anywidget", "builtins")
    return list(dict.fromkeys(name for cls in type(value).__mro__ if cls.__module__.split(".")[0] not in machinery
                              for name, attribute in vars(cls).items()
                              if isinstance(attribute, traitlets.TraitType) and not name.startswith("_")))


def _as_numbers(value) -> np.ndarray | None:
    """``value`` as an array of numbers, read as the checks read an answer
    (``core.expect_array``: ``np.asarray``, then float, or complex, which they refuse by
    name), or None where they could not read one either."""
    try:
        array = np.asarray(value)
        if array.dtype.name in DTYPES and array.dtype != np.dtype(object):
            return array
        for kind in (np.float64, np.complex128):
            try:
                return array.astype(kind)
            except (TypeError, ValueError, OverflowError):
                continue
    except core.Stop:  # the time budget's, not the value's
        raise
    except BaseException:  # noqa: BLE001 (the learner's __array__ may raise anything, SystemExit too)
        return None
    return None


def _object(value, fields: dict, depth: int) -> dict:
    return {"$object": type(value).__name__, "fields": {str(k): encode(v, depth + 1) for k, v in fields.items()}}


# numpy's extended precision (float128 or float96, by machine) crosses at the precision the
# checks compare at: a learner who computed in it has numbers, not an object that is no data.
_EXTENDED = {np.dtype(np.longdouble): np.float64, np.dtype(np.clongdouble): np.complex128}


def _encode_array(value) -> dict:
    array = np.asarray(value)
    if array.dtype in _EXTENDED:
        array = array.astype(_EXTENDED[array.dtype])
    if array.dtype.name not in DTYPES:  # an array of Decimals or mpmath numbers: numbers to the checks
        as_numbers = _as_numbers(array)
        if as_numbers is None or as_numbers.dtype.name not in DTYPES:
            return {"$opaque": f"an array of {array.dtype}"}
        array = as_numbers
    if not array.dtype.isnative:  # the bytes cross in the machine's order, which decode assumes
        array = array.astype(array.dtype.newbyteorder("="))
    if array.nbytes > MAX_BYTES:
        return {"$opaque": f"an array of {array.nbytes} bytes, more than the grader reads"}
    data = _contiguous(array).tobytes()
    encoded: dict[str, Any] = {"dtype": array.dtype.name, "shape": list(array.shape), "base64": _b64encode(data).decode()}
    if isinstance(value, _generic):
        encoded["scalar"] = True
    return {"$array": encoded}


class Named(tuple):
    """A learner's namedtuple, seen from the grader: a tuple whose items its names reach
    too. One class for them all: a class made for each (``collections.namedtuple``) is
    built from the learner's field names, and 700,000 of them took the grader 2 GB."""

    def __new__(cls, typename: str, fields: list[tuple[str, Any]]):
        made = super().__new__(cls, [item for _, item in fields])
        made.__dict__["_typename"], made.__dict__["_index"] = typename, {name: k for k, (name, _) in enumerate(fields)}
        return made

    def __getattr__(self, name: str) -> Any:
        try:
            return self[self.__dict__["_index"][name]]
        except KeyError:
            raise AttributeError(name) from None

    def __getnewargs__(self):  # copy and pickle: a Named again, not a tuple of a different call
        return self.__dict__["_typename"], [(name, self[k]) for name, k in self.__dict__["_index"].items()]

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={self[k]!r}" for name, k in list(self.__dict__["_index"].items())[:8])
        return f"{self.__dict__['_typename'][:40]}({shown}{', ...' if len(self) > 8 else ''})"


class Function:
    """A learner's function, seen from the grader: ``replay`` answers its calls."""

    def __init__(self, name: str, replay: Callable[..., Any] | None = None):
        self.__name__ = name
        self.replay = replay

    def __call__(self, *args, **kwargs):
        if self.replay is None:
            raise core.NotRecorded(f"{self.__name__}() was called, but none of its calls was recorded")
        return self.replay(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<the learner's function {self.__name__}>"


def decode(data: Any, depth: int = 0, functions: Callable[[str], Any] | None = None) -> Any:
    """The value ``data`` encodes, built only of plain types, numpy arrays, ``Opaque`` and
    ``Function`` (made by ``functions(name)``) and ``core.Opaque``. Raises WireError on
    anything else, and nothing but WireError: whatever in the data makes the reading fail is
    a malformed record (the learner's to answer for), never a failure of the grader's own.
    Numbers are checked before they are converted (``float_of``); what a check here missed
    is caught as WireError all the same."""
    try:
        return _decode(data, depth, functions)
    except WireError:
        raise
    except Exception as error:  # noqa: BLE001 (the data is the learner's: whatever it makes the reading raise)
        raise WireError(f"a value the grader cannot read ({core.describe(error)})") from None


def as_sent(value: Any) -> Any:
    """``value`` as the grader receives it (encoded, then read back), so that a check in the
    learner's notebook judges what the grader will: a Decimal as a float, an array of
    objects or a masked array as numbers, a big-endian array in native order, a dataclass
    of values as a namespace. A function, or a value that holds one, is left as it is (the
    grader replays its calls), and so is a value the reading refuses. What is a function
    is the encoding's to say: a float with a ``__call__`` crosses as a float."""
    sent = encode(value)
    if _names_a_function(sent):
        return value
    try:
        return decode(sent)
    except WireError:
        return value


def returned_as_sent(value: Any) -> Any:
    """What a learner's function returned, as the grader's replay returns it (``read_out``,
    encoded, then read back): a check in the notebook judges it so. Unlike an answer, a
    function returned is not replayed: it is the grader's stand-in on both sides (an object
    both callable and array-like crosses as a function), and so is a value holding one."""
    sent = encode(read_out(value))
    try:
        return decode(sent)
    except WireError as error:  # the replay fails such a call too
        return core.Opaque(f"a value the grader cannot read ({error})")


MAX_ITEMS = 10_000  # of an iterator a function returns


def read_out(value: Any) -> Any:
    """An iterator a learner's function returned (a generator, ``iter(pair)``, ``zip``) read
    into a list, as a check that unpacks it reads it, so that it crosses as its items: at
    most MAX_ITEMS of them (an endless one is not data). Anything else as it is."""
    if not isinstance(value, Iterator):
        return value
    items = list(itertools.islice(value, MAX_ITEMS + 1))
    return items if len(items) <= MAX_ITEMS else core.Opaque(f"an iterator of more than {MAX_ITEMS:,} items")


def _names_a_function(data: Any) -> bool:
    waiting = [data]
    while waiting:
        item = waiting.pop()
        if isinstance(item, dict):
            if "$function" in item:
                return True
            waiting.extend(item.values())
        elif isinstance(item, list):
            waiting.extend(item)
    return False


def float_of(number: Any) -> float | None:
    """A JSON number as a float: a float as it is (NaN and infinities too), an int a float
    holds (``10**400`` does not: None), None for anything else (a bool among them). Never
    raises: an int of any size compares with a float exactly, and is converted only once it
    fits."""
    if isinstance(number, float):
        return number
    if isinstance(number, int) and not isinstance(number, bool) and -sys.float_info.max <= number <= sys.float_info.max:
        return float(number)
    return None


def _decode(data: Any, depth: int, functions: Callable[[str], Any] | None) -> Any:
    if depth > MAX_DEPTH:
        raise WireError("nested too deeply")
    if data is None or isinstance(data, (bool, str, int)):
        return data
    if isinstance(data, float):
        if not math.isfinite(data):
            raise WireError("a bare non-finite float")
        return data
    if isinstance(data, list):
        return [_decode(item, depth + 1, functions) for item in data]
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise WireError(f"not a value: {_glimpse(data)}")
    tag = next(iter(data))
    body = data[tag]
    if tag == "$float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "$complex" and isinstance(body, list) and len(body) == 2:
        real, imag = (float_of(_decode(part, depth + 1, None)) for part in body)
        if real is None or imag is None:
            raise WireError(f"a complex number whose parts are not numbers a float holds: {_glimpse(body)}")
        return complex(real, imag)
    if tag == "$tuple" and isinstance(body, list):
        return tuple(_decode(item, depth + 1, functions) for item in body)
    if tag == "$dict" and isinstance(body, list):
        pairs = []
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise WireError("a dict entry that is not a pair")
            key = _decode(pair[0], depth + 1, None)
            try:
                hash(key)  # a tuple holding a list is a tuple, and no key
            except TypeError:
                raise WireError("a dict key that cannot be a key") from None
            if not isinstance(key, (str, int, float, bool, tuple)) and key is not None:
                raise WireError("a dict key that cannot be a key")
            pairs.append((key, _decode(pair[1], depth + 1, functions)))
        return dict(pairs)
    if tag == "$array" and isinstance(body, dict):
        return _decode_array(body)
    if tag == "$object" and isinstance(body, str) and isinstance(data.get("fields"), dict):
        return types.SimpleNamespace(**{str(k): _decode(v, depth + 1, functions) for k, v in data["fields"].items()
                                        if str(k).isidentifier()})
    if tag == "$namedtuple" and isinstance(body, str) and isinstance(data.get("fields"), dict):
        return Named(body, [(str(k), _decode(v, depth + 1, functions)) for k, v in data["fields"].items()])
    if tag == "$function" and isinstance(body, str):
        return functions(body) if functions else Function(body)
    if tag == "$iterator" and isinstance(body, list):
        return iter([_decode(item, depth + 1, functions) for item in body])
    if tag == "$ellipsis" and body is None:
        return Ellipsis
    if tag == "$opaque" and isinstance(body, str):
        return core.Opaque(body[:200])
    raise WireError(f"an unknown value tag {tag[:40]!r}")


def _glimpse(data: Any) -> str:
    """The start of ``data`` as the record holds it, for a message (JSON's own text: no
    number there is too long to write)."""
    try:
        return repr(json.dumps(data)[:60])
    except Exception:  # noqa: BLE001 (not JSON at all)
        return f"a {type(data).__name__}"


def _decode_array(body: dict):
    dtype, shape, text = body.get("dtype"), body.get("shape"), body.get("base64")
    if dtype not in DTYPES or not isinstance(text, str) or not isinstance(shape, list):
        raise WireError("a malformed array")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape) or len(shape) > 32:
        raise WireError("an array of a malformed shape")
    itemsize = np.dtype(dtype).itemsize
    # numpy holds no dimension, and no product of the others than 0, beyond its index type
    # (an empty array of shape [0, 10**400] is none it can make)
    if math.prod(n for n in shape if n) * itemsize > sys.maxsize or any(n > sys.maxsize for n in shape):
        raise WireError(f"an array of a shape numpy cannot hold: {_glimpse(shape)}")
    size = math.prod(shape) * itemsize
    if size > MAX_BYTES or len(text) > 4 * MAX_BYTES // 3 + 4:
        raise WireError("an array larger than the grader reads")
    try:
        raw = _b64decode(text, validate=True)
    except ValueError:
        raise WireError("an array whose bytes are not base64") from None
    if len(raw) != size:
        raise WireError(f"an array of shape {shape} whose data is {len(raw)} bytes, not {size}")
    array = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    return array[()] if body.get("scalar") and array.ndim == 0 else array


_STREAM = core.Opaque("a stream")


def digest(args: tuple, kwargs: dict | None = None) -> str:
    """A digest of a call's inputs, equal wherever the inputs are equal (same dtype, shape
    and bytes for arrays): how the grader finds the output of the call it would make."""
    def unread(value):  # a stream's items are the learner's to read, once: never here
        return _STREAM if isinstance(value, Iterator) else value

    encoded = encode((tuple(unread(a) for a in args), {k: unread(v) for k, v in sorted((kwargs or {}).items())}))
    return _sha256(_json_text(encoded, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# ---------------------------------------------------------------------------------------
# The sandbox's side: record the learner's answers and their outputs


def export(label: str, expressions: tuple[str, ...], inputs: str = INPUTS_FILE,
           aliases: dict[str, str] | None = None) -> None:
    """Send the record of exercise ``label`` (the grader's cell calls it in the learner's
    notebook): the values of ``expressions`` (the check's arguments, evaluated in the
    notebook), the calls the course's check makes to the learner's functions and the
    calls its hidden tests make (from the grader's ``inputs`` file), with their outcomes.
    ``aliases``: a name the hidden tests read -> the notebook's expression that stands for
    it (a learner who checked ``my_softmax`` in place of ``stable_softmax``); the record
    still names what the hidden tests read."""
    namespace = sys._getframe(1).f_globals  # the notebook's
    record: dict[str, Any] = {"schema": SCHEMA, "exercise": label, "answers": [], "missing": "", "names": {},
              "calls": [], "references": []}
    recorder = _Recorder(record)
    # Warnings ignored, as the learner's own check ignores them: a learner who turned them
    # into errors (simplefilter("error")) is graded as their check graded them.
    with _capped_output(OUTPUT_WHILE_RECORDING), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            answers = [eval(expression, namespace) for expression in expressions]  # noqa: S307 (the learner's own namespace, in the sandbox)
        except Exception as error:  # the answer is not defined, or raises
            answers = None
            record["missing"] = core.describe(error)
        if answers is not None:
            encoded, _ = core.call_with_deadline(lambda: [encode(answer) for answer in answers], core.time_budget(None))
            record["answers"] = encoded or [{"$opaque": "a value that could not be read in time"}] * len(answers)
            functions = {id(a): f"answer:{i}" for i, a in enumerate(answers) if callable(a)}
            if functions:
                recorder.check(label, answers, functions)
        tests = _read_inputs(inputs).get(label, {})
        seen = _aliased(namespace, aliases or {})
        for name in tests.get("values", []):
            record["names"][name] = encode(seen[name]) if name in seen else {"$opaque": "not defined"}
        for call in tests.get("calls", []):
            name = call["function"]
            fn = seen.get(name)
            record["names"].setdefault(name, encode(fn) if name in seen else {"$opaque": "not defined"})
            if callable(fn):
                recorder.call(f"name:{name}", fn, decode(call["args"]), decode(call.get("kwargs", {"$dict": []})))
        recorder.look_for_references()
    _send(record, label)


def _send(record: dict, label: str) -> None:
    """The record to the grader, in the cell's execute reply (``RECORD_PAYLOAD``), with a
    line saying so as the cell's output; outside a kernel, as the cell's output itself."""
    from IPython.display import display

    said = f"[grade: the answers of {label} recorded]"
    shell = _shell()
    if shell is None:
        display({RECORD_MIMETYPE: record, "text/plain": said}, raw=True)
        return
    shell.payload_manager.write_payload({"source": RECORD_PAYLOAD, "record": record}, single=False)
    display({"text/plain": said}, raw=True)


@contextlib.contextmanager
def _capped_output(limit: int):
    """While the grader records, the learner's output (print, logging, display's messages,
    whichever thread makes them) is passed on up to ``limit`` characters, then counted and
    dropped: a function that prints its progress thousands of times a call is recorded, not
    drowned. A display costs the bytes it sends (``display_size``: every representation, a
    JSON view's dict as much as a figure's image, and its metadata), so the recording sends
    ``limit`` and at most one message more, whatever the learner shows. The
    streams' own ``write`` is replaced, so a handler that kept a reference to them (logging's)
    is capped too."""
    share, dropped = [limit], [0]
    shell = _shell()

    def capped(send, cost_of):
        def capped_send(data=None, *args, **kwargs):
            cost = cost_of(data, *args, **kwargs)
            if share[0] > 0:
                share[0] -= cost
                return send(data, *args, **kwargs)
            dropped[0] += cost
            return str.__len__(data) if isinstance(data, str) else None
        return capped_send

    def display_cost(data=None, metadata=None, *_, transient=None, **__) -> int:  # publish's own signature
        return display_size(data, metadata, transient)

    def write_cost(data, *_, **__) -> int:  # str's own length: a subclass's __len__ may say -1
        return str.__len__(data) if isinstance(data, str) else 1000

    targets = [(stream, "write", write_cost) for stream in dict.fromkeys((sys.stdout, sys.stderr))]
    if shell is not None:
        targets += [(shell.display_pub, "publish", display_cost),
                    (shell.display_pub, "clear_output", lambda *_, **__: DISPLAY_ENVELOPE)]  # a message of its own
    saved = [(target, name, vars(target).get(name) if hasattr(target, "__dict__") else None)
             for target, name, _ in targets]
    try:
        for target, name, cost_of in targets:
            with contextlib.suppress(AttributeError, TypeError):  # a stream that takes no attribute
                setattr(target, name, capped(getattr(target, name), cost_of))
        yield
    finally:
        for target, name, own in saved:
            with contextlib.suppress(AttributeError, TypeError):
                if own is not None:
                    setattr(target, name, own)
                else:
                    delattr(target, name)  # the class's own again
        if dropped[0]:
            print(f"[grade: about {dropped[0]:,} more characters of output while recording were not shown]", flush=True)


DISPLAY_ENVELOPE = 600  # bytes of a display's message besides its content: its header, its parent's, its signature


def display_size(data: Any, metadata: Any = None, transient: Any = None) -> int:
    """The bytes a display sends: its content (``data``, a representation per MIME type,
    a JSON view's dict or a figure's PNG alike, with its ``metadata`` and ``transient``)
    serialised as the kernel serialises it, and its message's envelope. 0 for a content
    the kernel cannot serialise either: sending it raises, as in the learner's own run."""
    content = {"data": data, "metadata": metadata if metadata is not None else {},
               "transient": transient if transient is not None else {}}
    try:
        return DISPLAY_ENVELOPE + len(_packed(content))
    except Exception:  # noqa: BLE001 (the learner's objects, serialised: whatever they raise)
        return 0


def _packed(content: dict) -> bytes:
    """``content`` as the kernel's session packs it (UTF-8 JSON, bytes as base64)."""
    try:
        from jupyter_client.session import json_packer
    except ImportError:  # outside a kernel's environment: the same JSON, near enough
        return json.dumps(content, ensure_ascii=False, default=lambda value: _b64encode(value).decode()
                          if isinstance(value, bytes) else str(value)).encode("utf-8", "surrogateescape")
    return json_packer(content)


def _shell():
    """IPython's shell, if this runs in one."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _aliased(namespace: dict, aliases: dict[str, str]) -> dict:
    """The notebook's names, each alias standing for its expression (if it evaluates)."""
    seen = dict(namespace)
    for name, expression in aliases.items():
        with contextlib.suppress(Exception):  # then the hidden test reads the name itself
            seen[name] = eval(expression, namespace)  # noqa: S307 (the learner's own namespace, in the sandbox)
    return seen


def _read_inputs(inputs: str) -> dict:
    path = Path(inputs)
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8")).get("tests", {})


class _Recorder:
    """Calls the learner's functions under the checks' time budget, writing each outcome
    into ``record``."""

    def __init__(self, record: dict):
        self.record = record
        self.input: int | None = None  # the check's input being swept, while it is
        self.exercise_name = ""  # the name the check gives the function it grades
        self.calls_made: list[tuple] = []  # (fn, its arguments as they came in, graded as) per call
        self.graded_seconds = 0.0  # the processor time of those calls, as they were graded,
        self.graded_clock = 0.0  # and their time by the clock (an answer may wait: a sleep, a thread)

    def check(self, label: str, answers: list, functions: dict[int, str]) -> None:
        """Run the course's check of ``label`` here, only to learn which calls it makes to
        the learner's functions: its verdict is thrown away (the grader makes its own).
        One time budget for the whole check, as in the learner's own run of it."""
        core.load_chapter_of(label)  # the learner's notebook may not have used this check yet
        evaluate = core.CHECKS[label].__wrapped__  # type: ignore[attr-defined]  # functools.wraps sets it
        self.exercise_name = evaluate.__name__
        watched = [self._recording(functions[id(a)], a) if id(a) in functions else a for a in answers]

        def run(fn, *args, name=None):  # the calls are recorded where they reach the learner's function
            return fn(*args)

        def every_input() -> None:
            """The check on its first input alone, then on each other one (a check that does
            not go through ``core.inputs`` runs once, whole): each input's calls are recorded
            even after a wrong one, so the grader can count the inputs right (partial credit).
            An input that runs out of time ends the sweep."""
            index, count = 0, 1
            while index < count:
                self.input = index  # each call names its input: calls on streams digest alike
                with core.one_input(index) as selection:
                    _quietly(evaluate, run, *watched)
                count = len(selection.described) if selection.described is not None else 0
                index += 1

        try:
            core.call_with_deadline(every_input, core.time_budget(None))
        finally:
            self.input = None

    def _recording(self, key: str, fn):
        """``fn`` recording every call made to it, however the check reaches it: directly,
        through a lambda or a helper, in a loop, with keyword arguments."""

        def recorded(*args, **kwargs):
            value, outcome = self.outcome(key, fn, args, kwargs)
            if "returned" in outcome:
                return value
            raise core.Failed("")  # the check stops here; so will the grader's replay

        recorded.__name__ = str(getattr(fn, "__name__", "the answer"))
        return recorded

    def call(self, key: str, fn, args: tuple, kwargs: dict) -> None:
        """One call a hidden test makes, under a time budget of its own."""
        core.call_with_deadline(lambda: _quietly(self.outcome, key, fn, args, kwargs), core.time_budget(None))

    def outcome(self, key: str, fn, args: tuple, kwargs: dict) -> tuple[Any, dict]:
        entry: dict[str, Any] = {"function": key, "args": digest(args, kwargs), "outcome": {"stopped": core.time_budget(None)}}
        if self.input is not None and key.startswith("answer:"):
            entry["input"] = self.input
        self.record["calls"].append(entry)  # "stopped" stays if the budget runs out in the call
        copies = [_copy_of(a, copy=True) if isinstance(a, _ndarray) else None for a in args]
        counted = [_Counted(a) if isinstance(a, Iterator) else None for a in args]
        streams = tuple(a if c is None else c.items for c, a in zip(counted, args))
        graded_as = key.removeprefix("name:") if key.startswith("name:") else self.exercise_name
        if not any(isinstance(a, Iterator) for a in args):  # a stream is read once: not again
            with contextlib.suppress(Exception):  # an argument that cannot be copied is not watched
                self.calls_made.append((fn, copy.deepcopy((args, kwargs)), graded_as))
        started, clock = _thread_time(), _monotonic()
        if any(counted):  # a stream's reader: how much it held at once
            (value, outcome), entry["peak"] = core.peak_memory(lambda f, *a: _call(f, a, kwargs), fn, *streams)
        else:
            value, outcome = _call(fn, streams, kwargs)  # timed, and never under the profiler
        self.graded_seconds += _thread_time() - started
        self.graded_clock += _monotonic() - clock
        budget = core.time_budget(None)
        if _thread_time() - started > budget or _monotonic() - clock > core.CLOCK_BACKSTOP * budget:
            outcome = {"stopped": budget}  # over its budget, whatever made the wait for it longer
        entry["outcome"] = outcome
        changed = [None if c is None or _same(c, a) else encode(a) for c, a in zip(copies, args)]
        if any(item is not None for item in changed):
            entry["changed"] = changed
        if any(counted):
            entry["drawn"] = [None if c is None else c.asked for c in counted]
            for stream in filter(None, counted):
                stream.look_back()  # the last item, written into after it was read
            written = [[[index, item] for index, item in sorted(c.written.items())] if c and c.written else None
                       for c in counted]
            if any(items is not None for items in written):
                entry["written"] = written
        return value, outcome

    def look_for_references(self) -> None:
        """Every call recorded, made again under ``_ReferenceWatcher`` (a profiler, which
        slows Python code several times) to note the course's functions it uses: a pass of
        its own once every graded call is done (nothing it leaves running can slow or stop
        one), under a time budget of its own, so the slowdown never costs the graded calls
        their time. Each call is made with other numbers in the graded call's float arrays
        (``_varied``), then with its inputs: an answer that remembers what it returned
        cannot answer the first from memory, nor tell from a repeated input that it is watched. What these calls return or raise is not recorded; a pass that does
        not finish says so (``record["watch"]``)."""

        def watch_every_call() -> bool:
            for fn, (args, kwargs), graded_as in self.calls_made:
                with _ReferenceWatcher(fn, graded_as) as watcher:
                    _quietly(functools.partial(fn, *_varied(args), **_varied(kwargs)))
                    _quietly(functools.partial(fn, *args, **kwargs))
                self.record["references"] += [n for n in watcher.seen if n not in self.record["references"]]
            return True

        # At most REFERENCE_PASS times what the graded calls took, in processor time and by
        # the clock (the notebook's time limit pays for it): a slow answer's may stop short.
        budget = min(core.time_budget(None), max(0.5, REFERENCE_PASS * self.graded_seconds))
        wall = min(core.CLOCK_BACKSTOP * core.time_budget(None),
                   max(core.CLOCK_BACKSTOP * budget, REFERENCE_PASS * self.graded_clock))
        finished, _ = core.call_with_deadline(functools.partial(_quietly, watch_every_call), budget, wall=wall)
        if not finished:
            self.record["watch"] = "stopped short"


def _varied(value):
    """``value`` with every float array (at any depth of a tuple, list or dict) holding
    other numbers of the same shape and type: seeded, so every run of the grader is alike."""
    rng = np.random.default_rng(0)

    def vary(item):
        if isinstance(item, _ndarray) and item.dtype.kind == "f":
            return np.asarray(rng.standard_normal(item.shape), dtype=item.dtype)
        if isinstance(item, (tuple, list)):
            return type(item)(vary(inner) for inner in item) if type(item) in (tuple, list) else item
        if isinstance(item, dict):
            return {key: vary(inner) for key, inner in item.items()}
        return item

    return vary(value)


class _Counted:
    """A stream the learner's function reads (``items``, a generator: it has no attribute
    the learner could reset), counting how often the function asks for an item, so that
    the grader's replay reads the check's own stream as far (the check may watch it), and
    noting each array item the function wrote into (``written``: item index -> the item as
    it was when the function asked for the next one or returned), so that the replay
    writes the same into the check's item (the check may watch that too)."""

    def __init__(self, stream: Iterator):
        self.asked = 0
        self.written: dict[int, Any] = {}
        self.watched: tuple[int, np.ndarray, bytes | None] | None = None  # the last array handed out
        self.items = self._hand_out(stream)

    def _hand_out(self, stream: Iterator):
        while True:
            self.look_back()
            self.asked += 1
            try:
                item = next(stream)
            except StopIteration:
                return
            self.watched = (self.asked - 1, item, _bytes_digest(item)) if isinstance(item, _ndarray) else None
            yield item

    def look_back(self) -> None:
        """Note the last array handed out if the function wrote into it since."""
        if self.watched is None:
            return
        index, item, before = self.watched
        now = _bytes_digest(item)
        if now != before:
            self.written[index] = encode(item)
            self.watched = index, item, now


def _bytes_digest(item: np.ndarray) -> bytes | None:
    """A digest of the array's bytes, read a row at a time: a copy of a whole item would
    count against the memory the learner's function holds (``core.peak_memory``). None for
    an array with no bytes to read (objects)."""
    digest = _blake2b(repr((item.dtype.str, item.shape)).encode())
    try:
        if item.flags.c_contiguous:
            digest.update(item.data.cast("B"))
        else:
            for row in _rows(item.shape[:-1]):  # (n,) each: a stream's block is a slice of columns
                digest.update(_contiguous(item[row]).data.cast("B"))
    except (TypeError, ValueError):  # an object array has no buffer
        return None
    return digest.digest()


def _call(fn, args, kwargs) -> tuple[Any, dict]:
    try:
        value = read_out(fn(*args, **kwargs))
    except NotImplementedError as error:
        return None, {"raised": core.describe(error), "not_implemented": True}
    except BaseException as error:  # noqa: BLE001 (learners' code may raise anything, SystemExit too)
        if isinstance(error, core.Stop):
            raise
        return None, {"raised": core.describe(error), "not_implemented": False}
    return value, {"returned": encode(value)}


def _quietly(fn, *args):
    try:
        return fn(*args)
    except BaseException as error:  # noqa: BLE001 (the verdict here is thrown away)
        if isinstance(error, core.Stop):
            raise
        return None


def _same(before: np.ndarray, after) -> bool:
    try:
        return bool(_array_equal(before, after, equal_nan=before.dtype.kind in "fc"))
    except Exception:  # noqa: BLE001
        return False


class _ReferenceWatcher:
    """Notes, as best it can, the course's functions that share the name of the function
    being graded (its reference): calling ``attncourse.graph.attention_rollout`` inside
    ``attention_rollout`` is using the answer, not writing it. The names come from the
    exercise (the name its check grades the function as, ``graded_as``) as well as from the
    learner's object, seen through ``functools.partial``, bound methods and ``__wrapped__``.
    A call is noted when the course's code runs, whatever the learner named it: in the
    course's module under its name, or anywhere as a copy of its code (the same names and
    constants, its docstring among them: its source run again, or its code object under
    another name); in
    the thread that calls the function and in any thread started during the call. A
    learner who hides the call (a thread started before, another process, an edited copy)
    escapes it: the grader flags, it does not prevent."""

    def __init__(self, fn, graded_as: str = ""):
        fn = _unwrapped(fn)
        names = {str(getattr(fn, "__name__", "") or ""), graded_as}
        self.names = {variant for name in names for variant in (name, name.removeprefix("my_"),
                                                                   name.removeprefix("stable_"))} - {""}
        self.copies = _course_code(frozenset(self.names))  # fingerprint of its code -> its name
        self.seen: list[str] = []
        self.known: dict[int, tuple[Any, str | None]] = {}  # id(code) -> (code, its course name or None)
        module = str(getattr(fn, "__module__", "") or "")
        if _of_the_course(module) and getattr(fn, "__name__", None):
            self.seen.append(f"{module}.{fn.__name__}")  # the answer is the course's own function
        elif (found := self._course_name(getattr(fn, "__code__", None), module)) is not None:
            self.seen.append(found)

    def _course_name(self, code, module: str) -> str | None:
        """The course's function ``code`` is (or is a copy of), if one of the watched names."""
        if not isinstance(code, types.CodeType):
            return None
        if _of_the_course(module) and code.co_name in self.names:
            return f"{module}.{code.co_name}"
        copied = self.copies.get(_fingerprint(code))
        return f"{copied} (a copy of its code)" if copied else None

    def _note(self, frame) -> None:
        code = frame.f_code
        known = self.known.get(id(code))
        if known is None or known[0] is not code:
            known = self.known[id(code)] = (code, self._course_name(code, str(frame.f_globals.get("__name__", ""))))
        if known[1] is not None and known[1] not in self.seen:
            self.seen.append(known[1])

    def __enter__(self):
        def profile(frame, event, arg):
            if event == "call":
                self._note(frame)

        sys.setprofile(profile)  # this thread's: the worker the call runs in
        threading.setprofile(profile)  # and every thread started during the call
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)
        threading.setprofile(None)
        return False


def _of_the_course(module: str) -> bool:
    return module.startswith("attncourse.") and not module.startswith("attncourse.checks")


def _unwrapped(fn):
    """The function behind a ``functools.partial``, a bound method or a decorator."""
    for _ in range(MAX_DEPTH):
        try:
            inner = (fn.func if isinstance(fn, functools.partial) else getattr(fn, "__func__", None)
                     or getattr(fn, "__wrapped__", None))
        except Exception:  # noqa: BLE001 (a learner's object may raise on any attribute)
            return fn
        if inner is None or inner is fn:
            return fn
        fn = inner
    return fn


def _fingerprint(code: types.CodeType) -> tuple:
    """What a copy of ``code`` keeps however it was made: the names it reads and its
    constants, its docstring and messages among them (not its name, file, line numbers,
    variables' names or bytecode, which the compiler's flags change)."""
    return (code.co_names,
            tuple(_fingerprint(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts))


def _course_code(names: frozenset[str]) -> dict[tuple, str]:
    """The fingerprints of the course's functions called ``names``, in its modules loaded
    now (found afresh for each call: a learner may import one between two calls)."""
    found = {}
    for module_name, module in list(sys.modules.items()):
        if not _of_the_course(module_name):
            continue
        for name in names:
            fn = vars(module).get(name)
            if (isinstance(fn, types.FunctionType) and fn.__module__ == module_name
                    and any(isinstance(c, str) for c in fn.__code__.co_consts)):  # its own text: not a one-liner
                found[_fingerprint(fn.__code__)] = f"{module_name}.{name}"
    return found


# ---------------------------------------------------------------------------------------
# The grader's own run of the solved chapter: the hidden tests' inputs


def discover(label: str, source: str) -> None:
    """Run the hidden-test cell ``source`` of ``label`` in the solved chapter's namespace
    (the grader's trusted run of the instructor's chapter), recording which of the
    notebook's names it reads and the inputs it calls the functions among them on. Sends
    them as a :data:`DISCOVERY_MIMETYPE` output; raises if the hidden test fails on the
    solution (a course bug the grader reports before grading anyone)."""
    from IPython.display import display

    namespace = sys._getframe(1).f_globals
    found: dict[str, Any] = {"modules": {}, "values": [], "calls": []}
    scope = dict(namespace)
    for name in free_names(source):
        if name not in namespace or name == "check":
            continue
        value = namespace[name]
        if isinstance(value, types.ModuleType):
            found["modules"][name] = value.__name__
        elif callable(value) and not isinstance(value, type):
            scope[name] = _recording(name, value, found["calls"])
        else:
            found["values"].append(name)
    failures = []
    scope["check"] = types.SimpleNamespace(hidden_test=lambda _label, timeout=None: lambda test: test())
    try:
        exec(compile(source, f"<hidden test of {label}>", "exec"), scope)  # noqa: S102 (the instructor's code)
    except Exception as error:  # noqa: BLE001
        failures.append(core.describe(error))
    if failures:
        raise RuntimeError(f"the hidden test of {label} fails on the solved chapter: {failures[0]}")
    display({DISCOVERY_MIMETYPE: {"schema": SCHEMA, "exercise": label, **found},
             "text/plain": f"[grade: the inputs of {label}'s hidden test recorded]"}, raw=True)


def _recording(name: str, fn, calls: list):
    def recorded(*args, **kwargs):
        args = tuple(_read_stream(a) for a in args)
        kwargs = {k: _read_stream(v) for k, v in kwargs.items()}
        calls.append({"function": name, "args": _encode_streams(args), "kwargs": _encode_streams(kwargs)})
        return fn(*(_replayable(a) for a in args), **{k: _replayable(v) for k, v in kwargs.items()})

    return recorded


class _Read(list):
    """The items of a stream a hidden test passed, read (and copied) in the solved chapter."""


def _read_stream(value):
    if isinstance(value, Iterator):
        return _Read(_copy_of(item, copy=True) if isinstance(item, _ndarray) else item for item in value)
    return value


def _replayable(value):
    return iter(value) if isinstance(value, _Read) else value


def _encode_streams(values: tuple | dict):
    """``encode(values)``, each stream among them as ``$iterator`` of its items."""
    def one(value):
        return {"$iterator": [encode(item, 1) for item in value]} if isinstance(value, _Read) else encode(value)

    if isinstance(values, dict):
        return {"$dict": [[encode(k), one(v)] for k, v in values.items()]}
    return {"$tuple": [one(v) for v in values]}


def free_names(source: str) -> list[str]:
    """The names a cell reads without binding them itself, at its top level or in any
    function it defines (builtins aside): what it takes from the notebook."""
    import builtins

    table = symtable.symtable(source, "<cell>", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    names: list[str] = []

    def walk(scope) -> None:
        for symbol in scope.get_symbols():
            name = symbol.get_name()
            if scope is table:
                reads = symbol.is_referenced() and not (symbol.is_assigned() or symbol.is_imported())
            else:
                reads = symbol.is_global()
            if reads and name not in bound and name not in names and not hasattr(builtins, name):
                names.append(name)
        for child in scope.get_children():
            walk(child)

    walk(table)
    return names
