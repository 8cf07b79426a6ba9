"""The grader's parser (``attncourse.instructor.notebook.source``): safe from its threads, and a
cell Python cannot parse is that cell's problem, not the whole notebook's."""

from __future__ import annotations

import ast
import gc
import sys
import threading

import nbformat
import pytest

from attncourse.instructor.model import Exercise
from attncourse.instructor.notebook.placement import notebook_to_run
from attncourse.instructor.notebook.source import UNPARSEABLE, parse

NESTED = "x = " + "[" * 90 + "1" + "]" * 90 + "\n" + "\n".join(
    f"def f{i}(a, b):\n    return [a + b for _ in range(3)]" for i in range(50))


class _Finalized:
    """A cycle whose collection runs Python code: a thread switch in the middle of a parse."""

    def __init__(self):
        self.me = self

    def __del__(self):
        sum(range(200))


def _failures_of(parser, threads: int = 4, parses: int = 150) -> list[str]:
    """The SystemErrors of ``threads`` threads parsing NESTED at once, with garbage
    collections that run Python code and a thread switch as often as Python allows."""
    failures: list[str] = []

    def work():
        for _ in range(parses):
            garbage = [_Finalized() for _ in range(20)]
            del garbage
            try:
                parser(NESTED)
            except SystemError as error:
                failures.append(str(error))

    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(50)
    try:
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)
    return failures


def test_threads_parsing_at_once_never_fail_each_other():
    if not _failures_of(ast.parse):
        pytest.skip("this Python's own parser shows no race under this load (CPython gh-106905 fixed)")
    assert _failures_of(parse) == []


@pytest.mark.parametrize("source", ["def f(:\n    pass", "x = 1\0", "x = " + "-" * 100_000 + "1",
                                    "x = " + "(" * 300 + "1" + ")" * 300],
                         ids=["bad syntax", "null byte", "deep unary minus", "deep parentheses"])
def test_what_python_cannot_parse_raises_one_named_error(source):
    with pytest.raises(UNPARSEABLE):
        parse(source)


@pytest.mark.parametrize("cell", ["x = 1\0", "x = " + "-" * 100_000 + "1", "print(1"],
                         ids=["null byte", "deep unary minus", "bad syntax"])
def test_a_learner_cell_python_cannot_parse_leaves_the_answer_graded(cell):
    label = "ch1-stable-softmax"
    answer = "def stable_softmax(scores):\n    return scores"
    nb = nbformat.v4.new_notebook()
    for source, tags in ((cell, []), (answer, ["stub", f"exercise:{label}"]),
                         ("check.stable_softmax(stable_softmax)", ["check", f"exercise:{label}"])):
        nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": tags}))
    run, (placed,) = notebook_to_run(nb, [Exercise(label, ("stable_softmax",), ("stable_softmax",))],
                                     frozenset({"check.stable_softmax(stable_softmax)"}))
    assert [cell.source for cell in run.cells[: placed.index]] == [cell, answer]
