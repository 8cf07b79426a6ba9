"""tools/chapter_cache.py: each chapter's execution cache is keyed on the attncourse files
it imports, so a change re-executes only the chapters that use it."""

from __future__ import annotations

import json
import pathlib

import nbformat
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
