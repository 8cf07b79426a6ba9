"""Which of the course's own cells a learner's notebook must run for its grade.

A chapter's notebook holds far more than its exercises: figures, surveys over a real
model, training demos. Run whole, chapter 7 alone takes minutes per learner. The grade
needs only what the recorded answers are made of, so ``grade`` runs every cell the
learner wrote or changed, and of the course's own cells (unchanged, character for
character) only those that may change a name a later cell that runs reads.

"May change" is read from the cell's source, erring towards running it: a name bound or
deleted, an attribute or item assigned on it, a method called on it or any call it is
passed to (except the course's own functions, which never change their arguments, module
functions other than in-place ones, and methods other than mutators of what the course's
functions returned), and, through a function the notebook defines, whatever that
function's body may change of the notebook's names (its own are its own). Seeding or
drawing from a global random generator changes a state of its own, needed only by a cell
that draws too. A cell that may change state no name shows (a magic, ``global``, a
module's setting, a syntax error) always runs. What a cell reads is what it does not bind
first: a loop's variable inside its loop, a comprehension's, a lambda's own.

A slice can only confirm: ``grading`` runs the whole notebook again for any exercise
the sliced run did not pass or find unstarted (see ``grading._run_notebook``).
"""

from __future__ import annotations

import ast
import builtins
import re

from attncourse.instructor.notebook.source import (
    UNPARSEABLE,
    dotted,
    has_magics,
    imported_names,
    local_names,
    outer_reads,
    parse,
    run_now,
)

# A module function that changes state no argument shows: a global setting (opaque: any later
# cell may depend on it), or seeding or drawing from a global random generator (numpy's,
# python's, torch's; torch.nn's layers and init functions draw, as does dropout). The
# generators' state is a name of its own, RANDOM_STATE, that every such call reads and
# changes: a cell that draws needs the draws before it, and only a cell that draws does (the
# course's functions seed their own draws: house rule).
_SETTINGS = re.compile(r"^set_|^use_|filterwarnings|seterr|printoptions")
_RANDOM = re.compile(r"seed|^rand|^normal$|^bernoulli|^multinomial|dropout")
_DRAWS = re.compile(r"(^|\.)random(\.|$)|(^|\.)nn\.([A-Z]|init\.)")
RANDOM_STATE = "<random state>"
# Module functions that change an argument in place (torch's in-place functions end in "_").
_IN_PLACE = {"fill_diagonal", "copyto", "put", "place", "putmask", "put_along_axis", "shuffle"}
# Modules whose functions change no argument: the course's (house rule: pure functions), and display.
_PURE_MODULES = ("attncourse", "matplotlib", "IPython", "myst_nb")
_UNSAFE_BUILTINS = {"exec", "eval", "setattr", "delattr", "globals", "locals", "vars", "__import__", "compile", "open",
                    "input", "breakpoint", "exit", "quit", "next", "iter"}
_PURE_BUILTINS = frozenset(dir(builtins)) - _UNSAFE_BUILTINS
# Methods that change their object, of what a course function may return: numpy's arrays and
# Python's containers (torch's in-place methods end in "_").
_MUTATORS = {"sort", "fill", "resize", "put", "itemset", "setflags", "partition", "byteswap", "append", "extend",
             "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard", "popitem", "reverse"}


class _Effects:
    """What one cell reads, what it may change, and whether it may change unnamed state."""

    def __init__(self, reads: set[str], writes: set[str], opaque: bool):
        self.reads, self.writes, self.opaque = reads, writes, opaque


def _root(node: ast.AST) -> str | None:
    """The name an expression like ``a.b[c].d`` starts from."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _shared(argument: ast.AST) -> set[str]:
    """The names whose objects a call's argument hands over (a value computed for the call,
    such as ``a + 1`` or ``x.sum()``, is the call's own)."""
    if isinstance(argument, (ast.List, ast.Tuple, ast.Set)):
        return set().union(*(_shared(item) for item in argument.elts))
    if isinstance(argument, ast.Dict):
        return set().union(*(_shared(item) for item in argument.values))
    root = _root(argument)
    return {root} if root and not _made_by_a_call(argument) else set()


def modules_of(sources: list[str]) -> dict[str, str]:
    """name -> the module it comes from, by the import statements of ``sources``
    (``from attncourse.x import f`` gives ``f`` from ``attncourse.x``)."""
    found: dict[str, str] = {}
    for source in sources:
        try:
            tree = parse(source)
        except UNPARSEABLE:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    found[alias.asname or alias.name] = node.module
    return found


def effects(source: str, modules: dict[str, str], functions: dict[str, set[str]],
            made: frozenset[str] = frozenset()) -> _Effects:
    """The effects of a cell (``functions``: what each function or class the notebook has
    defined so far may change when called; the cell's own definitions are added; ``made``:
    see ``made_by_the_course``)."""
    words = set(re.findall(r"[A-Za-z_]\w*", source))
    if has_magics(source):
        return _Effects(words, words, True)
    try:
        return _effects_of(parse(source).body, modules, functions, made)
    except UNPARSEABLE:
        return _Effects(words, words, True)


def _effects_of(body: list[ast.stmt], modules: dict[str, str], functions: dict[str, set[str]],
                made: frozenset[str]) -> _Effects:
    for node in _definitions(body):  # a function changes, when called, what its body may change
        functions[node.name] = set()  # while its body is read (it may call itself)
        scope = dict(functions)
        inner = _effects_of(node.body, modules, scope, made)
        methods = [scope[m.name] for m in node.body if isinstance(node, ast.ClassDef)
                   and isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]  # a class's call may run any
        functions[node.name] = ((inner.writes - local_names(node)) | set().union(*methods)
                                | ({"*"} if inner.opaque else set()))
    reads = outer_reads(body)
    writes: set[str] = set()
    opaque = False
    for node in run_now(body):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            opaque = True
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            writes.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            writes.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            writes.update(imported_names(node))
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            writes.add(_root(node) or "*")
        elif isinstance(node, ast.Call):
            changed, global_state = _call_effects(node, modules, functions, made)
            writes |= changed
            opaque = opaque or global_state
    if RANDOM_STATE in writes:
        reads.add(RANDOM_STATE)
    return _Effects(reads, writes, opaque or "*" in writes)


def _definitions(body: list[ast.stmt]) -> list:
    """The functions and classes defined in ``body``, not inside another definition (each
    body is read once: nested definitions cost no more than their depth)."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node)
        elif not isinstance(node, ast.Lambda):
            pending += list(ast.iter_child_nodes(node))
    return found


def _call_effects(call: ast.Call, modules: dict[str, str], functions: dict[str, set[str]],
                  made: frozenset[str]) -> tuple[set[str], bool]:
    """(the names a call may change, whether it may change unnamed state)."""
    arguments = set().union(*(_shared(a) for a in [*call.args, *(k.value for k in call.keywords)]))
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in functions:
            return functions[func.id] | arguments, False
        if modules.get(func.id, "").startswith(_PURE_MODULES) or func.id in _PURE_BUILTINS - set(functions):
            return set(), False
        if func.id in ("vars", "dir") and call.args:
            return arguments, False
        return arguments, func.id not in modules  # a lambda, a name bound by a call: anything
    root = _root(func)
    if isinstance(func, ast.Attribute) and root in modules:
        path = modules[root] + dotted(func)[len(root):]
        if path.startswith(_PURE_MODULES):
            return set(), False
        if _SETTINGS.search(func.attr):
            return set(), True
        in_place = func.attr in _IN_PLACE or func.attr.endswith("_") or any(k.arg == "out" for k in call.keywords)
        changed = _names_in(call) if in_place else set()  # a view made in the call shares too
        if _RANDOM.search(func.attr) or (_DRAWS.search(path) and func.attr != "default_rng"):
            return changed | {RANDOM_STATE}, False
        return changed, False
    if root is None and _made_by_a_call(func):
        if isinstance(func, ast.Attribute) and (func.attr in _MUTATORS or func.attr.endswith("_")):
            return arguments | {n.id for n in ast.walk(func.value) if isinstance(n, ast.Name)}, False  # a view's
        return arguments, False  # what a call just made, or its method: only its arguments are shared
    if root is None:
        return arguments, True
    if (isinstance(func, ast.Attribute) and root in made
            and func.attr not in _MUTATORS and not func.attr.endswith("_")):
        return set(), False  # a method of what a course function returned, that changes nothing
    return arguments | {root}, False


def _names_in(call: ast.Call) -> set[str]:
    """Every name an argument of ``call`` reads (``f_(torch.as_tensor(X))`` may change X)."""
    return {node.id for argument in [*call.args, *(k.value for k in call.keywords)]
            for node in ast.walk(argument) if isinstance(node, ast.Name)}


def _made_by_a_call(node: ast.AST) -> bool:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return isinstance(node, (ast.Call, ast.BinOp, ast.UnaryOp, ast.Constant, ast.JoinedStr, ast.List,
                             ast.Tuple, ast.ListComp, ast.Dict, ast.Compare))


def made_by_the_course(sources: list[str], modules: dict[str, str]) -> frozenset[str]:
    """The names every binding of which, in any cell, is the result of one of the course's
    functions (``task = make_task(...)``, ``a, b = chapter_tasks()``; not of a class, such
    as an explorer): the course's objects are frozen and their methods pure (house rule),
    so only an array's or a container's own mutators (``_MUTATORS``) change one."""
    made: set[str] = set()
    other: set[str] = set()
    course_targets: set[int] = set()  # the name nodes bound by a course function's result
    for source in sources:
        try:
            body = parse(source).body
        except UNPARSEABLE:
            other.update(re.findall(r"[A-Za-z_]\w*", source))
            continue
        for node in run_now(body):
            value = getattr(node, "value", None)
            callee = dotted(value.func).rsplit(".", 1)[-1] if isinstance(value, ast.Call) else ""
            by_course = (isinstance(value, ast.Call) and not callee[:1].isupper()
                         and modules.get(_root(value.func) or "", "").startswith("attncourse"))  # not a class: a widget
            if isinstance(node, ast.Assign) and by_course:
                targets = [n for t in node.targets for n in ast.walk(t)]
                if all(isinstance(n, (ast.Name, ast.Tuple, ast.Load, ast.Store)) for n in targets):
                    made.update(n.id for n in targets if isinstance(n, ast.Name))
                    course_targets.update(id(n) for n in targets)
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in course_targets:
                other.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                other.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                other.update(imported_names(node))
    return frozenset(made - other)


def cells_to_skip(cells: list[tuple[str, bool]], reads_after: list[set[str]]) -> set[int]:
    """The indices of the cells that need not run. ``cells[i]``: (the source of a code
    cell, or "" for markdown; whether it is one of the course's cells, which may be
    skipped); ``reads_after[i]``: what cell ``i`` reads besides its source (a grader's
    recording cell: the exercise's names)."""
    modules = modules_of([source for source, _ in cells])
    functions: dict[str, set[str]] = {}
    made = made_by_the_course([source for source, _ in cells], modules)
    found = [effects(source, modules, functions, made) for source, _ in cells]
    needed: set[str] = set()
    skipped: set[int] = set()
    for i in reversed(range(len(cells))):
        cell, skippable = found[i], cells[i][1]
        if skippable and not cell.opaque and not cell.writes & needed:
            skipped.add(i)
        else:
            needed |= cell.reads | reads_after[i]
    return skipped
