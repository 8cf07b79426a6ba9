"""Late work: when each learner submitted, against the due date, and the penalty the
instructor chose (none unless they give one).

``grade --due WHEN`` records the policy and each learner's submission time in the report
folder (``late.json``, ``recorded``): the time ``import`` recorded (``submitted.csv``), else (a
learner put in place by hand, or one of whose graded notebooks was added or changed since
the import; not a file removed, nor one grade passes over, nor a notebook holding the bytes
the import wrote for that learner: renamed, moved into a subfolder or copied) the newest
modification time of the learner's notebooks, which copying a folder may change (the
report says which). Every reader of the report's rows (the report itself, each export)
marks them from that file (``marked``), so a changed policy needs no notebook run again.
A learner is late by whole days, a part of a day counting as one (as Canvas's late
policy counts them); the penalty takes ``per_day`` of each exercise's points for each
day, at most ``cap``. An instructor's override replaces the points, penalty and all.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from attncourse.instructor.model import Grade
from attncourse.instructor.submissions import changed_since_import, find_learners, submission_times

LATE = "late.json"
DAY = 86400.0
UNPENALISED = "no penalty without it (import with --times)"
UNKNOWN = "submission time unknown (the import recorded none): not marked late"
CHANGED_SINCE_IMPORT = "file time, changed since the import"


@dataclass(frozen=True)
class Policy:
    due: datetime  # with its offset from UTC
    per_day: float = 0.0  # the fraction of the points each day late takes (0: flagged, no penalty)
    cap: float = 1.0  # the most it takes

    def __post_init__(self):
        if self.due.utcoffset() is None:
            raise ValueError(f"the due date {self.due.isoformat()} has no offset from UTC (say +00:00, or your zone's)")
        if not (0 <= self.per_day <= 1 and 0 <= self.cap <= 1):
            raise ValueError(f"a late penalty is a percentage from 0 to 100: per day {self.per_day:.0%}, "
                             f"at most {self.cap:.0%}")


def recorded(submissions: Path, policy: Policy) -> str:
    """What a report folder's LATE holds: the policy and every learner's submission time
    in ``submissions`` (and where it comes from)."""
    imported = submission_times(submissions)
    changed = changed_since_import(submissions)
    learners, _ = find_learners(submissions)
    by_hand = {learner for learner, notebooks in learners.items()  # a graded notebook new since the import
               if any(changed.get(path.as_posix()) in ("added", "changed") for path in notebooks)}
    times = {}
    for learner, notebooks in learners.items():
        submitted, flagged = imported.get(learner, (None, None))
        source = "import"
        if (learner not in imported or learner in by_hand) and notebooks:  # put there by hand: the files' own time
            newest = max((Path(submissions) / path).stat().st_mtime for path in notebooks)
            submitted, flagged = datetime.fromtimestamp(newest, timezone.utc), None  # the platform marked other files
            source = CHANGED_SINCE_IMPORT if learner in imported else "file time"
        times[learner] = {"submitted_at": submitted.isoformat() if submitted else "", "source": source,
                          "late_in_lms": flagged}
    return json.dumps({"due": policy.due.isoformat(), "per_day": policy.per_day, "cap": policy.cap,
                       "learners": times}, indent=1)


def kept_policy(out: Path) -> Policy | None:
    """The late policy ``out``'s LATE holds, or None if it has none."""
    policy, _ = _read(out)
    return policy


def marked(rows: list[Grade], out: Path) -> list[Grade]:
    """``rows`` with their submission time, how late and the penalty (``Grade.late``,
    ``Grade.late_penalty``), as ``out``'s LATE says; unchanged where it has none."""
    policy, learners = _read(out)
    if policy is None:
        return rows
    return [replace(row, **lateness(learners.get(row.learner, {}), policy)) for row in rows]


def _read(out: Path) -> tuple[Policy | None, dict]:
    try:
        kept = json.loads((Path(out) / LATE).read_text(encoding="utf-8"))
        return Policy(datetime.fromisoformat(kept["due"]), float(kept["per_day"]), float(kept["cap"])), kept["learners"]
    except FileNotFoundError:
        return None, {}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{Path(out) / LATE} cannot be read ({error}): grade again with --due") from None


def lateness(learner: dict, policy: Policy) -> dict:
    """A learner's ``submitted_at``, ``late`` (what the report says) and ``late_penalty``."""
    text = learner.get("submitted_at") or ""
    flagged = learner.get("late_in_lms")
    if not text:
        unpenalised = f": {UNPENALISED}" if policy.per_day else ""
        return {"late": f"marked late by the learning platform, with no submission time{unpenalised}" if flagged else
                UNKNOWN + (" by the learning platform" if flagged is False else "")}
    submitted = datetime.fromisoformat(text)
    days = math.ceil((submitted - policy.due).total_seconds() / DAY)
    shown = f"{submitted.astimezone(policy.due.tzinfo).isoformat(timespec='minutes')} ({learner.get('source', '')})"
    if days <= 0:
        return {"submitted_at": shown, "late": "marked late by the learning platform" if flagged else ""}
    penalty = round(min(policy.cap, policy.per_day * days), 6)  # 0.3, not 0.30000000000000004
    return {"submitted_at": shown, "late_penalty": penalty,
            "late": f"{days} day{'s' if days > 1 else ''} late" + (f": -{penalty:.0%} of each exercise's points"
                                                                  if penalty else "")}


def for_the_learner(row: Grade) -> str:
    """What ``row``'s learner reads of its lateness: nothing where no time was recorded and
    nothing marked it late (the report lists them for the instructor, step 4)."""
    return "" if row.late.startswith(UNKNOWN) else row.late


def unpenalised(rows: list[Grade]) -> list[str]:
    """The learners a penalty was asked for but could not be applied to: marked late by
    their learning platform, with no submission time."""
    return list(dict.fromkeys(row.learner for row in rows if row.late.endswith(UNPENALISED)))


def timed_by_hand(rows: list[Grade]) -> list[str]:
    """The imported learners timed by a notebook put in place since the import (its file's
    time, which a copy sets to the moment of copying)."""
    return list(dict.fromkeys(row.learner for row in rows if row.submitted_at.endswith(f"({CHANGED_SINCE_IMPORT})")))
