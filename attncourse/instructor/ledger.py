"""The grades on disk, one file per learner, written as soon as that learner is graded.

``OUT/learners/LEARNER-DIGEST.json`` holds a learner's rows, the problems seen and the key
of what they were graded on (a digest of their notebooks, the course and the options). A
crash of the grader leaves every finished learner's file; grading again into the same
folder skips the learners whose key has not changed and regrades the others, and the
report is rebuilt from every file: regrading some learners keeps everyone else's rows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

from attncourse.instructor.grading import SKIPPED, Grade

FOLDER = "learners"


class Ledger:
    def __init__(self, out: Path, options: str):
        self.folder = Path(out) / FOLDER
        self.options = options  # the course and the grading options, as text

    def _path(self, learner: str) -> Path:
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in learner)[:60]
        return self.folder / f"{safe}-{hashlib.sha256(learner.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}.json"

    def key(self, submissions: Path, notebooks: list[Path]) -> str:
        digest = hashlib.sha256(self.options.encode())
        for relative in sorted(notebooks):
            digest.update(os.fsencode(relative) + b"\0")
            try:
                digest.update(hashlib.sha256((submissions / relative).read_bytes()).digest())
            except OSError:
                digest.update(b"unreadable")
        return digest.hexdigest()

    def finished(self, learner: str, key: str) -> bool:
        try:
            return json.loads(self._path(learner).read_text(encoding="utf-8")).get("key") == key
        except (OSError, ValueError):
            return False

    def save(self, learner: str, key: str, grades: list[Grade], problems: list[str]) -> None:
        """Write the learner's file whole or not at all (a rename is atomic)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(learner)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"learner": learner, "key": key, "problems": problems,
                                         "grades": [dataclasses.asdict(g) for g in grades]}), encoding="utf-8")
        os.replace(temporary, path)

    def everything(self, skipped: list[str]) -> tuple[list[Grade], dict[str, list[str]]]:
        """Every learner's rows and problems on disk, learners in name order."""
        grades: list[Grade] = []
        problems: dict[str, list[str]] = {SKIPPED: skipped} if skipped else {}
        entries = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.exists() else []:
            try:
                entries.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
        for entry in sorted(entries, key=lambda e: e.get("learner", "")):
            grades += [Grade(**row) for row in entry.get("grades", [])]
            problems[entry["learner"]] = entry.get("problems", [])
        return grades, problems
