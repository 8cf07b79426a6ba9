"""Tests for ``attncourse.instructor.slicing``: which of the course's cells grading leaves out.

A cell left out wrongly would change a learner's answer; grading then runs the whole
notebook again (tests/test_instructor_grading.py), but the slice itself should err on
the side of running a cell: every case here where a cell *may* change what an answer
reads keeps it.
"""

from __future__ import annotations

import time

import pytest

from attncourse.instructor.slicing import cells_to_skip

IMPORTS = "import numpy as np\nimport torch\nfrom attncourse.attention import softmax\nfrom myst_nb import glue"
DATA = "rng = np.random.default_rng(0)\nX = rng.standard_normal((4, 3))"
ANSWER = "answer = softmax(X) + rng.standard_normal(X.shape)"  # the grader's recording cell reads `answer`


def skipped(*course_cells: str, learner: str = ANSWER) -> list[str]:
    """The course cells (between the imports and the learner's answer) left out."""
    cells = [(IMPORTS, True), (DATA, True), *[(c, True) for c in course_cells], (learner, False), ("", False)]
    reads: list[set[str]] = [set() for _ in cells[:-1]] + [{"answer"}]
    return [cells[i][0] for i in sorted(cells_to_skip(cells, reads))]


def test_cells_no_answer_reads_are_left_out_and_what_answers_read_runs():
    figure = "fig = softmax(X)\nglue('fig', fig, display=False)\nprint(np.abs(X).max())"
    assert skipped(figure) == [figure]  # reads X, changes nothing the answer reads
    assert skipped() == []  # the imports and the data the answer reads run


@pytest.mark.parametrize("change", [
    "X[0] = 0.0",  # an item assigned
    "X += 1",  # augmented
    "X.sort(axis=0)",  # a method of the object
    "np.fill_diagonal(X, 0.0)",  # a module function that works in place
    "torch.nn.init.normal_(torch.as_tensor(X))",  # torch's in-place functions end in _
    "noise = rng.standard_normal(3)",  # a draw from the answer's generator changes what it draws next
    "def scale(a):\n    a *= 2\n\nscale(X)",  # through a function the notebook defines
    "del X",
    "X = X.T",
])
def test_a_cell_that_may_change_what_the_answer_reads_runs(change):
    assert skipped(change) == []


@pytest.mark.parametrize("global_state", [
    "np.random.seed(1)", "np.random.normal(size=3)", "torch.manual_seed(0)", "layer = torch.nn.Linear(3, 3)",
    "import random\nrandom.seed(0)", "torch.set_default_dtype(torch.float32)", "%matplotlib inline",
    "global X", "exec('X = 1')", "f = lambda: None\nf()", "this is not python (",
])
def test_a_cell_that_may_change_state_no_name_shows_runs(global_state):
    assert skipped(global_state) == []


def test_the_learners_own_cells_always_run_and_what_they_read_too():
    shared = "shared = X * 2"
    cells = [(IMPORTS, True), (DATA, True), (shared, True), ("print(shared)", False), (ANSWER, False), ("", False)]
    reads: list[set[str]] = [set() for _ in range(5)] + [{"answer"}]
    assert cells_to_skip(cells, reads) == set()


def test_the_courses_functions_change_no_argument_but_the_notebooks_may():
    pure = "weights = softmax(X)"  # attncourse: pure functions (house rule)
    assert skipped(pure) == [pure]
    unknown = "from somewhere import mangle\nmangle(X)"
    assert skipped(unknown) == []


def test_deeply_nested_definitions_are_read_in_time():
    nested = "".join("    " * depth + f"def f{depth}():\n" for depth in range(90)) + "    " * 90 + "X.sort()\n"
    started = time.perf_counter()
    assert skipped(nested) == [nested]  # defining changes nothing; calling would
    assert time.perf_counter() - started < 2.0
