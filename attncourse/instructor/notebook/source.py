"""The one reader of a cell's source: parsed one at a time, IPython's magics read as
``pass``, the names a cell binds and reads, and the calls of the course's checks however
the call is laid out.

Python 3.11 keeps the depth of the syntax tree ``ast.parse`` is building in one place for
the whole process (CPython issue gh-106905). When a thread switch lands inside a parse (a
garbage collection that runs Python code can cause one) and another thread parses
meanwhile, the first fails with "SystemError: AST constructor recursion depth mismatch".
The grader reads notebooks in threads, so everything it parses goes through ``parse``,
one parse at a time: parsing takes milliseconds, running a notebook seconds.
"""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Iterable, Iterator

from attncourse.checks.core import check_name

# What Python raises for a cell it cannot parse: bad syntax, a null byte (ValueError before
# Python 3.11.4), nesting too deep for the parser (RecursionError, or MemoryError from its stack).
UNPARSEABLE = (SyntaxError, ValueError, RecursionError, MemoryError)
CHECK_MODULES = ("check", "checks")  # how a notebook names the checks: check.NAME(...), attncourse.checks.NAME(...)

_ONE_AT_A_TIME = threading.Lock()


def parse(source: str) -> ast.Module:
    """``ast.parse(source)``, never while another thread parses; raises one of UNPARSEABLE
    for source Python cannot parse."""
    with _ONE_AT_A_TIME:
        return ast.parse(source)


def is_magic(line: str) -> bool:
    """An IPython magic (``%time``, ``%%time``) or shell line (``!pip``): not Python."""
    return line.lstrip().startswith(("%", "!"))


def has_magics(source: str) -> bool:
    return any(map(is_magic, source.splitlines()))


def parse_cell(source: str) -> ast.Module:
    """``parse`` of a notebook cell, its magic and shell lines read as ``pass`` (so that the
    other lines keep their numbers)."""
    return parse("".join("pass\n" if is_magic(line) else line
                         for line in source.splitlines(keepends=True)))


def imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The names an import statement binds (``import a.b`` binds ``a``)."""
    return [(alias.asname or alias.name).split(".")[0] for alias in node.names]


def defined_names(source: str) -> set[str]:
    """The names a cell binds at its top level (IPython's magics and shell lines aside); a
    cell Python cannot parse is read with a pattern, as best it can."""
    try:
        tree = parse_cell(source)
    except UNPARSEABLE:
        # [ \t], not \s, at a line's start: \s would run over every blank line below each one
        # (time quadratic in a run of blank lines, the whole grader waiting on it).
        return set(re.findall(r"^[ \t]*(?:def[ \t]+|class[ \t]+)?([A-Za-z_]\w*)[ \t]*(?:\(|=[^=]|:)", source, re.MULTILINE))
    found: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)  # what it binds inside is its own
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(imported_names(node))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif not isinstance(node, ast.Lambda):
            pending += list(ast.iter_child_nodes(node))
    return found


def names_read(source: str) -> set[str]:
    """The names a cell reads from the cells before it (``outer_reads``), magics aside; none for a
    cell Python cannot parse."""
    try:
        return outer_reads(parse_cell(source).body)
    except UNPARSEABLE:
        return set()


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _start(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]  # every node given has a position


def _end(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0


def outer_reads(body: list[ast.stmt]) -> set[str]:
    """The names a cell reads from the cells before it: every name it reads, except where
    the cell has bound it before reading it (a loop's variable read in its loop, a name
    assigned above) and a function's, lambda's or comprehension's own names inside it.
    A function's other names count as read now, though read when it is called."""
    bound: dict[str, tuple[int, int]] = {}  # name -> where the cell first binds it
    loads: list[tuple[str, tuple[int, int]]] = []  # the cell's own reads, where
    inner: set[str] = set()  # what functions, lambdas and comprehensions read from outside

    def bind(target: ast.AST, at: tuple[int, int]) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                bound[node.id] = min(bound.get(node.id, at), at)

    def visit(node: ast.AST, local: frozenset[str] | None) -> None:
        """``local``: the names of the function or comprehension ``node`` is in (None: the cell)."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            for outer in [*getattr(node, "decorator_list", []), *arguments.defaults,
                          *(d for d in arguments.kw_defaults if d)]:
                visit(outer, local)
            names = frozenset(parameters(arguments))
            if isinstance(node, ast.Lambda):
                visit(node.body, (local or frozenset()) | names)
                return
            if local is None:
                bound.setdefault(node.name, _end(node))
            for statement in node.body:
                visit(statement, (local or frozenset()) | names | local_names(node))
            return
        if isinstance(node, _COMPREHENSIONS):
            visit(node.generators[0].iter, local)  # evaluated outside the comprehension
            names = (local or frozenset()) | {n.id for g in node.generators for n in ast.walk(g.target)
                                              if isinstance(n, ast.Name)}
            parts = [*(g.iter for g in node.generators[1:]), *(c for g in node.generators for c in g.ifs)]
            parts += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for part in parts:
                visit(part, names)
            return
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, (ast.Load, ast.Del)):
                if local is None:
                    loads.append((node.id, _start(node)))
                elif node.id not in local:
                    inner.add(node.id)
            return
        if local is None:
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                loads.append((node.target.id, _start(node)))  # x += 1 reads x first
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    bind(target, _end(node))
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                bind(node.target, _end(node.iter))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                bind(node.optional_vars, _end(node.context_expr))
            elif isinstance(node, ast.NamedExpr):
                bind(node.target, _end(node))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in imported_names(node):
                    bound[name] = min(bound.get(name, _end(node)), _end(node))
            elif isinstance(node, ast.ClassDef):
                bound.setdefault(node.name, _end(node))
        for child in ast.iter_child_nodes(node):
            visit(child, local)

    for statement in body:
        visit(statement, None)
    return inner | {name for name, at in loads if not (name in bound and bound[name] <= at)}


def local_names(definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    """The names a function's (or class's) body binds for itself: its parameters and what
    it assigns. Changing them changes no name of the notebook's (a parameter's object is
    its caller's argument, counted at the call; ``global`` makes the body opaque)."""
    names = {node.id for node in run_now(definition.body) if isinstance(node, ast.Name)
             and isinstance(node.ctx, (ast.Store, ast.Del))}
    names |= {node.name for node in run_now(definition.body)
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names |= parameters(definition.args)
    return names


def parameters(arguments: ast.arguments) -> set[str]:
    return {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                            arguments.vararg, arguments.kwarg] if a}


def run_now(body: Iterable[ast.AST]) -> Iterator[ast.AST]:
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


# ---------------------------------------------------------------------------------------
# Code that reaches into modules


# Modules whose only use in an answer is to look at or change the running process: the
# frames and stacks, the garbage collector, the interpreter's own names, exit hooks.
PROCESS_MODULES = frozenset({"inspect", "traceback", "faulthandler", "gc", "ctypes", "importlib", "builtins",
                             "atexit", "tracemalloc", "_thread", "signal"})
# Settings a module offers to be set (``torch.backends.cudnn.deterministic = True``,
# ``pd.options.display.max_rows = 10``, ``plt.rcParams[...] = ...``, ``sys.path += [...]``):
# not a patch.
_SETTINGS = frozenset({"backends", "options", "rcParams", "argv", "path", "filters", "level"})


def _trees(sources: Iterable[str]) -> list[ast.Module]:
    trees = []
    for source in sources:
        try:
            trees.append(parse_cell(source))
        except UNPARSEABLE:
            continue  # the text patterns read it
    return trees


def _root_and_path(node: ast.AST) -> tuple[str | None, list[str]]:
    """The name an attribute or item chain starts from, and the attributes on the way."""
    path = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            path.append(node.attr)
        node = node.value
    return (node.id if isinstance(node, ast.Name) else None), path


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        found = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        found = [node.target]
    elif isinstance(node, ast.Delete):
        found = list(node.targets)
    else:
        return []
    flat: list[ast.AST] = []
    while found:
        target = found.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            found += target.elts
        else:
            flat.append(target.value if isinstance(target, ast.Starred) else target)
    return flat


def reaches_into_modules(learners: Iterable[str], notebook: Iterable[str]) -> str | None:
    """The first line of the ``learners`` cells that changes a module or imports one of
    PROCESS_MODULES, as written (None if none does): an assignment to, or a deletion of, an
    attribute of a name bound by an import in any cell of ``notebook`` (or an alias of
    one: ``N = numpy``), however deep (``N.ndarray = ...``, ``json.dumps = ...``,
    ``np.__dict__["x"] = ...``, ``del time.monotonic``). Item assignments into a module's
    settings (``plt.rcParams[...]``) and attributes under ``backends`` or ``options`` are
    settings, not patches. Cells Python cannot parse are left to the text patterns."""
    modules: set[str] = set()
    every = _trees(notebook)
    for tree in every:
        modules.update(name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                       for name in imported_names(node))
    learners_trees = _trees(learners)
    # A name the learner's own def or class binds is theirs (an imported softmax redefined
    # with a counter of its calls), unless an import binds it too.
    modules -= {node.name for tree in learners_trees for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    modules |= {name for tree in every for node in ast.walk(tree) if isinstance(node, ast.Import)
                for name in imported_names(node)}
    for _ in range(3):  # an alias of an alias
        modules.update(name for tree in every for node in ast.walk(tree) for name in _aliases(node, modules))
    for tree in learners_trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTRIBUTE_WRITERS \
                    and node.args and (_root_and_path(node.args[0])[0] in modules or isinstance(node.args[0], ast.Call)):
                return ast.unparse(node)[:80]  # setattr(json, ...), vars(threading)[...]
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imported = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(name.split(".")[0] in PROCESS_MODULES for name in imported):
                    return ast.unparse(node)[:80]
            for target in _targets(node):
                root, path = _root_and_path(target)
                if not isinstance(target, (ast.Attribute, ast.Subscript)):
                    continue
                if root is None and _reaches_in(_base(target)):  # vars(json)["dumps"] = ..., (m := json).dumps = ...
                    return (ast.unparse(target) + " = ...")[:80]
                if root in modules and ("__dict__" in path
                                        or (isinstance(target, ast.Attribute) and not _SETTINGS & set(path))):
                    return (ast.unparse(target) + " = ...")[:80]
    return None


# What reads or writes any object's attributes by name: on a module, a way to change it.
_ATTRIBUTE_WRITERS = frozenset({"setattr", "delattr", "vars"})
# Calls that hand out a module, a namespace or the kernel: an assignment through one reaches in.
_REACHING_CALLS = frozenset({"vars", "globals", "locals", "getattr", "__import__", "get_ipython"})


def _base(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def _reaches_in(base: ast.AST) -> bool:
    """Whether an assignment through ``base`` (what is no name) may change a module: not
    when ``base`` is an ordinary call (``plt.gcf().dpi = 80``)."""
    if not isinstance(base, ast.Call):
        return True  # (m := json), [json][0]...
    return isinstance(base.func, ast.Name) and base.func.id in _REACHING_CALLS


def _aliases(node: ast.AST, modules: set[str]) -> list[str]:
    """The names ``node`` binds to a module of ``modules``, or to what lies inside one:
    ``M = json``, ``T = threading.Thread``, ``for m in (json,)``, ``(m := json)``."""
    def is_module(value: ast.AST) -> bool:
        return _root_and_path(value)[0] in modules and isinstance(value, (ast.Name, ast.Attribute))

    if isinstance(node, (ast.Assign, ast.NamedExpr)) and is_module(node.value):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [t.id for t in targets if isinstance(t, ast.Name)]
    if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)) \
            and any(is_module(item) for item in node.iter.elts):
        return [t.id for t in ast.walk(node.target) if isinstance(t, ast.Name)]
    if isinstance(node, ast.withitem) and is_module(node.context_expr) and isinstance(node.optional_vars, ast.Name):
        return [node.optional_vars.id]
    return []


# ---------------------------------------------------------------------------------------
# Calls of the course's checks


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for an attribute chain (its root's name first; ``?`` for a root that is no name)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([getattr(node, "id", "?"), *reversed(parts)])


def is_check_call(node: ast.AST, names: Iterable[str] = ()) -> bool:
    """Whether ``node`` calls a check: ``check.NAME(...)``, ``checks.NAME(...)`` or
    ``attncourse.checks.NAME(...)`` (any module path ending in ``check`` or ``checks``), or,
    for a NAME of ``names``, ``anything.NAME(...)`` (a cell that is a check cell by its tag
    may call the check through a name of its own)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    return node.func.attr in set(names) or dotted(node.func.value).rsplit(".", 1)[-1] in CHECK_MODULES


def check_calls(source: str, names: Iterable[str] = ()) -> list[ast.Call]:
    """Every call of a check in ``source`` (``is_check_call``), in the order of the source,
    whatever its layout: on one line or several, with a trailing comma or a comment."""
    try:
        tree = parse_cell(source)
    except UNPARSEABLE:
        return []
    found = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and is_check_call(node, names)]
    return sorted(found, key=_start)


def checks_called(source: str) -> set[str]:
    """The names of the checks a cell calls, if it does nothing else (its other statements
    are imports); an empty set for any other cell."""
    try:
        body = parse_cell(source).body
    except UNPARSEABLE:
        return set()
    called: set[str] = set()
    for statement in body:
        if isinstance(statement, ast.Expr) and is_check_call(statement.value):
            called.add(statement.value.func.attr)  # type: ignore[attr-defined]  # a check call's is an attribute
        elif not isinstance(statement, (ast.Import, ast.ImportFrom)):
            return set()
    return called


def calls_of_check(label: str, source: str) -> list[ast.Call]:
    """The calls of exercise ``label``'s check in ``source`` (``check_calls``, its name
    ``check_name(label)`` accepted on any module name), in the order of the source."""
    name = check_name(label)
    return [call for call in check_calls(source, {name}) if call.func.attr == name]  # type: ignore[attr-defined]
