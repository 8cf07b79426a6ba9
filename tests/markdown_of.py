"""The prose of a chapter, for the tests that pin a wording finding (issue 36)."""

from __future__ import annotations

import json
from pathlib import Path

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"


def markdown_of(number: int) -> str:
    """Every markdown cell of chapter ``number``, its whitespace runs made single spaces (a
    sentence reads the same however its lines break)."""
    (path,) = CHAPTERS.glob(f"{number:02d}_*.ipynb")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return " ".join(" ".join("".join(cell["source"]).split()) for cell in cells if cell["cell_type"] == "markdown")
