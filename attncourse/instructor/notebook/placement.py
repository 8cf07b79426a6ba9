"""Where a learner's answer is: the notebook ``grade`` runs, with its recording cells placed
after the learner's answer to each exercise, wherever the learner wrote it.

A learner may answer in the stub, in a new cell below it, in a cell an editor stripped of
its tags, or after redefining the name twice. The answer graded is the last definition of
the exercise's names (the arguments of its check, the notebook names its hidden tests
read) before the next exercise that defines the same names; the exercise's tags, where
they survive, say where its part of the notebook starts. Where the grader cannot tell,
the grade says so ("needs review"), never a silent zero.
"""

from __future__ import annotations

import ast
import builtins
import copy

import nbformat

from attncourse.checks import wire
from attncourse.checks.core import check_name
from attncourse.instructor.course.tags import CHECK, HIDDEN_TEST, exercise_of, role_of
from attncourse.instructor.model import Exercise, Placed
from attncourse.instructor.notebook.slicing import cells_to_skip
from attncourse.instructor.notebook.source import (
    UNPARSEABLE,
    calls_of_check,
    checks_called,
    defined_names,
    is_check_call,
    names_read,
    parse_cell,
)


def notebook_to_run(submitted, exercises: list[Exercise], course_sources: frozenset[str] = frozenset()
                    ) -> tuple[nbformat.NotebookNode, list[Placed]]:
    """The learner's cells (their own check and hidden-test cells dropped: the grader's
    recording cells take their place), with a recording cell after the answer to each
    exercise. The course's own cells (``course_sources``, unchanged) that no answer needs
    are not run (``slicing``): they stay in the notebook as raw cells, marked."""
    cells = [copy.deepcopy(cell) for cell in submitted.cells if role_of(cell) != HIDDEN_TEST]
    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    defines = [defined_names(cell.source) if cell.cell_type == "code" else set() for cell in cells]
    checks_of = [_checks_called(cell) for cell in cells]
    after: dict[int, list[tuple[Exercise, str]]] = {}
    handed_out = [cell.cell_type == "code" and cell.source.strip() in course_sources for cell in cells]
    checked = [_as_checked(cells, checks_of, exercise) for exercise in exercises]
    for exercise, own in checked:
        position, note = _position(cells, defines, checks_of, exercise, [e for e, _ in checked], handed_out)
        after.setdefault(position, []).append((exercise, "; ".join(filter(None, [note, own]))))
    run = nbformat.v4.new_notebook(metadata=copy.deepcopy(submitted.metadata))
    placed: list[Placed] = []
    check_names = {check_name(exercise.label) for exercise in exercises}
    for position in range(-1, len(cells)):
        if position >= 0 and not checks_of[position]:
            run.cells.append(cells[position])
        elif position >= 0 and not handed_out[position]:  # the learner wrote in a check cell
            rest = _besides_check_calls(cells[position].source, check_names)
            if rest:
                kept = copy.deepcopy(cells[position])
                kept.source = rest
                run.cells.append(kept)
        for exercise, note in after.get(position, []):
            aliases = f", {dict(exercise.aliases)!r}" if exercise.aliases else ""
            cell = nbformat.v4.new_code_cell(
                f'__import__("attncourse.checks.wire", fromlist=["wire"]).export('
                f'{exercise.label!r}, {exercise.expressions!r}, {wire.INPUTS_FILE!r}{aliases})')
            cell.metadata["attncourse"] = {"written_by_grade": exercise.label}
            placed.append(Placed(len(run.cells), exercise.label, note))
            run.cells.append(cell)
    _skip_unneeded(run, placed, {e.label: e for e, _ in checked}, course_sources)
    return run, placed


def _besides_check_calls(source: str, check_names: set[str]) -> str:
    """What a check cell the learner wrote in runs before its last call of a check, less
    its calls of checks (an answer typed above the call, ``stable_softmax = my_softmax``):
    it runs where the cell was, and the grader's recording takes the calls' place, so it
    reads what the learner's check read. "" if nothing, or if Python cannot parse the cell
    (then the cell is left out, as a check cell is)."""
    lines = source.splitlines(keepends=True)
    try:
        tree = parse_cell(source)
    except UNPARSEABLE:
        return ""

    def is_check(node: ast.stmt) -> bool:
        return isinstance(node, ast.Expr) and is_check_call(node.value, check_names)

    calls = [node for node in tree.body if is_check(node)]
    if not calls:
        return _with_nested_checks_disabled(tree, check_names)
    keep: set[int] = set()
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if not is_check(node) and (node.lineno, node.col_offset) < (calls[-1].lineno, calls[-1].col_offset):
            keep.update(range(first - 1, node.end_lineno or node.lineno))
    rest = "".join(line for number, line in enumerate(lines) if number in keep)
    return rest if rest.strip() else ""


def _with_nested_checks_disabled(tree: ast.Module, check_names: set[str]) -> str:
    """A check cell whose check calls sit inside a statement (``with np.errstate(...):``,
    ``try:``), as its statements up to the one holding the last call, every check call in
    them made ``None``: the answer it defines runs, the check does not (the grader's
    recording takes its place). "" if it calls no check."""
    holding = [index for index, node in enumerate(tree.body)
               if any(isinstance(inner, ast.Call) and is_check_call(inner, check_names) for inner in ast.walk(node))]
    if not holding:
        return ""

    class Disabled(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            if is_check_call(node, check_names):
                return ast.copy_location(ast.Constant(None), node)
            return self.generic_visit(node)

    body = [Disabled().visit(node) for node in tree.body[: holding[-1] + 1]]
    return ast.unparse(ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))) + "\n"


def _as_checked(cells, checks_of, exercise: Exercise) -> tuple[Exercise, str]:
    """``exercise`` with the arguments of the notebook's own last call of its check, where
    they differ from the course's (a learner who wrote ``my_softmax`` and checked
    ``check.stable_softmax(my_softmax)`` is graded on ``my_softmax``), and a note saying so."""
    name = check_name(exercise.label)
    calls = [call for i, cell in enumerate(cells) if {exercise.label, "name:" + name} & checks_of[i]
             for call in calls_of_check(exercise.label, cell.source)]
    asked = [ast.unparse(k.value) for k in calls[-1].keywords if k.arg == "timeout"] if calls else []
    if asked:  # the grader's budget is --check-timeout's, for every learner alike
        return exercise, (f"its check call asks for timeout={asked[0]}; grade gives every check the same "
                          "budget (--check-timeout, 10 s of processor time by default)")
    if not calls or calls[-1].keywords or len(calls[-1].args) != len(exercise.expressions):
        return exercise, ""
    own = tuple(ast.unparse(arg) for arg in calls[-1].args)
    if own == exercise.expressions:
        return exercise, ""
    names = [n.id for arg in calls[-1].args for n in ast.walk(arg) if isinstance(n, ast.Name)]
    aliases = tuple((course, mine) for course, mine in zip(exercise.expressions, own)
                    if course.isidentifier() and course != mine)  # what the hidden tests read by that name
    return (Exercise(exercise.label, own, tuple(dict.fromkeys([*exercise.names, *names])), aliases),
            f"graded on the arguments of the notebook's own check call ({', '.join(own)}), "
            f"not the course's ({', '.join(exercise.expressions)})")


def _skip_unneeded(run, placed: list[Placed], exercises: dict[str, Exercise], course_sources: frozenset[str]) -> None:
    """Turn the course's cells that no recorded answer needs into raw cells (not run)."""
    if not course_sources:
        return
    recording = {p.index: exercises[p.label] for p in placed}
    cells = [(cell.source if cell.cell_type == "code" else "",
              cell.cell_type == "code" and i not in recording and exercise_of(cell) is None
              and cell.source.strip() in course_sources)
             for i, cell in enumerate(run.cells)]
    reads = [set(recording[i].names) if i in recording else set() for i in range(len(run.cells))]
    for i in sorted(cells_to_skip(cells, reads)):
        skipped = nbformat.v4.new_raw_cell(run.cells[i].source, metadata=copy.deepcopy(run.cells[i].metadata))
        skipped.metadata["attncourse"] = {"not_run_by_grade": "a cell of the course's that no answer needs"}
        run.cells[i] = skipped


def skipped_cells(run) -> int:
    """How many of the course's cells ``notebook_to_run`` left out of ``run``."""
    return sum(1 for cell in run.cells if "not_run_by_grade" in cell.metadata.get("attncourse", {}))


def _checks_called(cell) -> set[str]:
    """The exercises a learner's cell checks: tagged as a check, or only calling checks
    (``check.NAME(...)``, ``checks.NAME(...)``, ``attncourse.checks.NAME(...)``, on one
    line or several), with the imports they need."""
    if cell.cell_type != "code":
        return set()
    if role_of(cell) == CHECK:
        return {exercise_of(cell) or ""}
    return {"name:" + name for name in checks_called(cell.source)}


def _position(cells, defines, checks_of, exercise: Exercise, exercises: list[Exercise],
              handed_out: list[bool]) -> tuple[int, str]:
    """(the index of the cell after which ``exercise`` is recorded, a note for review).

    The answer is the last definition of the exercise's names before the learner's last
    call of its check, recorded where that check was (so that what the answer uses and the
    notebook defines after it, a helper, a global, is there, as in the learner's own run),
    or the last definition, with no check. Where that definition is the course's cell as
    handed out (the stub) but the learner wrote one of their own elsewhere in the
    exercise's part (above the stub, after the check: run out of order), the learner's is
    graded, and the note says so."""
    names = set(exercise.names)
    tagged = [i for i, cell in enumerate(cells) if exercise_of(cell) == exercise.label]
    sharing = {e.label for e in exercises if e.label != exercise.label and names & set(e.names)}
    start = tagged[0] if tagged else 0
    end = next((i for i, cell in enumerate(cells) if i > start and exercise_of(cell) in sharing
                and defines[i] & names), len(cells))
    own_checks = [i for i in range(start, end)
                  if {exercise.label, "name:" + check_name(exercise.label)} & checks_of[i]]
    defining = [i for i in range(start, end) if defines[i] & names]
    before_check = [i for i in defining if own_checks and i <= own_checks[-1]]  # its cell may bind it first
    defining = before_check or defining  # the last definition before its last check, if any
    written = [i for i in range(start if sharing else 0, end) if defines[i] & names and not handed_out[i]]
    listed = ", ".join(sorted(names)) or "(none)"
    if defining and handed_out[defining[-1]] and written:
        return _after_what_it_reads(cells, defines, written[-1], end), (
            f"its check reads {listed} from cell {defining[-1] + 1}, the course's as handed out; graded on the "
            f"learner's own, cell {written[-1] + 1} (run in order, the notebook would check the course's)")
    position = defining[-1] if defining else -1
    if own_checks and own_checks[-1] > position >= 0:
        position = own_checks[-1]  # where the learner's own check read the answer
    elif defining:
        position = _after_what_it_reads(cells, defines, position, end)
    if not tagged and sharing and defining:
        return position, (f"the notebook has no cell tagged for this exercise and {listed} also answers "
                          f"{', '.join(sorted(sharing))}: graded on the last definition, which may be the other's")
    if defining:
        return position, ""
    if tagged:
        return tagged[-1], ""
    return len(cells) - 1, f"no cell of the notebook defines {listed}: graded at its end"


def _after_what_it_reads(cells, defines, position: int, end: int) -> int:
    """``position``, or the later cell (before ``end``) that defines the last of the names
    the answer in cell ``position`` reads that no cell up to it defines (a helper written
    below the answer, which the learner's function calls)."""
    needed = names_read(cells[position].source) - set().union(*defines[: position + 1]) - set(dir(builtins))
    later = [i for i in range(position + 1, end) if defines[i] & needed]
    return later[-1] if later else position
