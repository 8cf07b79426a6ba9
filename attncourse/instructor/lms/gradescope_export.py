"""Gradescope's "Export Submissions" zip, read into submissions: each submission's folder,
its submitters and its time, from the export's ``submission_metadata.yml``.

Gradescope documents no layout for this export (its help pages say only that the zip
holds the submissions); what is read here is the layout otter-grader reads
(ucbds-infra/otter-grader: ``otter/metadata.py``, ``GradescopeParser``; its sample export
``test/test-grade/gradescope-export/submission_metadata.yml``):

* ``submission_metadata.yml`` beside one folder per submission (an export of uploaded
  PDFs has a file in its place), mapping each folder's name to ``:submitters:`` (a list:
  several in a group submission, each with ``:name:``, ``:email:`` and ``:sid:``),
  ``:created_at:`` (when it was submitted, a YAML timestamp with its zone, such as
  ``2020-02-27 06:58:05.746365000 Z``) and ``:score:``. The keys are Ruby symbols, hence
  the colons; plain keys are read too.
* The same fields, for the submission being graded, are what Gradescope does document for
  its autograder's ``submission_metadata.json`` (``created_at``: "Submission time";
  ``users``: "Multiple users will be listed in the case of group submissions",
  https://gradescope-autograders.readthedocs.io/en/latest/submission_metadata/).

Where that is silent, the safe reading: the export may sit in one top folder or none; a
learner is the part of their email before the ``@`` (``--match email``), their whole
address (``--match address``, where two people's addresses share that part) or their
student id (``--match sid``), and a submitter without it names no learner (refused unless
--skip-unmatched); every member of a group gets the group's notebooks and time; a time
without a zone is left empty; the metadata says nothing of lateness, so late_in_lms is
left empty.
"""

from __future__ import annotations

import email.utils
import zipfile
from datetime import datetime

import yaml

from attncourse.instructor.lms.archive import is_notebook
from attncourse.instructor.lms.plan import Reading, Submission

METADATA = "submission_metadata.yml"
MATCHES = ("email", "address", "sid")


def find_metadata(entries: list[zipfile.ZipInfo]) -> zipfile.ZipInfo:
    """The export's metadata entry, at the top of the zip or in one top folder: the
    shallowest, since a learner may upload a file of the same name, which lands one folder
    deeper, in their submission's folder."""
    found = [info for info in entries if info.filename.rsplit("/", 1)[-1] == METADATA
             and info.filename.count("/") <= 1]
    shallowest = min((info.filename.count("/") for info in found), default=0)
    found = [info for info in found if info.filename.count("/") == shallowest]
    if len(found) != 1:
        raise ValueError(f"a Gradescope export holds one {METADATA}, at its top or in one top folder; this zip holds "
                         f"{len(found) or 'none'}{': ' + ', '.join(i.filename for i in found) if found else ''}")
    return found[0]


def read_metadata(data: bytes, where: str) -> dict[str, dict]:
    """submission folder -> its record, from the YAML of ``submission_metadata.yml``."""
    try:
        metadata = yaml.safe_load(data.decode("utf-8-sig"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise ValueError(f"{where} is not YAML that can be read: {error}") from None
    if not isinstance(metadata, dict) or not all(isinstance(v, dict) for v in metadata.values()):
        raise ValueError(f"{where} does not map each submission to its record, as Gradescope's export does")
    return {str(key): value for key, value in metadata.items()}


def field(record: dict, name: str):
    """``record``'s ``name``, written as a Ruby symbol (``:name``) or not."""
    return record.get(f":{name}", record.get(name))


def submitter_login(submitter: object, match: str) -> str:
    """The learner a submitter is: their email's part before the ``@`` (``email``), their
    whole address (``address``), or their student id (empty if the record has none)."""
    value = submitter_identity(submitter, match)
    return value.rsplit("@", 1)[0] if match == "email" and "@" in value else value


def submitter_identity(submitter: object, match: str) -> str:
    """Who a submitter is: their whole e-mail address (``"Zed <zed@uni.edu>"`` read as
    ``zed@uni.edu``), or their student id."""
    by_email = match in ("email", "address")
    value = str(field(submitter, "email" if by_email else match) or "").strip() if isinstance(submitter, dict) else ""
    return email.utils.parseaddr(value)[1] or value if by_email else value


def created_at(value: object) -> datetime | None:
    """A submission's time with its offset (None if missing or without a zone)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace(" Z", "+00:00"))
        except ValueError:
            return None
    return value if isinstance(value, datetime) and value.utcoffset() is not None else None


def gradescope_submissions(entries: list[zipfile.ZipInfo], metadata: dict[str, dict], base: str,
                           match: str = "email") -> Reading:
    """The export's submissions: each folder (or file) ``metadata`` lists under ``base``
    (the metadata's own folder, ``""`` or ``"top/"``), with its submitters as learners."""
    if match not in MATCHES:
        raise ValueError(f"--match for Gradescope is one of {', '.join(MATCHES)}, not {match!r}")
    reading = Reading()
    claimed: set[str] = {base + METADATA}
    for folder, record in metadata.items():
        inside = [info for info in entries if info.filename == base + folder
                  or info.filename.startswith(f"{base}{folder}/")]
        claimed.update(info.filename for info in inside)
        submitters = field(record, "submitters")
        logins = [submitter_login(s, match) for s in submitters] if isinstance(submitters, list) else []
        if not logins or not all(logins):
            reading.unmatched.append(f"{base}{folder}: a submitter with no {match} in {METADATA}")
            continue
        reading.skipped += [f"{info.filename}: not a notebook (.ipynb)" for info in inside if not is_notebook(info.filename)]
        notebooks = tuple((info, info.filename[len(base + folder):].lstrip("/") or folder)
                          for info in inside if is_notebook(info.filename))
        who = dict(zip(logins, (submitter_identity(s, match) for s in submitters)))
        reading.submissions.append(Submission(base + folder, tuple(who), notebooks,
                                              created_at(field(record, "created_at")), None, tuple(who.values())))
        if not inside:
            reading.notes.append(f"{base}{folder}: listed in {METADATA}, but no file of it is in the zip")
    reading.skipped += [f"{info.filename}: not a submission {METADATA} lists" for info in entries
                        if info.filename not in claimed]
    return reading
