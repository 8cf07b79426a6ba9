"""The grades on disk, one file per learner, written as soon as that learner is graded.

``OUT/learners/LEARNER.json`` (``file_name``) holds a learner's rows, the problems seen and the key
of what they were graded on (a digest of their notebooks, the course and the options). A
crash of the grader leaves every finished learner's file; grading again into the same
folder skips the learners whose key has not changed and regrades the others, and the
report is rebuilt from every file: regrading some learners keeps everyone else's rows.
Rows that may no longer be right are kept, and flagged in the report: a learner no longer
in the submissions folder (renamed, removed), and one graded with other options or
another version of the course than the last grading (``--learners`` after a change).
One grading at a time writes into a folder (``lock``); every file is replaced whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from attncourse.instructor.gradebook import late
from attncourse.instructor.model import SKIPPED, Grade, grader_failed

FOLDER = "learners"
LAST = "last_grading.json"  # the last grading's options and learners
STALE_LEARNER = "no longer in the submissions folder (renamed or removed?): rows of an earlier grading"
STALE_OPTIONS = ("graded with other options or another version of the course than the last grading: "
                 "grade again without --learners")


class Ledger:
    def __init__(self, out: Path, options: str, assign: list[str] | None = None):
        self.folder = Path(out) / FOLDER
        self.options = options  # the course and the grading options but which exercises, as text
        self.assign = sorted(assign or [])  # which exercises: a learner graded on others is graded again

    def _path(self, learner: str) -> Path:
        return self.folder / f"{file_name(learner)}.json"

    def key(self, submissions: Path, notebooks: list[Path]) -> str:
        digest = hashlib.sha256((self.options + repr(self.assign)).encode())
        for relative in sorted(notebooks):
            digest.update(os.fsencode(relative) + b"\0")
            try:
                with open(submissions / relative, "rb") as file:  # in pieces: a file may be larger than memory
                    digest.update(hashlib.file_digest(file, "sha256").digest())
            except OSError:
                digest.update(b"unreadable")
        return digest.hexdigest()

    def finished(self, learner: str, key: str) -> bool:
        """Whether ``learner`` was graded on ``key`` with no failure of the grader's own (a
        memory or disk failure may pass: grading again tries it again)."""
        try:
            entry = json.loads(self._path(learner).read_text(encoding="utf-8"))
            return entry.get("key") == key and not any(grader_failed(Grade(**row)) for row in entry["grades"])
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def _options_digest(self) -> str:
        return hashlib.sha256(self.options.encode()).hexdigest()

    def begin(self, present: set[str], submissions: Path | None = None) -> None:
        """Note a grading's options, the learners of its submissions folder and where it is
        (``LAST``): what rows graded before are measured against, in the report and the
        exports, and where no export may write."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_whole(self.folder.parent / LAST, json.dumps({
            "options": self._options_digest(), "present": sorted(present),
            "submissions": str(Path(submissions).resolve()) if submissions is not None else ""}))

    def save(self, learner: str, key: str, grades: list[Grade], problems: list[str]) -> None:
        """Write the learner's file whole or not at all (a rename is atomic): ``grades``, and
        their earlier rows of every other exercise, kept as they were (a regrading of some
        exercises leaves the others), each row where the earlier one of its exercise was (the
        report and the feedback keep their order through a regrade)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        earlier = self._entry(learner)
        graded = {g.exercise: dataclasses.asdict(g) for g in grades}
        kept = [row for row in earlier["grades"] if row["exercise"] not in graded]
        digests = {**{row["exercise"]: earlier["options_of"].get(row["exercise"], earlier["options"]) for row in kept},
                   **dict.fromkeys(graded, self._options_digest())}
        rows = [graded.pop(row["exercise"], row) for row in earlier["grades"]] + list(graded.values())
        write_whole(self._path(learner), json.dumps({
            "learner": learner, "key": key, "options": self._options_digest(), "options_of": digests,
            "problems": problems, "grades": rows}))

    def _entry(self, learner: str) -> dict:
        """The learner's file as saved, or an empty one (none, or not the ledger's)."""
        try:
            entry = json.loads(self._path(learner).read_text(encoding="utf-8"))
            if entry.get("learner") == learner:  # and rows of this version's shape, or none are kept
                rows = [dataclasses.asdict(Grade(**row)) for row in entry["grades"]]
                return {"options_of": {}, **entry, "grades": rows}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            pass
        return {"grades": [], "options": "", "options_of": {}}

    def everything(self, skipped: list[str]) -> tuple[list[Grade], dict[str, list[str]]]:
        """Every learner's rows and problems on disk, learners in name order, each row marked
        late as the folder's late policy says (``late.marked``). The rows of a
        learner who is not in the submissions folder of the last grading (renamed, removed),
        or who was graded with other options or another version of the course than it, are
        kept and flagged for review (their ``review`` says why)."""
        grades: list[Grade] = []
        problems: dict[str, list[str]] = {SKIPPED: skipped} if skipped else {}
        entries: dict[str, dict] = {}
        for path in sorted(self.folder.glob("*.json")) if self.folder.exists() else []:
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
                rows = [Grade(**row) for row in entry["grades"]]
                if not isinstance(entry["learner"], str):
                    raise TypeError("no learner")
            except (OSError, ValueError, TypeError, KeyError):  # not a file of the ledger's: an --out
                continue  # folder of the instructor's may hold a learners/ folder of their own
            if entry["learner"] not in entries or path == self._path(entry["learner"]):  # over a file an
                entries[entry["learner"]] = {**entry, "grades": rows}  # older grade named otherwise
        try:
            last = json.loads((self.folder.parent / LAST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            last = None
        for entry in sorted(entries.values(), key=lambda e: e["learner"]):
            flags = [_stale(entry, row.exercise, last) for row in entry["grades"]]
            grades += [dataclasses.replace(g, review="; ".join(filter(None, [g.review, flag])))
                       for g, flag in zip(entry["grades"], flags)]
            problems[entry["learner"]] = entry.get("problems", []) + list(dict.fromkeys(filter(None, flags)))
        return late.marked(grades, self.folder.parent), problems


def _stale(entry: dict, exercise: str, last: dict | None) -> str:
    """Why a row of ``entry`` may no longer be right against the last grading, or ""."""
    if last is None:
        return ""  # a report of an older grade: nothing to measure against
    if entry["learner"] not in last["present"]:
        return STALE_LEARNER
    options = entry.get("options_of", {}).get(exercise, entry.get("options", last["options"]))
    return STALE_OPTIONS if options != last["options"] else ""


def file_name(learner: str) -> str:
    """A file name for ``learner``, safe on any system and distinct for distinct names (a
    digest of the name follows any name changed to be safe, or that has capitals: two names
    that differ in case alone are one file on some disks). The digest follows a dot, which
    no name kept as it is holds: no learner can name themselves another's file."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in learner)[:60] or "learner"
    if safe == learner and learner == learner.lower():
        return safe
    return f"{safe}.{hashlib.sha256(learner.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def stale_rows(grades: list[Grade]) -> list[str]:
    """One line per reason some learners' rows are flagged as of an earlier grading."""
    lines = []
    for reason in (STALE_LEARNER, STALE_OPTIONS):
        learners = list(dict.fromkeys(g.learner for g in grades if g.review.endswith(reason)))
        if learners:
            lines.append(f"{', '.join(map(repr, learners))}: {reason}")
    return lines


def regraded(before: list[Grade], after: list[Grade]) -> list[str]:
    """What a grading changed in a report: one line per row it replaced (its status and
    points before and now), one per row it kept whose points changed all the same (its
    learner's submission time moved, and with it the late penalty), then how many rows of
    earlier gradings it kept as they were."""
    earlier = {(g.learner, g.exercise): g for g in before}
    lines, kept = [], 0
    for row in after:
        old = earlier.get((row.learner, row.exercise))
        if old is None:
            continue
        if old.graded_at != row.graded_at:
            lines.append(f"{row.learner!r}, {row.exercise}: {old.status} ({old.points:g} of {old.max_points:g}) "
                         f"-> {row.status} ({row.points:g} of {row.max_points:g})")
        elif old.points != row.points:
            lines.append(f"{row.learner!r}, {row.exercise}: kept as graded, but {old.points:g} -> {row.points:g} of "
                         f"{row.max_points:g}: {row.late or 'no longer late'} (was: {old.late or 'not late'})")
        else:
            kept += 1
    return lines + ([f"{kept} row(s) of earlier gradings kept as they were"] if kept else [])


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: a grader killed mid-write, or two
    writing at once, leave the old file or the new one, never a part."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def foreign_files(out: Path) -> list[str]:
    """The files of ``out`` that say it is no grade report: none if it is missing, empty,
    holds a grading's record of itself (``LAST``, written once its first learner is saved)
    or only what a grading stopped before that leaves (its lock, its course cache); else its
    first few names."""
    names = sorted(path.name for path in out.iterdir()) if out.is_dir() else []
    if not names or LAST in names or set(names) <= {".lock", ".cache"}:
        return []
    return names[:5]


@contextlib.contextmanager
def lock(out: Path) -> Iterator[None]:
    """Hold ``out`` for one grading: a second grading into the same folder is refused while
    this one runs (two at once would grade every learner twice and overwrite each other's
    report). The operating system releases the lock when the process ends, however it ends.
    A folder made for the lock is removed again if the grading wrote nothing into it."""
    out = Path(out)
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with open(out / ".lock", "a") as file:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ValueError(f"another grading is writing into {out}: wait for it to end, or choose another "
                                 "--out") from None
            yield
    finally:
        if made and [path.name for path in out.iterdir()] == [".lock"]:  # refused before grading anything
            (out / ".lock").unlink()
            out.rmdir()


def graded_from(report: Path) -> Path | None:
    """The submissions folder of ``report``'s last grading (None if it does not say)."""
    try:
        return Path(json.loads((Path(report) / LAST).read_text(encoding="utf-8"))["submissions"]) or None
    except (OSError, ValueError, KeyError, TypeError):
        return None
