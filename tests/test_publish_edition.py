"""Publishing the reader edition (site_ext/publish_edition.py), with a local bare repository
standing in for GitHub: the reader branch holds the edition where the launch links look for
it and what Binder and pip build from, in one commit replaced on every publish; a missing or
stale edition, or uncommitted changes, are refused; and `pip install git+URL@BRANCH`, as
the chapters' Colab install cell runs it, installs the course from the branch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import nbformat
import pytest

import tools
from site_ext.publish_edition import SHIPPED, NotPublishable, publish, reader_branch

IDENTITY = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.org",
            "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.org"}
MARK = "This is the reader edition."


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=os.environ | IDENTITY).stdout


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A checkout like the course's (its chapters, what SHIPPED names, _config.yml and a test
    that must not be published), committed; an edition of every chapter (the chapter with a
    first markdown cell of its own); and a bare repository as its remote."""
    monkeypatch.setattr(os, "environ", os.environ | IDENTITY)
    root, edition, remote = tmp_path / "course", tmp_path / "edition", tmp_path / "remote.git"
    ignore = shutil.ignore_patterns("__pycache__")
    for name in (*SHIPPED, "chapters", "_config.yml"):
        source = tools.ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=ignore)
        else:
            shutil.copy(source, root / name)
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the course")
    (edition / "chapters").mkdir(parents=True)
    for chapter in sorted((root / "chapters").glob("*.ipynb")):
        nb = nbformat.read(chapter, as_version=4)
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(MARK))
        nbformat.write(nb, edition / "chapters" / chapter.name)
    git(tmp_path, "init", "-q", "--bare", str(remote))
    return root, edition, remote


def test_the_branch_holds_the_edition_and_what_binder_and_pip_build_from(course):
    root, edition, remote = course
    commit = publish(root, remote=str(remote), edition=edition)
    branch = reader_branch(root)
    assert git(remote, "rev-parse", branch).strip() == commit
    chapters = sorted(p.name for p in (root / "chapters").glob("*.ipynb"))
    for name in chapters:  # where the launch links look for it: the chapter's own path
        published = git(remote, "show", f"{branch}:chapters/{name}")
        assert published == (edition / "chapters" / name).read_text()
        assert MARK in published
    files = set(git(remote, "ls-tree", "-r", "--name-only", branch).split())
    shipped = set(git(root, "ls-tree", "-r", "--name-only", "HEAD", "--", *SHIPPED).split())
    assert {"binder/requirements.txt", "binder/runtime.txt", "pyproject.toml",
            "attncourse/reader_edition.py"} <= shipped
    assert files == shipped | {f"chapters/{name}" for name in chapters}
    assert git(remote, "rev-list", "--parents", "-n", "1", branch).split() == [commit]


def test_each_publish_replaces_the_branch(course):
    root, edition, remote = course
    first = publish(root, remote=str(remote), edition=edition)
    (root / "README.md").write_text((root / "README.md").read_text() + "\nMore.\n")
    git(root, "commit", "-q", "-am", "more")
    second = publish(root, remote=str(remote), edition=edition)
    branch = reader_branch(root)
    assert second != first
    assert git(remote, "rev-list", "--count", branch).strip() == "1"
    assert git(remote, "show", f"{branch}:README.md").endswith("More.\n")


def test_a_missing_or_stale_edition_or_an_uncommitted_change_is_refused(course):
    root, edition, remote = course
    stale = sorted((edition / "chapters").glob("*.ipynb"))[0]
    nb = nbformat.read(stale, as_version=4)
    next(cell for cell in nb.cells if cell.cell_type == "code").source += "\n# changed"
    nbformat.write(nb, stale)
    missing = sorted((edition / "chapters").glob("*.ipynb"))[-1]
    missing.unlink()
    with pytest.raises(NotPublishable, match="make book") as refused:
        publish(root, remote=str(remote), edition=edition)
    assert f"{stale.name}: its reader edition is older" in str(refused.value)
    assert f"{missing.name}: no reader edition" in str(refused.value)
    (root / "attncourse" / "__init__.py").write_text("# changed\n")
    with pytest.raises(NotPublishable, match="commit these first"):
        publish(root, remote=str(remote), edition=edition)
    assert not git(remote, "branch", "--list").strip(), "nothing was pushed"


@pytest.mark.slow
def test_pip_installs_the_course_from_the_branch(course, tmp_path):
    """What the Colab install cell runs (``attncourse @ git+URL@BRANCH``), with the bare
    repository's file:// URL for GitHub's; --no-deps, into a folder of its own."""
    root, edition, remote = course
    publish(root, remote=str(remote), edition=edition)
    target = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--target", str(target),
                    f"attncourse @ git+file://{remote}@{reader_branch(root)}"],
                   check=True, capture_output=True, timeout=600, cwd=tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", "import attncourse.reader_edition as m; print(m.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env={"PATH": os.environ["PATH"],
                                                           "PYTHONPATH": str(target)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(str(target))
