"""What an import will write: each submission an export holds (``Submission``), the one
kept for each learner (``by_learner``: two for one learner are refused unless the latest
is to be kept), and the names written, checked or made safe (``login_problem``,
``notebook_names``)."""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from datetime import datetime

from attncourse.instructor.submissions import GRADERS_OWN

_LONGEST_STEM = 80  # bytes (UTF-8) of a learner's own file name kept (a disk allows 255 bytes)


@dataclass(frozen=True)
class Submission:
    """One submission of an export: what names it in the zip (Canvas: its files;
    Gradescope: its folder), who submitted it (a Gradescope group: several learners), its
    notebooks, when it was submitted and whether the platform marked it late (None where
    the export does not say)."""

    source: str
    learners: tuple[str, ...]
    notebooks: tuple[tuple[zipfile.ZipInfo, str], ...]  # (the entry, the file name its learner gave it)
    submitted_at: datetime | None
    late: bool | None
    people: tuple[str, ...] = ()  # who each learner is on the platform (an e-mail, an id): two people, one name?


@dataclass
class Reading:
    """An export read: its submissions; the submissions that name no learner (refused
    unless --skip-unmatched); the entries not imported, with why; and what else the
    instructor should know."""

    submissions: list[Submission] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def by_learner(submissions: list[Submission], keep_latest: bool = False) -> dict[str, Submission]:
    """learner -> their submission. Two submissions of one learner (two Canvas users with
    one login, a learner in two Gradescope groups) are refused, naming both, unless
    ``keep_latest``: then the later one is kept, if both times are known."""
    found: dict[str, list[Submission]] = {}
    people: dict[str, set[str]] = {}
    for submission in submissions:
        for index, learner in enumerate(submission.learners):
            found.setdefault(learner, []).append(submission)
            if index < len(submission.people):
                people.setdefault(learner, set()).add(submission.people[index])
    chosen: dict[str, Submission] = {}
    clashes = []
    for learner, theirs in found.items():
        timed = [(s.submitted_at, s) for s in theirs if s.submitted_at]
        if len(people.get(learner, ())) > 1:  # never "the latest": one would replace another's work
            clashes.append(f"{learner!r} names {len(people[learner])} people ({', '.join(sorted(people[learner]))}): "
                           "import with another --match (gradescope: address, the whole e-mail; or sid), or rename one")
        elif len(theirs) == 1:
            chosen[learner] = theirs[0]
        elif keep_latest and len(timed) == len(theirs):
            chosen[learner] = max(timed, key=lambda pair: pair[0])[1]
        else:
            why = ("--keep-latest needs the time of each, and the export does not give it" if keep_latest
                   else "keep the latest with --keep-latest")
            clashes.append(f"{learner!r} has {len(theirs)} submissions ({'; '.join(s.source for s in theirs)}): {why}")
    if clashes:
        raise ValueError("two submissions for one learner: " + " | ".join(clashes))
    return chosen


def login_problem(login: str) -> str | None:
    """Why ``login`` cannot name a learner's folder (None if it can): grade would pass
    over a hidden folder, and a name must stay one folder inside --out."""
    if not login:
        return "it is empty"
    if login.startswith("."):
        return "it starts with a dot (grade passes over hidden folders)"
    if re.search(r"[/\\\x00]", login) or not login.isprintable():
        return "it holds a slash, a backslash or a control character"
    if login in GRADERS_OWN:
        return "it is the name of a file import writes beside the learners' folders"
    if len(login.encode()) > 200:
        return "it is longer than a folder's name may be"
    return None


def _cut_to_bytes(text: str, most: int) -> str:
    """``text`` cut to at most ``most`` bytes of UTF-8, between two characters (a disk's limit
    is in bytes: 80 CJK letters of 4 bytes each made a name it refused)."""
    return text.encode("utf-8")[:most].decode("utf-8", errors="ignore")


def notebook_names(given: list[str]) -> list[str]:
    """A safe, distinct file name for each notebook, from the name its learner gave it
    (untrusted text: its folders dropped, characters other than letters, digits, ``.``,
    ``-``, ``_`` and spaces made ``_``, shortened; ``-2``, ``-3`` added to a repeat, also
    one that differs in case alone, which some disks cannot tell apart)."""
    names: list[str] = []
    for name in given:
        stem = re.sub(r"[^\w.\- ]", "_", name.replace("\\", "/").rsplit("/", 1)[-1][: -len(".ipynb")])
        stem = _cut_to_bytes(stem.strip(" ."), _LONGEST_STEM).strip(" .") or "notebook"
        candidate, count = f"{stem}.ipynb", 1
        while candidate.lower() in {taken.lower() for taken in names}:
            count += 1
            candidate = f"{stem}-{count}.ipynb"
        names.append(candidate)
    return names
