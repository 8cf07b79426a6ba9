"""The chapters as files: listed in the table of contents, committed without outputs."""

import nbformat
import pytest

from tools import ROOT, toc_pages

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def test_every_chapter_is_in_the_table_of_contents_and_every_entry_exists():
    listed = toc_pages()
    assert CHAPTERS, "no chapter notebooks found"
    for notebook in CHAPTERS:
        assert f"chapters/{notebook.stem}" in listed, f"{notebook.name} is not in _toc.yml"
    for entry in listed:
        assert any((ROOT / f"{entry}{suffix}").exists() for suffix in (".ipynb", ".md")), entry


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert "widgets" not in notebook.metadata, "saved widget state: clear it before committing"
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {index} has outputs"
            assert cell.execution_count is None, f"cell {index} has an execution count"
    assert notebook.metadata.kernelspec.name == "python3"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_notebook_starts_with_the_colab_install_cell(path):
    first = nbformat.read(path, as_version=4).cells[0]
    assert "google.colab" in first.source and "pip install" in first.source
    assert "remove-cell" in first.metadata.get("tags", [])
