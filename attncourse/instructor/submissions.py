"""The submissions folder: each learner's notebooks and the files not graded, with why
(``find_learners``), when each learner submitted (``submission_times``, from the file
``import`` writes), and a submitted notebook read as Jupyter would open it
(``read_submitted``)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import unicodedata
from datetime import datetime
from pathlib import Path

from attncourse.instructor.course.tags import exercise_labels
from attncourse.instructor.learner_text import cleaned, invisible, spaced
from attncourse.instructor.run.sandbox import Limits, megabytes

SAVED_OUTPUTS_FACTOR = 5  # a notebook file may be this many output limits: saved outputs are not run

# What ``import`` writes beside the learners' folders: when each learner submitted, and what
# it imported (so that a second import may replace the first). grade passes over both
# without a word: they are the grader's own files, not a learner's.
SUBMITTED_TIMES = "submitted.csv"
SUBMITTED_COLUMNS = ("learner", "submitted_at", "late_in_lms", "source")
IMPORT_RECORD = ".import.json"
GRADERS_OWN = (SUBMITTED_TIMES, IMPORT_RECORD)


def find_learners(folder: Path) -> tuple[dict[str, list[Path]], list[str]]:
    """(learner -> their notebooks, relative to ``folder``: LEARNER.ipynb and every notebook
    under LEARNER/; every other file of the folder, with why it is not graded)."""
    by_learner: dict[str, list[Path]] = {}
    skipped: list[str] = []
    resolved = folder.resolve()

    def skip(path: Path, why: str) -> None:
        skipped.append(f"{shown(path.relative_to(folder).as_posix())}: {why}")

    def unreadable(error: OSError) -> None:  # os.walk would pass over a folder it cannot list
        skip(Path(error.filename), f"a folder grade cannot read ({error.strerror}): nothing in it is graded")

    def consider(path: Path, learner: str) -> None:
        if path.is_symlink():
            target = path.resolve()
            leaves = resolved not in target.parents
            skip(path, "a symbolic link " + ("that leaves the submissions folder" if leaves else "(grade follows none)"))
        elif path.name.startswith("."):
            skip(path, "a hidden file (its name starts with a dot)")
        elif not path.name.lower().endswith(".ipynb"):  # as Jupyter opens it, whatever the case
            skip(path, "not a notebook (.ipynb)")
        elif not path.is_file():
            skip(path, "not a regular file")
        else:
            by_learner.setdefault(shown(learner), []).append(path.relative_to(folder))

    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            if entry.name.startswith("."):
                skip(entry, "a hidden folder (its name starts with a dot): nothing in it is graded")
                continue
            found = by_learner.setdefault(shown(entry.name), [])
            for parent, folders, files in os.walk(entry, onerror=unreadable):
                for name in sorted(folders):
                    sub = Path(parent) / name
                    if sub.is_symlink() or name.startswith("."):
                        skip(sub, "a symbolic link to a folder (grade follows none)" if sub.is_symlink()
                             else "a hidden folder (its name starts with a dot): nothing in it is graded")
                folders[:] = sorted(f for f in folders if not f.startswith(".") and not (Path(parent) / f).is_symlink())
                for name in sorted(files):
                    consider(Path(parent) / name, entry.name)
            if not found:
                by_learner[shown(entry.name)] = []
        elif entry.is_dir():
            skip(entry, "a symbolic link to a folder (grade follows none)")
        elif entry.name in GRADERS_OWN and entry.is_file() and not entry.is_symlink():
            continue
        else:
            consider(entry, entry.name[:-len(".ipynb")] if entry.name.lower().endswith(".ipynb") else entry.name)
    return _apart(by_learner, skipped)


def _apart(by_learner: dict[str, list[Path]], skipped: list[str]) -> tuple[dict[str, list[Path]], list[str]]:
    """``by_learner`` without the notebooks whose names read as another's: a name that is
    not UTF-8 (``Jos\\xe9``, as a Latin-1 zip writes it) shows as one written with a
    backslash; a name with an invisible character (a zero-width space) or in another
    Unicode normal form (é as one character or two) looks like one without. One would be
    graded, or reported, in the other's name: neither is graded; both are listed."""
    looks: dict[str, set[str]] = {}  # how a name reads -> the learners' names that read so
    for learner in by_learner:
        looks.setdefault(_as_read(learner), set()).add(learner)
    kept: dict[str, list[Path]] = {}
    for learner, notebooks in by_learner.items():
        raw = {path.parts[0].removesuffix(path.suffix) if len(path.parts) == 1 else path.parts[0] for path in notebooks}
        texts = [_as_read(shown(path.as_posix())) for path in notebooks]
        alike = len(raw) > 1 or len(looks[_as_read(learner)]) > 1
        clash = [path for path, text in zip(notebooks, texts) if alike or texts.count(text) > 1]
        skipped += [f"{shown(path.as_posix())}: its name reads as another's here (a name that is not UTF-8, an "
                    "invisible character, white space, another Unicode form): rename one; neither is graded"
                    for path in clash]
        if not alike and (not notebooks or len(clash) < len(notebooks)):
            kept[learner] = [path for path in notebooks if path not in clash]
    return kept, skipped


def _as_read(name: str) -> str:
    """``name`` as a reader sees it: in compatibility form (NFKC: ｂ is b, é one character),
    without the characters that show nothing (format characters, the Hangul fillers), its
    white space one space between words (a thin or no-break space at its end is not seen,
    nor told from a space; "jo ann" and "joann" are two names)."""
    return spaced("".join(c for c in unicodedata.normalize("NFKC", name) if not invisible(c)))


def submission_times(folder: Path) -> dict[str, tuple[datetime | None, bool | None]]:
    """learner -> (when they submitted, with its offset; whether their learning platform
    marked it late), as ``import`` recorded them in ``folder``'s SUBMITTED_TIMES (None
    where the platform's export does not say). Empty if the folder has no such file (its
    notebooks were put there by hand). Raises ValueError, naming the line, for a value
    that is not ISO 8601 with an offset, true, false or empty."""
    path = Path(folder) / SUBMITTED_TIMES
    if not path.is_file():
        return {}
    times: dict[str, tuple[datetime | None, bool | None]] = {}
    with open(path, newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file)
        missing = [column for column in SUBMITTED_COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path} lacks the column(s) {', '.join(missing)}")
        for row in reader:
            where = f"{path}, line {reader.line_num}"
            times[row["learner"]] = (_submitted_at(row["submitted_at"], where), _late(row["late_in_lms"], where))
    return times


def file_digests(folder: Path) -> dict[str, str]:
    """Each file under ``folder`` (as a path relative to it) -> its SHA-256, IMPORT_RECORD aside."""
    found = {}
    for parent, _, files in os.walk(folder):
        for name in files:
            path = Path(parent) / name
            relative = path.relative_to(folder).as_posix()
            if relative != IMPORT_RECORD:
                found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def changed_since_import(folder: Path) -> dict[str, str]:
    """Each file of ``folder`` not as ``import`` wrote it -> "added", "changed", "removed",
    "renamed" (the bytes of a file the import wrote, and removed, in the same learner's
    folder: moved, in a subfolder too) or "copied" (the same, the file the import wrote
    still there: an instructor's backup, Jupyter's -Copy1) by hand since (a late notebook
    put in place), per the folder's IMPORT_RECORD; empty where no import wrote the folder."""
    try:
        written = json.loads((Path(folder) / IMPORT_RECORD).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(written, dict):
        return {}
    now = file_digests(folder)
    how = {path: "added" if path not in written else "changed" for path in now if now[path] != written.get(path)}
    removed = {path: "removed" for path in written if path not in now}
    for path in [path for path, change in how.items() if change == "added"]:  # the import's bytes, in its own folder
        originals = [was for was, digest in written.items()
                     if digest == now[path] and was.split("/")[0] == path.split("/")[0]]
        if originals:
            how[path] = "renamed" if any(was in removed for was in originals) else "copied"
    return dict(sorted({**how, **removed}.items()))


def write_submission_times(folder: Path, rows: list[tuple[str, datetime | None, bool | None, str]]) -> Path:
    """``folder``'s SUBMITTED_TIMES: one row per (learner, submitted_at, late_in_lms,
    source), the time in ISO 8601 with its offset, true or false, empty where unknown."""
    path = Path(folder) / SUBMITTED_TIMES
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(SUBMITTED_COLUMNS)
        for learner, submitted_at, late, source in rows:
            writer.writerow([learner, submitted_at.isoformat() if submitted_at else "",
                             "" if late is None else str(late).lower(), source])
    return path


def _submitted_at(text: str, where: str) -> datetime | None:
    if not text.strip():
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{where}: submitted_at {text!r} is not an ISO 8601 time") from None
    if moment.utcoffset() is None:  # a time without its offset is a different moment in each zone
        raise ValueError(f"{where}: submitted_at {text!r} has no offset from UTC")
    return moment


_LATE_VALUES: dict[str, bool | None] = {"true": True, "false": False, "": None}


def _late(text: str, where: str) -> bool | None:
    if text.strip().lower() not in _LATE_VALUES:
        raise ValueError(f"{where}: late_in_lms is true, false or empty, not {text!r}")
    return _LATE_VALUES[text.strip().lower()]


def learners_in(folder: Path) -> set[str]:
    """The learners of a submissions folder (as ``grade_submissions`` names them)."""
    return set(find_learners(Path(folder))[0])


def shown(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (which Python keeps as lone surrogates,
    and no report can write) shown as ``\\xff``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def read_leniently(path: Path):
    """The notebook at ``path``, read as Jupyter opens it: nbformat 4 (or older, converted),
    with what another editor may leave out or add tolerated (a missing ``metadata``, an
    ``id`` in an older minor version, a source as one string or as lines)."""
    import nbformat  # here, not above: its validator takes seconds to import, and the commands that
    # only name this module's files (export, import) need none of it

    data = json.loads(path.read_bytes().decode("utf-8-sig"))
    if not isinstance(data, dict) or not isinstance(data.get("cells", data.get("worksheets")), list):
        raise ValueError("not a notebook: no list of cells")
    if data.get("nbformat", 4) < 4:
        return nbformat.convert(nbformat.from_dict(data), 4)
    cells = []
    for cell in data["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        metadata: dict = cell["metadata"] if isinstance(cell.get("metadata"), dict) else {}
        tags = metadata.get("tags")
        metadata = {**metadata, "tags": [str(t) for t in tags] if isinstance(tags, list) else []}
        if cell["cell_type"] == "code":
            made = nbformat.v4.new_code_cell(source, metadata=metadata)
            outputs = cell.get("outputs")
            made.outputs = [nbformat.from_dict(o) for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else []
        elif cell["cell_type"] == "markdown":
            made = nbformat.v4.new_markdown_cell(source, metadata=metadata)
        else:
            made = nbformat.v4.new_raw_cell(source, metadata=metadata)
        cells.append(made)
    notebook_metadata = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    return nbformat.v4.new_notebook(cells=cells, metadata=notebook_metadata)


# A notebook of 12.8 MB made of 3.2 million empty objects took the grader 5.5 GB to read: past
# this many, a file is refused before it is parsed (a chapter, its outputs saved, holds some
# under a thousand; a brace in a string counts too, so this is generous).
MAX_CONTAINERS = 200_000


def read_submitted(path: Path, limits: Limits):
    """``read_leniently``, for a notebook whose cells hold at most ``limits.output`` bytes
    of code and text; its saved outputs (a long training log, figures), which grade clears
    before running it, may take ``SAVED_OUTPUTS_FACTOR`` times as much. Raises ValueError
    past either."""
    size, largest = path.stat().st_size, SAVED_OUTPUTS_FACTOR * limits.output
    if size > largest:
        raise ValueError(f"it is {megabytes(size)}; grade reads notebooks of up to {megabytes(largest)}")
    raw = path.read_bytes()
    containers = raw.count(b"{") + raw.count(b"[")  # an upper bound on the objects and lists JSON makes
    if containers > MAX_CONTAINERS:
        raise ValueError(f"it holds {containers:,} JSON objects and lists; grade reads notebooks of up to "
                         f"{MAX_CONTAINERS:,} (each one costs the grader memory while it reads)")
    nb = cleaned(read_leniently(path))
    cells = sum(len(cell.source.encode()) for cell in nb.cells)
    if cells > limits.output:
        raise ValueError(f"its cells hold {megabytes(cells)} besides their outputs; grade reads notebooks of up to "
                         f"{megabytes(limits.output)}")
    return nb


def tagged_labels(submissions: Path, notebooks: list[Path], limits: Limits) -> set[str] | None:
    """The exercise labels ``notebooks`` (in ``submissions``) are tagged with (None if one
    notebook has no tags left, or cannot be read: every chapter's exercises may then be in it)."""
    labels: set[str] = set()
    for path in notebooks:
        try:
            found = exercise_labels(read_submitted(submissions / path, limits))
        except Exception:  # read again, and reported, when it runs
            return None
        if not found:
            return None
        labels.update(found)
    return labels
