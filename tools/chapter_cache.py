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

A package that loads its names lazily (``attncourse.explorers``, ``attncourse.checks``)
lists where each lives in a ``_HOMES`` dict literal of its ``__init__``: ``from
attncourse.explorers import GraphExplorer`` then depends on ``graph_explorer`` alone, and
``from attncourse import checks as check`` followed by ``check.rope(...)`` on ``checks/ch8``
alone (an attribute of a name bound to a package is looked up in its ``_HOMES``, or is a
submodule: ``check.ch7``). A name the package loads by a computed name (``getattr``,
``checks.load_all()``) is not seen: chapters use their names literally.

Then it executes every chapter the cache holds no run of, ``WORKERS`` at a time (the
longest first: see :func:`execution_order`), into the cache, as the build would one at a
time: the build then finds each run there. A chapter that fails here is left out of the cache; the
build runs it again, and fails on it with its report.

    python -m tools.chapter_cache            # before `jupyter-book build` (make book)
"""

from __future__ import annotations

import ast
import concurrent.futures
import functools
import hashlib
import json
import multiprocessing
import pathlib
import re
import sys
import time

import tools

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = "attncourse"
CACHE = ROOT / "_build" / ".jupyter_cache"
KEYS = ROOT / "_build" / ".attncourse-chapter-keys.json"
_JS_IMPORT = re.compile(r'^import \{[\w\s,]+\} from "\./([\w-]+\.js)";$', re.MULTILINE)
_FRONT_END = re.compile(r"[\w-]+\.(?:js|css)")
WORKERS = 2  # chapters executed at once (make test's pytest runs -n 2 too)


def _module_file(root: pathlib.Path, name: str) -> pathlib.Path | None:
    """The file of module ``name`` (a package's ``__init__.py``) under ``root``, or None."""
    path = root.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _lazy_homes(init: pathlib.Path) -> dict[str, str]:
    """A lazy package's ``_HOMES = {"Name": "submodule", ...}``, or {}."""
    return _homes_in(init.read_text())


@functools.lru_cache(maxsize=64)  # keyed on the text: read for every name a chapter uses
def _homes_in(source: str) -> dict[str, str]:
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_HOMES" for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            return {str(k.value): str(v.value) for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
    return {}


def _attribute_path(node: ast.Attribute) -> list[str] | None:
    """``a.b.c`` -> ["a", "b", "c"]; None if the chain does not start at a name."""
    names = []
    value: ast.expr = node
    while isinstance(value, ast.Attribute):
        names.append(value.attr)
        value = value.value
    return [value.id, *reversed(names)] if isinstance(value, ast.Name) else None


def _used_attributes(attributes: list[ast.Attribute], bound: dict[str, str], root: pathlib.Path) -> set[str]:
    """The modules behind attributes of names bound to packages (``bound``: name -> module):
    ``check.rope`` with ``check`` bound to attncourse.checks is attncourse.checks.ch8 (from the
    package's ``_HOMES``); ``check.ch7`` is the submodule attncourse.checks.ch7."""
    found = set()
    for node in attributes:
        path = _attribute_path(node)
        if not path or path[0] not in bound or not _ours(bound[path[0]]):
            continue
        module = bound[path[0]]
        for attr in path[1:]:
            init = _module_file(root, module)
            if _module_file(root, f"{module}.{attr}"):
                module = f"{module}.{attr}"
                found.add(module)
                continue
            if init is not None and init.name == "__init__.py" and attr in _lazy_homes(init):
                found.add(f"{module}.{_lazy_homes(init)[attr]}")
            break
    return found


def imported_modules(tree: ast.AST, root: pathlib.Path, current: str = "") -> set[str]:
    """The attncourse modules an AST imports, wherever the import statement is, and those
    its attributes of imported packages reach (see :func:`_used_attributes`).

    ``current`` is the importing module's name (for relative imports)."""
    found = set()
    bound: dict[str, str] = {}  # a name the code binds to a module -> that module
    attributes = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            attributes.append(node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
                if alias.asname:  # import a.b as c: c is a.b
                    bound[alias.asname] = alias.name
                else:  # import a.b: a is a
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
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
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif init is not None and init.name == "__init__.py":
                    home = _lazy_homes(init).get(alias.name)
                    if home:
                        found.add(f"{base}.{home}")
    found |= _used_attributes(attributes, bound, root)
    return {name for name in found if _ours(name)}


def _ours(module: str) -> bool:
    return module == PACKAGE or module.startswith(PACKAGE + ".")


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


def _module_needs(name: str, root: pathlib.Path):
    """``(the module's file, the modules it imports, the front-end files it names)``, or
    None if ``name`` is no module under ``root``."""
    path = _module_file(root, name)
    if path is None:
        return None
    tree = ast.parse(path.read_text())
    return path, imported_modules(tree, root, name), _front_end_files(path, tree)


def dependencies(modules: set[str], root: pathlib.Path = ROOT, read: dict | None = None) -> set[pathlib.Path]:
    """Every file the modules need: theirs, their packages' ``__init__``, what they import,
    transitively, and the front-end files they name. ``read`` keeps each module's reading
    for the next call (the chapters of one build share most modules)."""
    read = {} if read is None else read
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
        if name not in read:
            read[name] = _module_needs(name, root)
        if read[name] is None:
            continue
        path, imported, front_end = read[name]
        files |= {path, *front_end}
        todo += sorted(imported)
    return files


def chapter_modules(notebook: pathlib.Path, root: pathlib.Path = ROOT) -> set[str]:
    """The attncourse modules a notebook's code cells import (magics and shell lines left out)."""
    cells = json.loads(notebook.read_text())["cells"]
    statements: list[ast.stmt] = []  # every cell's, in order: a name one cell binds, later cells use
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
        try:
            statements += ast.parse("\n".join(lines)).body
        except SyntaxError:
            continue  # a cell that is not Python: it imports nothing the key needs
    return imported_modules(ast.Module(body=statements, type_ignores=[]), root)


def chapter_key(notebook: pathlib.Path, root: pathlib.Path = ROOT, read: dict | None = None) -> str:
    """A hash of the contents of every attncourse file the chapter needs (``read``: see
    :func:`dependencies`)."""
    digest = hashlib.sha256()
    for path in sorted(dependencies(chapter_modules(notebook, root), root, read)):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def stale_chapters(notebooks, keys_file: pathlib.Path, root: pathlib.Path = ROOT):
    """``(chapters whose key changed since keys_file was written, the new keys)``."""
    old = json.loads(keys_file.read_text()) if keys_file.is_file() else {}
    read: dict = {}  # the modules as they are now, read once for all the chapters
    new = {str(nb.relative_to(root)): chapter_key(nb, root, read) for nb in notebooks}
    return [name for name, key in new.items() if old.get(name) != key], new


def clear(notebooks, cache_dir: pathlib.Path = CACHE, keys_file: pathlib.Path = KEYS,
          root: pathlib.Path = ROOT, last_seconds: dict | None = None) -> list[str]:
    """Remove the cache records of the chapters whose key changed; remember the new keys.
    Returns the chapters cleared; ``last_seconds`` (path -> seconds), if given, gets how
    long each cleared chapter's last run took."""
    stale, keys = stale_chapters(notebooks, keys_file, root)
    if stale and cache_dir.exists():
        from jupyter_cache import get_cache

        cache = get_cache(cache_dir)
        # By the path inside the checkout, not the absolute one: a cache copied from another
        # checkout names that checkout's chapters, and its stale runs must go too.
        names = {pathlib.PurePosixPath(name).parts for name in stale}
        for record in cache.list_cache_records():
            path = str(pathlib.Path(record.uri).resolve())
            if any(pathlib.PurePosixPath(path).parts[-len(name):] == name for name in names):
                if last_seconds is not None and "execution_seconds" in record.data:
                    last_seconds[path] = record.data["execution_seconds"]
                cache.remove_cache(record.pk)
    keys_file.parent.mkdir(parents=True, exist_ok=True)
    keys_file.write_text(json.dumps(keys, indent=1, sort_keys=True) + "\n")
    return stale


def unexecuted(notebooks, cache_dir: pathlib.Path = CACHE) -> list[pathlib.Path]:
    """The notebooks the execution cache has no run of (jupyter-cache matches a notebook on
    its code cells and kernel): those the build would execute."""
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(cache_dir)
    missing = []
    for path in notebooks:
        try:
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            missing.append(pathlib.Path(path))
    return missing


def execution_order(notebooks, last_seconds: dict[str, float]) -> list[pathlib.Path]:
    """The longest first, so that no long chapter runs alone at the end: a chapter the
    cache had a run of by its seconds (``last_seconds``: resolved path -> seconds, from
    :func:`clear`); before those, the chapters never run here (a clean clone), the later
    chapters first (they run the larger models: chapter 7 a real one).

    >>> [p.name for p in execution_order([pathlib.Path(f"{n}.ipynb") for n in "123"],
    ...                                  {str(pathlib.Path("1.ipynb").resolve()): 9.0})]
    ['3.ipynb', '2.ipynb', '1.ipynb']
    """
    later_first = sorted((pathlib.Path(p) for p in notebooks), key=lambda p: p.name, reverse=True)
    return sorted(later_first, key=lambda p: (str(p.resolve()) in last_seconds,
                                              -last_seconds.get(str(p.resolve()), 0.0)))


def _execute(path: str, timeout: int | None, allow_errors: bool):
    """``(path, the executed notebook or None if it failed, seconds, traceback or None)``:
    ``path`` run top to bottom in its folder, as myst-nb's cache mode runs it."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    notebook = nbformat.read(path, as_version=4)
    result = single_nb_execution(notebook, cwd=str(pathlib.Path(path).parent), timeout=timeout,
                                 allow_errors=allow_errors, meta_override=True)
    return path, (notebook if result.err is None else None), result.time, result.exc_string


def execute(notebooks, cache_dir: pathlib.Path = CACHE, workers: int = WORKERS,
            timeout: int | None = None, allow_errors: bool = False, report=print) -> list[str]:
    """Execute ``notebooks`` (in the order given: the longest first is quickest), ``workers``
    at a time, each in a fresh kernel, and store each run that succeeds in the cache as the
    build would. Returns the notebooks that failed; ``report`` is told of each run."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(cache_dir)
    failed = []
    # spawn: the workers start clean, not as copies of this process's database connection
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers,
                                                mp_context=multiprocessing.get_context("spawn")) as pool:
        runs = [pool.submit(_execute, str(path), timeout, allow_errors) for path in notebooks]
        for run in concurrent.futures.as_completed(runs):
            path, notebook, seconds, error = run.result()
            name = pathlib.Path(path).stem
            if notebook is None:
                failed.append(path)
                report(f"chapter_cache: {name} failed in {seconds:.1f} s (the build runs it again and reports it):\n"
                       f"{error}")
                continue
            cache.cache_notebook_bundle(CacheBundleIn(notebook, path, data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            report(f"chapter_cache: executed {name} in {seconds:.1f} s")
    return failed


def main() -> None:
    notebooks = sorted((ROOT / "chapters").glob("*.ipynb"))
    last_seconds: dict[str, float] = {}
    cleared = clear(notebooks, last_seconds=last_seconds)
    print(f"chapter_cache: {len(cleared)} of {len(notebooks)} chapters to execute afresh"
          + (f": {', '.join(pathlib.Path(c).stem for c in cleared)}" if cleared else ""),
          file=sys.stderr)
    todo = execution_order(unexecuted(notebooks), last_seconds)
    if todo:
        settings = tools.CONFIG.get("execute", {})
        start = time.perf_counter()
        failed = execute(todo, timeout=settings.get("timeout"), allow_errors=settings.get("allow_errors", False),
                         report=lambda line: print(line, file=sys.stderr))
        print(f"chapter_cache: {len(todo) - len(failed)} of {len(todo)} chapters executed into the cache, "
              f"{WORKERS} at a time, in {time.perf_counter() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
