"""Tests for ``attncourse.instructor.notebook.slicing``: which of the course's cells grading leaves out.

A cell left out wrongly would change a learner's answer; grading then runs the whole
notebook again (tests/test_instructor_grading.py), but the slice itself should err on
the side of running a cell: every case here where a cell *may* change what an answer
reads keeps it.
"""

from __future__ import annotations

import time

import pytest

from attncourse.instructor.notebook.slicing import cells_to_skip

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
    "torch.set_default_dtype(torch.float32)", "np.seterr(all='raise')", "%matplotlib inline",
    "global X", "exec('X = 1')", "f = lambda: None\nf()", "this is not python (",
])
def test_a_cell_that_may_change_state_no_name_shows_runs(global_state):
    assert skipped(global_state) == []


RANDOM = ["np.random.seed(1)", "np.random.normal(size=3)", "torch.manual_seed(0)", "layer = torch.nn.Linear(3, 3)",
          "import random\nrandom.seed(0)", "torch.nn.functional.dropout(torch.ones(3))"]


@pytest.mark.parametrize("draws", RANDOM)
def test_a_cell_that_seeds_or_draws_from_a_global_generator_runs_when_an_answer_draws_too(draws):
    """The global generators' state is read only by what draws from them (the course's own
    functions seed their draws): an answer that draws needs every seed and draw before it."""
    assert skipped(draws) == [draws]
    for answer in ("answer = softmax(X) + np.random.normal(size=X.shape)",
                   "answer = torch.nn.Linear(3, 3)(torch.as_tensor(X))", "import random\nanswer = random.random()"):
        assert draws not in skipped(draws, learner=answer), answer


def test_torch_functions_that_draw_nothing_change_nothing():
    attention = "out = torch.nn.functional.scaled_dot_product_attention(*[torch.as_tensor(X)] * 3)"
    assert skipped(attention) == [attention]


def test_a_name_the_answer_binds_before_it_reads_it_needs_no_earlier_cell():
    earlier = "h = float(np.abs(X).sum())"
    for answer in ("answer = [softmax(X) * h for h in range(2)]",  # a comprehension's own variable
                   "for h in range(2):\n    answer = softmax(X) * h",  # a loop's variable, in the loop
                   "h = 2.0\nanswer = softmax(X) * h",  # assigned above
                   "answer = (lambda h: softmax(X) * h)(2.0)"):  # a lambda's parameter
        assert skipped(earlier, learner=answer) == [earlier], answer
    for answer in ("answer = softmax(X) * h\nh = 0",  # read first, bound after
                   "h += 1\nanswer = softmax(X) * h"):  # augmented: read, then bound
        assert skipped(earlier, learner=answer) == [], answer


def test_a_functions_own_names_are_not_the_notebooks():
    helper = "def f(a):\n    X = a * 2\n    X.sort()\n    return X\n\nprint(f(np.ones(3)))"
    assert skipped(helper) == [helper]  # f's X is its own
    assert skipped("def g():\n    X.sort()\n\ng()") == []  # g changes the notebook's X
    made = "class Made:\n    def __init__(self):\n        self.data = X\n        X.sort()\n\nMade()"
    assert skipped(made) == []  # constructing runs __init__, which changes X


def test_what_the_courses_functions_return_changes_only_by_its_own_mutators():
    made = "w = softmax(X)"
    answer = "answer = w + softmax(X)"
    looked_at = "print(w.max(axis=0), w.T.mean())"
    assert skipped(made, looked_at, learner=answer) == [looked_at]
    for change in ("w.sort(axis=0)", "w.T.fill(0.0)", "torch.as_tensor(w).add_(1.0)", "w[0] = 0.0"):
        assert skipped(made, change, learner=answer) == [], change
    rebound = "w = X.copy()"  # not only the course's: any method may change it
    assert skipped(made, looked_at, rebound, learner=answer) == [], "rebound"
    widget = "from attncourse.explorers import AttentionExplorer\nw = AttentionExplorer(X=X)"
    assert skipped(widget, "w.observe(print)", learner=answer) == [], "a class's object may change"


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
