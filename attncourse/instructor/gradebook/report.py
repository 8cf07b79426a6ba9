"""The report of a grading: ``grades.csv`` (one row per learner and exercise) and
``summary.md``, with names and messages escaped for a spreadsheet and for markdown.

An instructor's overrides (``points.read_overrides``) change points after grading. The
report stays as graded, so that grading again never needs them; an export given them
writes ``summary-with-overrides.md`` beside it, from the rows every export writes, and
marks ``summary.md``'s first line "before the overrides", naming it. Grading again
removes it, since it no longer holds the report's rows: the next export writes it again.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import unicodedata
from dataclasses import astuple, fields
from pathlib import Path
from typing import TYPE_CHECKING

from attncourse.instructor.gradebook import points
from attncourse.instructor.gradebook.ledger import write_whole
from attncourse.instructor.learner_text import invisible
from attncourse.instructor.model import PASSED, SKIPPED, UNDECIDED, Grade

if TYPE_CHECKING:
    from attncourse.instructor.gradebook.points import Overrides

SUMMARY = "summary.md"
OVERRIDDEN_SUMMARY = "summary-with-overrides.md"
OVERRIDES_USED = "overrides-used.txt"  # kept across gradings: an export without them is refused
TITLE = "# Grades"

# What a report writes out rather than shows (``\\xNN``, ``\\uNNNN``): control characters but
# tab, line feed and carriage return (C0, DEL and C1), since a learner's text may carry a
# terminal's escape sequences, which a report shown in a terminal would run; line and
# paragraph separators; and every character that shows nothing (format characters: the
# bidirectional marks with which "deliaf" reads as "failed", zero-width spaces, soft
# hyphens, tags; the blank letters), which make two texts look alike.
_KEPT = frozenset("\t\n\r")


def shown_controls(text: str) -> str:
    """``text`` with every control character but tab, line feed and carriage return, and
    every character that shows nothing, written out (``\\xNN``, ``\\uNNNN``), so that no
    terminal or editor acts on it and no reader is misled.

    >>> shown_controls("ok\\x1b]52;c;bad\\x07 \\u202edeliaf \\u3164")
    'ok\\\\x1b]52;c;bad\\\\x07 \\\\u202edeliaf \\\\u3164'
    """
    if text.isascii() and text.isprintable():  # the common case, at C speed
        return text
    return "".join(_escape(c) if _hidden(c) else c for c in text)


def _hidden(character: str) -> bool:
    return (character not in _KEPT and unicodedata.category(character) in ("Cc", "Zl", "Zp")) or invisible(character)


def _escape(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def csv_cell(text: str) -> str:
    """``text`` safe in a spreadsheet and a terminal: a leading = + - @, tab or carriage
    return (which start a formula) is neutralised by a leading apostrophe, and control
    characters are written out (``shown_controls``)."""
    text = shown_controls(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


INDEX = "index.csv"  # in a folder of files per learner: whose each is (for a mail merge, an upload)


def write_index(folder: Path, columns: list[str], rows: list[list[str]]) -> Path:
    """``folder``/INDEX: a header ``learner, *columns``, then each row, a learner's name (a
    spreadsheet's formula neutralised, ``csv_cell``) and the names of their files."""
    with open(Path(folder) / INDEX, "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([["learner", *columns], *([csv_cell(learner), *files] for learner, *files in rows)])
    return Path(folder) / INDEX


# What GitHub's Markdown (and markdown-it's linkify) turns into a link with no brackets at all:
# an address with a scheme, one starting www., an e-mail address.
_LINK_LIKE = re.compile(r"://|www\.|@[^@]*\.|^(?:https?|ftp|mailto|xmpp):", re.IGNORECASE)


def markdown_text(text: str) -> str:
    """``text`` on one line, with the characters markdown or HTML would act on escaped,
    control characters written out and any word a renderer would make a link shown as code
    (a learner's text never becomes a link in the report).

    >>> markdown_text("see *www.example.com* now")
    'see `*www.example.com*` now'
    """
    return " ".join(_as_code(word) if _LINK_LIKE.search(word) else _escaped(word)
                    for word in shown_controls(str(text)).split())


def _escaped(word: str) -> str:
    return re.sub(r"([\\`*_\[\]<>|~#])", r"\\\1", word)


def _as_code(word: str) -> str:
    """``word`` as code spans around its pipes (a pipe ends a table's cell even inside
    code, and an escaped one would show its backslash there), each fenced by more
    backticks than it holds in a row, padded where it starts or ends with one."""
    return "\\|".join(_code_span(part) for part in word.split("|"))


def _code_span(text: str) -> str:
    if not text:
        return ""
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def summary(grades: list[Grade], problems: dict[str, list[str]], overrides: Overrides | None = None,
            title: str = TITLE) -> str:
    """A readable report in markdown under ``title``: a table of learners by exercises, the
    points (with ``overrides``), the rows flagged for review, then the details per learner."""
    learners = list(dict.fromkeys(g.learner for g in grades)) + [
        learner for learner in problems if learner not in {g.learner for g in grades} and learner != SKIPPED
    ]
    exercises = list(dict.fromkeys(g.exercise for g in grades))
    status = {(g.learner, g.exercise): g for g in grades}
    md = markdown_text
    lines = [
        title, "",
        f"{len(learners)} learner(s), {len(exercises)} exercise(s).", "",
        "| learner | " + " | ".join(map(md, exercises)) + " |",
        "|---" * (len(exercises) + 1) + "|",
    ]
    lines += [f"| {md(learner)} | " + " | ".join(status[learner, e].status if (learner, e) in status else ""
                                                   for e in exercises) + " |" for learner in learners]
    lines += points_section(grades, overrides)
    flagged = [g for g in grades if g.review or g.status in UNDECIDED]  # what earns nothing until you decide
    lines += ["", "## Flagged for review", ""]  # even when empty: one who looks for it reads that nothing is
    lines += [f"- {md(g.learner)}, {md(g.exercise)} ({g.status}): {md(g.review or g.message)}" for g in flagged] or [
        "Nothing."]
    late = {g.learner: g for g in grades if g.late}
    if late:
        lines += ["", "## Late work", ""]
        lines += [f"- {md(g.learner)}: {md(g.late)}" + (f" (submitted {md(g.submitted_at)})" if g.submitted_at else "")
                  for g in late.values()]
    if problems.get(SKIPPED):
        lines += ["", "## Files not graded", ""] + [f"- {md(note)}" for note in problems[SKIPPED]]
    scored = {(row.learner, row.exercise): row for row in points.scored(grades, overrides)}
    for learner in learners:
        lines += ["", f"## {md(learner)}", ""]
        for exercise in exercises:
            grade = status.get((learner, exercise))
            if grade:
                row = scored[learner, exercise]
                detail = f": {md(grade.message)}" if grade.status != PASSED and grade.message else ""
                if (learner, exercise) in (overrides or {}):
                    detail += f"; overridden: {md(row.override)}"
                detail += f" (in {md(grade.notebook)}, graded {md(grade.graded_at)})" if grade.notebook else ""
                lines.append(f"- {md(exercise)}: **{grade.status}**, {row.points:g} of {points.in_words(row.max_points)}"
                             f"{detail}")
        if problems.get(learner):
            lines += ["", "While running the notebooks:", ""] + [f"- {md(note)}" for note in problems[learner]]
    return "\n".join(lines) + "\n"


def points_section(grades: list[Grade], overrides: Overrides | None = None) -> list[str]:
    """The summary's points: each learner's total, each exercise's mean, the class's
    distribution (``gradebook.points``), with ``overrides``."""
    rows = points.scored(grades, overrides)
    if not rows:
        return []
    md = markdown_text
    # A row that is no grade yet counts 0 in a sum: say so beside the sum, never a silent 0.
    open_rows = [row for row in rows if row.status in UNDECIDED and not row.override]
    lines = ["", "## Points", "", "Each learner's total:", ""]
    lines += [f"- {md(learner)}: {got:g} of {worth:g}" + _not_final([r for r in open_rows if r.learner == learner])
              for learner, (got, worth) in points.totals(rows).items()]
    lines += ["", "Each exercise's mean, and the learners with every point:", ""]
    lines += [f"- {md(label)}: {mean:g} of {worth:g}, {full} with every point"
              + _not_final([r for r in open_rows if r.exercise == label])
              for label, (mean, worth, full) in points.by_exercise(rows).items()]
    lines += ["", "Distribution of the totals: " + ", ".join(f"{band}: {n}" for band, n in points.distribution(rows)) + "."]
    return lines


def _not_final(undecided: list[Grade]) -> str:
    """What a sum holding ``undecided`` rows (counted 0) says beside it."""
    count = len(undecided)
    return f" (not final: {count} row{'s' if count > 1 else ''} to decide, under Flagged for review)" if count else ""


def write_report(grades: list[Grade], problems: dict[str, list[str]], out: Path) -> tuple[Path, Path]:
    """Write ``grades.csv`` (one row per learner and exercise, with its points) and
    ``summary.md`` into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table, text = out / "grades.csv", out / SUMMARY
    rows = io.StringIO(newline="")
    writer = csv.writer(rows)
    writer.writerow([f.name for f in fields(Grade)])
    writer.writerows([csv_cell(str(value)) for value in astuple(grade)] for grade in points.scored(grades))
    write_whole(table, rows.getvalue())  # a grader killed mid-write leaves the last whole report
    write_whole(text, summary(grades, problems))
    (out / OVERRIDDEN_SUMMARY).unlink(missing_ok=True)  # of the rows before this grading (module doc)
    return table, text


def overrides_used(out: Path) -> str | None:
    """The digest of the overrides ``out`` was last exported with (None: never with any)."""
    path = Path(out) / OVERRIDES_USED
    return path.read_text(encoding="utf-8").split("\n", 1)[0] if path.exists() else None


def overrides_digest(source: Path) -> str:
    """What tells one overrides file from another, wherever it is: its content's sha256."""
    return hashlib.sha256(Path(source).read_bytes()).hexdigest()


def exported_with(out: Path) -> dict[str, str]:
    """Every file or folder exported from ``out`` with overrides (its absolute path) -> the
    digest of those overrides, as its latest export with them left it."""
    path = Path(out) / OVERRIDES_USED
    lines = path.read_text(encoding="utf-8").split("\n") if path.exists() else []
    try:
        found = json.loads(lines[2]) if len(lines) > 2 and lines[2] else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def write_overridden_summary(out: Path, grades: list[Grade], problems: dict[str, list[str]],
                             overrides: Overrides, source: Path, written: Path) -> Path:
    """Write the summary of ``grades`` with ``overrides`` (read from ``source``) as
    ``out/OVERRIDDEN_SUMMARY``, mark the first line of ``out/SUMMARY`` as before them, and
    note in ``out/OVERRIDES_USED`` (which no grading removes) that the report's exports
    have overrides, and which (``written``, the file or folder just exported, among them)."""
    digest = overrides_digest(source)
    exports = {**exported_with(out), str(Path(written).resolve()): digest}
    write_whole(out / OVERRIDES_USED, f"{digest}\nthe sha256 of the overrides of {source}, which this report was "
                                      f"exported with: an export without them needs --as-graded\n"
                                      f"{json.dumps(exports)}\n")
    overridden = out / OVERRIDDEN_SUMMARY
    write_whole(overridden, summary(grades, problems, overrides, f"{TITLE}, with the overrides of {markdown_text(str(source))} "
                                                                 f"({SUMMARY} is as graded)"))
    graded = out / SUMMARY
    if graded.exists():
        _, _, rest = graded.read_text(encoding="utf-8").partition("\n")
        write_whole(graded, f"{TITLE}, as graded: before the overrides (with them: {OVERRIDDEN_SUMMARY})\n{rest}")
    return overridden
