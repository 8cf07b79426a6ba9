"""Key each chapter's execution cache on what it imports from attncourse.

Jupyter Book's execution cache (jupyter-cache, in ``_build/.jupyter_cache``) keys a
notebook on its own code cells only: a change to attncourse would not re-execute it. This
tool adds the rest of the key. For each chapter it collects, statically, every attncourse
module the chapter's code imports, transitively (imports inside functions included: they
run when the chapter calls them), the packages' ``__init__`` files on the way, and the
front-end files (``.js``, ``.css``) an explorer module passes to ``bundle`` or
``stylesheet``, with the JavaScript modules those import. The chapter's key is a hash of those files' contents; a
chapter whose key changed since the last build loses its cache record, so the build
executes it afresh, and only it.

A package that loads its names lazily (``attncourse.explorers``) lists where each lives in
a ``_HOMES`` dict literal of its ``__init__``: ``from attncourse.explorers import
GraphExplorer`` then depends on ``graph_explorer`` alone.

    python -m tools.chapter_cache            # before `jupyter-book build` (make book)
"""

from __future__ import annotations

import ast
import hashlib
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = "attncourse"
CACHE = ROOT / "_build" / ".jupyter_cache"
KEYS = ROOT / "_build" / ".attncourse-chapter-keys.json"
_JS_IMPORT = re.compile(r'^import \{[\w\s,]+\} from "\./([\w-]+\.js)";$', re.MULTILINE)
_FRONT_END = re.compile(r"[\w-]+\.(?:js|css)")


def _module_file(root: pathlib.Path, name: str) -> pathlib.Path | None:
    """The file of module ``name`` (a package's ``__init__.py``) under ``root``, or None."""
    path = root.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _lazy_homes(init: pathlib.Path) -> dict[str, str]:
    """A lazy package's ``_HOMES = {"Name": "submodule", ...}``, or {}."""
    for node in ast.parse(init.read_text()).body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_HOMES" for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            return {str(k.value): str(v.value) for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
    return {}


def imported_modules(tree: ast.AST, root: pathlib.Path, current: str = "") -> set[str]:
    """The attncourse modules an AST imports, wherever the import statement is.

    ``current`` is the importing module's name (for relative imports)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importing module's package, level - 1 up
                file = _module_file(root, current)
                package = current if file and file.name == "__init__.py" else current.rpartition(".")[0]
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            init = _module_file(root, base)
            for alias in node.names:
                if _module_file(root, f"{base}.{alias.name}"):
                    found.add(f"{base}.{alias.name}")  # a submodule
                elif init is not None and init.name == "__init__.py":
                    home = _lazy_homes(init).get(alias.name)
                    if home:
                        found.add(f"{base}.{home}")
    return {name for name in found if name == PACKAGE or name.startswith(PACKAGE + ".")}


def _front_end_files(path: pathlib.Path, tree: ast.AST) -> set[pathlib.Path]:
    """The .js/.css files beside ``path`` that its code passes to a call (``bundle(...)``,
    ``stylesheet(...)``), with the JavaScript modules they import."""
    named = {path.parent / arg.value for node in ast.walk(tree) if isinstance(node, ast.Call)
             for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
             and _FRONT_END.fullmatch(arg.value)}
    files, todo = set(), [p for p in named if p.is_file()]
    while todo:
        file = todo.pop()
        if file in files:
            continue
        files.add(file)
        if file.suffix == ".js":
            todo += [file.parent / name for name in _JS_IMPORT.findall(file.read_text())]
    return files


def dependencies(modules: set[str], root: pathlib.Path = ROOT) -> set[pathlib.Path]:
    """Every file the modules need: theirs, their packages' ``__init__``, what they import,
    transitively, and the front-end files they name."""
    files: set[pathlib.Path] = set()
    todo = sorted(modules)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:k]) for k in range(1, len(parts))]  # the packages' __init__
        path = _module_file(root, name)
        if path is None:
            continue
        files.add(path)
        tree = ast.parse(path.read_text())
        files |= _front_end_files(path, tree)
        todo += sorted(imported_modules(tree, root, name))
    return files


def chapter_modules(notebook: pathlib.Path, root: pathlib.Path = ROOT) -> set[str]:
    """The attncourse modules a notebook's code cells import (magics and shell lines left out)."""
    cells = json.loads(notebook.read_text())["cells"]
    modules = set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue  # a cell that is not Python: it imports nothing the key needs
        modules |= imported_modules(tree, root)
    return modules


def chapter_key(notebook: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    """A hash of the contents of every attncourse file the chapter needs."""
    digest = hashlib.sha256()
    for path in sorted(dependencies(chapter_modules(notebook, root), root)):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def stale_chapters(notebooks, keys_file: pathlib.Path, root: pathlib.Path = ROOT):
    """``(chapters whose key changed since keys_file was written, the new keys)``."""
    old = json.loads(keys_file.read_text()) if keys_file.is_file() else {}
    new = {str(nb.relative_to(root)): chapter_key(nb, root) for nb in notebooks}
    return [name for name, key in new.items() if old.get(name) != key], new


def clear(notebooks, cache_dir: pathlib.Path = CACHE, keys_file: pathlib.Path = KEYS,
          root: pathlib.Path = ROOT) -> list[str]:
    """Remove the cache records of the chapters whose key changed; remember the new keys.
    Returns the chapters cleared."""
    stale, keys = stale_chapters(notebooks, keys_file, root)
    if stale and cache_dir.exists():
        from jupyter_cache import get_cache

        cache = get_cache(cache_dir)
        paths = {str((root / name).resolve()) for name in stale}
        for record in cache.list_cache_records():
            if str(pathlib.Path(record.uri).resolve()) in paths:
                cache.remove_cache(record.pk)
    keys_file.parent.mkdir(parents=True, exist_ok=True)
    keys_file.write_text(json.dumps(keys, indent=1, sort_keys=True) + "\n")
    return stale


def main() -> None:
    notebooks = sorted((ROOT / "chapters").glob("*.ipynb"))
    cleared = clear(notebooks)
    print(f"chapter_cache: {len(cleared)} of {len(notebooks)} chapters to execute afresh"
          + (f": {', '.join(pathlib.Path(c).stem for c in cleared)}" if cleared else ""),
          file=sys.stderr)


if __name__ == "__main__":
    main()
