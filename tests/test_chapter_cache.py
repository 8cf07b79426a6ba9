"""tools/chapter_cache.py: each chapter's execution cache is keyed on the attncourse files
it imports, so a change re-executes only the chapters that use it."""

from __future__ import annotations

import json
import pathlib
import shutil

import nbformat
import pytest
from jupyter_cache import get_cache

from tools import chapter_cache

CHAPTERS = sorted((chapter_cache.ROOT / "chapters").glob("*.ipynb"))


def needs(chapter_prefix: str) -> set[str]:
    """The files (relative to the package) the chapter 0N needs."""
    (notebook,) = [nb for nb in CHAPTERS if nb.name.startswith(chapter_prefix)]
    files = chapter_cache.dependencies(chapter_cache.chapter_modules(notebook))
    return {str(f.relative_to(chapter_cache.ROOT / "attncourse")) for f in files}


def test_a_chapter_needs_its_own_explorer_and_not_the_others():
    first, fifth, sixth = needs("01"), needs("05"), needs("06")
    assert {"__init__.py", "attention.py", "explorers/attention_explorer.py",
            "explorers/attention_explorer.js", "explorers/heatmap.js"} <= first
    assert not {"explorers/graph_explorer.js", "explorers/conv_explorer.py",
                "explorers/model_explorer.js", "graph_figures.py"} & first
    assert {"explorers/graph_explorer.py", "explorers/graph_explorer.js",
            "explorers/graph_explorer.css", "graph_figures.py"} <= fifth
    assert {"convolution.py", "explorers/conv_explorer.js", "convolution_figures.py"} <= sixth
    assert "explorers/attention_explorer.js" not in sixth


def write_tree(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """A small package, a lazy subpackage with a front end, and two notebooks."""
    files = {
        "attncourse/__init__.py": "",
        "attncourse/maths.py": "X = 1\n",
        "attncourse/user.py": "def f():\n    from attncourse.maths import X\n    return X\n",
        "attncourse/views/__init__.py": '_HOMES = {"View": "view"}\n',
        "attncourse/views/view.py": "from .esm import bundle\n\nclass View:\n    esm = bundle('view.js')\n",
        "attncourse/views/esm.py": "def bundle(name):\n    return name\n",
        "attncourse/views/view.js": 'import { el } from "./shared.js";\nexport default {};\n',
        "attncourse/views/shared.js": "export function el() {}\n",
        "attncourse/views/other.js": "export default {};\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    notebooks = {}
    for name, code in (("one", "from attncourse import user\n%matplotlib inline"),
                       ("two", "from attncourse.views import View")):
        path = root / "chapters" / f"{name}.ipynb"
        path.parent.mkdir(exist_ok=True)
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)]), path)
        notebooks[name] = path
    return notebooks


def cached(cache_dir):
    return sorted(pathlib.Path(r.uri).stem for r in get_cache(cache_dir).list_cache_records())


def test_only_the_chapters_that_import_a_change_lose_their_cached_run(tmp_path):
    notebooks = write_tree(tmp_path)
    cache_dir, keys = tmp_path / "_build" / ".jupyter_cache", tmp_path / "_build" / "keys.json"

    def rebuild():
        """Clear as `make book` does, then cache every notebook again as the build would."""
        cleared = chapter_cache.clear(notebooks.values(), cache_dir, keys, tmp_path)
        cache = get_cache(cache_dir)
        for path in notebooks.values():
            if pathlib.Path(path).stem not in cached(cache_dir):
                cache.cache_notebook_file(str(path), check_validity=False)
        return sorted(pathlib.Path(c).stem for c in cleared)

    assert rebuild() == ["one", "two"]  # no keys yet: everything once
    assert cached(cache_dir) == ["one", "two"]
    assert rebuild() == []  # nothing changed

    (tmp_path / "attncourse/views/shared.js").write_text("export function el() { return 1; }\n")
    assert chapter_cache.clear(notebooks.values(), cache_dir, keys, tmp_path) == ["chapters/two.ipynb"]
    assert cached(cache_dir) == ["one"]  # chapter one's run is kept
    rebuild()

    (tmp_path / "attncourse/maths.py").write_text("X = 2\n")  # imported inside a function
    assert rebuild() == ["one"]
    (tmp_path / "attncourse/views/other.js").write_text("export default { other: 1 };\n")
    (tmp_path / "attncourse/unused.py").write_text("Y = 1\n")
    assert rebuild() == []  # what no chapter imports re-executes nothing
    (tmp_path / "attncourse/__init__.py").write_text("# every chapter imports the package\n")
    assert rebuild() == ["one", "two"]
    assert set(json.loads(keys.read_text())) == {"chapters/one.ipynb", "chapters/two.ipynb"}


def test_a_cache_copied_from_another_checkout_loses_the_runs_of_its_stale_chapters(tmp_path):
    """A contributor who copies another checkout's execution cache (without its keys) must
    not be served that checkout's runs of chapters whose attncourse code differs here."""
    theirs, ours = write_tree(tmp_path / "theirs"), write_tree(tmp_path / "ours")
    cache_dir = tmp_path / "ours" / "_build" / ".jupyter_cache"
    for path in theirs.values():
        get_cache(cache_dir).cache_notebook_file(str(path), check_validity=False)
    cleared = chapter_cache.clear(ours.values(), cache_dir, tmp_path / "ours" / "keys.json", tmp_path / "ours")
    assert sorted(cleared) == ["chapters/one.ipynb", "chapters/two.ipynb"]  # no keys here: all stale
    assert cached(cache_dir) == []


def test_a_package_name_bound_in_one_cell_reaches_its_homes_in_later_cells(tmp_path):
    """``from attncourse import checks as check`` then ``check.rope(...)`` in a later cell:
    the chapter depends on the module ``_HOMES`` names for ``rope``, and on a submodule
    reached as an attribute, not on the package's other modules."""
    write_tree(tmp_path)
    notebook = tmp_path / "chapters" / "three.ipynb"
    cells = ["from attncourse import views as v", "widget = v.View()", "v.esm.bundle('x.js')",
             "import attncourse.views\nattncourse.views.View"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), notebook)
    modules = chapter_cache.chapter_modules(notebook, tmp_path)
    assert {"attncourse.views", "attncourse.views.view", "attncourse.views.esm"} <= modules
    assert "attncourse.maths" not in modules and "attncourse.user" not in modules
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cells[0])]), notebook)
    assert chapter_cache.chapter_modules(notebook, tmp_path) == {"attncourse", "attncourse.views"}


@pytest.fixture(scope="module")
def course_copy(tmp_path_factory):
    """A copy of the package and the chapters, with every chapter's key written once."""
    root = tmp_path_factory.mktemp("course")
    for folder in ("attncourse", "chapters"):
        shutil.copytree(chapter_cache.ROOT / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    keys = root / "keys.json"
    notebooks = sorted((root / "chapters").glob("*.ipynb"))
    _, written = chapter_cache.stale_chapters(notebooks, keys, root)
    keys.write_text(json.dumps(written))
    return root, notebooks, keys


def re_executed_after_touching(course_copy, name: str) -> list[str]:
    """The chapters (by number) whose cache a change to attncourse/``name`` clears."""
    root, notebooks, keys = course_copy
    path = root / "attncourse" / name
    original = path.read_text()
    path.write_text(original + "\n# touched\n")
    try:
        stale, _ = chapter_cache.stale_chapters(notebooks, keys, root)
    finally:
        path.write_text(original)
    return sorted(pathlib.Path(name).name[:2] for name in stale)


def test_a_change_to_one_maths_module_re_executes_only_the_chapters_that_use_it(course_copy):
    assert re_executed_after_touching(course_copy, "flash.py") == ["09"]


def test_chapter_3s_checks_re_execute_chapter_3_alone(course_copy):
    assert re_executed_after_touching(course_copy, "checks/ch3.py") == ["03"]


@pytest.fixture(scope="module")
def needed_by() -> dict[str, list[str]]:
    """Each attncourse file -> the chapters (by number) whose key it is part of."""
    users: dict[str, list[str]] = {}
    for notebook in CHAPTERS:
        for file in chapter_cache.dependencies(chapter_cache.chapter_modules(notebook)):
            users.setdefault(str(file.relative_to(chapter_cache.ROOT / "attncourse")), []).append(notebook.name[:2])
    return users


@pytest.mark.parametrize("chapter", range(1, 10))
def test_a_chapters_checks_are_needed_by_it_and_by_those_whose_checks_import_them(needed_by, chapter):
    """checks/chN.py is part of chapter N's key, and of chapter M's only where checks/chM.py
    imports checks/chN.py (chapter 3's checks reuse chapter 2's sentence)."""
    importers = [f"{m:02d}" for m in range(1, 10) if m != chapter and f"from attncourse.checks.ch{chapter} import"
                 in (chapter_cache.ROOT / f"attncourse/checks/ch{m}.py").read_text()]
    assert needed_by[f"checks/ch{chapter}.py"] == sorted([f"{chapter:02d}", *importers])


def test_the_later_chapters_maths_is_needed_by_its_chapters_alone(needed_by):
    assert needed_by["positions.py"] == ["08"]
    assert needed_by["kv_cache.py"] == needed_by["flash.py"] == ["09"]
    assert needed_by["checks/core.py"] == needed_by["checks/__init__.py"] == [f"{n:02d}" for n in range(1, 10)]


@pytest.mark.slow  # starts three kernels
def test_stale_chapters_execute_two_at_a_time_into_the_cache_the_build_reads(tmp_path):
    # Each of the first two waits until the other has started: run one at a time, both fail.
    rendezvous = ("import pathlib, time\npathlib.Path({me!r}).touch()\nwaited = 0\n"
                  "while not pathlib.Path({other!r}).exists() and waited < 60:\n"
                  "    time.sleep(0.1)\n    waited += 0.1\n"
                  "assert pathlib.Path({other!r}).exists(), 'run alone'\nprint('met')")
    marks = [str(tmp_path / name) for name in ("one.started", "two.started")]
    cells = {"one": rendezvous.format(me=marks[0], other=marks[1]),
             "two": rendezvous.format(me=marks[1], other=marks[0]),
             "broken": "raise ValueError('a failing chapter')"}
    notebooks = []
    for name, code in cells.items():
        path = tmp_path / "chapters" / f"{name}.ipynb"
        path.parent.mkdir(exist_ok=True)
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)]), path)
        notebooks.append(path)
    cache_dir = tmp_path / "_build" / ".jupyter_cache"
    assert chapter_cache.unexecuted(notebooks, cache_dir) == notebooks
    said = []
    failed = chapter_cache.execute(notebooks, cache_dir, workers=2, timeout=60, report=said.append)
    assert failed == [str(tmp_path / "chapters" / "broken.ipynb")]
    assert any("broken failed" in line and "a failing chapter" in line for line in said)
    assert chapter_cache.unexecuted(notebooks, cache_dir) == [notebooks[2]]  # the build runs it again
    # The build (myst-nb's cache mode) merges the cached run into the notebook it reads.
    _, merged = get_cache(cache_dir).merge_match_into_notebook(nbformat.read(notebooks[1], as_version=4))
    assert merged.cells[0].outputs[0].text == "met\n"
    assert cached(cache_dir) == ["one", "two"]


def test_the_longest_chapters_execute_first_and_those_never_run_before_them(tmp_path):
    chapters = [tmp_path / f"0{n}_chapter.ipynb" for n in range(1, 6)]
    last = {str(chapters[0]): 20.0, str(chapters[1]): 250.0, str(chapters[2]): 40.0}  # a rebuild
    order = chapter_cache.execution_order(chapters, last)
    assert [p.name[:2] for p in order] == ["05", "04", "02", "03", "01"]
    assert [p.name[:2] for p in chapter_cache.execution_order(chapters, {})] == ["05", "04", "03", "02", "01"]
