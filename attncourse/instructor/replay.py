"""The course's checks and hidden tests, run in the grader's own process on the data a
learner's notebook recorded (``attncourse.checks.wire``), the learner's functions replayed.

Nothing here runs a line of the learner's code. Each of the learner's functions is a
replay: called with inputs, it looks up the output the notebook recorded for those inputs
(by their digest, computed here from the inputs the check itself made), redoes what the
function did to its arguments (what it wrote into arrays, how far it read streams), and
returns, raises or times out as the function did. A call the notebook did not record is
not a pass or a fail: the exercise needs review.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import math
import sys
import threading
import types
from collections import defaultdict, deque
from collections.abc import Iterator
from typing import Any

import numpy as np

from attncourse import checks
from attncourse.checks import core, predict, wire

JUDGE_TIMEOUT = 120.0  # seconds for one check on data: trusted code, but chapter 7's runs a model
MAX_DRAWN = 100_000  # items read from one stream: a record cannot make a replay read for ever
_END = object()
_ONE_AT_A_TIME = threading.Lock()  # a predict check counts its misses in the module


class Replay:
    """The learner's functions as the record saw them."""

    def __init__(self, record: dict, input: int | None = None, changes_fail: bool = False):
        """``input``: replay only the calls the check made on its input ``input`` (and those
        that name none): the calls of one input judged alone, as partial credit does.
        Calls on streams all digest alike, so the input is what tells them apart.
        ``changes_fail``: a call that wrote into an argument raises instead, as a hidden test
        needs: it computes what it expects from its arguments after the call, so an answer
        that zeroed them would pass it (the checks pass copies, and say what changed)."""
        self.changes_fail = changes_fail
        self.calls: dict[tuple[str, str], deque] = defaultdict(deque)
        for call in record.get("calls", []):
            if isinstance(call, dict) and isinstance(call.get("function"), str) and isinstance(call.get("args"), str) \
                    and (input is None or call.get("input", input) == input):
                self.calls[call["function"], call["args"]].append(call)

    def function(self, key: str, name: str) -> wire.Function:
        """The learner's function recorded as ``key`` (``answer:0``, ``name:NAME``), called ``name``."""
        return wire.Function(name, replay=functools.partial(self._answer, key))

    def _answer(self, key: str, fn: wire.Function, args: tuple, kwargs: dict) -> Any:
        recorded = self.calls.get((key, wire.digest(args, kwargs)))
        if not recorded:
            raise core.NotRecorded(
                f"{fn.__name__}() was called on inputs whose output the notebook did not record "
                "(the grader's cell did not run to its end, or the notebook changed what it records)")
        call = recorded.popleft() if len(recorded) > 1 else recorded[0]
        if self.changes_fail and _wrote_into_arguments(call):
            return self._raise(core.Replayed(fn.__name__, raised="it wrote into its arguments; work on new arrays"))
        try:
            outcome = self._redo(call, args)
        except CannotRedo as error:  # the check would not see the change: the call fails, as in the notebook
            return self._raise(core.Replayed(fn.__name__, raised=str(error)))
        except wire.WireError as error:  # a forged or broken record: the learner's, so a fail
            return self._raise(core.Replayed(fn.__name__, unreadable=f"left a record of its call the grader "
                                                                     f"cannot read ({error})"))
        if "returned" in outcome:
            try:
                return wire.decode(outcome["returned"])
            except wire.WireError as error:  # it returned, so it did not raise: say what it did
                return self._raise(core.Replayed(fn.__name__, unreadable=f"returned a value the grader "
                                                                         f"cannot read ({error})"))
        if "stopped" in outcome:
            return self._raise(core.Replayed(fn.__name__, stopped=outcome["stopped"]))
        return self._raise(core.Replayed(fn.__name__, raised=str(outcome.get("raised", ""))[:300],
                                         not_implemented=bool(outcome.get("not_implemented"))))

    @staticmethod
    def _redo(call: dict, args: tuple) -> dict:
        """What the recorded ``call`` did besides its outcome, done again to the check's
        ``args`` (the streams it read, the arrays it changed, the memory it held), and its
        outcome, its time budget read as seconds. Raises WireError where the record cannot
        be read."""
        drawn, written = call.get("drawn"), _written(call)
        for position, (argument, asked) in enumerate(zip(args, drawn if isinstance(drawn, list) else ())):
            wrote = written[position] if position < len(written) else {}
            if isinstance(argument, Iterator) and isinstance(asked, int) and not isinstance(asked, bool):
                for index in range(min(asked, MAX_DRAWN)):  # read the check's stream as the function did
                    item = next(argument, _END)
                    if item is _END:
                        break
                    if index in wrote and isinstance(item, np.ndarray):  # and write into it as it did
                        _write_back(item, wrote[index])
        changed = call.get("changed", [])
        if not isinstance(changed, list):
            raise wire.WireError("the arguments it changed, not as a list")
        for argument, after in zip(args, changed):
            if after is not None and isinstance(argument, np.ndarray):
                _write_back(argument, after)
        peak = call.get("peak")
        # a size tracemalloc can measure: a check divides it, and a float holds no 10**400
        if peak is not None and not (isinstance(peak, int) and not isinstance(peak, bool) and 0 <= peak <= sys.maxsize):
            raise wire.WireError(f"a memory peak that is not a number of bytes: {str(peak)[:40]!r}")
        core.replayed_peak(peak)
        outcome = call.get("outcome")
        if not isinstance(outcome, dict):
            raise wire.WireError("a call without an outcome")
        if "returned" not in outcome and "stopped" in outcome:
            seconds = wire.float_of(outcome["stopped"])
            if seconds is None or not math.isfinite(seconds):
                raise wire.WireError(f"a time budget that is not a number of seconds: {str(outcome['stopped'])[:40]!r}")
            return {"stopped": seconds}
        return outcome

    @staticmethod
    def _raise(error: Exception):
        raise error


class CannotRedo(Exception):
    """A change a learner's function made to an argument that the check's own copy cannot
    be given (another size, or values that are not numbers)."""


def _write_back(target: np.ndarray, after: Any) -> None:
    """Make the check's array ``target`` what the learner's function left its own as (the
    recorded ``after``): its values, and its shape if the function reshaped it in place, so
    that the check sees the change the notebook's check saw. Raises CannotRedo where the
    change cannot be made, WireError where ``after`` cannot be read."""
    became = wire.decode(after)
    try:
        if not isinstance(became, np.ndarray):
            raise TypeError(f"a {type(became).__name__}")
        if became.shape != target.shape:
            target.shape = became.shape  # as the function did: same size, same data
        np.copyto(target, became, casting="unsafe")
    except (TypeError, ValueError, AttributeError) as error:
        raise CannotRedo(f"it changed its input into {core.type_name(became)}, which the grader cannot redo "
                         f"({core.describe(error)}); work on new arrays") from None


def _written(call: dict) -> list[dict[int, Any]]:
    """The stream items ``call`` wrote into, for each argument: {item index: value as
    sent}. Raises WireError for a field the record cannot have."""
    written = call.get("written", [])
    if not isinstance(written, list):
        raise wire.WireError("the stream items it wrote into, not as a list")
    items: list[dict[int, Any]] = []
    for stream in written:
        if stream is None:
            items.append({})
        elif isinstance(stream, list) and all(isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int
                                              for pair in stream):
            items.append(dict((index, value) for index, value in stream))
        else:
            raise wire.WireError(f"a stream's written items that are not [position, value] pairs: {str(stream)[:40]!r}")
    return items


def _wrote_into_arguments(call: dict) -> bool:
    """Whether the recorded ``call`` wrote into an array argument or a stream's item."""
    changed, written = call.get("changed"), call.get("written")
    return (isinstance(changed, list) and any(after is not None for after in changed)) or \
        (isinstance(written, list) and any(items for items in written))


def _answer_function(replay: Replay, index: int, name: str):
    """The learner's function that was answer ``index`` of a check, replayed."""
    return replay.function(f"answer:{index}", name)


def judge_check(label: str, record: dict) -> core.Result:
    """The course's check of ``label`` on the recorded answers."""
    if record.get("missing"):
        return core.Result(label, core.FAILED, f"the check cell raised {str(record['missing'])[:300]}")
    replay = Replay(record)
    answers = [wire.decode(answer, functions=functools.partial(_answer_function, replay, i))
               for i, answer in enumerate(record.get("answers", []))]
    with _ONE_AT_A_TIME:
        predict.forget_misses()  # the learner's misses are in the record, not in this process
        return core.evaluate_check(label, "check", _undecorated(label), answers, JUDGE_TIMEOUT)


def judge_inputs(label: str, record: dict) -> tuple[list[str], list[str] | None]:
    """(the status of each input of ``label``'s check, judged alone on ``record``; the
    inputs' descriptions), or ``([], None)`` if the check does not try inputs one by one."""
    evaluate = _undecorated(label)
    statuses: list[str] = []
    described: list[str] | None = None
    index, count = 0, 1
    while index < count:
        replay = Replay(record, input=index)  # the calls made on this input, afresh
        answers = [wire.decode(answer, functions=functools.partial(_answer_function, replay, i))
                   for i, answer in enumerate(record.get("answers", []))]
        seen: list[list[str] | None] = []

        def alone(run, *answers, index=index, seen=seen):
            chosen = core.one_input(index)
            try:
                with chosen:
                    return evaluate(run, *answers)
            finally:
                seen.append(chosen.described)

        with _ONE_AT_A_TIME:
            predict.forget_misses()
            result = core.evaluate_check(label, "check", alone, answers, JUDGE_TIMEOUT)
        if index == 0:
            described = seen[0] if seen else None
            if described is None:
                return [], None
            count = len(described)
        statuses.append(result.status)
        index += 1
    return statuses, described


def _undecorated(label: str):
    """The check of ``label`` as its chapter wrote it, without the decorator that reports."""
    check: Any = checks.load_all()[label]
    return check.__wrapped__


def judge_hidden(label: str, source: str, inputs: dict, record: dict) -> list[core.Result]:
    """The course's hidden-test cell ``source`` of ``label``, run here with the modules it
    found in the solved chapter and the learner's names as the record gives them."""
    replay = Replay(record, changes_fail=True)
    names = record.get("names", {}) if isinstance(record.get("names"), dict) else {}
    scope: dict[str, Any] = {"__builtins__": builtins, "__name__": f"hidden test of {label}"}
    for name, module in inputs.get("modules", {}).items():
        scope[name] = importlib.import_module(module)
    for name in inputs.get("values", []):
        scope[name] = wire.decode(names.get(name, {"$opaque": "not recorded"}))
    for name in dict.fromkeys(call["function"] for call in inputs.get("calls", [])):
        value = names.get(name, {"$opaque": "not recorded"})
        scope[name] = replay.function(f"name:{name}", name) if isinstance(value, dict) and "$function" in value \
            else _missing(name, value)
    results: list[core.Result] = []

    def hidden_test(test_label: str, *, timeout: float | None = None):
        def run_now(test):
            def evaluate(run):
                run(test, name="a hidden test")
                return "a hidden test passed"

            results.append(core.evaluate_check(test_label, "hidden", evaluate, (), JUDGE_TIMEOUT))

        return run_now

    scope["check"] = types.SimpleNamespace(hidden_test=hidden_test)
    with _ONE_AT_A_TIME:
        exec(compile(source, f"<hidden test of {label}>", "exec"), scope)  # noqa: S102 (the course's own code)
    return results


def _missing(name: str, value: Any) -> wire.Function:
    """What a hidden test calls where the notebook had no function ``name``."""
    what = value.get("$opaque") if isinstance(value, dict) else None
    why = f"NameError: name {name!r} is not defined" if what in ("not defined", "not recorded") \
        else f"TypeError: {name} is not a function"

    def answer(fn, args, kwargs):
        raise core.Replayed(name, raised=why)

    return wire.Function(name, replay=answer)
