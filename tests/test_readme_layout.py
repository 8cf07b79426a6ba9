"""README's layout tables name files that exist: a new contributor finds every room where
the table says (a bare name is looked up in the folders the tables use)."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDERS = ["", "attncourse", "attncourse/explorers", "attncourse/checks",
           "attncourse/instructor", "tests", "tests/browser", "tools", "site_static", "site_ext"]


def named_files():
    text = (ROOT / "README.md").read_text()
    layout = text[text.index("## Layout"):text.index("\n## ", text.index("## Layout") + 1)]
    for name in re.findall(r"`([^`\s]+)`", layout):
        placeholder = "<" in name or re.search(r"0N|chN", name)
        if not placeholder and re.search(r"\w\.(py|js|css|md|yml|toml|txt|json)$|/$", name):
            yield name


def test_every_file_in_the_layout_tables_exists():
    names = list(named_files())
    assert len(names) > 40
    missing = [n for n in names if not any((ROOT / folder / n).exists() for folder in FOLDERS)]
    assert not missing, f"README's layout names files that do not exist: {missing}"


def test_the_graders_table_names_every_module_of_the_grader_and_no_other():
    """Both ways: a module added to attncourse/instructor/ without its row fails, and so
    does a row of a module that moved or went (a folder's ``__init__.py`` holds only the
    folder's docstring: the table lists the folder's modules instead)."""
    text = (ROOT / "README.md").read_text()
    start = text.index("### The grader")
    table = text[start:text.index("\n## ", start)]
    named = set(re.findall(r"`(attncourse/instructor/[^`\s]+\.py)`", table))
    package = ROOT / "attncourse" / "instructor"
    modules = {path.relative_to(ROOT).as_posix() for path in package.rglob("*.py")
               if path.name != "__init__.py" or path.parent == package}
    assert len(modules) > 20
    assert named == modules
