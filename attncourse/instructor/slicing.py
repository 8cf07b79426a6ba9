"""Which of the course's own cells a learner's notebook must run for its grade.

A chapter's notebook holds far more than its exercises: figures, surveys over a real
model, training demos. Run whole, chapter 7 alone takes minutes per learner. The grade
needs only what the recorded answers are made of, so ``grade`` runs every cell the
learner wrote or changed, and of the course's own cells (unchanged, character for
character) only those that may change a name a later cell that runs reads.

"May change" is read from the cell's source, erring towards running it: a name bound or
deleted, an attribute or item assigned on it, a method called on it or any call it is
passed to (except the course's own functions, which never change their arguments, and
module functions other than in-place ones), and, through a function the notebook defines,
whatever that function's body may change. A cell that may change state no name shows
(a magic, ``global``, seeding or setting a module's state, a syntax error) always runs.

A slice can only confirm: ``grading`` runs the whole notebook again for any exercise
the sliced run did not pass or find unstarted (see ``grading._run_notebook``).
"""

from __future__ import annotations

import ast
import builtins
import re

# A module function that changes state no argument shows: seeding, a global setting, a draw
# from a global random generator (numpy's, python's, torch's; torch.nn's layers draw theirs).
_GLOBAL_STATE = re.compile(r"seed|^set_|^use_|filterwarnings|seterr|printoptions|^rand|^normal$|^bernoulli|^multinomial")
_DRAWS = re.compile(r"(^|\.)(random|nn)(\.|$)")
# Module functions that change an argument in place (torch's in-place functions end in "_").
_IN_PLACE = {"fill_diagonal", "copyto", "put", "place", "putmask", "put_along_axis", "shuffle"}
# Modules whose functions change no argument: the course's (house rule: pure functions), and display.
_PURE_MODULES = ("attncourse", "matplotlib", "IPython", "myst_nb")
_UNSAFE_BUILTINS = {"exec", "eval", "setattr", "delattr", "globals", "locals", "vars", "__import__", "compile", "open",
                    "input", "breakpoint", "exit", "quit", "next", "iter"}
_PURE_BUILTINS = frozenset(dir(builtins)) - _UNSAFE_BUILTINS


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


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for an attribute chain (its root's name first)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([getattr(node, "id", "?"), *reversed(parts)])


def modules_of(sources: list[str]) -> dict[str, str]:
    """name -> the module it comes from, by the import statements of ``sources``
    (``from attncourse.x import f`` gives ``f`` from ``attncourse.x``)."""
    found: dict[str, str] = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    found[alias.asname or alias.name] = node.module
    return found


def effects(source: str, modules: dict[str, str], functions: dict[str, set[str]]) -> _Effects:
    """The effects of a cell (``functions``: what each function or class the notebook has
    defined so far may change when called; the cell's own definitions are added)."""
    words = set(re.findall(r"[A-Za-z_]\w*", source))
    if any(line.lstrip().startswith(("%", "!")) for line in source.splitlines()):
        return _Effects(words, words, True)
    try:
        return _effects_of(ast.parse(source).body, modules, functions)
    except (SyntaxError, RecursionError, ValueError):  # ValueError: a null byte
        return _Effects(words, words, True)


def _effects_of(body: list[ast.stmt], modules: dict[str, str], functions: dict[str, set[str]]) -> _Effects:
    tree = ast.Module(body=body, type_ignores=[])
    for node in _definitions(body):  # a function changes, when called, what its body may change
        functions[node.name] = set()  # while its body is read (it may call itself)
        inner = _effects_of(node.body, modules, dict(functions))
        functions[node.name] = inner.writes | ({"*"} if inner.opaque else set())
    reads = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    writes: set[str] = set()
    opaque = False
    for node in _run_now(body):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            opaque = True
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            writes.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            writes.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            writes.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            writes.add(_root(node) or "*")
        elif isinstance(node, ast.Call):
            changed, global_state = _call_effects(node, modules, functions)
            writes |= changed
            opaque = opaque or global_state
    return _Effects(reads, writes, opaque or "*" in writes)


def _run_now(body: list[ast.stmt]):
    """The nodes of ``body`` that run when it runs: a function's or lambda's body runs when
    it is called (its effects are counted there), its decorators and defaults now; a
    class's body runs now."""
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending += [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)]
        elif isinstance(node, ast.Lambda):
            pending += [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
        else:
            pending += list(ast.iter_child_nodes(node))


def _definitions(body: list[ast.stmt]) -> list:
    """The functions and classes defined in ``body``, not inside another definition (each
    body is read once: nested definitions cost no more than their depth)."""
    found, pending = [], list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node)
        elif not isinstance(node, ast.Lambda):
            pending += list(ast.iter_child_nodes(node))
    return found


def _call_effects(call: ast.Call, modules: dict[str, str], functions: dict[str, set[str]]) -> tuple[set[str], bool]:
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
        dotted = modules[root] + _dotted(func)[len(root):]
        if dotted.startswith(_PURE_MODULES):
            return set(), False
        if _GLOBAL_STATE.search(func.attr) or (_DRAWS.search(dotted) and func.attr != "default_rng"):
            return set(), True
        in_place = func.attr in _IN_PLACE or func.attr.endswith("_") or any(k.arg == "out" for k in call.keywords)
        return (arguments if in_place else set()), False
    if root is None and _made_by_a_call(func):
        return arguments, False  # what a call just made, or its method: only its arguments are shared
    if root is None:
        return arguments, True
    return arguments | {root}, False


def _made_by_a_call(node: ast.AST) -> bool:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return isinstance(node, (ast.Call, ast.BinOp, ast.UnaryOp, ast.Constant, ast.JoinedStr, ast.List,
                             ast.Tuple, ast.ListComp, ast.Dict, ast.Compare))


def cells_to_skip(cells: list[tuple[str, bool]], reads_after: list[set[str]]) -> set[int]:
    """The indices of the cells that need not run. ``cells[i]``: (the source of a code
    cell, or "" for markdown; whether it is one of the course's cells, which may be
    skipped); ``reads_after[i]``: what cell ``i`` reads besides its source (a grader's
    recording cell: the exercise's names)."""
    modules = modules_of([source for source, _ in cells])
    functions: dict[str, set[str]] = {}
    found = [effects(source, modules, functions) for source, _ in cells]
    needed: set[str] = set()
    skipped: set[int] = set()
    for i in reversed(range(len(cells))):
        cell, skippable = found[i], cells[i][1]
        if skippable and not cell.opaque and not cell.writes & needed:
            skipped.add(i)
        else:
            needed |= cell.reads | reads_after[i]
    return skipped
