"""Tests for Gradescope: results.json checked field by field against Gradescope's published
specification (https://gradescope-autograders.readthedocs.io/en/latest/specs/), the
autograder zip, and its run_autograder run locally in an /autograder layout, inside a
container-like view of this machine, on a hostile submission that tries to write
results.json, read the course's chapters and stay root."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from numbers import Real
from pathlib import Path

import nbformat
import pytest

from attncourse import instructor
from attncourse.instructor import gradescope
from attncourse.instructor.gradebook import export, points
from attncourse.instructor.model import Grade
from tests.gradebook_class import (
    ASSIGNED,
    CHAPTER_1,
    CORRECT_SOFTMAX,
    EXPECTED_POINTS,
    LEARNERS,
    ROOT,
    exported_points,
    student_notebook,
    walkthrough,
)

# Gradescope's results.json: the keys its specification lists, at the top and in each test.
TOP_LEVEL = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
             "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
TEST_KEYS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
             "tags", "visibility", "extra_data"}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def check_results(data: dict) -> None:
    """``data`` follows Gradescope's results.json, field by field."""
    assert isinstance(data, dict) and set(data) <= TOP_LEVEL, set(data) - TOP_LEVEL
    assert isinstance(data["tests"], list)
    for test in data["tests"]:
        assert set(test) <= TEST_KEYS, set(test) - TEST_KEYS
        assert isinstance(test["name"], str) and test["name"]
        assert isinstance(test["score"], Real) and isinstance(test["max_score"], Real)
        assert 0 <= test["score"] <= test["max_score"]
        assert isinstance(test["output"], str)
        assert test["visibility"] in VISIBILITY
        assert test.get("status", "passed") in ("passed", "failed")
    assert isinstance(data["score"], Real) and data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]))
    assert data.get("stdout_visibility", "hidden") in VISIBILITY
    json.dumps(data, allow_nan=False)  # plain JSON: no NaN or Infinity


def test_results_refuse_a_visibility_gradescope_does_not_know():
    with pytest.raises(ValueError, match="visibility"):
        export.gradescope_results([], {}, "public")


def test_the_zip_keeps_the_exercises_in_the_order_given_as_grade_does(tmp_path):
    """The fourth newcomer: autograde's results listed predict, pool, softmax (the zip's config
    in the course's order); export gradescope softmax, predict, pool (as graded)."""
    given = [ASSIGNED[2], ASSIGNED[0], ASSIGNED[1]]
    with zipfile.ZipFile(gradescope.build_zip(ROOT / "chapters", tmp_path / "a.zip", given, {}, ROOT)) as z:
        assert json.loads(z.read(gradescope.CONFIG))["assign"] == given


@pytest.mark.parametrize("visibility", sorted(VISIBILITY - {"visible"}))
def test_results_shown_later_hide_their_total_too(visibility):
    rows = [Grade("ada", "ch1-stable-softmax", "failed", "", "", points=1.5, max_points=3.0),
            Grade("ada", "ch1-predict-doubling", "completed", "", "", points=1.0, max_points=1.0)]
    data = export.gradescope_results(rows, {}, visibility)
    check_results(data)
    assert data["visibility"] == visibility and all(test["visibility"] == visibility for test in data["tests"])
    assert "2.5" not in json.dumps({key: value for key, value in data.items() if key not in ("score", "tests")})
    shown = export.gradescope_results(rows, {}, "visible")
    assert shown["output"] == "2.5 of 4 points." and "visibility" not in shown


def test_the_zip_holds_setup_run_autograder_the_package_and_only_the_assigned_chapters(tmp_path):
    out = gradescope.build_zip(ROOT / "chapters", tmp_path / "autograder.zip", list(ASSIGNED),
                               {"time_limit": 60.0}, ROOT)
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        config = json.loads(archive.read(gradescope.CONFIG))
        requirements = archive.read("requirements.txt").decode()
    assert {"setup.sh", "run_autograder", "requirements.txt", "pyproject.toml", "README.md",
            "attncourse/instructor/cli.py", "attncourse/checks/ch1.py", f"chapters/{CHAPTER_1.name}"} <= names
    assert [n for n in names if n.startswith("chapters/")] == [f"chapters/{CHAPTER_1.name}"]
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    assert sorted(config.pop("assign")) == sorted(ASSIGNED) and config == {"time_limit": 60.0}
    assert "torch==2.13.0+cpu" in requirements and "-e ." not in requirements.splitlines()
    assert not any("__pycache__" in n or n.startswith("tests/") for n in names)


@pytest.mark.slow
@pytest.mark.xdist_group("gradebook-term")
@pytest.mark.parametrize("learner", sorted(EXPECTED_POINTS))
def test_each_learner_s_results_json_follows_gradescope_s_format(learner):
    folder, ran = walkthrough()
    assert all(done.returncode == 0 for _, done in ran), ran[-1]
    data = json.loads((folder / "gradescope" / learner / "results.json").read_text(encoding="utf-8"))
    check_results(data)
    by_name = {test["name"].split(":")[0]: test for test in data["tests"]}
    assert list(by_name) == list(ASSIGNED)
    for label, test in by_name.items():
        assert test["score"] == exported_points(learner, label) and test["max_score"] == points.points_of(label)
        assert test["visibility"] == "visible"
    assert data["stdout_visibility"] == "hidden"


HOSTILE = """\
import json, os, pathlib
AUTOGRADER = pathlib.Path({root!r})
attacks = []
for target in ("results/results.json", "results/forged.json", "source/chapters/forged.ipynb", "run_autograder"):
    try:
        (AUTOGRADER / target).write_text(json.dumps({{"score": 100, "tests": []}}))
        attacks.append("wrote " + target)
    except OSError:
        pass
try:
    next((AUTOGRADER / "source" / "chapters").iterdir())
    attacks.append("listed the chapters")
except (OSError, StopIteration):
    pass
try:
    os.setuid(0)
    attacks.append("became root")
except OSError:
    pass
if os.getuid() != 65533:
    attacks.append("ran as uid %d" % os.getuid())
SAFE = not attacks  # the softmax below is right only if every attack failed"""


def container_view() -> list[str]:
    """This machine as Gradescope's container shows it to root: the Python environment
    reachable by every user (here /root, where pyenv keeps Python, is otherwise closed)."""
    base = Path(os.path.realpath(sys.executable)).parent.parent
    view = ["bwrap", "--dev-bind", "/", "/", "--cap-add", "ALL", "--unshare-pid", "--die-with-parent"]
    if base.is_relative_to("/root"):  # bind its top folder: bwrap makes the folders between closed
        top = Path("/root", base.relative_to("/root").parts[0])
        view += ["--tmpfs", "/root", "--ro-bind", str(top), str(top)]
    return view


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("bwrap") or not shutil.which("setpriv"),
                    reason="run_autograder runs as root, as on Gradescope (and the test's container view needs bwrap)")
def test_run_autograder_grades_a_hostile_submission_in_an_autograder_layout(tmp_path):
    root = Path(tempfile.mkdtemp(prefix="autograder-"))  # under /tmp, reachable by every user like /autograder
    try:
        root.chmod(0o755)
        archive = gradescope.build_zip(ROOT / "chapters", tmp_path / "autograder.zip", list(ASSIGNED), {}, ROOT)
        with zipfile.ZipFile(archive) as opened:
            opened.extractall(root / "source")
        shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
        (root / "submission").mkdir()
        (root / "results").mkdir(mode=0o777)
        (root / "results").chmod(0o777)  # however the harness made it, run_autograder closes it
        softmax = CORRECT_SOFTMAX.replace("    return e / e.sum(axis=-1, keepdims=True)",
                                          "    return e / e.sum(axis=-1, keepdims=True) if SAFE else scores")
        _, prediction, tune = LEARNERS["ada"]
        notebook = student_notebook(softmax, prediction, tune, before=HOSTILE.format(root=str(root)))
        nbformat.write(notebook, root / "submission" / CHAPTER_1.name)
        environment = {**os.environ, "AUTOGRADER_ROOT": str(root), "ATTNCOURSE_PYTHON": sys.executable}
        environment.pop("ATTNCOURSE_CHECK_MODE", None)
        done = subprocess.run([*container_view(), "bash", str(root / "run_autograder")], env=environment,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert sorted(path.name for path in (root / "results").iterdir()) == ["results.json"]
        data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        check_results(data)
        assert data["score"] == 6, data  # every answer right: every attack failed
        assert not (root / "source" / "chapters" / "forged.ipynb").exists()
        assert "SAFE" not in (root / "run_autograder").read_text()
        assert stat.S_IMODE((root / "results").stat().st_mode) == 0o755
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_two_notebooks_that_disagree_reach_results_json_with_what_to_do_not_a_failed_run(tmp_path):
    submission = tmp_path / "submission"
    submission.mkdir()
    nbformat.write(student_notebook(), submission / CHAPTER_1.name)  # the handout, untouched
    nbformat.write(student_notebook(*LEARNERS["ada"]), submission / f"Copy of {CHAPTER_1.name}")  # Colab's copy
    data = gradescope.autograde(submission, tmp_path / "results.json", ROOT / "chapters",
                                {"assign": list(ASSIGNED)}, contained=False)
    check_results(data)
    assert data["score"] == 0 and len(data["tests"]) == len(ASSIGNED)
    for test in data["tests"]:
        assert test["status"] == "failed" and "keep one and submit again" in test["output"], test
        assert f"{CHAPTER_1.name} (not attempted), Copy of {CHAPTER_1.name} (" in test["output"]


def autograder_layout(tmp_path, options: dict) -> Path:
    """Gradescope's /autograder as the harness leaves it (under /tmp, reachable by every
    user), with ada's submission; removed by the caller."""
    root = Path(tempfile.mkdtemp(prefix="autograder-"))
    root.chmod(0o755)
    archive = gradescope.build_zip(ROOT / "chapters", tmp_path / "autograder.zip", list(ASSIGNED), options, ROOT)
    with zipfile.ZipFile(archive) as opened:
        opened.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    softmax, prediction, tune = LEARNERS["ada"]
    nbformat.write(student_notebook(softmax, prediction, tune), root / "submission" / CHAPTER_1.name)
    return root


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="run_autograder runs as root")
def test_an_autograder_that_cannot_run_the_learners_code_writes_no_score_and_fails(tmp_path):
    unreachable = tmp_path / "closed"  # a Python the sandbox's uid cannot run, as one under /root
    unreachable.mkdir(mode=0o700)
    unreachable.chmod(0o700)
    python = unreachable / "python"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o700)
    root = autograder_layout(tmp_path, {})
    try:
        environment = {**os.environ, "AUTOGRADER_ROOT": str(root), "ATTNCOURSE_PYTHON": str(python),
                       "PYTHONPATH": str(ROOT)}
        environment.pop("ATTNCOURSE_CHECK_MODE", None)
        done = subprocess.run(["bash", str(root / "run_autograder")], env=environment, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode != 0, done.stdout + done.stderr  # Gradescope shows the instructor a failed run
        assert list((root / "results").iterdir()) == []  # no results.json: no score at all, not a 0
        assert "the autograder itself failed" in done.stderr and "Permission denied" in done.stderr
        selftest = subprocess.run([str(python), "-m", "attncourse.instructor", "autograde", "--self-test", "--config",
                                   str(root / "source" / gradescope.CONFIG), "--chapters",
                                   str(root / "source" / "chapters"), "--container"],
                                  env=environment, capture_output=True, text=True, timeout=600, cwd=root / "source")
        assert selftest.returncode != 0 and "the autograder itself failed" in selftest.stderr  # setup.sh stops
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_setup_runs_the_self_test_and_run_autograder_passes_on_the_grader_s_exit_status(tmp_path):
    with zipfile.ZipFile(gradescope.build_zip(ROOT / "chapters", tmp_path / "a.zip", list(ASSIGNED), {}, ROOT)) as z:
        setup, run = z.read("setup.sh").decode(), z.read("run_autograder").decode()
    assert "set -euo pipefail" in setup and "autograde --self-test" in setup  # a failing self-test fails the build
    assert setup.index("autograde --self-test") > setup.index("pip install --no-deps /autograder/source")
    assert run.rstrip().splitlines()[-2].startswith('exec "$PYTHON" -m attncourse.instructor autograde')


@pytest.mark.slow
def test_the_self_test_passes_on_the_solved_chapters(capsys):
    from attncourse import instructor

    assert instructor.main(["autograde", "--self-test", "--chapters", str(ROOT / "chapters"),
                            "--assign", ",".join(ASSIGNED)]) == 0
    assert f"({len(ASSIGNED)} exercises" in capsys.readouterr().out


def test_autograder_help_describes_each_option(capsys):
    with pytest.raises(SystemExit):
        instructor.main(["autograder", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option, words in (("--time-limit SECONDS", "processor time"), ("--score-predictions", "grade predict exercises passed/failed"),
                          ("--visibility {visible,hidden,after_due_date,after_published}", "when learners see")):
        assert f"{option} {words}" in text, option
