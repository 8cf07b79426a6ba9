"""An export zip imported into a submissions folder (``import_export``): one folder per
learner holding their notebooks, and beside them ``submitted.csv`` (when each learner
submitted) and ``.import.json`` (what was imported, so that a later import of the same kind
may replace it). The folder is made beside --out and moved into place whole, so that a
refused import leaves --out as it was."""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

from attncourse.instructor.lms.archive import DEFAULT_MAX_BYTES, Budget, entry_problem, open_export
from attncourse.instructor.lms.canvas import canvas_submissions, read_times
from attncourse.instructor.lms.gradescope_export import (
    METADATA,
    find_metadata,
    gradescope_submissions,
    read_metadata,
)
from attncourse.instructor.lms.plan import (
    Reading,
    Submission,
    by_learner,
    login_problem,
    notebook_names,
)
from attncourse.instructor.run.sandbox import DEFAULT_LIMITS, megabytes
from attncourse.instructor.submissions import (
    IMPORT_RECORD,
    SAVED_OUTPUTS_FACTOR,
    changed_since_import,
    file_digests,
    write_submission_times,
)

KINDS = ("canvas", "gradescope")
_METADATA_BYTES = 64 << 20  # the metadata of a class of thousands is a few MB of YAML


@dataclass(frozen=True)
class Imported:
    """What an import wrote: each learner's notebooks (file names in their folder), the
    entries not imported with why, and what else the instructor should know."""

    learners: dict[str, list[str]]
    skipped: list[str]
    notes: list[str]


def import_export(kind: str, archive: Path, out: Path, *, roster: Path | None = None, match: str | None = None,
                  times: Path | list[Path] | None = None, keep_latest: bool = False, skip_unmatched: bool = False,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> Imported:
    """Import ``archive``, an export of ``kind`` (one of KINDS), into ``out``: a new or
    empty folder, or one holding only an earlier import of that kind, which it replaces.
    Raises ValueError, writing nothing, for a submission that names no learner or a learner
    whose name cannot be a folder (unless ``skip_unmatched``: those are left out, and
    listed), two submissions of one learner (unless ``keep_latest``), or a zip that unpacks
    to more than ``max_bytes``."""
    if kind not in KINDS:
        raise ValueError(f"import reads {' or '.join(KINDS)} exports, not {kind!r}")
    out = Path(out)
    earlier_import_problem(out, kind)
    budget = Budget(max_bytes)
    with open_export(Path(archive)) as zipped:
        entries, skipped = readable_entries(zipped)
        reading = _read(kind, zipped, entries, budget, roster, match, times)
        if reading.unmatched and not skip_unmatched:
            raise ValueError("submissions that name no learner (import the others with --skip-unmatched): "
                             + " | ".join(reading.unmatched))
        chosen = by_learner(reading.submissions, keep_latest)
        bad = [f"{learner!r} ({submission.source}): {login_problem(learner)}" for learner, submission in chosen.items()
               if login_problem(learner)]
        if bad and not skip_unmatched:  # one learner's name, like one unmatched file, need not stop the others
            raise ValueError("learner names that cannot be folders (import the others with --skip-unmatched): "
                             + " | ".join(bad))
        chosen = {learner: submission for learner, submission in chosen.items() if not login_problem(learner)}
        chosen, too_large = _without_oversized(chosen, LARGEST_NOTEBOOK)
        kept = {submission.source: submission for submission in chosen.values()}  # a group's, once
        declared = sum(info.file_size for submission in kept.values() for info, _ in submission.notebooks)
        if declared > max_bytes:
            raise ValueError(f"the notebooks unpack to {megabytes(declared)}, over --max-size {megabytes(max_bytes)}: "
                             "nothing was imported")
        written = _write(kind, Path(archive).name, zipped, chosen, out, budget)
    notes = reading.notes + [f"not imported: {problem}" for problem in [*reading.unmatched, *bad]]
    return Imported(written, skipped + reading.skipped + too_large, notes)


# The largest notebook file grade reads with its default limits: one learner's larger file
# is left out alone (grade would refuse it), never the class's import with it.
LARGEST_NOTEBOOK = SAVED_OUTPUTS_FACTOR * DEFAULT_LIMITS.output


def _without_oversized(chosen: dict[str, Submission], largest: int) -> tuple[dict[str, Submission], list[str]]:
    """``chosen`` without the notebooks larger than ``largest`` bytes, and each one left out, with why."""
    left_out = {info.filename: f"{info.filename!r}: {megabytes(info.file_size)}, larger than the "
                               f"{megabytes(largest)} grade reads of a notebook: not imported"
                for submission in chosen.values() for info, _ in submission.notebooks if info.file_size > largest}
    if not left_out:
        return chosen, []
    return ({learner: replace(submission, notebooks=tuple((info, name) for info, name in submission.notebooks
                                                          if info.filename not in left_out))
             for learner, submission in chosen.items()}, list(left_out.values()))


def readable_entries(zipped: zipfile.ZipFile) -> tuple[list[zipfile.ZipInfo], list[str]]:
    """(the zip's files that may be read, every other entry but a folder with why not)."""
    entries, skipped = [], []
    for info in zipped.infolist():
        problem = entry_problem(info)
        if problem:
            skipped.append(f"{info.filename!r}: {problem}")
        elif not info.is_dir():
            entries.append(info)
    return entries, skipped


def _read(kind: str, zipped: zipfile.ZipFile, entries: list[zipfile.ZipInfo], budget: Budget, roster: Path | None,
          match: str | None, times: Path | list[Path] | None) -> Reading:
    if kind == "canvas":
        if roster is None:
            raise ValueError("canvas needs --roster: the gradebook CSV exported from Canvas (Grades, Export), whose "
                             "ID column holds the user id each file name carries")
        return canvas_submissions(entries, roster, match or "SIS Login ID", read_times(times) if times else None)
    if times is not None:
        raise ValueError(f"--times is for Canvas, whose file names carry no time; Gradescope's {METADATA} has it")
    metadata = find_metadata(entries)
    if metadata.file_size > _METADATA_BYTES:
        raise ValueError(f"{metadata.filename} is {megabytes(metadata.file_size)}; import reads up to "
                         f"{megabytes(_METADATA_BYTES)} of metadata")
    base = metadata.filename[: -len(METADATA)]
    return gradescope_submissions(entries, read_metadata(budget.read(zipped, metadata), metadata.filename), base,
                                  match or "email")


def _write(kind: str, archive_name: str, zipped: zipfile.ZipFile, chosen: dict[str, Submission], out: Path,
           budget: Budget) -> dict[str, list[str]]:
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.import-", dir=out.parent))
    try:
        written: dict[str, list[str]] = {}
        for learner, submission in sorted(chosen.items()):
            (staging / learner).mkdir()
            names = notebook_names([given for _, given in submission.notebooks])
            for (info, _), name in zip(submission.notebooks, names):
                budget.copy(zipped, info, staging / learner / name)
            written[learner] = names
        write_submission_times(staging, [(learner, s.submitted_at, s.late, s.source)
                                         for learner, s in sorted(chosen.items())])
        record = {"kind": kind, "zip": archive_name, "folders": sorted(chosen), "files": file_digests(staging)}
        (staging / IMPORT_RECORD).write_text(json.dumps(record, indent=1), encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)  # empty, or an earlier import of this kind, unchanged (earlier_import_problem)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written


def earlier_import_problem(out: Path, kind: str) -> None:
    """Raise ValueError unless ``out`` may be written: missing, empty, or holding only an
    earlier import of ``kind``, every file as that import wrote it (nothing added, changed
    or removed since: an instructor's own files are never replaced)."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ValueError(f"--out {out} is {'a symbolic link' if out.is_symlink() else 'a file'}: give a folder")
    if not out.exists() or not any(out.iterdir()):
        return
    refuse = f"--out {out} is not empty and holds files an earlier import did not write"
    try:
        record = json.loads((out / IMPORT_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ValueError(f"{refuse} (it has no {IMPORT_RECORD}): give a new or empty folder") from None
    if not isinstance(record, dict) or record.get("kind") != kind:
        raise ValueError(f"--out {out} holds an import of a {record.get('kind') if isinstance(record, dict) else '?'} "
                         f"export, not {kind}: give a new or empty folder")
    links = [path.relative_to(out).as_posix() for path in out.rglob("*") if path.is_symlink()]
    folders = {path.relative_to(out).as_posix() for path in out.rglob("*") if path.is_dir()}
    changed = [f"{path} ({how})" for path, how in changed_since_import(out).items()]
    changed += [f"{path} (a link)" for path in links] + [f"{folder}/ (added)" for folder in
                                                        sorted(folders - set(record.get("folders", [])))]
    if changed:
        listed = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        raise ValueError(f"{refuse}, or changed one since ({listed}): give a new or empty folder "
                         "(or move it aside)")
