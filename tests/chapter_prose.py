"""The prose of a chapter, for the tests that pin what its text claims (issue 36: a wording
finding is kept as a test that reads the chapter's markdown)."""

from __future__ import annotations

import json
import pathlib
import re

CHAPTERS = pathlib.Path(__file__).resolve().parents[1] / "chapters"


def paragraphs(chapter: int) -> list[str]:
    """Chapter ``chapter``'s markdown, paragraph by paragraph, each line break made a space."""
    (path,) = CHAPTERS.glob(f"{chapter:02d}_*.ipynb")
    cells = json.loads(path.read_text())["cells"]
    return [re.sub(r"\s+", " ", block).strip() for cell in cells if cell["cell_type"] == "markdown"
            for block in "".join(cell["source"]).split("\n\n")]


def paragraph_with(chapter: int, phrase: str) -> str:
    """The one paragraph of chapter ``chapter`` that contains ``phrase``."""
    found = [block for block in paragraphs(chapter) if phrase in block]
    assert len(found) == 1, f"{len(found)} paragraphs of chapter {chapter} contain {phrase!r}"
    return found[0]
