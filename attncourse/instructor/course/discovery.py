"""The inputs of the hidden tests, found by running the solved chapters (the instructor's
own, trusted code) once: only these inputs enter a learner's sandbox, never the tests.

In a copy of each solved chapter, every hidden-test cell that grading needs becomes a call
to ``attncourse.checks.wire.discover``, which runs the test there on the course's solution
and records the notebook names it reads and the inputs it calls them on. The result is
kept (in memory, and in ``cache`` if given) under a digest of the chapter and of the
package, so a second grading of the same course does not run the chapters again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

import nbformat
from nbclient import NotebookClient

import attncourse
from attncourse.checks import wire
from attncourse.instructor.course.tags import HIDDEN_TEST, exercise_of, role_of
from attncourse.instructor.notebook.slicing import cells_to_skip, effects

CHAPTER_TIME_LIMIT = 900.0
_FOUND: dict[str, dict] = {}  # digest -> what a run found, for this process's lifetime


class CourseError(ValueError):
    """A hidden test that does not pass on the course's own solution."""


def hidden_inputs(chapters: Mapping[Path, nbformat.NotebookNode], labels: set[str], cache: Path | None = None,
                  jobs: int = 1) -> dict[str, dict]:
    """label -> ``{"modules", "values", "calls"}`` (see ``wire``) for every hidden test of
    ``labels`` in ``chapters`` (path -> solved notebook), up to ``jobs`` chapters run at once."""
    needed = {path: nb for path, nb in chapters.items()
              if any(role_of(cell) == HIDDEN_TEST and exercise_of(cell) in labels for cell in nb.cells)}
    keys = {path: digest([path]) for path in needed}
    for key in keys.values():
        if key not in _FOUND and cache is not None and (cache / f"{key}.json").exists():
            _FOUND[key] = json.loads((cache / f"{key}.json").read_text(encoding="utf-8"))
    to_run = [path for path, key in keys.items() if key not in _FOUND]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(jobs, len(to_run)))) as pool:
        for path, run in zip(to_run, pool.map(lambda path: _run_chapter(path, needed[path]), to_run)):
            _FOUND[keys[path]] = run
            if cache is not None:
                cache.mkdir(parents=True, exist_ok=True)
                (cache / f"{keys[path]}.json").write_text(json.dumps(run), encoding="utf-8")
    found: dict[str, dict] = {}
    for key in keys.values():
        found.update({label: tests for label, tests in _FOUND[key].items() if label in labels})
    return found


def digest(chapters: Iterable[Path]) -> str:
    """A digest of ``chapters`` and of every file of the package: what a discovery, and a
    grading, depend on."""
    found = hashlib.sha256()
    for chapter in chapters:
        found.update(chapter.read_bytes())
    package = Path(attncourse.__file__).parent
    for path in sorted(package.rglob("*.py")):
        found.update(str(path.relative_to(package)).encode() + path.read_bytes())
    return found.hexdigest()


def _run_chapter(path: Path, nb) -> dict[str, dict]:
    """Run the solved chapter up to its last hidden test, each hidden test recording: only
    the cells the hidden tests need (see ``slicing``), or, if that fails, every cell."""
    try:
        return _run_cells(path, nb, sliced=True)
    except CourseError:
        return _run_cells(path, nb, sliced=False)


def _run_cells(path: Path, nb, sliced: bool) -> dict[str, dict]:
    run = nbformat.v4.new_notebook(metadata=nb.metadata)
    last = max(i for i, cell in enumerate(nb.cells) if role_of(cell) == HIDDEN_TEST)
    cells = [cell for cell in nb.cells[: last + 1] if cell.cell_type == "code"]
    hidden = {i for i, cell in enumerate(cells) if role_of(cell) == HIDDEN_TEST}
    skipped = cells_to_skip([(cell.source, i not in hidden) for i, cell in enumerate(cells)],
                            [effects(cell.source, {}, {}).reads if i in hidden else set()
                             for i, cell in enumerate(cells)]) if sliced else set()
    for i, cell in enumerate(cells):
        if i in hidden:
            source = (f'__import__("attncourse.checks.wire", fromlist=["wire"]).discover('
                      f'{exercise_of(cell)!r}, {cell.source!r})')
            run.cells.append(nbformat.v4.new_code_cell(source))
        elif i not in skipped:
            run.cells.append(nbformat.v4.new_code_cell(cell.source))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNCOURSE_")}
    client = NotebookClient(run, timeout=CHAPTER_TIME_LIMIT, startup_timeout=CHAPTER_TIME_LIMIT,  # a busy machine
                            kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(path.parent)}})

    def execute():
        return asyncio.run(client.async_execute(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as thread:  # a loop of its own
            thread.submit(execute).result()
    except Exception as error:
        raise CourseError(f"running {path.name} to find its hidden tests' inputs failed: "
                          f"{str(error)[-600:]}") from None
    found: dict[str, dict] = {}
    for cell in run.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {}).get(wire.DISCOVERY_MIMETYPE)
            if data:
                tests = found.setdefault(data["exercise"], {"modules": {}, "values": [], "calls": []})
                tests["modules"].update(data["modules"])
                tests["values"] += [v for v in data["values"] if v not in tests["values"]]
                tests["calls"] += data["calls"]
    return found
