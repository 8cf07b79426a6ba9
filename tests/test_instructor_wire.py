"""Tests for the wire between a learner's notebook and the grader (``attncourse.checks.wire``),
the verdict on recorded data (``attncourse.instructor.replay``) and where an answer is
graded (``attncourse.instructor.notebook.placement``), without kernels: records are made here by
the sandbox's own recorder, then judged, forged or cut as a learner might."""

from __future__ import annotations

import collections
import contextlib
import copy
import decimal
import itertools
import json
from types import SimpleNamespace

import nbformat
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attncourse import checks
from attncourse.checks import core, wire
from attncourse.instructor import replay as verdict
from attncourse.instructor.model import Exercise
from attncourse.instructor.notebook.placement import notebook_to_run
from attncourse.instructor.notebook.source import defined_names
from tests.ch8_ch9_learners import LEARNERS, normaliser_right

SOFTMAX = "ch1-stable-softmax"
HIDDEN_CH1 = '''@check.hidden_test("ch1-stable-softmax")
def _():
    extreme = stable_softmax(np.array([[1e308, -1e308, 0.0]]))
    assert np.allclose(extreme, [[1.0, 0.0, 0.0]]), "scores near the largest float64"
'''


def right(scores):
    scores = np.asarray(scores, dtype=float)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def naive(scores):
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True)


def in_place(scores):
    scores -= scores.max(axis=-1, keepdims=True)
    return right(scores)


def recorded(label, *answers, hidden_calls=()):
    """The record the grader's cell would send for ``answers`` (as JSON travels)."""
    record = {"schema": wire.SCHEMA, "exercise": label, "answers": [wire.encode(a) for a in answers],
              "missing": "", "names": {}, "calls": [], "references": []}
    recorder = wire._Recorder(record)
    functions = {id(a): f"answer:{i}" for i, a in enumerate(answers) if callable(a)}
    if functions:
        recorder.check(label, list(answers), functions)
    for name, fn, args in hidden_calls:
        record["names"][name] = wire.encode(fn)
        recorder.call(f"name:{name}", fn, args, {})
    recorder.look_for_references()  # as the grader's cell does once every call is made
    return json.loads(json.dumps(record))


@pytest.mark.parametrize("value", [
    None, True, 3, -2.5, "text", [1, [2, None]], (1, "a"), {"k": (1.0, 2)}, complex(1, -2),
    np.arange(6.0).reshape(2, 3), np.array([True, False]), np.float32(1.5), np.int64(7),
    np.zeros((0, 3)), SimpleNamespace(W_q=np.eye(2), n=3),
])
def test_values_cross_the_wire_unchanged(value):
    back = wire.decode(json.loads(json.dumps(wire.encode(value))))
    if isinstance(value, SimpleNamespace):
        assert np.array_equal(back.W_q, value.W_q) and back.n == 3
    elif isinstance(value, (np.ndarray, np.generic)):
        assert back.dtype == value.dtype and np.array_equal(back, value)
    else:
        assert back == value


def test_a_namedtuple_crosses_as_a_tuple_that_keeps_its_names():
    """Red team 12: a namedtuple crossed as a namespace, which no check can unpack (0 of 3
    for an online softmax returning Running(m, l), its own check said Passed)."""
    Running = collections.namedtuple("Running", ["m", "l"])
    back = wire.decode(json.loads(json.dumps(wire.encode(Running(np.float64(3.0), np.array([1.5]))))))
    m, total = back
    assert isinstance(back, tuple) and back.m == m == 3.0 and np.array_equal(back.l, [1.5]) and total is back.l
    forged = {"$namedtuple": "class", "fields": {"_x": 1, "def": 2, "3": 3}}  # names no namedtuple takes
    assert wire.decode(forged) == (1, 2, 3)


def test_a_namedtuple_of_many_fields_costs_the_grader_memory_in_proportion_to_its_record():
    """Red team 13: 700,000 field names in a 7 MB record made the grader build a namedtuple
    class of them, 2.1 GB in grade's own process, outside every sandbox limit."""
    import tracemalloc

    class Pretends(tuple):
        _fields = tuple(f"f{k}" for k in range(200_000))

    record = json.dumps(wire.encode(Pretends([0] * 200_000)))
    read = json.loads(record)
    tracemalloc.start()
    try:
        back = wire.decode(read)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(back) == 200_000 and back.f199999 == 0
    assert peak < 25 * len(record), (peak, len(record))


def test_a_whole_number_of_another_library_crosses_as_a_whole_number():
    """Red team 14: block sizes given as sympy.Integer(104) crossed as the float 104.0, and
    ch9-tune-blocks, which the learner's own check passed, failed them ("got a float")."""
    sympy = pytest.importorskip("sympy")
    back = wire.decode(json.loads(json.dumps(wire.encode((sympy.Integer(104), sympy.Integer(16))))))
    assert back == (104, 16) and all(type(size) is int for size in back)


class _WithArray:
    def __array__(self, dtype=None, copy=None):
        return np.array([0.25, 0.75])


@pytest.mark.parametrize("value", [
    collections.deque([0.25, 0.75]), memoryview(np.array([0.25, 0.75])), _WithArray(),
    np.array([decimal.Decimal("0.25"), decimal.Decimal("0.75")], dtype=object),
])
def test_what_the_checks_read_as_numbers_crosses_as_numbers(value):
    """Red team 12: right softmaxes returning a deque, a memoryview, an object with
    __array__ or an array of Decimals passed their own check and crossed as "not data"."""
    back = wire.decode(json.loads(json.dumps(wire.encode(value))))
    assert np.array_equal(back, core.expect_array(value, (2,), "it"))


def test_an_object_whose_array_reading_exits_is_not_data_and_stops_nothing():
    class Exits:
        def __array__(self, dtype=None, copy=None):
            raise SystemExit("bye")

    assert wire.encode(Exits()) == {"$opaque": "a Exits"}


def test_what_is_not_data_crosses_as_opaque_and_a_float_subclass_as_its_value():
    class Loops(float):
        def __float__(self):
            while True:
                pass

    assert wire.encode(Loops(0.25)) == 0.25 and type(wire.encode(Loops(0.25))) is float
    assert wire.encode(object()) == {"$opaque": "a object"}
    assert wire.encode(float("nan")) == {"$float": "nan"}
    assert isinstance(wire.decode({"$opaque": "a thing"}), checks.core.Opaque)


@pytest.mark.parametrize("data", [
    {"$array": {"dtype": "object", "shape": [1], "base64": "AA=="}},
    {"$array": {"dtype": "float64", "shape": [2], "base64": "AAAAAAAAAAA="}},  # 8 bytes for 16
    {"$array": {"dtype": "float64", "shape": [-1], "base64": ""}},
    {"$array": {"dtype": "float64", "shape": [2**40], "base64": ""}},
    {"$pickle": "gASV"}, {"a": 1}, float("nan"), {"$dict": [[1]]},
    {"$dict": [[{"$tuple": [1, [2]]}, 3]]},  # a key of a dict subclass's own items(): a tuple holding a list
    {"$tuple": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
])
def test_the_grader_refuses_data_outside_the_format(data):
    with pytest.raises(wire.WireError):
        wire.decode(data)


def test_a_digest_names_the_inputs_exactly():
    x = np.arange(3.0)
    assert wire.digest((x,)) == wire.digest((x.copy(),)) == wire.digest((np.array([0.0, 1.0, 2.0]),))
    assert wire.digest((x,)) != wire.digest((x.astype(np.float32),))
    assert wire.digest((x,), {"residual": 0.8}) != wire.digest((x,))


def test_the_verdict_is_the_courses_check_on_the_recorded_outputs():
    assert verdict.judge_check(SOFTMAX, recorded(SOFTMAX, right)).status == checks.PASSED
    wrong = verdict.judge_check(SOFTMAX, recorded(SOFTMAX, naive))
    assert wrong.status == checks.FAILED and "overflows to inf" in wrong.message
    changed = verdict.judge_check(SOFTMAX, recorded(SOFTMAX, in_place))
    assert changed.status == checks.FAILED and "changed its input" in changed.message


def test_forged_outputs_are_judged_like_any_other():
    """A learner who rewrites the record still has to give the right outputs, for inputs
    the grader makes itself: forging is answering."""
    record = recorded(SOFTMAX, right)
    for call in record["calls"]:
        call["outcome"] = {"returned": wire.encode(np.zeros(3))}
    assert verdict.judge_check(SOFTMAX, record).status == checks.FAILED


def test_a_call_missing_from_the_record_or_for_other_inputs_needs_review():
    cut = recorded(SOFTMAX, right)
    cut["calls"] = cut["calls"][:2]
    assert verdict.judge_check(SOFTMAX, cut).status == checks.NEEDS_REVIEW
    moved = recorded(SOFTMAX, right)
    moved["calls"][0]["args"] = wire.digest((np.zeros(2),))  # outputs claimed for inputs of the learner's choice
    result = verdict.judge_check(SOFTMAX, moved)
    assert result.status == checks.NEEDS_REVIEW and "did not record" in result.message


def test_what_the_function_did_is_replayed_raise_stub_and_endless():
    def raises(scores):
        return 1 / 0

    def stub(scores):
        raise NotImplementedError("write it")

    assert "raised ZeroDivisionError" in verdict.judge_check(SOFTMAX, recorded(SOFTMAX, raises)).message
    assert verdict.judge_check(SOFTMAX, recorded(SOFTMAX, stub)).status == checks.NOT_IMPLEMENTED
    endless = recorded(SOFTMAX, right)
    endless["calls"][0]["outcome"] = {"stopped": 2.0}
    assert "did not return within the time budget of 2 s" in verdict.judge_check(SOFTMAX, endless).message


def test_an_answer_the_check_cell_could_not_read_fails_with_its_error():
    record = recorded(SOFTMAX, right)
    record["missing"] = "NameError: name 'stable_softmax' is not defined"
    result = verdict.judge_check(SOFTMAX, record)
    assert result.status == checks.FAILED and result.message == (
        "the check cell raised NameError: name 'stable_softmax' is not defined")


def test_hidden_tests_run_here_with_their_own_modules_on_replayed_calls():
    args = (np.array([[1e308, -1e308, 0.0]]),)
    inputs = {"modules": {"np": "numpy"}, "values": [],
              "calls": [{"function": "stable_softmax", "args": wire.encode(args), "kwargs": wire.encode({})}]}

    def float64_only(scores):
        assert scores.dtype == np.float64
        return naive(scores)

    for fn, status in ((right, checks.PASSED), (float64_only, checks.FAILED)):
        record = recorded(SOFTMAX, fn, hidden_calls=[("stable_softmax", fn, args)])
        [result] = verdict.judge_hidden(SOFTMAX, HIDDEN_CH1, inputs, record)
        assert result.status == status and result.kind == "hidden"
    nothing = recorded(SOFTMAX, right)  # the notebook recorded no hidden call: never a pass
    [result] = verdict.judge_hidden(SOFTMAX, HIDDEN_CH1, inputs, nothing)
    assert result.status == checks.FAILED and "is not defined" in result.message


def test_a_hidden_test_s_call_that_writes_into_its_arguments_fails_it():
    """Red team 14: an answer that zeroed a hidden test's arrays passed it, since the test
    computes what it expects from them after the call (ch2, ch3, ch4, ch6), through grade
    and Gradescope alike."""
    source = """@check.hidden_test("ch1-stable-softmax")
def _():
    scores = np.array([[2.0, 1.0, 0.0]])
    weights = stable_softmax(scores)
    assert np.allclose(weights, np.exp(scores) / np.exp(scores).sum()), "against the scores after the call"
"""
    args = (np.array([[2.0, 1.0, 0.0]]),)
    inputs = {"modules": {"np": "numpy"}, "values": [],
              "calls": [{"function": "stable_softmax", "args": wire.encode(args), "kwargs": wire.encode({})}]}

    def zeroes_them(scores):
        scores[...] = 0.0
        return np.full(scores.shape, 1 / scores.shape[-1])

    for fn, status in ((right, checks.PASSED), (zeroes_them, checks.FAILED)):
        record = recorded(SOFTMAX, fn, hidden_calls=[("stable_softmax", fn, (args[0].copy(),))])
        [result] = verdict.judge_hidden(SOFTMAX, source, inputs, record)
        assert result.status == status, result
    assert "it wrote into its arguments" in result.message


def test_the_names_a_hidden_test_reads_are_what_it_does_not_bind():
    source = "import numpy as np\nfrom attncourse.attention import softmax\n\n" + HIDDEN_CH1.replace(
        "stable_softmax(", "stable_softmax(three_heads.W_q + ")
    assert wire.free_names(source) == ["check", "stable_softmax", "three_heads"]


def test_the_names_a_cell_defines():
    assert defined_names("def f(x):\n    y = 1\n    return y\nA, (b, c) = 1, (2, 3)\nimport numpy as np\n%time z = 1") \
        == {"f", "A", "b", "c", "np"}
    assert "prediction" in defined_names("prediction = 0.3 +")  # unparsable: read as best it can


def _notebook(*cells):
    nb = nbformat.v4.new_notebook()
    for source, tags in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = tags
        nb.cells.append(cell)
    return nb


SOFTMAX_EXERCISE = Exercise(SOFTMAX, ("stable_softmax",), ("stable_softmax",))
FIVE = Exercise("ch6-predict-heads-for-5x5", ("prediction",), ("prediction",))
DILATED = Exercise("ch6-predict-heads-for-dilated-3x3", ("prediction",), ("prediction",))


def _recorded_after(nb, exercises):
    run, placed = notebook_to_run(nb, exercises)
    return {p.label: (run.cells[p.index - 1].source, p.note) for p in placed}


def test_an_answer_below_the_stub_or_untagged_is_the_one_graded():
    stub = ("def stable_softmax(s):\n    raise NotImplementedError", ["stub", f"exercise:{SOFTMAX}"])
    check = ("check.stable_softmax(stable_softmax)", ["check", f"exercise:{SOFTMAX}"])
    below = _notebook(stub, ("def stable_softmax(s):\n    return s", []), check, ("x = 1", []))
    assert _recorded_after(below, [SOFTMAX_EXERCISE])[SOFTMAX] == ("def stable_softmax(s):\n    return s", "")
    untagged = _notebook(("def stable_softmax(s):\n    return s", []), ("check.stable_softmax(stable_softmax)", []),
                         ("def stable_softmax(s):\n    return 0  # playing after the check", []))
    assert _recorded_after(untagged, [SOFTMAX_EXERCISE])[SOFTMAX][0] == "def stable_softmax(s):\n    return s"


def test_a_name_two_exercises_share_is_read_in_each_ones_part_or_flagged():
    tagged = _notebook(("prediction = 25", [f"exercise:{FIVE.label}"]), ("prediction = 9", [f"exercise:{DILATED.label}"]))
    placed = _recorded_after(tagged, [FIVE, DILATED])
    assert placed[FIVE.label] == ("prediction = 25", "") and placed[DILATED.label] == ("prediction = 9", "")
    stripped = copy.deepcopy(tagged)
    for cell in stripped.cells:
        cell.metadata["tags"] = []
    assert all("also answers" in note for _, note in _recorded_after(stripped, [FIVE, DILATED]).values())


def test_an_exercise_no_cell_defines_is_recorded_at_the_end_and_flagged():
    _, note = _recorded_after(_notebook(("x = 1", [])), [SOFTMAX_EXERCISE])[SOFTMAX]
    assert note == "no cell of the notebook defines stable_softmax: graded at its end"


@pytest.fixture
def reaches_through_lambdas_and_streams():
    """A check written the way chapter 8's and 9's are: it reaches the learner's function
    through a lambda, with keywords, in a loop, and on a generator read once."""
    label = "test-reaches-through"

    @checks.core.exercise(label)
    def reaches_through(run, candidate):
        for shift in (1.0, 2.0):
            x = np.arange(3.0)
            if not np.allclose(run(lambda x=x, shift=shift: candidate(x, shift=shift)), x + shift):
                raise checks.core.Failed(f"wrong for shift {shift}")
        total = run(candidate, (np.full(2, float(k)) for k in range(3)))  # a stream of 3 blocks
        if not np.allclose(total, 3.0):
            raise checks.core.Failed(f"the stream summed to {total}")
        return "right"

    yield label
    del checks.core.CHECKS[label], checks.core.POINTS[label]


def _shifts_or_sums(x, shift=0.0):
    if isinstance(x, np.ndarray):
        return x + shift
    return sum(float(block.sum()) for block in x) / 2


def test_every_call_a_check_makes_is_recorded_through_lambdas_keywords_and_streams(reaches_through_lambdas_and_streams):
    label = reaches_through_lambdas_and_streams
    record = recorded(label, _shifts_or_sums)
    assert [call["function"] for call in record["calls"]] == ["answer:0"] * 3
    assert wire.digest((np.arange(3.0),), {"shift": 2.0}) in [call["args"] for call in record["calls"]]
    result = verdict.judge_check(label, record)
    assert result.status == checks.PASSED, result.message

    def wrong(x, shift=0.0):
        return x - shift if isinstance(x, np.ndarray) else 0.0

    result = verdict.judge_check(label, recorded(label, wrong))
    assert result.status == checks.FAILED and result.message == "wrong for shift 1.0"


def test_a_stream_digests_as_a_stream_whatever_its_type_and_crosses_as_its_items():
    assert wire.digest(((b for b in [1]),)) == wire.digest((iter([2, 3]),)) != wire.digest(([1],))
    calls: list = []
    fn = wire._recording("total", lambda blocks: sum(float(b.sum()) for b in blocks), calls)
    buffer = np.zeros(2)

    def stream():  # each block overwrites the last, as chapter 9's check delivers them
        for k in range(3):
            buffer[...] = k
            yield buffer

    assert fn(stream()) == 6.0  # the solved function still reads the stream once
    [sent] = json.loads(json.dumps(calls))
    [blocks] = wire.decode(sent["args"])
    assert [b.tolist() for b in blocks] == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]


@pytest.mark.parametrize("label", list(LEARNERS))
def test_chapter_8_and_9_checks_are_judged_on_every_call_they_make(label):
    """Chapter 8's check calls rope through a lambda with keywords, chapter 9's passes
    online_normaliser a generator: a right answer passes, a wrong one fails saying why."""
    _, right, wrong, message = LEARNERS[label]
    result = verdict.judge_check(label, recorded(label, right))
    assert result.status == checks.PASSED, result.message
    result = verdict.judge_check(label, recorded(label, wrong))
    assert result.status == checks.FAILED and message in result.message


def test_the_replay_reads_the_checks_stream_as_far_as_the_function_did():
    """Chapter 9's check watches its stream: a learner who keeps the blocks and reads them
    at the end finds them all equal to the last, and the grader's replay must see that too."""
    def keeps_the_blocks(blocks):
        return normaliser_right(iter([np.concatenate(list(blocks), axis=-1)]))

    record = recorded("ch9-online-softmax", keeps_the_blocks)
    assert all(call["drawn"] == [4] for call in record["calls"][:1])  # 3 blocks, then the end
    result = verdict.judge_check("ch9-online-softmax", record)
    assert result.status == checks.FAILED and "If you kept the blocks" in result.message


def _zeroes_each_block_after_reading_it(blocks):
    """A right running maximum and sum that leave every block it read zeroed."""
    def read_then_zero():
        for block in blocks:
            yield np.array(block)
            block[...] = 0.0
    return normaliser_right(read_then_zero())


def test_a_function_that_writes_into_the_streams_blocks_fails_in_the_grader_as_in_its_notebook(capsys):
    """Red team 14: chapter 9's check fails an online softmax that writes into the blocks it
    is streamed ("changed a block"), and the grader passed it: the record kept how far the
    function read the stream, not what it wrote into the items. Now it keeps both."""
    checks.online_softmax(_zeroes_each_block_after_reading_it)  # the learner's own check
    assert "changed a block" in capsys.readouterr().out
    record = recorded("ch9-online-softmax", _zeroes_each_block_after_reading_it)
    assert record["calls"][0]["written"] == [[[k, wire.encode(np.zeros(1))] for k in range(3)]]
    result = verdict.judge_check("ch9-online-softmax", record)
    assert result.status == checks.FAILED and "changed a block" in result.message, result.message
    honest = recorded("ch9-online-softmax", normaliser_right)
    assert all("written" not in call for call in honest["calls"])
    assert verdict.judge_check("ch9-online-softmax", honest).status == checks.PASSED


def test_a_hidden_test_whose_streamed_blocks_the_answer_zeroed_fails_it():
    """A hidden test computes what it expects from its array after the call: zeroing the
    blocks it streams and answering for zeros must fail it, as zeroing an argument does."""
    source = """@check.hidden_test("ch9-online-softmax")
def _():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    m, l = online_normaliser(x[..., a:a + 2] for a in (0, 2))
    assert np.allclose(np.exp(x - m[..., None]) / l[..., None], np.exp(x) / np.exp(x).sum(axis=-1)), "the weights"
"""
    inputs = {"modules": {"np": "numpy"}, "values": [], "calls": [{"function": "online_normaliser"}]}

    def zeroes_them(blocks):
        for block in blocks:
            block[...] = 0.0
        return np.zeros(1), np.full(1, 4.0)

    for fn, status in ((normaliser_right, checks.PASSED), (zeroes_them, checks.FAILED)):
        x = np.array([[1.0, 2.0, 3.0, 4.0]])
        record = recorded("ch9-online-softmax", normaliser_right,
                          hidden_calls=[("online_normaliser", fn, ((x[..., a:a + 2] for a in (0, 2)),))])
        [result] = verdict.judge_hidden("ch9-online-softmax", source, inputs, record)
        assert result.status == status, result
    assert "it wrote into its arguments" in result.message


@pytest.mark.parametrize("written", ["no list", [3], [[["0", 1.0]]], [[[0]]]])
def test_a_record_of_written_stream_items_outside_the_format_fails_the_call(written):
    record = recorded("ch9-online-softmax", normaliser_right)
    record["calls"][0]["written"] = written
    result = verdict.judge_check("ch9-online-softmax", record)
    assert result.status == checks.FAILED and "cannot read" in result.message, result.message


def test_a_hidden_test_calls_from_the_notebook_only_the_functions_its_check_grades():
    """A function a hidden test reads from the notebook is called in the sandbox as the
    learner's: a helper read there (chapter 9's softmax) would be the learner's to forge,
    and calling the course's own through it flags an honest learner. Helpers are imported
    by the hidden test itself."""
    import re
    from pathlib import Path

    from attncourse.instructor.course.tags import exercise_of, role_of

    for path in sorted((Path(__file__).resolve().parent.parent / "chapters").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in (c for c in nb.cells if role_of(c) == "hidden-test"):
            checked = {name for c in nb.cells if exercise_of(c) == exercise_of(cell) and role_of(c) == "check"
                       for name in re.findall(r"\w+", c.source)}
            called = {name for name in wire.free_names(cell.source) if re.search(rf"\b{name}\s*\(", cell.source)}
            assert called - {"check"} <= checked, (path.name, called - checked)


# --- a third hostile class (redA), without kernels -----------------------------------------


def test_partial_credit_replays_each_input_its_own_calls_streams_included():
    """Calls on streams all digest alike: each input is judged on the calls made on it,
    not on the first input's (which gave a learner wrong on the first input alone 0 of 6)."""
    def all_but_the_first(blocks):  # one pass (holding every block is wrong on the long input)
        first = np.array(next(blocks))
        m, total = normaliser_right(itertools.chain([first], blocks))
        return (m, total + 1.0) if first.shape == (1,) and first[0] == 1.0 else (m, total)

    record = recorded("ch9-online-softmax", all_but_the_first)
    assert [call["input"] for call in record["calls"]] == list(range(len(record["calls"])))
    statuses, described = verdict.judge_inputs("ch9-online-softmax", record)
    assert statuses == [checks.FAILED] + [checks.PASSED] * (len(described) - 1)


def test_the_courses_code_run_again_under_another_name_is_flagged():
    import inspect

    from attncourse import attention

    scope = {**vars(attention), "__name__": "mine"}
    source = inspect.getsource(attention.softmax).replace("def softmax", "def helper", 1)
    exec("from __future__ import annotations\n" + source, scope)  # noqa: S102 (a learner's copy)
    record = recorded(SOFTMAX, lambda scores: scope["helper"](scores))
    assert record["references"] == ["attncourse.attention.softmax (a copy of its code)"]
    assert recorded(SOFTMAX, right)["references"] == []  # an answer of one's own is not a copy


@pytest.mark.parametrize("forged", [
    {"$iterator": [1.0, 2.0]},
    {"$array": {"dtype": "float64", "shape": [0, 2**40], "base64": ""}},
    {"$object": "Weights", "fields": {"shape": [3], "sum": {"$function": "sum"}}},
    {"$tuple": [{"$function": "stable_softmax"}, 1.0]},
])
def test_outputs_forged_of_odd_values_fail_in_the_grader(forged):
    """Tags a learner's return value cannot take (a stream, an empty array of a huge shape,
    a namespace with functions) forged into a record: the check fails them, at once."""
    record = recorded(SOFTMAX, right)
    for call in record["calls"]:
        call["outcome"] = {"returned": forged}
    result = verdict.judge_check(SOFTMAX, record)
    assert result.status == checks.FAILED and result.message


# --- red team D: honest answers in number types the wire did not carry ----------------


def extended(scores):
    """The right softmax, computed (and returned) in numpy's extended precision."""
    scores = np.asarray(scores, dtype=np.longdouble)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_extended_precision_and_fractions_cross_as_numbers_and_are_judged_as_the_learners_check_does(capsys):
    """A softmax computed in np.longdouble (float128) crossed as "not data" and failed; a
    prediction written as a Fraction, which the learner's own check passes, crossed as an
    opaque object and failed. Both are numbers: they cross at float64."""
    from fractions import Fraction

    from attncourse.checks import load_chapter_of
    from attncourse.checks.predict import PREDICTIONS

    assert wire.decode(wire.encode(np.array([0.5], dtype=np.longdouble))).dtype == np.float64
    assert wire.decode(wire.encode(np.clongdouble(1j))).dtype == np.complex128
    assert verdict.judge_check(SOFTMAX, recorded(SOFTMAX, extended)).status == checks.PASSED
    doubling = "ch1-predict-doubling"
    load_chapter_of(doubling)
    typed = Fraction(PREDICTIONS[doubling].answer).limit_denominator()
    checks.predict_doubling(typed)  # the learner's own check, in the notebook
    assert "Passed." in capsys.readouterr().out
    assert verdict.judge_check(doubling, recorded(doubling, typed)).status == checks.PASSED


def _right_numbers() -> dict[str, tuple]:
    """A right answer of each exercise that asks for numbers alone."""
    from attncourse.checks import ch6, ch8, ch9
    from attncourse.checks.predict import PREDICTIONS
    from attncourse.flash import fast_memory_values
    from attncourse.positions import rope

    block_q = max(b for b in range(1, 4097) if fast_memory_values(b, ch9.TUNE_MIN_BLOCK_K, ch9.TUNE_D) <= ch9.TUNE_BUDGET)
    return {"ch1-predict-doubling": (PREDICTIONS["ch1-predict-doubling"].answer,),
            "ch6-tune-alpha": (round(ch6.smallest_alpha() + 0.5, 2),),
            "ch8-tune-previous-token": (rope(ch8.TUNE_KEY[None], [-1.0], base=ch8.TUNE_BASE)[0], 10.0),
            "ch9-tune-blocks": (block_q, ch9.TUNE_MIN_BLOCK_K)}


NUMBER_FORMS = {  # the forms of one real number a learner may hold
    "Decimal": lambda v: decimal.Decimal(repr(v)), "Fraction": lambda v: __import__("fractions").Fraction(v),
    "sympy": lambda v: __import__("sympy").Float(v) if isinstance(v, float) else __import__("sympy").Integer(v),
    "mpmath": lambda v: __import__("mpmath").mpf(v), "float32": np.float32,
    "int64": lambda v: np.int64(v) if float(v).is_integer() else np.float64(v),
    "0-d array": np.array, "bool": bool, "complex": complex,
}
ODD_FORMS = {  # what the wire reads as numbers and a check may not (red team 15): the same verdict all the same
    "0-d array of objects": lambda v: np.array(__import__("fractions").Fraction(v), dtype=object),
    "masked": lambda v: np.ma.masked_array(v, mask=True), "timedelta64": lambda v: np.timedelta64(int(v)),
    "big-endian": lambda v: np.array(v, dtype=">f8"), "Ellipsis": lambda v: ...,
}


@pytest.mark.parametrize("form", list(NUMBER_FORMS))
@pytest.mark.parametrize("label", ["ch1-predict-doubling", "ch6-tune-alpha", "ch8-tune-previous-token", "ch9-tune-blocks"])
def test_a_number_in_any_form_gets_the_same_verdict_from_the_grader_as_from_its_notebook(label, form):
    """Red team 14: ch6's and ch8's tune checks refused alpha = Decimal(...) in the notebook,
    and the grader, which receives every real number as a float, passed it. Each check that
    asks for numbers now takes every form of one real number (core.is_real_number), and
    the notebook and the grader agree on each form, right or refused."""
    checks.load_chapter_of(label)
    answers = tuple(NUMBER_FORMS[form](a) if isinstance(a, (int, float)) else a for a in _right_numbers()[label])
    in_the_notebook = core.evaluate_check(label, "check", verdict._undecorated(label), answers, None)
    in_the_grader = verdict.judge_check(label, recorded(label, *answers))
    assert in_the_grader.status == in_the_notebook.status, (in_the_notebook.message, in_the_grader.message)
    real = form not in ("bool", "complex")
    whole = label == "ch9-tune-blocks" and form in ("sympy", "int64")
    assert (in_the_notebook.status == checks.PASSED) == (real and (label != "ch9-tune-blocks" or whole)), \
        in_the_notebook.message


@pytest.mark.parametrize("form", list(ODD_FORMS))
@pytest.mark.parametrize("label", ["ch1-predict-doubling", "ch6-tune-alpha", "ch8-tune-previous-token", "ch9-tune-blocks"])
def test_a_number_in_a_form_the_checks_might_refuse_gets_the_grader_s_verdict_in_its_notebook(label, form):
    """Red team 15: np.array(Fraction(5, 2), dtype=object), a masked 2.5 and np.array(Decimal(6))
    were refused in the notebook and passed by the grader; np.timedelta64 blocks the reverse.
    A check judges its answers as the grader receives them (wire.as_sent)."""
    checks.load_chapter_of(label)
    answers = tuple(ODD_FORMS[form](a) if isinstance(a, (int, float)) else a for a in _right_numbers()[label])
    in_the_notebook = core.evaluate_check(label, "check", verdict._undecorated(label), answers, None)
    in_the_grader = verdict.judge_check(label, recorded(label, *answers))
    assert in_the_grader.status == in_the_notebook.status, (in_the_notebook.message, in_the_grader.message)
    if form == "Ellipsis" and label in ("ch1-predict-doubling", "ch6-tune-alpha"):  # a stub's "not yet", as None is
        assert in_the_notebook.status == checks.NOT_IMPLEMENTED, in_the_notebook.message


def test_an_explorer_given_as_the_answer_crosses_as_its_inputs():
    """ch3's check takes the explorer itself; it crossed as "not data" and failed in the grader."""
    from attncourse.examples import tennis_sentence
    from attncourse.explorers.attention_explorer import AttentionExplorer

    sentence, label = tennis_sentence(), "ch3-it-attends-to-ball"
    W_q = np.eye(5)
    W_q[2, 0], W_q[0, 0], W_q[3, 3] = 8.0, 0.0, 2.0  # the pronoun's query asks for things; a thing's does not
    explorer = AttentionExplorer(sentence.tokens, sentence.X, W_q=W_q, W_k=np.eye(5), scale=1.0, editable=("W_q", "W_k"))
    sent = wire.encode(explorer)
    assert sent["$object"] == "AttentionExplorer" and not {"comm", "layout", "_esm"} & set(sent["fields"])
    checks.load_chapter_of(label)
    in_the_notebook = core.evaluate_check(label, "check", verdict._undecorated(label), (explorer,), None)
    in_the_grader = verdict.judge_check(label, recorded(label, explorer))
    assert in_the_notebook.status == in_the_grader.status == checks.PASSED, in_the_grader.message


def _normaliser_under_the_counter(blocks):
    """Red team 15's forgery: reads the check's stream beneath the grader's counter (its
    ``stream`` attribute then), folding each block in after taking its maximum away in place."""
    m = total = None
    for block in getattr(blocks, "stream", blocks):
        block_max = block.max(axis=-1)
        block -= np.where(np.isneginf(block_max), 0.0, block_max)[..., None]
        block_sum = np.exp(block).sum(axis=-1)
        if m is None:
            m, total = block_max, block_sum
            continue
        new_m = np.maximum(m, block_max)
        shift = np.where(np.isneginf(new_m), 0.0, new_m)
        total = (total * np.exp(np.where(np.isneginf(m), -np.inf, m - shift))
                 + block_sum * np.exp(np.where(np.isneginf(block_max), -np.inf, block_max - shift)))
        m = new_m
    return m, total


def test_the_stream_a_function_reads_has_no_way_past_the_recording_but_its_frame():
    """The function gets a generator: no attribute leads to the check's stream or to what
    the recording notes (the learner could reset it), and the frame that does is flagged."""
    from attncourse.instructor.judge import TOUCHES_RECORDING

    record = recorded("ch9-online-softmax", _normaliser_under_the_counter)
    result = verdict.judge_check("ch9-online-softmax", record)
    assert result.status == checks.FAILED and "changed a block" in result.message, result.message
    seen = []
    recorded("ch9-online-softmax", lambda blocks: seen.append(blocks) or normaliser_right(blocks))
    assert all(type(blocks).__name__ == "generator" and not hasattr(blocks, "__dict__") for blocks in seen)
    for reach in ("blocks.gi_frame.f_locals", "gc.get_referents(blocks)", "blocks.__closure__[0].cell_contents"):
        assert TOUCHES_RECORDING.search(reach), reach


def _closes_the_stream(blocks):
    m, total = normaliser_right(blocks)
    blocks.close()  # done with the stream: let it go
    return m, total


def _returns_a_dicts_values(blocks):
    m, total = normaliser_right(blocks)
    return {"m": m, "l": total}.values()


def _returns_an_iterator(blocks):
    return iter(normaliser_right(blocks))


@pytest.mark.parametrize("answer", [_closes_the_stream, _returns_a_dicts_values, _returns_an_iterator])
def test_honest_online_softmaxes_in_unusual_styles_pass_in_the_grader_as_in_their_notebook(answer):
    """Red team 15: one that closed its stream met the grader's counter, which had no close;
    one that returned a dict's values, or an iterator of the pair, crossed as "not data"."""
    label = "ch9-online-softmax"
    in_the_notebook = core.evaluate_check(label, "check", verdict._undecorated(label), (answer,), None)
    in_the_grader = verdict.judge_check(label, recorded(label, answer))
    assert in_the_notebook.status == in_the_grader.status == checks.PASSED, in_the_grader.message


class _Stats:
    def __init__(self, m, total):
        self.m, self.total = m, total

    def __iter__(self):
        return iter((self.m, self.total))


def _returns_an_unpackable_object(blocks):
    return _Stats(*normaliser_right(blocks))


def _returns_tensors_that_need_gradients(blocks):
    import torch

    return tuple(torch.tensor(np.asarray(v), requires_grad=True) for v in normaliser_right(blocks))


@pytest.mark.parametrize("answer", [_returns_an_unpackable_object, _returns_tensors_that_need_gradients])
def test_what_a_function_returns_gets_the_grader_s_verdict_in_its_notebook(answer):
    """Red team 16: an object that unpacks as (m, l) passed its own check and failed in the
    grader (not data); torch tensors needing gradients the reverse. A check judges what a
    function returns as the replay in the grader returns it (wire.returned_as_sent)."""
    import torch  # noqa: F401 (imported before the check measures memory, as a learner's earlier cell would)

    label = "ch9-online-softmax"
    in_the_notebook = core.evaluate_check(label, "check", verdict._undecorated(label), (answer,), None)
    in_the_grader = verdict.judge_check(label, recorded(label, answer))
    assert in_the_notebook.status == in_the_grader.status, (in_the_notebook.message, in_the_grader.message)


def test_a_number_with_a_call_is_judged_as_the_number_the_grader_receives():
    """Red team 16: a float subclass with __call__ (and a lying __float__) skipped the notebook's
    reading as data, and the grader, which receives its float value, passed it."""
    class CallFloat(float):
        def __call__(self):
            return self

        def __float__(self):
            return 1.0

    label = "ch6-tune-alpha"
    checks.load_chapter_of(label)
    alpha = CallFloat(_right_numbers()[label][0])
    in_the_notebook = core.evaluate_check(label, "check", verdict._undecorated(label), (alpha,), None)
    in_the_grader = verdict.judge_check(label, recorded(label, alpha))
    assert in_the_notebook.status == in_the_grader.status == checks.PASSED, in_the_notebook.message


def test_what_is_not_data_keeps_its_description_when_read_again():
    """The grader's replay returns what was not data as Opaque, which its check reads as sent
    once more: it must still say what it was ("returned a Liar ..."), not "a Opaque"."""
    class Liar:
        pass

    once = wire.as_sent(Liar())
    assert isinstance(once, core.Opaque) and "Liar" in once.description
    assert wire.as_sent(once).description == once.description
    named = wire.as_sent(collections.namedtuple("Running", "m l")(1.0, 2.0))
    assert repr(wire.as_sent(named)) == repr(named) == "Running(m=1.0, l=2.0)" and wire.as_sent(named).l == 2.0


def test_reaching_the_recording_through_the_garbage_collector_is_flagged():
    """Red team 16 found the recorder's state with gc.get_objects() and reset what it noted."""
    from attncourse.instructor.judge import TOUCHES_RECORDING

    for reach in ("gc.get_objects(0)", "import gc", "from gc import get_objects", "gc . get_referents(x)"):
        assert TOUCHES_RECORDING.search(reach), reach
    assert not TOUCHES_RECORDING.search("logic = magic + gcd")


def test_an_endless_iterator_returned_is_not_data_and_an_iterator_given_as_an_answer_is_not_read():
    assert wire.read_out(iter([1, 2])) == [1, 2]
    assert isinstance(wire.read_out(itertools.count()), core.Opaque)
    answer = iter([1.0, 2.0])  # the record sends an answer as it is: the notebook's check reads it so
    assert isinstance(wire.as_sent(answer), core.Opaque) and next(answer) == 1.0


# --- a fifth red team, without kernels -------------------------------------------------------

HIDDEN_CALL = ("stable_softmax", np.array([[1.0, 2.0, 3.0]]))


def test_the_watch_for_the_courses_functions_starts_once_every_graded_call_is_made():
    """A call the watch leaves running (a thread, a wait) can neither slow nor stop a graded one."""
    import sys

    watched = []

    def noting(scores):
        watched.append(sys.getprofile() is not None)
        return right(scores)

    recorded(SOFTMAX, noting, hidden_calls=[(HIDDEN_CALL[0], noting, (HIDDEN_CALL[1],))])
    graded = watched.index(True)
    assert graded > 0 and all(watched[graded:]) and not any(watched[:graded])


def test_an_answer_that_remembers_its_answers_or_sleeps_is_still_seen_using_the_course_s_softmax():
    import time

    from attncourse.attention import softmax

    remembered = {}

    def memo(scores):
        key = (np.shape(scores), np.asarray(scores).tobytes())
        if key not in remembered:
            remembered[key] = softmax(np.asarray(scores, dtype=float))
        return remembered[key]

    def sleepy(scores):
        time.sleep(0.2)  # no processor time: a watch budgeted in processor time alone stops in it
        return softmax(np.asarray(scores, dtype=float))

    for answer in (memo, sleepy):
        record = recorded(SOFTMAX, answer)
        assert record["references"] == ["attncourse.attention.softmax"] and "watch" not in record, answer


def test_a_watch_that_cannot_finish_says_so():
    def stuck_when_watched(scores):
        import sys
        import time

        while sys.getprofile() is not None:  # only while watched (a learner who detects it is flagged)
            time.sleep(0.05)
        return right(scores)

    assert recorded(SOFTMAX, stuck_when_watched)["watch"] == "stopped short"


def test_a_display_while_recording_costs_every_representation_it_sends(monkeypatch):
    """Red team 10: a figure counted 1,000 characters, so nine calls that plot passed the
    output limit and the notebook was stopped; the figure's PNG is counted now."""
    sent = []
    shell = SimpleNamespace(display_pub=SimpleNamespace(publish=lambda data=None, **kwargs: sent.append(data)))
    monkeypatch.setattr(wire, "_shell", lambda: shell)
    figure = {"text/plain": "<Figure size 640x480 with 1 Axes>", "image/png": "i" * 1_300_000}
    with wire._capped_output(100_000):
        for _ in range(9):
            shell.display_pub.publish(figure)
    assert len(sent) == 1  # the first passes on, its size spends the share, the rest are dropped


# --- red team 11: whatever a learner's value makes the reading raise is a malformed record -----


class _HugeReal(complex):
    real = property(lambda self: 10**400)  # red team 11's prediction: encoded as a JSON int no float holds


class _HugeImag(complex):
    imag = property(lambda self: -(10**400))


class _TextReal(complex):
    real = property(lambda self: "0.5")


class _SelfReal(complex):
    real = property(lambda self: self)  # its part is itself, without end


class _LyingFloat(float):
    def __float__(self):
        return 10**400

    def __repr__(self):
        return "1e400"


class _LyingInt(int):
    def __index__(self):
        return 10**400

    def __int__(self):
        return 10**400

    def __float__(self):
        raise OverflowError("no")


class _LyingStr(str):
    def __len__(self):
        return -1

    def __str__(self):
        return 10**400  # type: ignore[return-value]


class _LyingBytes(bytes):
    def __len__(self):
        return 10**400  # type: ignore[return-value]


class _LyingList(list):
    def __len__(self):
        return 10**18

    def __iter__(self):
        return iter([10**400, _HugeReal(1), float("inf")])


class _LyingDict(dict):
    def items(self):
        return [((1, [2]), 3), (10**400, _HugeReal(1))]


class _ArrayOfHugeInts:
    def __array__(self, dtype=None, copy=None):
        return np.array([10**400, 1], dtype=object)

    def __len__(self):
        return 10**400  # type: ignore[return-value]


class _ArrayThatRaises:
    def __array__(self, dtype=None, copy=None):
        raise OverflowError("no array")


HOSTILE = [
    _HugeReal(0.4053), _HugeImag(1), _TextReal(1), _SelfReal(1), _LyingFloat(0.25), _LyingInt(3), _LyingStr("a"),
    _LyingBytes(b"ab"), _LyingList([1]), _LyingDict({1: 2}), _ArrayOfHugeInts(), _ArrayThatRaises(),
    10**400, -(10**4000), [10**400, _HugeReal(1)], (_HugeImag(2), {"k": _HugeReal(3)}), {10**400: 1},
    np.array([10**400], dtype=object), np.array([_HugeReal(1)], dtype=object), SimpleNamespace(w=_HugeReal(1)),
    float("nan"), complex(float("inf"), float("nan")), np.complex128(complex(float("inf"), 1)),
]


@pytest.mark.parametrize("value", HOSTILE, ids=lambda value: type(value).__name__)
def test_a_learners_value_crosses_as_data_or_is_refused_as_malformed_never_breaks_the_reading(value):
    """Red team 11: a complex whose ``real`` is 10**400 crossed as a JSON int; the grader's
    reading accepted it and then raised OverflowError, the grader's own failure on every
    regrade. Whatever a learner's value (a subclass lying in its methods, a huge int in any
    place) makes of the record, the reading gives a value or refuses it as malformed."""
    data = json.loads(json.dumps(wire.encode(value)))
    with contextlib.suppress(wire.WireError):  # refused as malformed: the learner's; any other error fails here
        wire.decode(data)


def test_a_complex_no_float_holds_is_a_malformed_record_that_names_its_parts():
    with pytest.raises(wire.WireError, match=r"complex number whose parts are not numbers a float holds: '\[1000"):
        wire.decode({"$complex": [10**400, 2]})  # a forged record: the learner's own encoder never writes it
    # red team 18: a whole number past every float crosses as the infinity it rounds to
    assert wire.decode(json.loads(json.dumps(wire.encode(_HugeReal(0.4053))))) == complex(float("inf"), 0)
    assert wire.decode({"$complex": [{"$float": "inf"}, 2]}) == complex(float("inf"), 2)  # a float's own infinity
    assert wire.decode({"$complex": [2**1023, -(2**1023)]}) == complex(2.0**1023, -(2.0**1023))  # a float holds these


@pytest.mark.parametrize("shape", [[0, 10**400], [0, 2**63], [0, 2**31, 2**31]])
def test_an_empty_array_of_a_shape_numpy_cannot_hold_is_a_malformed_record(shape):
    with pytest.raises(wire.WireError, match="a shape numpy cannot hold"):
        wire.decode({"$array": {"dtype": "float64", "shape": shape, "base64": ""}})


_JSON_NUMBERS = (st.integers(min_value=-(10**4000), max_value=10**4000) | st.sampled_from([2**1024, -(2**1024), 2**63])
                 | st.floats(allow_nan=True, allow_infinity=True))
_JSON_LEAVES = st.none() | st.booleans() | _JSON_NUMBERS | st.text(max_size=8) | st.sampled_from(
    ["nan", "inf", "-inf", "$float", "float64", "AAAAAAAAAAA=", ""])


def _tagged(children):
    """What a record may hold, forged: every tag with a body of any shape, the right ones often."""
    return st.one_of(
        children, st.lists(children, max_size=4),
        st.builds(lambda tag, body: {tag: body},
                  st.sampled_from(["$float", "$complex", "$tuple", "$dict", "$array", "$object", "$function",
                                   "$iterator", "$opaque", "$other"]), children),
        st.builds(lambda a, b: {"$complex": [a, b]}, children, children),
        st.builds(lambda pairs: {"$dict": pairs}, st.lists(st.lists(children, min_size=2, max_size=2), max_size=3)),
        st.builds(lambda dtype, shape, text, scalar: {"$array": {"dtype": dtype, "shape": shape, "base64": text,
                                                                 "scalar": scalar}},
                  st.sampled_from([*wire.DTYPES, "object"]) | children, st.lists(_JSON_NUMBERS, max_size=4) | children,
                  st.sampled_from(["", "AAAAAAAAAAA=", "AA==", "!!"]) | children, children),
        st.builds(lambda name, fields: {"$object": name, "fields": fields}, children,
                  st.dictionaries(st.sampled_from(["w", "__class__", "__dict__", "1x", ""]), children, max_size=3)),
        st.dictionaries(st.text(max_size=3), children, max_size=3),
    )


@given(st.recursive(_JSON_LEAVES, _tagged, max_leaves=12))
@settings(max_examples=400, deadline=None)
def test_the_reading_of_any_json_gives_a_value_or_wire_error_and_nothing_else(data):
    """Any JSON a record can carry (a learner may forge every byte of it, numbers no float
    holds included): ``decode`` returns a value or raises WireError, never another error,
    which would be the grader's own failure on every regrade of that learner."""
    with contextlib.suppress(wire.WireError):
        wire.decode(data)


def test_an_answer_that_returns_what_the_reading_refuses_fails_for_what_it_returned_not_as_raising():
    """Red team 11: a softmax returning ``[C(1)]`` (``C.real`` is 10**400) failed, rightly,
    but the message said it "raised OverflowError": it returned. (Since red team 18 the
    real part crosses as inf, so the value is read, and failed for what it is.)"""
    def returns_a_complex_no_float_holds(scores):
        return [_HugeReal(1)]

    result = verdict.judge_check(SOFTMAX, recorded(SOFTMAX, returns_a_complex_no_float_holds))
    assert result.status == checks.FAILED
    assert result.message.startswith("stable_softmax of the scores [1, 2, 3] returned a list")
    assert "raised" not in result.message
    forged = recorded(SOFTMAX, returns_a_complex_no_float_holds)
    forged["calls"][0]["outcome"]["returned"] = [{"$complex": [10**400, 0]}]  # what no encoder of ours writes
    result = verdict.judge_check(SOFTMAX, forged)
    assert result.status == checks.FAILED and "returned a value the grader cannot read" in result.message
    assert "raised" not in result.message


@pytest.mark.parametrize(("forged", "why"), [
    ({"outcome": {"stopped": 10**400}}, "a time budget that is not a number of seconds: '1000"),
    ({"outcome": {"stopped": "soon"}}, "a time budget that is not a number of seconds: 'soon'"),
    ({"peak": 10**400}, "a memory peak that is not a number of bytes: '1000"),
    ({"changed": 5}, "the arguments it changed, not as a list"),
    ({"changed": [{"$complex": [10**400, 0]}]}, "a complex number whose parts are not numbers a float holds"),
    ({"outcome": None}, "a call without an outcome"),
])
def test_a_call_whose_record_cannot_be_read_fails_and_says_so(forged, why):
    """A call's record forged so that replaying it raised (``float(10**400)``, ``zip`` over
    an int): the check said the function "raised OverflowError", and a forged peak broke
    the check itself. The record is the learner's: a fail that says what could not be read."""
    record = recorded(SOFTMAX, right)
    for call in record["calls"]:
        call.update(forged)
    result = verdict.judge_check(SOFTMAX, record)
    assert result.status == checks.FAILED
    assert result.message.startswith(f"right() left a record of its call the grader cannot read ({why}")


@pytest.mark.parametrize(("data", "metadata"), [
    ({"application/json": {f"k{i}": "v" * 100 for i in range(12_000)}, "text/plain": "<IPython.core.display.JSON object>"},
     {"application/json": {"expanded": False, "root": "root"}}),  # red team 11's JSON view of a 1.3 MB table
    ({"text/plain": "<VegaLite 5 object>"}, {"application/vnd.vegalite.v5+json": {"spec": "s" * 1_300_000}}),
])
def test_a_display_while_recording_costs_its_serialised_size_a_json_view_and_its_metadata_too(monkeypatch, data, metadata):
    """Red team 11: a JSON view (a dict, not text) counted 1,000 characters and metadata
    nothing, so a softmax that showed a 1.3 MB table at every call, which passes its own
    check, was stopped at the output limit while recording: "notebook crashed"."""
    sent = []
    shell = SimpleNamespace(display_pub=SimpleNamespace(
        publish=lambda data=None, metadata=None, **kwargs: sent.append((data, metadata))))
    monkeypatch.setattr(wire, "_shell", lambda: shell)
    with wire._capped_output(100_000):
        for _ in range(9):
            shell.display_pub.publish(data=data, metadata=metadata)
    assert len(sent) == 1  # as a figure: the first passes on, its size spends the share, the rest are dropped


@pytest.mark.parametrize(("data", "metadata"), [
    ({"text/plain": "é" * 1000, "application/json": {"rows": [[1.5, None, True]] * 300}}, {"isolated": True}),
    ({"image/png": b"\x89PNG" + bytes(30_000), "text/plain": "<Figure>"}, {"image/png": {"width": 640}}),
    ({"text/plain": ""}, {}),
])
def test_a_displays_cost_is_the_size_of_the_message_the_kernel_sends(data, metadata):
    """What ``display_size`` counts is what the kernel's session sends for the display (its
    content serialised, bytes as base64, and the message's envelope), within a little."""
    from jupyter_client.session import Session

    session = Session(key=b"0" * 64, username="learner")
    content = {"data": data, "metadata": metadata, "transient": {}}
    parent = session.msg("execute_request", {"code": "stable_softmax(x)"})["header"]
    sent = sum(len(frame) for frame in session.serialize(session.msg("display_data", content, parent=parent)))
    assert sent <= wire.display_size(data, metadata) <= 1.05 * sent + 200


def test_output_while_recording_is_counted_by_what_it_sends_not_by_what_it_says_of_itself(monkeypatch, capsys):
    """A str whose ``__len__`` lies is written as in the learner's own run (its characters
    counted), and each clearing of a cell's output, a message of its own, spends the share."""
    import sys

    class Lying(str):
        def __len__(self):
            return -1

    cleared = []
    shell = SimpleNamespace(display_pub=SimpleNamespace(publish=lambda data=None, **kwargs: None,
                                                        clear_output=lambda wait=False: cleared.append(wait)))
    monkeypatch.setattr(wire, "_shell", lambda: shell)
    with wire._capped_output(10 * wire.DISPLAY_ENVELOPE):
        sys.stdout.write(Lying("shown"))
        for _ in range(1000):
            shell.display_pub.clear_output(True)
    assert "shown" in capsys.readouterr().out
    assert 0 < len(cleared) <= 10


# --- red team 17 ---------------------------------------------------------------------------


def _zeroes_and_reshapes_its_input(scores):
    """Right weights, and the check's own array zeroed and given a new shape in place."""
    weights = right(scores)
    if scores.ndim == 1:  # the check's inputs, not a hidden test's
        scores[...] = 0.0
        scores.shape = (1, *scores.shape)
    return weights


def _zeroes_and_resizes_its_input(scores):
    weights = right(scores)
    if scores.ndim == 1:
        scores.resize(scores.size + 2, refcheck=False)  # another size, in place
    return weights


def _zeroes_and_reshapes_each_block(blocks):
    def read_then_reshape():
        for block in blocks:
            yield np.array(block)
            block[...] = 0.0
            block.shape = (1, *block.shape)
    return normaliser_right(read_then_reshape())


@pytest.mark.parametrize(("label", "answer"), [(SOFTMAX, _zeroes_and_reshapes_its_input),
                                               (SOFTMAX, _zeroes_and_resizes_its_input),
                                               ("ch9-online-softmax", _zeroes_and_reshapes_each_block)])
def test_a_change_of_shape_to_an_argument_fails_in_the_grader_as_in_its_notebook(label, answer):
    """Red team 17: the replay wrote a recorded change back only into an array of the same
    shape, so an answer that zeroed its input and then reshaped it passed grade 3/3 while its
    own check said "changed its input". A change the replay cannot make fails the call."""
    in_the_notebook = core.evaluate_check(label, "check", verdict._undecorated(label), (answer,), None)
    in_the_grader = verdict.judge_check(label, recorded(label, answer))
    assert in_the_notebook.status == in_the_grader.status == checks.FAILED, in_the_grader.message
    assert "changed" in in_the_grader.message, in_the_grader.message


def test_a_patched_numpy_does_not_erase_what_the_recording_notes(monkeypatch):
    """Red team 17: with np.array_equal patched to say True, the recorder noted no change to
    the argument and grade passed an in-place softmax. The recorder binds what it calls
    when the checks are imported, before any cell of the learner's runs."""
    monkeypatch.setattr(np, "array_equal", lambda *args, **kwargs: True)
    monkeypatch.setattr(np, "ascontiguousarray", lambda value, *args, **kwargs: np.zeros(1))
    record = recorded(SOFTMAX, in_place)
    stream_record = recorded("ch9-online-softmax", _zeroes_each_block_after_reading_it)
    monkeypatch.undo()
    assert any(any(after is not None for after in call.get("changed", [])) for call in record["calls"])
    assert verdict.judge_check(SOFTMAX, record).status == checks.FAILED
    assert verdict.judge_check("ch9-online-softmax", stream_record).status == checks.FAILED


@pytest.mark.parametrize("reach", [
    "check.wire._same = lambda before, after: True", "check.core.replayed_peak = None", "check._HOMES",
    "checks.load_chapter_of('ch1')", 'sys.modules["attncourse.checks." + "wire"]', "importlib.import_module(name)",
    "__import__('sys')", "getattr(check, 'wi' + 're')", "vars(check)['wire']", "helper.__globals__['x']",
    "object.__subclasses__()", "import builtins", "__builtins__.len = fake", "exec(code)", "eval(text)",
    "compile(text, 'x', 'exec')", "sys.addaudithook(hook)", "import atexit", "signal.signal(signal.SIGALRM, h)",
    "fn.__code__ = other.__code__", "np.array_equal = lambda *a, **k: True", "    numpy.allclose = fake",
    "setattr(np, 'array_equal', fake)", "import ctypes",
])
def test_the_routes_into_the_recording_red_team_17_took_are_flagged(reach):
    from attncourse.instructor.judge import TOUCHES_RECORDING

    assert TOUCHES_RECORDING.search(reach), reach


@pytest.mark.parametrize("honest", [
    "pattern = re.compile(r'\\d+')", "model.eval()", "check.stable_softmax(my_softmax)", "check.predict_rank(3)",
    "signal = np.ones(3)", "out = np.convolve(signal, kernel)", "x = getattr(obj, 'shape', None)",
    "if np.all(x) == y:", "np.seterr(all='ignore')", "same = np.x == 3", "evaluate(x)",
])
def test_ordinary_code_is_not_flagged_as_touching_the_recording(honest):
    from attncourse.instructor.judge import TOUCHES_RECORDING

    assert not TOUCHES_RECORDING.search(honest), honest


class _CallableWeights:
    """Weights that read as an array (``__array__``) and can also be called."""

    def __init__(self, weights):
        self.weights = weights

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.weights, dtype=dtype)

    def __call__(self):
        return self.weights


@pytest.mark.parametrize("answer", [lambda scores: _CallableWeights(right(scores)), lambda scores: right])
def test_a_function_returned_gets_the_grader_s_verdict_and_words_in_its_notebook(answer):
    """Red team 17: weights both callable and array-like passed their own check (read through
    __array__) and failed in grade ("returned a Function", the grader's own class). The
    notebook now judges the grader's stand-in, and both say "a function"."""
    in_the_notebook = core.evaluate_check(SOFTMAX, "check", verdict._undecorated(SOFTMAX), (answer,), None)
    in_the_grader = verdict.judge_check(SOFTMAX, recorded(SOFTMAX, answer))
    assert in_the_notebook.status == in_the_grader.status == checks.FAILED
    assert "returned a function" in in_the_notebook.message and "returned a function" in in_the_grader.message
    assert "Function" not in in_the_grader.message


# --- red team 18 ---------------------------------------------------------------------------


class _NeverAnArray(type):
    def __instancecheck__(cls, instance):
        return False


def test_what_the_recorder_calls_at_call_time_is_bound_before_the_learner_s_cells(monkeypatch):
    """Red team 18: an alias of numpy whose ndarray no array is an instance of (nothing
    watched), base64 that encodes the zeroed argument as it was, and a time module whose
    clocks stand still (no budget): each passed an in-place or endless answer in grade."""
    import base64
    import time

    record = {"calls": []}
    recorder = wire._Recorder(record)
    scores = np.array([1.0, 2.0, 3.0])
    with monkeypatch.context() as patched:
        patched.setattr(np, "ndarray", _NeverAnArray("ndarray", (np.ndarray,), {}))
        patched.setattr(base64, "b64encode", lambda data: base64.b64encode(np.array([1.0, 2.0, 3.0]).tobytes()))
        patched.setattr(time, "monotonic", lambda: 0.0)
        patched.setattr(time, "clock_gettime", lambda clock: 0.0)
        recorder.outcome("answer:0", in_place, (scores,), {})
        finished, _ = core.call_with_deadline(lambda: time.sleep(0.5), 0.1)
    assert not finished  # the budget still ran out
    [after] = record["calls"][0]["changed"]
    np.testing.assert_array_equal(wire.decode(after), scores)  # what the argument became, as it is
    assert not np.array_equal(scores, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("label", ["ch4-predict-parameter-count", "ch7-predict-rank"])
@pytest.mark.parametrize("digits", [400, 5000])
def test_a_whole_number_too_wide_for_any_float_crosses_as_the_infinity_it_rounds_to(label, digits):
    """Red team 18: 10**5000 cannot be written as JSON (Python's limit of 4,300 digits), so
    the grader's cell never answered and grade waited six minutes, then blamed the learner.
    It crosses as the infinity the checks read it as (core.as_float), and the notebook and
    the grader say the same of it."""
    wide = 10**digits
    assert json.loads(json.dumps(wire.encode([-wide]))) == [{"$float": "-inf"}]
    assert wire.encode(2**1023) == 2**1023  # a float's range is kept whole
    checks.load_chapter_of(label)
    in_the_notebook = core.evaluate_check(label, "check", verdict._undecorated(label), (wide,), None)
    in_the_grader = verdict.judge_check(label, recorded(label, wide))
    assert in_the_notebook.status == in_the_grader.status != checks.PASSED
    assert in_the_notebook.message == in_the_grader.message


@pytest.mark.parametrize("patch", [
    "import numpy as N\nN.ndarray = type('ndarray', (), {})", "import json\njson.dumps = rewrite",
    "import base64\nbase64.b64encode = same_bytes", "import time\ntime.monotonic = lambda: 0.0",
    "np.__dict__['ndarray'] = fake", "M = np\nM.array_equal = fake", "del np.array_equal",
    "def quietly():\n    np.random.seed = fake", "import os, inspect", "globals()['np'].x = 1",
])
def test_a_module_changed_by_the_learner_s_code_is_flagged(patch):
    from attncourse.instructor.judge import TOUCHES_RECORDING
    from attncourse.instructor.notebook.source import reaches_into_modules

    handout = "import numpy as np\nfrom attncourse import checks as check"
    assert TOUCHES_RECORDING.search(patch) or reaches_into_modules([patch], [handout, patch]), patch


@pytest.mark.parametrize("honest", [
    "X = np.column_stack([a, b])\nY = np.row_stack([a, b])", "# inspect the weights before the softmax",
    "call_stack = []", "plt.rcParams['figure.figsize'] = (8, 4)", "torch.backends.cudnn.deterministic = True",
    "x = np.zeros(3)\nx[0] = 1.0", "self_check = check.stable_softmax", "# a traceback here meant a typo",
])
def test_honest_code_red_team_18_wrote_is_not_flagged(honest):
    from attncourse.instructor.judge import TOUCHES_RECORDING
    from attncourse.instructor.notebook.source import reaches_into_modules

    handout = "import numpy as np\nimport torch\nimport matplotlib.pyplot as plt\nfrom attncourse import checks as check"
    assert not TOUCHES_RECORDING.search(honest), TOUCHES_RECORDING.search(honest)
    assert reaches_into_modules([honest], [handout, honest]) is None


# --- red team 19 ---------------------------------------------------------------------------

_HANDOUT_19 = ("import numpy as np\nimport json\nimport sys\nimport threading\nimport warnings\n"
               "import matplotlib.pyplot as plt\nfrom attncourse import checks as check\n"
               "from attncourse.attention import softmax")


@pytest.mark.parametrize("patch", [
    'vars(json)["dumps"] = scrub', "json.__dict__.update(dumps=scrub)", "for _m in (json,):\n    _m.dumps = scrub",
    "T = threading.Thread\nT.start = inline", "types.ModuleType.__setattr__(json, 'dumps', scrub)",
    "get_ipython().run_cell(source)", "get_ipython().ex(source)", "%run helper.py", "with json as j:\n    j.dumps = scrub",
    "(m := json).dumps = scrub", "import json as J\nJ.dumps = scrub\ndef J():\n    pass",
])
def test_a_module_changed_through_another_spelling_is_flagged(patch):
    """Red team 19 changed json.dumps and threading.Thread.start in spellings the first
    reading of the cells missed: through vars(), __dict__, a loop's name, an attribute's alias."""
    from attncourse.instructor.judge import TOUCHES_RECORDING
    from attncourse.instructor.notebook.source import reaches_into_modules

    assert TOUCHES_RECORDING.search(patch) or reaches_into_modules([patch], [_HANDOUT_19, patch]), patch


@pytest.mark.parametrize("honest", [
    "def softmax(x):\n    softmax.calls += 1\n    return x\nsoftmax.calls = 0", "sys.argv = ['notebook']",
    "sys.path += ['.']", "warnings.filters = []", "import logging\nlogging.root.level = 10",
    "class Box:\n    pass\nbox = Box()\nbox.size = 3",
])
def test_honest_code_red_team_19_wrote_is_not_flagged(honest):
    from attncourse.instructor.judge import TOUCHES_RECORDING
    from attncourse.instructor.notebook.source import reaches_into_modules

    assert not TOUCHES_RECORDING.search(honest) and reaches_into_modules([honest], [_HANDOUT_19, honest]) is None


def test_a_thread_class_whose_start_runs_inline_does_not_stop_the_time_budget(monkeypatch):
    """Red team 19: Thread.start patched to run the check in the caller's thread, so the
    budget's loop never ran and a 12 s answer passed. The check's thread is started by
    functions bound at import."""
    import threading
    import time

    monkeypatch.setattr(threading.Thread, "start", lambda self: self.run())
    started = time.monotonic()
    finished, running = core.call_with_deadline(lambda: time.sleep(2.0), 0.05, wall=0.3)
    assert not finished and running and time.monotonic() - started < 1.5


def test_a_lone_surrogate_in_what_a_function_raises_or_returns_can_be_sent():
    """Red team 19: raise ValueError("...\\ud800") left a record no kernel can send (its reply
    never came: six minutes, then "it slept"). Every text the record holds is cleaned."""
    def raises_a_surrogate(scores):
        raise ValueError("bad \ud800 input")

    def returns_one(scores):
        return ["\udc00"]

    for answer in (raises_a_surrogate, returns_one):
        sent = wire.encode(recorded(SOFTMAX, answer))
        json.dumps(sent, ensure_ascii=False).encode("utf-8")  # what the kernel's session does
    assert core.describe(ValueError("x\ud800")) == "ValueError: x\ufffd"


# --- red team 20 ---------------------------------------------------------------------------


def test_an_answer_over_its_budget_did_not_return_however_the_wait_for_it_was_stretched(monkeypatch):
    """Red team 20: Thread._wait_for_tstate_lock patched to wait for ever, so the budget's
    join waited out a 12 s answer, which was recorded as returned. Whatever the waiting
    does, a call that used more than its budget (bound clocks) did not return within it."""
    import time

    def spins(scores):
        end = time.thread_time() + 0.4
        while time.thread_time() < end:
            pass
        return right(scores)

    monkeypatch.setattr(core, "_join", lambda worker, timeout=None: time.sleep(1.0))  # a wait far longer than asked
    finished, _ = core.call_with_deadline(lambda: spins([1.0]), 0.1, wall=5.0)
    assert finished is None
    monkeypatch.setenv(core.TIMEOUT_VARIABLE, "0.1")
    record = {"calls": []}
    wire._Recorder(record).outcome("answer:0", spins, (np.array([1.0, 2.0]),), {})
    assert "stopped" in record["calls"][0]["outcome"]


@pytest.mark.parametrize("patch", [
    "[json][0].dumps = scrub", "_session = get_ipython().kernel.session\n_session.pack = scrub",
    "get_ipython().kernel.session.pack = scrub", "setattr(json, 'dumps', scrub)", "vars(threading)['Thread'] = Fake",
])
def test_red_team_20_s_plain_routes_are_flagged(patch):
    from attncourse.instructor.judge import TOUCHES_RECORDING
    from attncourse.instructor.notebook.source import reaches_into_modules

    assert TOUCHES_RECORDING.search(patch) or reaches_into_modules([patch], [_HANDOUT_19, patch]), patch


@pytest.mark.parametrize("honest", [
    "plt.gcf().dpi = 80", "class Run:\n    def globals(self):\n        return 1\nRun().globals()",
    "setattr(cfg, 'temperature', 1.0)", "print(vars(cfg))",
])
def test_honest_code_red_team_20_wrote_is_not_flagged(honest):
    from attncourse.instructor.judge import TOUCHES_RECORDING
    from attncourse.instructor.notebook.source import reaches_into_modules

    assert not TOUCHES_RECORDING.search(honest) and reaches_into_modules([honest], [_HANDOUT_19, honest]) is None
