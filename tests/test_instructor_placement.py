"""Red-team cases of the grading-integrity issue (classes C, D and E) that need no kernel:
where an honest learner's answer is recorded (``attncourse.instructor.notebook.placement``), which
files of a submissions folder are graded or listed (``grading._learners``), and the
bookkeeping of a report folder (``ledger``, ``report``, the overrides of an export). The
same learners graded in the sandbox are in tests/test_instructor_grading.py's hostile
class (``redC``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attncourse import instructor
from attncourse.instructor import grading, make_student_notebook, submissions
from attncourse.instructor.course.tags import role_of
from attncourse.instructor.gradebook import export, ledger, points, report
from attncourse.instructor.learner_text import the_learner
from attncourse.instructor.model import Exercise, Grade, NotebookRun, Placed
from attncourse.instructor.notebook.placement import notebook_to_run
from attncourse.instructor.run.sandbox import Limits
from tests.test_instructor_grading import DOUBLING, ROOT

SOFTMAX = "ch1-stable-softmax"
WEIGHT_BACK = "ch2-predict-weight-back"
EXERCISE = Exercise(SOFTMAX, ("stable_softmax",), ("stable_softmax",))
STUB = "def stable_softmax(scores):\n    raise NotImplementedError"
ANSWER = "def stable_softmax(scores):\n    return _shifted(scores) / _shifted(scores).sum()"
HELPER = "def _shifted(scores):\n    return np.exp(scores - scores.max())"
CHECK = "check.stable_softmax(stable_softmax)"


def _notebook(*cells) -> nbformat.NotebookNode:
    """Code cells (source, role or None), the roles tagged for the softmax exercise."""
    nb = nbformat.v4.new_notebook()
    for source, role in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = [role, f"exercise:{SOFTMAX}"] if role else []
        nb.cells.append(cell)
    return nb


def _recorded(nb) -> tuple[list[str], str]:
    """(the sources the grader's recording cell comes after, its note), the stub and the
    check being the course's cells as handed out."""
    run, placed = notebook_to_run(nb, [EXERCISE], frozenset({STUB, CHECK}))
    (only,) = placed
    return [cell.source for cell in run.cells[: only.index]], only.note


def test_a_helper_written_below_the_answer_is_defined_when_the_answer_is_recorded():
    with_check = _notebook(("import numpy as np", None), (ANSWER, "stub"), (HELPER, None), (CHECK, "check"))
    without_check = _notebook(("import numpy as np", None), (ANSWER, "stub"), (HELPER, None), ("x = 1", None))
    for nb in (with_check, without_check):
        before, note = _recorded(nb)
        assert before[-2:] == [ANSWER, HELPER] and note == ""


def test_an_answer_no_cell_names_is_recorded_where_the_learner_checked_it():
    for defined in (f"exec({ANSWER!r})", "from helpers import *", "globals()['stable_softmax'] = len"):
        before, note = _recorded(_notebook((STUB, "stub"), (defined, None), (CHECK, "check"), ("y = 2", None)))
        assert before == [STUB, defined] and note == ""


@pytest.mark.parametrize("where", ["after the check", "above the stub"])
def test_an_answer_run_out_of_order_is_graded_not_the_untouched_stub(where):
    cells = [(STUB, "stub"), (CHECK, "check"), (ANSWER, None)] if where == "after the check" \
        else [(ANSWER, None), (STUB, "stub"), (CHECK, "check")]
    before, note = _recorded(_notebook(*cells))
    assert before[-1] == ANSWER and "the course's as handed out; graded on the learner's own" in note


def test_a_stub_the_learner_filled_in_is_graded_as_before():
    before, note = _recorded(_notebook((ANSWER, "stub"), (CHECK, "check"), ("def stable_softmax(s):\n    return s", None)))
    assert before == [ANSWER] and note == ""  # the answer the learner checked, not one played with after


def test_two_chapters_stripped_of_their_tags_each_answer_their_own_exercises():
    course = grading.course_of(ROOT / "chapters", [DOUBLING, WEIGHT_BACK])  # predictions: no hidden test to run
    answered = {}
    for label, chapter in ((DOUBLING, "01_dot_product_similarity"), (WEIGHT_BACK, "02_reciprocity_problem")):
        nb = make_student_notebook(nbformat.read(ROOT / "chapters" / f"{chapter}.ipynb", as_version=4), [label])
        for cell in nb.cells:
            cell.source = "prediction = 0.2" if role_of(cell) == "stub" else cell.source
            cell.metadata = {}  # as an editor that drops cell metadata saves it
        answered[label] = grading._answered(nb, course)
    assert answered == {DOUBLING: [DOUBLING], WEIGHT_BACK: [WEIGHT_BACK]}  # not each both: an error, 0 points
    from_scratch = _notebook(("prediction = 0.2", None))  # no cell of any chapter: it may answer any
    assert grading._answered(from_scratch, course) == [DOUBLING, WEIGHT_BACK]


def test_saved_outputs_do_not_count_against_the_size_a_notebook_is_read_to(tmp_path):
    limits = Limits(output=10_000)
    logged = _notebook((ANSWER, "stub"))
    logged.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="loss 0.25 " * 3000)]  # a long log
    nbformat.write(logged, tmp_path / "logged.ipynb")
    assert grading.read_submitted(tmp_path / "logged.ipynb", limits).cells[0].source == ANSWER
    nbformat.write(_notebook(("# " + "x" * 10_000, None)), tmp_path / "long.ipynb")
    with pytest.raises(ValueError, match="its cells hold .* besides their outputs; grade reads notebooks of up to"):
        grading.read_submitted(tmp_path / "long.ipynb", limits)
    with open(tmp_path / "huge.ipynb", "wb") as file:
        file.truncate(submissions.SAVED_OUTPUTS_FACTOR * 10_000 + 1)  # not read at all
    with pytest.raises(ValueError, match="^it is .*; grade reads notebooks of up to"):
        grading.read_submitted(tmp_path / "huge.ipynb", limits)


# --- D: every file of the folder graded or listed --------------------------------------


def test_archives_nested_folders_links_and_sockets_are_graded_or_listed(tmp_path):
    folder = tmp_path / "subs"
    for name in ("ada/week 1/part a/ch1.ipynb", "Zoë Smith/ch1 (1).ipynb", "CAPS.IPYNB", "cy/empty.ipynb"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("{}")
    (folder / "bob").mkdir()
    os.link(folder / "ada/week 1/part a/ch1.ipynb", folder / "bob" / "ch1.ipynb")  # a hard link: a file like any other
    (folder / "ada.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    (folder / "cy" / "__MACOSX").mkdir()
    (folder / "cy" / "__MACOSX" / "._ch1.ipynb").write_bytes(b"\0")
    (folder / "cy" / "gone").symlink_to(tmp_path / "nowhere")
    (folder / "empty").mkdir()
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(folder / "bob" / "sock.ipynb"))
        found, skipped = submissions.find_learners(folder)
    assert {name: [p.as_posix() for p in paths] for name, paths in found.items()} == {
        "CAPS": ["CAPS.IPYNB"], "Zoë Smith": ["Zoë Smith/ch1 (1).ipynb"], "ada": ["ada/week 1/part a/ch1.ipynb"],
        "bob": ["bob/ch1.ipynb"], "cy": ["cy/empty.ipynb"], "empty": []}
    assert sorted(skipped) == [
        "ada.zip: not a notebook (.ipynb)", "bob/sock.ipynb: not a regular file",
        "cy/__MACOSX/._ch1.ipynb: a hidden file (its name starts with a dot)",
        "cy/gone: a symbolic link that leaves the submissions folder"]


def test_two_names_that_show_as_one_are_neither_graded_nor_merged(tmp_path):
    latin1 = os.fsdecode(b"Jos\xe9")  # as a zip written in Latin-1 unpacks: not UTF-8
    for learner in (latin1, "Jos\\xe9", "bob"):
        (tmp_path / learner).mkdir()
        (tmp_path / learner / "ch1.ipynb").write_text("{}")
    (tmp_path / "bob" / os.fsdecode(b"ch\xe9.ipynb")).write_text("{}")
    (tmp_path / "bob" / "ch\\xe9.ipynb").write_text("{}")
    for alike in ("eve", "e\u200bve", "zo\u00eb", "zoe\u0308", "kim", "\uff4bim", "lee", "lee\u3164"):  # zero-width,
        # é composed or not, a fullwidth k (NFKC), a Hangul filler that shows nothing
        (tmp_path / f"{alike}.ipynb").write_text("{}")
    found, skipped = submissions.find_learners(tmp_path)
    assert {name: [p.as_posix() for p in paths] for name, paths in found.items()} == {"bob": ["bob/ch1.ipynb"]}
    assert sorted(note.split(":")[0] for note in skipped) == sorted(
        ["Jos\\xe9/ch1.ipynb"] * 2 + ["bob/ch\\xe9.ipynb"] * 2
        + ["eve.ipynb", "e\u200bve.ipynb", "zo\u00eb.ipynb", "zoe\u0308.ipynb", "kim.ipynb", "\uff4bim.ipynb",
           "lee.ipynb", "lee\u3164.ipynb"])
    assert all("rename one; neither is graded" in note for note in skipped)


@pytest.mark.parametrize("showing_nothing", ["\ufe0f", "\U000e0100", "\u17b5", "\u180f", "\u2065", "\u2800",
                                             "\ufff0", "\U000e0002", "\u2009", "\u00a0"])
def test_a_name_with_any_default_ignorable_character_is_neither_graded_nor_merged(tmp_path, showing_nothing):
    """Red team 8: variation selectors, U+17B5, U+180F, U+2065 and a braille blank passed."""
    for alike in ("ann", f"ann{showing_nothing}"):
        (tmp_path / f"{alike}.ipynb").write_text("{}")
    found, skipped = submissions.find_learners(tmp_path)
    assert found == {} and len(skipped) == 2
    if not showing_nothing.isspace():  # (a space is seen, if not told from another)
        assert showing_nothing not in report.shown_controls(f"ann{showing_nothing}")  # written out in reports


def test_names_that_differ_by_a_space_between_words_are_two_learners(tmp_path):
    """Red team 10: "jo ann" and "joann" read as one once all white space was removed."""
    for name in ("jo ann", "joann"):
        (tmp_path / f"{name}.ipynb").write_text("{}")
    assert sorted(submissions.find_learners(tmp_path)[0]) == ["jo ann", "joann"]


@pytest.mark.parametrize(("typed", "folder"), [("zed", "zed "), ("zed", " zed"), ("jo ann", "jo  ann"),
                                              ("jo ann", "jo\u00a0ann"), ("zed ", "zed ")])
def test_a_name_typed_with_its_white_space_tidied_names_the_learner(typed, folder):
    """Red team 11: a folder 'zed ' was graded, but --learners, the overrides and export
    --learner read 'zed' and found no such learner."""
    assert the_learner(typed, ["ada", folder]) == folder
    assert the_learner(typed, ["ada", folder, "zed", "jo ann"]) == (typed if typed in ("zed", "jo ann") else folder)
    assert the_learner("zed", ["zed ", " zed"]) is None  # two could be meant: neither is taken
    assert the_learner("ed", ["zed "]) is None


@pytest.mark.slow
def test_learners_typed_without_the_folder_s_trailing_space_grades_that_learner_alone(tmp_path):
    for folder in ("zed ", "ada"):
        (tmp_path / "subs" / folder).mkdir(parents=True)
        (tmp_path / "subs" / folder / "ch1.ipynb").write_text("{}")
    assert instructor.main(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--assign",
                            "ch1-stable-softmax", "--learners", "zed", "--chapters", str(ROOT / "chapters")]) == 0
    rows, _ = ledger.Ledger(tmp_path / "out", "").everything([])
    assert [row.learner for row in rows] == ["zed "]


def test_an_override_and_export_learner_reach_a_learner_whose_folder_has_a_trailing_space(tmp_path):
    rows = [Grade("zed ", "ch1-stable-softmax", "failed", "", "zed /ch1.ipynb")]
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("learner,exercise,points,note\nzed,ch1-stable-softmax,2,by hand\n")
    assert points.read_overrides(overrides, rows) == {("zed ", "ch1-stable-softmax"): (2.0, "by hand")}
    written = export.write_gradescope(points.scored(rows), {}, tmp_path / "zed.json", learner="zed")
    assert written == [tmp_path / "zed.json"] and json.loads(written[0].read_text())["tests"]


def test_a_report_s_executed_notebooks_are_not_graded_into_that_report(tmp_path, capsys):
    """Red team 14: `grade REPORT/executed --out REPORT` regraded the grader's own copies and
    wrote over the files it graded."""
    (tmp_path / "report" / "executed").mkdir(parents=True)
    (tmp_path / "report" / "executed" / "ada.ipynb").write_text("{}")
    assert instructor.main(["grade", str(tmp_path / "report" / "executed"), "--out", str(tmp_path / "report")]) == 2
    assert "is inside --out" in capsys.readouterr().err
    assert (tmp_path / "report" / "executed" / "ada.ipynb").read_text() == "{}"


def test_an_out_that_is_a_dangling_link_is_refused_by_name(tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "ada.ipynb").write_text("{}")
    (tmp_path / "out").symlink_to(tmp_path / "gone")
    assert instructor.main(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out")]) == 2
    assert f"is a symbolic link to {tmp_path / 'gone'}, which does not exist" in capsys.readouterr().err
    assert not (tmp_path / "gone").exists()


@given(st.text(min_size=1, max_size=80))
def test_no_learner_can_name_themselves_anothers_file(name):
    """jose.garcia's file was jose_garcia-1add29e2: the name a learner called
    jose_garcia-1add29e2 keeps, and whichever finished last erased the other."""
    own = ledger.file_name(name)
    assert re.fullmatch(r"[\w-]+(\.[0-9a-f]{8})?", own)
    mimic = own.replace(".", "-")  # the digest spelt as a name that is kept as it is
    assert mimic == own or ledger.file_name(mimic).lower() != own.lower()


def test_a_name_spelt_as_anothers_digest_has_a_file_of_its_own():
    digest = hashlib.sha256(b"jose.garcia").hexdigest()[:8]
    assert ledger.file_name("jose.garcia") != ledger.file_name(f"jose_garcia-{digest}")


# --- E: bookkeeping --------------------------------------------------------------------


def test_regrading_a_learner_who_is_not_in_the_folder_is_refused(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "eve.ipynb").write_text("{}")
    with pytest.raises(ValueError, match="no learner 'evee' in .*it has: eve"):
        grading.grade_submissions(tmp_path / "subs", learners=["evee"], unsafe_no_sandbox=True)


def _row(learner: str, status: str = "passed") -> Grade:
    return Grade(learner, SOFTMAX, status, "", f"{learner}.ipynb", "", "2026-11-26T02:00:00+00:00")


def test_rows_of_a_renamed_learner_or_of_other_options_are_kept_and_flagged(tmp_path):
    ledger.Ledger(tmp_path, "assign one").save("ada", "k1", [_row("ada")], [])
    ledger.Ledger(tmp_path, "assign one").save("bob", "k2", [_row("bob")], [])
    assert [g.review for g in ledger.Ledger(tmp_path, "").everything([])[0]] == ["", ""]  # an older report: as it is
    now = ledger.Ledger(tmp_path, "assign two")
    now.begin({"bob", "cy"})  # ada renamed; bob graded before the options changed, not since
    now.save("cy", "k3", [_row("cy")], [])
    grades, problems = ledger.Ledger(tmp_path, "").everything([])  # as the exports read it
    review = {g.learner: g.review for g in grades}
    assert review == {"ada": ledger.STALE_LEARNER, "bob": ledger.STALE_OPTIONS, "cy": ""}
    assert problems["ada"] == [ledger.STALE_LEARNER]
    assert ledger.stale_rows(grades) == [f"'ada': {ledger.STALE_LEARNER}", f"'bob': {ledger.STALE_OPTIONS}"]
    stored = [json.loads(path.read_text())["grades"][0]["review"] for path in (tmp_path / "learners").glob("*.json")]
    assert stored == ["", "", ""]  # flagged in what is read, never written into the rows


def test_a_report_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    report.write_report([_row("ada")], {}, tmp_path)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}

    def killed(*args):
        raise KeyboardInterrupt  # the grader stopped mid-write, its new report written but not in place

    monkeypatch.setattr(ledger.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        report.write_report([_row("ada"), _row("bob", "failed")], {}, tmp_path)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before  # the last whole report, no temporary


def test_a_second_grading_into_the_same_folder_is_refused_while_one_runs(tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "ada.ipynb").write_text("{}")
    with ledger.lock(tmp_path / "out"):
        assert instructor.main(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out")]) == 2
        assert "another grading is writing into" in capsys.readouterr().err
    with ledger.lock(tmp_path / "out"):  # released when the first ends
        pass


def test_an_override_that_matches_no_row_stops_the_export_naming_the_closest(tmp_path):
    """(#34 item 8: a misspelt learner or label was a warning repeated on every export, the
    override silently not applied: now nothing is exported until it is fixed.)"""
    ledger.Ledger(tmp_path / "report", "").save("dee", "k", [_row("dee")], [])
    overrides = tmp_path / "overrides.csv"
    for wrong, closest in ((f"Dee,{SOFTMAX}", "dee"), ("dee,ch1-stable-sofmax", SOFTMAX)):
        overrides.write_text(f"learner,exercise,points,note\n{wrong},0,misspelt\ndee,{SOFTMAX},1,applied\n",
                             encoding="utf-8")
        with pytest.raises(ValueError, match=f"line 2: .*the closest: {closest}. Nothing was exported"):
            export.export("json", tmp_path / "report", tmp_path / "points.json", tmp_path / "none",
                          overrides=overrides)
        assert not (tmp_path / "points.json").exists()
    overrides.write_text(f"learner,exercise,points,note\ndee,{SOFTMAX},1,applied\n", encoding="utf-8")
    written, problems = export.export("json", tmp_path / "report", tmp_path / "points.json", tmp_path / "none",
                                      overrides=overrides)
    learners = json.loads(written[0].read_text())["learners"]
    assert [(row["points"], row["override"]) for row in learners[0]["exercises"]] == [(1.0, "applied")]


# --- red team D: a scratch notebook beside the chapter ---------------------------------


def test_a_scratch_notebook_that_binds_an_exercises_name_is_no_duplicate_of_the_chapter():
    """An honest learner's folder: ch1.ipynb (tagged, answered) and an Untitled.ipynb of
    their own that binds ``prediction`` (no tags, none of the course's cells). The scratch
    notebook made every predict exercise "duplicate submissions" (an error row). The
    chapter's notebook is graded and the review names the other; two chapter notebooks,
    or a chapter's stub left not attempted beside a scratch answer, stay duplicates."""
    handed_out = "import numpy as np"
    course = grading.Course(order=[DOUBLING], exercises={}, hidden={}, inputs={},
                            chapters={"ch1": frozenset({handed_out})})
    chapter = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(handed_out)])
    chapter.cells[0].metadata["tags"] = [f"exercise:{DOUBLING}"]
    scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("prediction = logits.argmax()")])
    stripped = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(handed_out)])  # a copy, tags lost
    runs = [NotebookRun("amy/ch1.ipynb", chapter), NotebookRun("amy/Untitled.ipynb", scratch),
            NotebookRun("amy/copy.ipynb", stripped)]
    graded = ("amy/ch1.ipynb", instructor.COMPLETED, "you predicted 0.4", "")
    kept = grading._without_scratch([graded, ("amy/Untitled.ipynb", instructor.FAILED, "no number", "")], runs, course)
    assert kept == [(*graded[:3], "also bound in amy/Untitled.ipynb (no tags, none of the course's cells), "
                                  "which was not graded for it")]
    copies = [graded, ("amy/copy.ipynb", instructor.FAILED, "", "")]
    assert grading._without_scratch(copies, runs, course) == copies
    stub = [(*graded[:1], instructor.NOT_ATTEMPTED, "", ""), ("amy/Untitled.ipynb", instructor.COMPLETED, "", "")]
    assert grading._without_scratch(stub, runs, course) == stub


@pytest.mark.parametrize("stub", [True, False], ids=["stub kept", "stub deleted"])
def test_an_answer_typed_into_the_check_cell_runs_and_is_graded(stub):
    """An honest learner who typed the answer (or ``stable_softmax = my_softmax``) into the
    check cell above its call: the grader left the whole check cell out, so the stub (not
    attempted) or nothing (NameError) was graded. The cell runs without its check calls."""
    for typed in (ANSWER, f"{HELPER}\nstable_softmax = _shifted"):
        cells = [(STUB, "stub")] if stub else []
        before, note = _recorded(_notebook(*cells, (HELPER, None), (f"{typed}\n{CHECK}\n", "check")))
        assert before[-1] == f"{typed}\n" and CHECK not in before[-1] and note == ""  # what its own run checked
    before, _ = _recorded(_notebook((ANSWER, "stub"), (CHECK, "check"), ("y = 2", None)))
    assert before == [ANSWER]  # the check cell as handed out is left out, as before
    before, _ = _recorded(_notebook((ANSWER, "stub"), (f"{CHECK}\nstable_softmax = None", "check")))
    assert before == [ANSWER]  # what the cell does after its check, the check never saw


def test_files_of_the_instructors_own_in_the_learners_folder_of_out_are_not_rows(tmp_path):
    """--out an existing folder that holds a learners/ folder of the instructor's (a roster
    as JSON, a note): the whole class was graded, then the report crashed reading them
    ('list' object has no attribute 'get'). They are left alone and are no rows."""
    (tmp_path / "learners").mkdir()
    (tmp_path / "learners" / "roster.json").write_text('[{"name": "ada"}]')
    (tmp_path / "learners" / "ada.json").write_text('{"name": "ada", "grades": [{"mark": 3}]}')
    (tmp_path / "learners" / "notes.json").write_text('{"learner": 7, "grades": []}')
    ledger.Ledger(tmp_path, "options").save("bob", "k", [_row("bob")], [])
    grades, problems = ledger.Ledger(tmp_path, "options").everything([])
    assert [g.learner for g in grades] == ["bob"] and list(problems) == ["bob"]
    assert (tmp_path / "learners" / "roster.json").read_text() == '[{"name": "ada"}]'


def test_an_untagged_check_of_the_learners_own_function_through_checks_is_graded_on_it():
    """Tags stripped, the learner's ``my_softmax`` checked in a cell of its own as
    ``checks.stable_softmax(my_softmax)`` after ``from attncourse import checks``: the
    stub, left as handed out, was graded (not attempted)."""
    own = ANSWER.replace("def stable_softmax", "def my_softmax")
    for check in ("from attncourse import checks\nchecks.stable_softmax(my_softmax)",
                  "import attncourse.checks\nattncourse.checks.stable_softmax(my_softmax)"):
        nb = _notebook((STUB, None), (HELPER, None), (own, None), (check, None))
        run, (placed,) = notebook_to_run(nb, [EXERCISE], frozenset({STUB, CHECK}))
        assert "my_softmax" in run.cells[placed.index].source and "own check call (my_softmax)" in placed.note
        assert run.cells[placed.index - 1].source == check.split("\n")[0] + "\n"  # the import runs; the call does not


def test_an_interrupted_grading_starts_no_further_notebook(tmp_path, monkeypatch):
    """Ctrl-C during a grading: the pool went on to run every notebook of the class still
    queued (each up to its time limit), unseen and saved nowhere, before grade stopped.
    The notebooks not started are dropped; finished learners stay saved."""
    (tmp_path / "subs").mkdir()
    for name in ("ada", "bob", "cy", "dan", "eve", "fay"):
        (tmp_path / "subs" / f"{name}.ipynb").write_text("{}")
    ran = []
    saved = []

    def run(submissions, relative, *args, **kwargs):
        ran.append(relative.name)
        return NotebookRun(relative.name, problem="stands in for a run")

    def interrupted(learner, rows, notes):
        saved.append(learner)
        raise KeyboardInterrupt

    monkeypatch.setattr(grading, "_run_notebook", run)
    with pytest.raises(KeyboardInterrupt):
        grading.grade_submissions(tmp_path / "subs", ROOT / "chapters", assign=[DOUBLING], jobs=1,
                                  unsafe_no_sandbox=True, done=interrupted)
    assert len(saved) == 1 and len(ran) <= 2  # the one saved, and at most the one started meanwhile


def test_copies_of_a_notebook_that_earn_the_same_grade_are_graded_not_an_error():
    """Jupyter's "Duplicate" left ch1-Copy1.ipynb beside ch1.ipynb: every exercise of an
    honest learner was an error row ("duplicate submissions"). Copies that earn the same
    status get it, the review naming them; copies that differ stay duplicates."""
    same = [("amy/ch1.ipynb", instructor.PASSED, "right", ""), ("amy/ch1-Copy1.ipynb", instructor.PASSED, "right", "")]
    assert grading._agreeing_copies(same) == [
        ("amy/ch1.ipynb", instructor.PASSED, "right",
         "also in amy/ch1-Copy1.ipynb, graded the same (passed): keep one notebook per chapter")]
    differ = [same[0], ("amy/ch1-Copy1.ipynb", instructor.FAILED, "wrong", "")]
    assert grading._agreeing_copies(differ) == differ


# --- one reader of cell source: a check call however it is laid out --------------------

OWN_SOFTMAX = ANSWER.replace("def stable_softmax", "def my_softmax")
ONE_LINE = "check.stable_softmax(my_softmax)"


def _laid_out_by_ruff(source: str, width: int) -> str:
    """``source`` as ruff's formatter (black's style) writes it in ``width`` columns."""
    done = subprocess.run([sys.executable, "-m", "ruff", "format", "--line-length", str(width), "-"],
                          input=source, capture_output=True, text=True, check=True)
    return done.stdout.rstrip("\n")


def _layouts() -> dict[str, str]:
    return {
        "on two lines": "check.stable_softmax(\n    my_softmax)",
        "with a comment after it": ONE_LINE + "  # my own softmax",
        "with a comment inside it": "check.stable_softmax(  # my own softmax\n    my_softmax\n)",
        "by ruff format in 20 columns": _laid_out_by_ruff(ONE_LINE, 20),
        "by ruff format, with a trailing comma": _laid_out_by_ruff("check.stable_softmax(my_softmax,)", 88),
        "by ruff format, a comment after it, in 20 columns": _laid_out_by_ruff(ONE_LINE + "  # mine", 20),
    }


def _placed_with(call: str, notebook: str) -> tuple[list[str], list[tuple[int, str, str]]]:
    """(the cells grade runs, the recordings placed) of a notebook whose own check of
    ``my_softmax`` is ``call``: tagged, untagged, or untagged with the stub deleted."""
    cells = {"tagged": [(STUB, "stub"), (OWN_SOFTMAX, None), (call, "check")],
             "untagged": [(STUB, None), (OWN_SOFTMAX, None), (call, None)],
             "untagged, stub deleted": [(OWN_SOFTMAX, None), (call, None)]}[notebook]
    run, placed = notebook_to_run(_notebook(*cells), [EXERCISE], frozenset({STUB, CHECK}))
    return [cell.source for cell in run.cells], [(p.index, p.label, p.note) for p in placed]


@pytest.mark.parametrize("notebook", ["tagged", "untagged", "untagged, stub deleted"])
def test_a_check_call_however_it_is_laid_out_is_placed_like_the_one_line_form(notebook):
    """``check.stable_softmax(\\n    my_softmax)`` split over two lines was not seen as a
    check call in an untagged cell: the answer was graded at the notebook's end, "no cell
    of the notebook defines stable_softmax". Every layout black or ruff format gives a call
    (line breaks inside it, a trailing comma, a comment) is placed as the one-line form."""
    expected = _placed_with(ONE_LINE, notebook)
    (_, _, note), = expected[1]
    assert "the notebook's own check call (my_softmax)" in note  # graded on the learner's own function
    for layout, call in _layouts().items():
        assert "\n" in call or "#" in call, layout
        assert _placed_with(call, notebook) == expected, layout


def test_grade_into_tells_its_progress_once_at_the_start_and_after_each_learner(tmp_path, monkeypatch):
    """What a progress bar needs: learners done, failed and remaining, and the time left."""
    (tmp_path / "subs").mkdir()
    for name in ("ada", "bob", "cy"):
        (tmp_path / "subs" / f"{name}.ipynb").write_text("{}")

    def run(submissions, relative, *args, **kwargs):  # no kernel: bob's notebook crashed, the others passed
        if relative.name == "bob.ipynb":
            return NotebookRun(relative.name, problem="stands in for a crash")
        verdict = Grade("", DOUBLING, instructor.PASSED, "right", relative.name)
        return NotebookRun(relative.name, nbformat.v4.new_notebook(), placed=[Placed(0, DOUBLING, "")],
                           verdicts={DOUBLING: verdict})

    monkeypatch.setattr(grading, "_run_notebook", run)
    heard = []
    grades, table, _ = grading.grade_into(tmp_path / "report", tmp_path / "subs", ROOT / "chapters", [DOUBLING],
                                          jobs=1, unsafe_no_sandbox=True, progress=heard.append)
    assert [(p.done, p.total, p.failed, p.remaining, p.learner) for p in heard] == [
        (0, 3, 0, 3, ""), (1, 3, 0, 2, "ada"), (2, 3, 1, 1, "bob"), (3, 3, 1, 0, "cy")]
    assert heard[0].seconds_left is None and heard[1].seconds_left == pytest.approx(heard[1].elapsed * 2)
    assert [row.status for row in heard[2].rows] == [instructor.CRASHED]
    assert [g.status for g in grades] == [instructor.COMPLETED, instructor.CRASHED, instructor.COMPLETED]
    assert table.exists()


def test_a_check_call_that_asks_for_its_own_timeout_is_noted_for_review():
    """A learner who passed ``timeout=60`` passes in their notebook and is graded with the
    grader's budget, the same for every learner: the row says so (red team, round 3)."""
    run, placed = notebook_to_run(_notebook((STUB, "stub"), (OWN_SOFTMAX.replace("my_softmax", "stable_softmax"), None),
                                            ("check.stable_softmax(stable_softmax, timeout=60)", "check")),
                                  [EXERCISE], frozenset({STUB, CHECK}))
    (recording,) = placed
    assert "asks for timeout=60" in recording.note and "--check-timeout" in recording.note
