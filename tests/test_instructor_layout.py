"""The grader's house (``attncourse.instructor``): no two of its modules import each other
in a cycle, importing it loads no kernel machinery, every module opens with its job, and
the statuses of a row are written in one module."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attncourse import instructor
from attncourse.instructor import model

PACKAGE = Path(instructor.__file__).parent
KERNEL_MACHINERY = ("zmq", "jupyter_client", "nbclient")


def module_names() -> dict[str, Path]:
    """Every module of the package by its dotted name (a folder's ``__init__.py`` by the folder's)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``name`` imports: at its top, inside a function (a deferred
    import) or under ``if TYPE_CHECKING``, all alike; for the package itself, also the
    modules its names are loaded from on first use (``_HOMES``)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package that holds the module
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])])
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names)
    if name == instructor.__name__:
        found.update(f"{name}.{home}" for home in instructor._HOMES.values())
    return {module for module in found if module in modules and module != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module in ``graph`` (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imported(name, path, set(modules)) for name, path in modules.items()}


def test_the_cycle_finder_finds_a_cycle_through_any_number_of_modules():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_of_the_grader_imports_another_in_a_cycle():
    graph = import_graph()
    assert len(graph) > 25
    assert "attncourse.instructor.grading" in graph["attncourse.instructor.cli"]  # a deferred import, counted
    assert "attncourse.instructor.model" in graph["attncourse.instructor.gradebook.ledger"]
    assert cycles(graph) == []


def test_the_records_module_imports_no_other_module_of_the_grader():
    assert import_graph()["attncourse.instructor.model"] == set()


def test_importing_the_package_or_its_tools_before_grading_loads_no_kernel_machinery():
    """In a fresh interpreter: the package, its names, the command line and the tools
    that need no kernel load none of zmq, jupyter_client and nbclient; grading does."""
    light = ["attncourse.instructor", "attncourse.instructor.course.tags", "attncourse.instructor.cli",
             "attncourse.instructor.gradescope", "attncourse.instructor.gradebook.export",
             "attncourse.instructor.course.student", "attncourse.instructor.model"]
    loaded = f"sorted(m for m in {KERNEL_MACHINERY!r} if m in sys.modules)"
    code = "\n".join(["import sys", *(f"import {name}" for name in light),
                      "from attncourse.instructor import Grade, PASSED, write_report, Limits, main",
                      f"print({loaded})", "import attncourse.instructor.grading", f"print({loaded})"])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after = done.stdout.splitlines()
    assert before == "[]"
    assert after == str(sorted(KERNEL_MACHINERY))  # grading runs kernels: the test sees them load


@pytest.mark.parametrize("name", sorted(module_names()))
def test_every_module_opens_with_its_job(name):
    docstring = ast.get_docstring(ast.parse(module_names()[name].read_text(encoding="utf-8")))
    assert docstring and docstring.split("\n\n")[0].rstrip().endswith("."), name


def test_a_rows_statuses_are_spelt_in_the_records_module_alone():
    """Elsewhere a status is named (``model.PASSED``), never spelt out: the same word in
    another vocabulary (Jupyter's output type ``"error"``) has a name of its own there too."""
    spelt = []
    for name, path in module_names().items():
        if name == model.__name__:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in model.STATUSES:
                spelt.append((name, node.value, node.lineno))
    assert spelt == []


def _resolves(reference: str) -> bool:
    """Whether ``reference`` (``grading.grade_into``, ``Ledger.save``,
    ``attncourse.checks.wire.export``) names something that exists: a module of the grader's
    or of the package, then attributes of it; or a name of a module of the grader's, then
    attributes of that."""
    import importlib

    parts = reference.split(".")
    starts = [(f"{instructor.__name__}.{'.'.join(parts[:n])}", parts[n:]) for n in range(len(parts), 0, -1)]
    starts += [(".".join(parts[:n]), parts[n:]) for n in range(len(parts), 0, -1)]
    starts += [(name, parts) for name in module_names()]  # a class or function of one of its modules
    for module, rest in starts:
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        for attribute in rest:
            found = getattr(found, attribute, None)
        if found is not None:
            return True
    return False


def test_the_guides_walk_through_grading_names_functions_that_exist():
    guide = (PACKAGE.parents[1] / "instructor_guide.md").read_text(encoding="utf-8")
    start = guide.index("## How grading works")
    section = guide[start:guide.index("\n## ", start + 1)]
    steps = [int(step) for step in re.findall(r"^(\d+)\. \*\*", section, re.M)]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 6  # a numbered walk-through
    references = {name for name in re.findall(r"`([A-Za-z_][\w.]*\.[A-Za-z_]\w*)`", section)
                  if not name.endswith((".py", ".md", ".csv", ".json"))}  # a file's name
    assert len(references) > 30
    assert sorted(name for name in references if not _resolves(name)) == []
    assert not _resolves("grading.no_such_function") and not _resolves("NoSuchClass.save")
