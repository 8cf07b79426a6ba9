"""A CSV the instructor saved (a roster exported from Canvas, their overrides): read whole,
as UTF-8 with or without Excel's byte-order mark; a file in another encoding (Excel's
"CSV" is Windows-1252 in much of the world) is refused, naming the file and how to save it,
and so is a path that names no readable file (a typo)."""

from __future__ import annotations

import csv
from pathlib import Path


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """(the header's columns, each row as a dict) of the CSV at ``path``."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as file:
            reader = csv.DictReader(file)
            return list(reader.fieldnames or []), list(reader)
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 (byte {error.object[error.start]:#04x} at {error.start}): save it "
                         "as UTF-8 (in Excel: Save As, 'CSV UTF-8 (Comma delimited)')") from None
    except OSError as error:
        raise ValueError(f"{path} cannot be read: {error.strerror or error}") from None
