"""Tests for ``attncourse.instructor``: the tag convention (``tags``), the student version
(``student``) and the command line's documentation (``cli``). Grading and its sandbox are
tested in tests/test_instructor_grading.py."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attncourse import instructor
from attncourse.instructor import (
    SolutionLeak,
    convention_problems,
    exercise_labels,
    make_student_notebook,
    solution_leaks,
    write_student_version,
)
from attncourse.instructor.course.tags import exercise_of
from attncourse.instructor.run.sandbox import DEFAULT_LIMITS, MiB
from attncourse.reader_edition import edition_folder, myst_left

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
CHAPTER_1 = CHAPTERS / "01_dot_product_similarity.ipynb"
SOFTMAX, DOUBLING, TUNE = "ch1-stable-softmax", "ch1-predict-doubling", "ch1-pool-prefers-badminton"
ROLE_TAGS = ("stub", "solution", "check", "hidden-test")


def _chapter_1():
    return nbformat.read(CHAPTER_1, as_version=4)


def _tagged(nb, label: str, role: str | None = None):
    return [
        cell for cell in nb.cells
        if f"exercise:{label}" in cell.metadata.get("tags", [])
        and (role is None or role in cell.metadata.get("tags", []))
    ]


def _edition_1():
    """Chapter 1's reader edition, which `make book` writes and `student` reads."""
    path = edition_folder(CHAPTERS) / CHAPTER_1.name
    if not path.exists():
        pytest.fail(f"no reader edition {path}: run `make book` first")
    return nbformat.read(path, as_version=4)


def _copy_chapters(tmp_path: Path, nb, edition=None) -> Path:
    """A checkout's chapters/ holding ``nb`` as chapter 1, and its reader edition (chapter
    1's own by default) where the build would write it."""
    folder = tmp_path / "chapters"
    folder.mkdir()
    nbformat.write(nb, folder / CHAPTER_1.name)
    edition_folder(folder).mkdir(parents=True)
    nbformat.write(edition or _edition_1(), edition_folder(folder) / CHAPTER_1.name)
    return folder


# --- the convention --------------------------------------------------------------------


def test_every_chapter_keeps_the_tag_convention():
    for path in sorted(CHAPTERS.glob("*.ipynb")):
        assert convention_problems(nbformat.read(path, as_version=4), path.name) == []


def test_chapter_1_has_three_exercises_of_three_kinds():
    nb = _chapter_1()
    assert exercise_labels(nb) == [DOUBLING, TUNE, SOFTMAX]
    for label in exercise_labels(nb):
        assert len(_tagged(nb, label, "stub")) == 1 and len(_tagged(nb, label, "check")) == 1
        assert _tagged(nb, label, "solution")
    assert "def stable_softmax" in _tagged(nb, SOFTMAX, "stub")[0].source  # implement
    assert "X_tuned" in _tagged(nb, TUNE, "stub")[0].source  # tune
    assert "prediction = None" in _tagged(nb, DOUBLING, "stub")[0].source  # predict
    assert _tagged(nb, SOFTMAX, "hidden-test")


@pytest.mark.parametrize(
    "chapter, exercises",
    [
        ("02_reciprocity_problem", {"ch2-predict-weight-back": "prediction = None", "ch2-ball-ignores-it": "X_tuned = X.copy()", "ch2-stationary-distribution": "def stationary_distribution"}),
        ("03_queries_keys_values", {"ch3-predict-rotation": "prediction = None", "ch3-it-attends-to-ball": "W_q = np.eye(5)", "ch3-attention-head": "def attention_head"}),
    ],
)
def test_chapters_2_and_3_have_three_exercises_of_three_kinds(chapter, exercises):
    """Predict, tune, implement, in that order (as in chapter 1); no plan left over."""
    nb = nbformat.read(CHAPTERS / f"{chapter}.ipynb", as_version=4)
    assert exercise_labels(nb) == list(exercises)
    for label, stub_text in exercises.items():
        stubs, check_cells = _tagged(nb, label, "stub"), _tagged(nb, label, "check")
        assert len(stubs) == 1 and stub_text in stubs[0].source
        assert len(check_cells) == 1 and f"check.{label.split('-', 1)[1].replace('-', '_')}(" in check_cells[0].source
        assert _tagged(nb, label, "solution")
    assert _tagged(nb, list(exercises)[-1], "hidden-test")
    assert not [cell for cell in nb.cells if "planned" in cell.source.lower()]


def _break(nb, label, role, change):
    broken = copy.deepcopy(nb)
    change(_tagged(broken, label, role)[0])
    return broken


@pytest.mark.parametrize(
    "role, change, expected",
    [
        ("check", lambda c: c.metadata["tags"].remove("remove-output"), "must also be tagged remove-output"),
        ("hidden-test", lambda c: c.metadata["tags"].remove("remove-cell"), "must also be tagged remove-cell"),
        ("check", lambda c: c.metadata["tags"].remove(f"exercise:{SOFTMAX}"), "has no exercise:LABEL tag"),
        ("check", lambda c: c.metadata["tags"].append("stub"), "more than one role tag"),
        ("solution", lambda c: c.metadata["tags"].remove("solution"), "inside the solution of"),
        ("stub", lambda c: c.metadata["tags"].remove("stub"), "has no 'stub' cell"),
    ],
)
def test_convention_problems_name_what_is_broken(role, change, expected):
    problems = convention_problems(_break(_chapter_1(), SOFTMAX, role, change), "ch1")
    assert any(expected in problem for problem in problems), problems


def test_an_exercise_without_a_check_function_is_a_problem():
    nb = copy.deepcopy(_chapter_1())
    for cell in _tagged(nb, SOFTMAX):
        cell.metadata["tags"] = [t.replace(SOFTMAX, "ch1-no-such-check") for t in cell.metadata["tags"]]
        cell.source = cell.source.replace(SOFTMAX, "ch1-no-such-check")
    problems = convention_problems(nb, "ch1")
    assert "ch1: exercise ch1-no-such-check has no check in attncourse.checks" in problems


# --- the student version ---------------------------------------------------------------


def test_student_notebook_drops_solutions_and_hidden_tests_and_keeps_stubs_and_checks():
    nb = _chapter_1()
    first_code = next(cell for cell in nb.cells if cell.cell_type == "code")
    first_code.outputs = [nbformat.v4.new_output("stream", text="stale output")]
    first_code.execution_count = 7
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    student = make_student_notebook(nb)
    tags = [tag for cell in student.cells for tag in cell.metadata.get("tags", [])]
    assert "solution" not in tags and "hidden-test" not in tags
    assert tags.count("stub") == 3 and tags.count("check") == 3
    assert all(cell.outputs == [] and cell.execution_count is None for cell in student.cells if cell.cell_type == "code")
    assert "widgets" not in student.metadata
    assert solution_leaks(nb, student) == []
    # the chapter itself is untouched, and its body is kept in order
    assert first_code.execution_count == 7 and "widgets" in nb.metadata
    body = [c.source for c in nb.cells if not c.metadata.get("tags") or c.metadata["tags"] == ["remove-cell"]]
    assert [c.source for c in student.cells if c.source in body] == body


def test_student_notebook_turns_exercise_directives_into_plain_markdown():
    student = make_student_notebook(_chapter_1(), [SOFTMAX])
    text = "\n".join(cell.source for cell in student.cells)
    assert "### Exercise `ch1-stable-softmax` — Implement: a softmax that does not overflow" in text
    assert "{exercise-start}" not in text and "{exercise-end}" not in text and ":label:" not in text


def test_assign_keeps_only_the_assigned_exercises():
    student = make_student_notebook(_chapter_1(), [SOFTMAX, DOUBLING])
    assert exercise_labels(student) == [DOUBLING, SOFTMAX]
    assert not any("X_tuned" in cell.source for cell in student.cells)


def test_write_student_version_assign_skips_chapters_without_assigned_exercises(tmp_path):
    chapters = _copy_chapters(tmp_path, _chapter_1())
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 0. A chapter with no exercise")])
    nbformat.write(plain, chapters / "00_plain.ipynb")
    nbformat.write(plain, edition_folder(chapters) / "00_plain.ipynb")
    everything = write_student_version(chapters, tmp_path / "all")
    assert [p.name for p in everything] == ["00_plain.ipynb", CHAPTER_1.name]
    assigned = write_student_version(chapters, tmp_path / "some", [TUNE])
    assert [p.name for p in assigned] == [CHAPTER_1.name]
    assert exercise_labels(nbformat.read(assigned[0], as_version=4)) == [TUNE]


def test_a_solution_copied_into_an_untagged_cell_is_caught_and_nothing_is_written(tmp_path, capsys):
    nb, edition = _chapter_1(), _edition_1()
    solution = _tagged(nb, SOFTMAX, "solution")[1]
    slip = nbformat.v4.new_code_cell(solution.source)  # an author's slip, built into the edition
    nb.cells.append(slip)
    edition.cells.append(slip)
    chapters = _copy_chapters(tmp_path, nb, edition)
    with pytest.raises(SolutionLeak, match="shifted = scores - scores.max"):
        write_student_version(chapters, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert instructor.main(["student", "--chapters", str(chapters), "--out", str(tmp_path / "o")]) == 1
    assert "solution text survives" in capsys.readouterr().err


def test_the_handout_is_made_from_the_reader_edition(tmp_path):
    """No MyST in it (the glued numbers written in, the exercise a heading), the code cells
    the chapter's own; the edition's folded solutions gone with their cells."""
    [written] = write_student_version(CHAPTERS, tmp_path / "out", [SOFTMAX])
    student = nbformat.read(written, as_version=4)
    markdown = [cell.source for cell in student.cells if cell.cell_type == "markdown"]
    assert not [left for source in markdown if (left := myst_left(source))]
    text = "\n".join(markdown)
    assert "(Implement: a softmax that does not overflow)" in text and "<details>" not in text
    edition = {cell.id: cell for cell in _edition_1().cells}
    assert all(cell == {**edition[cell.id], "outputs": [], "execution_count": None}
               if cell.cell_type == "code" else cell.source == edition[cell.id].source
               for cell in student.cells)
    chapter = {cell.id: cell.source for cell in _chapter_1().cells}
    assert all(cell.source == chapter[cell.id] for cell in student.cells if cell.cell_type == "code")


def test_student_without_a_fresh_reader_edition_says_to_run_make_book(tmp_path, capsys):
    nb = _chapter_1()
    chapters = _copy_chapters(tmp_path, nb)
    stale = _edition_1()
    next(cell for cell in stale.cells if cell.cell_type == "code").source += "\n# before an edit"
    nbformat.write(stale, edition_folder(chapters) / CHAPTER_1.name)
    assert instructor.main(["student", "--chapters", str(chapters), "--out", str(tmp_path / "a")]) == 2
    assert f"run `make book` first\n  {CHAPTER_1.name}: its reader edition is older" in capsys.readouterr().err
    (edition_folder(chapters) / CHAPTER_1.name).unlink()
    assert instructor.main(["student", "--chapters", str(chapters), "--out", str(tmp_path / "a")]) == 2
    assert f"{CHAPTER_1.name}: no reader edition in {edition_folder(chapters)}" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_solution_prose_in_a_kept_cell_is_a_leak():
    nb = _chapter_1()
    student = make_student_notebook(nb)
    student.cells[-1].source += "\nSubtract each row's maximum $c$ before taking the exponential. The result does not"
    assert any(leak.startswith(f"{SOFTMAX}: Subtract each row") for leak in solution_leaks(nb, student))


def test_a_hidden_test_may_import_what_the_learners_cells_import_but_no_more():
    nb = _chapter_1()
    hidden = _tagged(nb, SOFTMAX, "hidden-test")[0]
    hidden.source = "from attncourse.attention import softmax\nfrom attncourse.graph import rollout_secret\n" + hidden.source
    nb.cells[0].source += "\nfrom attncourse.attention import softmax"
    student = make_student_notebook(nb)
    student.cells[-1].source += "\nfrom attncourse.graph import rollout_secret"
    leaks = solution_leaks(nb, student)
    assert f"{SOFTMAX}: from attncourse.graph import rollout_secret" in leaks
    assert not any("import softmax" in leak for leak in leaks)


def test_student_refuses_unknown_labels_and_non_empty_folders(tmp_path, capsys):
    assert instructor.main(["student", "--chapters", str(CHAPTERS), "--out", str(tmp_path / "a"), "--assign", "ch1-nope"]) == 2
    assert "unknown exercise(s) ch1-nope" in capsys.readouterr().err
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "old.ipynb").write_text("{}")
    with pytest.raises(ValueError, match="is not empty"):
        write_student_version(CHAPTERS, tmp_path / "b")


def test_list_names_every_exercise(capsys):
    assert instructor.main(["list", "--chapters", str(CHAPTERS)]) == 0
    out = capsys.readouterr().out
    for label in (SOFTMAX, DOUBLING, TUNE):
        assert label in out
    assert "Implement: a softmax that does not overflow" in out


CELL_TAGS = st.lists(st.sampled_from(["stub", "solution", "check", "hidden-test", "exercise:ch1-a", "exercise:ch1-b", "remove-cell"]), max_size=3, unique=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cells=st.lists(st.tuples(st.sampled_from(["code", "markdown"]), st.text(max_size=30), CELL_TAGS), max_size=12),
    assign=st.none() | st.lists(st.sampled_from(["ch1-a", "ch1-b"]), unique=True),
)
def test_student_notebook_invariants_on_arbitrary_notebooks(cells, assign):
    nb = nbformat.v4.new_notebook()
    for kind, source, tags in cells:
        cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
        cell.metadata["tags"] = tags
        if kind == "code":
            cell.outputs = [nbformat.v4.new_output("stream", text="x")]
        nb.cells.append(cell)
    before = copy.deepcopy(nb)
    student = make_student_notebook(nb, assign)
    assert nb == before  # pure
    for cell in student.cells:
        tags = cell.metadata.get("tags", [])
        assert "solution" not in tags and "hidden-test" not in tags
        assert cell.cell_type == "markdown" or cell.outputs == []
        labels = [t[len("exercise:"):] for t in tags if t.startswith("exercise:")]
        assert assign is None or not labels or labels[0] in assign
    kept_code = [c.source for c in student.cells if c.cell_type == "code"]
    expected_code = [
        c.source for c in nb.cells if c.cell_type == "code"
        and not {"solution", "hidden-test"} & set(c.metadata["tags"])
        and (assign is None or exercise_of(c) in (None, *assign))
    ]
    assert kept_code == expected_code


# --- the documentation -----------------------------------------------------------------


def test_help_and_instructor_guide_document_the_tags_and_the_commands(capsys):
    with pytest.raises(SystemExit):
        instructor.main(["--help"])
    help_text = capsys.readouterr().out
    guide = (ROOT / "instructor_guide.md").read_text(encoding="utf-8")
    documented = (*ROLE_TAGS, "exercise:LABEL", "remove-output", "remove-cell", "--assign", "student --out", "grade submissions")
    for text in (help_text, guide):
        assert [word for word in documented if word not in text] == []
    assert "ATTNCOURSE_CHECK_MODE" in guide and "check.hidden_test" in guide
    for command in ("student", "grade"):
        with pytest.raises(SystemExit):
            instructor.main([command, "--help"])
        assert "Tag convention" in capsys.readouterr().out
    assert "instructor_guide" in (ROOT / "_toc.yml").read_text()


def test_the_guide_documents_the_sandbox_the_trust_model_and_the_flags(capsys):
    with pytest.raises(SystemExit):
        instructor.main(["grade", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    guide = (ROOT / "instructor_guide.md").read_text(encoding="utf-8")
    flags = ("--time-limit", "--memory-limit", "--check-timeout", "--jobs", "--unsafe-no-sandbox", "--out", "--assign",
             "--chapters", "--learners", "--score-predictions")
    assert [flag for flag in flags if flag not in guide or flag not in help_text] == []
    for topic in ("### The sandbox", "### Limits", "### The trust model", "bubblewrap", "What crosses the boundary",
                  "What the learner can influence", "flagged, not prevented", "needs review", "Files not graded",
                  "Grading again", "Predict exercises", "Flagged for review", "review", "formula", "not merged",
                  "RLIMIT_AS", "RLIMIT_NPROC", "--disable-userns", "prlimit", "nobody", "What the limits do not do"):
        assert topic in guide, topic
    limits = DEFAULT_LIMITS  # the numbers both state are the ones grade uses
    stated = (f"{limits.processes} processes and threads", f"{limits.disk // MiB} MiB", f"{limits.output // MiB} MiB")
    assert [number for number in stated if number not in guide or number not in help_text] == []
    assert f"{limits.memory // MiB} MiB per process" in guide and f"default: {limits.memory // MiB}" in help_text
    for status in ("passed", "failed", "completed", "not attempted", "needs review", "notebook crashed", "error"):
        assert f"| {status} |" in guide
