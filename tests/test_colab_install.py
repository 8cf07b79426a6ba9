"""Each chapter's Colab install cell installs what the chapter imports: every third-party
module its code cells import, and the attncourse modules they import in turn (lazy imports
included), comes from a package the cell names, from what such a package requires, or from
what Colab itself provides (COLAB_PROVIDES). Chapters 4 and 6-9 imported myst_nb's glue and
installed no myst-nb: in Colab they failed at their first cell."""

from __future__ import annotations

import ast
import importlib.metadata
import shlex
import sys
import tomllib

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import tools

# Distributions Colab's runtime has and the install cells rely on: the kernel itself, and
# Colab's own torch (pip would otherwise fetch a multi-GB CUDA build to replace it).
COLAB_PROVIDES = {"ipython": "Colab's kernel", "torch": "Colab's own build"}
PROJECT = tomllib.loads((tools.ROOT / "pyproject.toml").read_text())["project"]


def imports(source: str) -> set[str]:
    """The dotted names a cell imports (``from a.b import c`` gives a.b and a.b.c); IPython
    magics are turned into Python first, as the kernel does."""
    names = set()
    for node in ast.walk(ast.parse(TransformerManager().transform_cell(source))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def third_party_modules(names: set[str]) -> set[str]:
    """The top-level third-party modules ``names`` import, following attncourse's modules
    (and the packages above them) through their own imports."""
    seen, todo, found = set(), list(names), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        top = name.split(".")[0]
        if top == "attncourse":
            parts = name.split(".")
            todo += [".".join(parts[:i]) for i in range(1, len(parts))]
            path = tools.ROOT.joinpath(*parts)
            for module in (path.with_suffix(".py"), path / "__init__.py"):
                if module.exists():
                    todo += imports(module.read_text())
        elif top not in sys.stdlib_module_names:
            found.add(top)
    return found


def install_cell(nb) -> str:
    cells = [c.source for c in nb.cells if c.cell_type == "code" and "google.colab" in c.source]
    assert len(cells) == 1, "no single Colab install cell"
    return cells[0]


def named(cell: str) -> list[tuple[Requirement, bool]]:
    """The requirements the cell's `%pip install` lines name, each with whether pip installs
    what it requires too (not on a --no-deps line)."""
    found = []
    for line in cell.splitlines():
        if line.strip().startswith(("%pip install", "!pip install")):
            words = shlex.split(line.strip())[2:]
            found += [(Requirement(word), "--no-deps" not in words)
                      for word in words if not word.startswith("-")]
    return found


def provided(requirements: list[tuple[Requirement, bool]]) -> set[str]:
    """The distributions the requirements install: themselves and, unless installed without
    them, what they require, in turn (attncourse's from pyproject.toml, the others' from
    their installed metadata)."""
    done, todo = set(), list(requirements)
    while todo:
        requirement, with_requirements = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in done:
            continue
        done.add(name)
        if not with_requirements:
            continue
        if name == "attncourse":
            needs = PROJECT["dependencies"] + [
                need for extra in requirement.extras for need in PROJECT["optional-dependencies"][extra]]
        else:
            needs = importlib.metadata.requires(name) or []
        todo += [(need, True) for need in map(Requirement, needs)
                 if not need.marker or need.marker.evaluate({"extra": ""})]
    return done


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_the_install_cell_installs_what_the_chapter_imports(entry):
    nb = nbformat.read(tools.ROOT / f"{entry}.ipynb", as_version=4)
    modules = third_party_modules(
        {name for cell in nb.cells if cell.cell_type == "code" for name in imports(cell.source)})
    distributions = importlib.metadata.packages_distributions()
    installed = provided(named(install_cell(nb))) | set(COLAB_PROVIDES)
    missing = {module: distributions[module][0] for module in modules
               if canonicalize_name(distributions[module][0]) not in installed}
    assert "myst_nb" in modules and "attncourse" not in modules
    assert not missing, f"{entry}: Colab's install cell does not install {missing}"


def test_the_reading_of_imports_and_requirements():
    assert imports("%pip install x\nimport a.b, c\nfrom d.e import f") == {"a.b", "c", "d.e", "d.e.f"}
    assert third_party_modules({"attncourse.reader_edition"}) >= {"markdown_it", "mdit_py_plugins"}
    cell = ('%pip install --quiet myst-nb "attncourse[torch] @ git+https://x/y@b" t\n'
            "!pip install -q --no-deps jupyter-book")
    assert [(r.name, deps) for r, deps in named(cell)] == [
        ("myst-nb", True), ("attncourse", True), ("t", True), ("jupyter-book", False)]
    assert {"numpy", "torch", "myst-nb", "sphinx"} <= provided(named(cell)[:2])
    assert provided(named(cell)[3:]) == {"jupyter-book"}
