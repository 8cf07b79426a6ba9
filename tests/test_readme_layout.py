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
