"""Tests for ``attncourse.instructor.lms`` (the ``import`` command): zips laid out as Canvas's
"Download Submissions" and Gradescope's "Export Submissions" lay them out (see each
module's doc for where the layout comes from) become the folder grade reads, as
``submissions.find_learners`` sees it, with each learner's submission time; and nothing
in a zip is ever written outside --out."""

from __future__ import annotations

import csv
import json
import stat
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from attncourse.instructor.cli import main
from attncourse.instructor.lms.archive import Budget
from attncourse.instructor.lms.canvas import parse_canvas_name
from attncourse.instructor.lms.importing import import_export
from attncourse.instructor.lms.plan import notebook_names
from attncourse.instructor.submissions import SUBMITTED_TIMES, find_learners, submission_times

UTC = timezone.utc


def notebook(text: str) -> bytes:
    cell = {"cell_type": "code", "execution_count": None, "id": "a1", "metadata": {}, "outputs": [], "source": text}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def write_zip(path: Path, entries: dict[str, bytes], links: tuple[str, ...] = ()) -> Path:
    """A zip of ``entries`` (name -> bytes, names written as given, however hostile), and of
    ``links``: entries whose mode says symbolic link, pointing out of the folder."""
    with zipfile.ZipFile(path, "w") as zipped:
        for name, data in entries.items():
            zipped.writestr(zipfile.ZipInfo(name), data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zipped.writestr(info, "../../../etc/passwd")
    return path


# Canvas's gradebook export: a byte-order mark, the "Points Possible" row, the Student View's Test Student.
ROSTER = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention homework (4321)"],
          ["    Points Possible", "", "", "", "", "6"],
          ["Lovelace, Ada", "101", "S101", "ada", "A", ""],
          ["Babbage, Charles", "102", "S102", "bob", "A", ""],
          ["Hopper, Grace", "103", "S103", "grace", "A", ""],
          ["Student, Test", "999", "", "", "A", ""]]

CANVAS_FILES = {
    "lovelaceada_101_5001_attention.ipynb": notebook("ada = 1"),
    "lovelaceada_101_5002_extra_work.ipynb": notebook("ada = 2"),  # a second file; an underscore of her own
    "lovelaceada_101_5003_notes.pdf": b"%PDF-1.4",
    "babbagecharles_late_102_5004_attention-1.ipynb": notebook("bob = 1"),  # late, uploaded again (-1)
    "hoppergrace_LATE_103_5005_my notebook (final)!.ipynb": notebook("grace = 1"),
    "studenttest_999_5006_attention.ipynb": notebook("test = 1"),
    "../../evil.ipynb": notebook("evil"),
    "/tmp/evil-absolute.ipynb": notebook("evil"),
    "lovelaceada_101_5007_sub/../../evil.ipynb": notebook("evil"),
}


def write_roster(path: Path, rows=ROSTER) -> Path:
    with open(path, "w", newline="", encoding="utf-8-sig") as file:
        csv.writer(file).writerows(rows)
    return path


@pytest.fixture
def canvas(tmp_path):
    files = dict(CANVAS_FILES)
    return (write_zip(tmp_path / "canvas.zip", files, links=("lovelaceada_101_5008_link.ipynb",)),
            write_roster(tmp_path / "roster.csv"))


def test_the_import_names_the_students_of_the_roster_who_submitted_nothing(canvas, tmp_path):
    """The fourth newcomer: import said nothing of fay, who first showed as an empty Canvas cell."""
    archive, _ = canvas
    roster = write_roster(tmp_path / "with_fay.csv", [*ROSTER, ["Fay, Ann", "104", "S104", "fay", "A", ""]])
    notes = import_export("canvas", archive, tmp_path / "out", roster=roster).notes
    assert "1 student(s) of the roster submitted nothing: fay" in notes  # and not the Test Student


def nowhere_else(root: Path, out: Path) -> list[Path]:
    """Files under ``root`` named evil, or written outside ``out`` beside the zips."""
    return [p for p in root.rglob("*") if "evil" in p.name or p.name == "passwd"]


def test_a_canvas_zip_becomes_the_folder_grade_reads(canvas, tmp_path):
    archive, roster = canvas
    out = tmp_path / "submissions"
    done = import_export("canvas", archive, out, roster=roster)
    assert find_learners(out) == ({
        "ada": [Path("ada/attention.ipynb"), Path("ada/extra_work.ipynb")],
        "bob": [Path("bob/attention-1.ipynb")],
        "grace": [Path("grace/my notebook _final__.ipynb")],
    }, [])  # submitted.csv and the import's record are the grader's own: not listed as skipped
    assert (out / "ada" / "extra_work.ipynb").read_bytes() == CANVAS_FILES["lovelaceada_101_5002_extra_work.ipynb"]
    assert submission_times(out) == {"ada": (None, False), "bob": (None, True), "grace": (None, True)}
    skipped = "\n".join(done.skipped)
    for name in ("../../evil.ipynb", "/tmp/evil-absolute.ipynb", "sub/../../evil.ipynb", "link.ipynb",
                 "notes.pdf"):
        assert name in skipped, name
    assert "symbolic link" in skipped and "absolute path" in skipped and "climbs out" in skipped
    assert any("Test Student" in note for note in done.notes)
    assert nowhere_else(tmp_path, out) == []
    with open(out / SUBMITTED_TIMES, newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert [row["source"] for row in rows][0] == ("lovelaceada_101_5001_attention.ipynb; "
                                                  "lovelaceada_101_5002_extra_work.ipynb; lovelaceada_101_5003_notes.pdf")


def test_canvas_times_come_from_the_submissions_api_csv(canvas, tmp_path):
    archive, roster = canvas
    times = tmp_path / "times.csv"
    times.write_text("user_id,submitted_at\n101,2024-03-01T17:03:00Z\n102,2024-03-02T09:00:00-05:00\n",
                     encoding="utf-8")
    done = import_export("canvas", archive, tmp_path / "out", roster=roster, times=times)
    found = submission_times(tmp_path / "out")
    assert found["ada"] == (datetime(2024, 3, 1, 17, 3, tzinfo=UTC), False)
    assert found["bob"] == (datetime(2024, 3, 2, 14, 0, tzinfo=UTC), True)
    assert found["grace"] == (None, True) and any("103" in note and "--times" in note for note in done.notes)


def test_canvas_times_come_from_the_submissions_api_s_json_as_a_browser_saves_it(canvas, tmp_path):
    """(The newcomer's finding: a CSV of the API needed a script of their own.) Canvas puts
    while(1); before the JSON a signed-in browser gets; a class past 100 comes in pages."""
    archive, roster = canvas
    pages = [tmp_path / "page1.json", tmp_path / "page2.json"]
    pages[0].write_text('while(1);[{"id": 9, "user_id": 101, "submitted_at": "2024-03-01T17:03:00Z", "late": false}]')
    pages[1].write_text('[{"user_id": 102, "submitted_at": "2024-03-02T09:00:00-05:00"}, '
                        '{"user_id": 103, "submitted_at": null}]')
    import_export("canvas", archive, tmp_path / "out", roster=roster, times=pages)
    found = submission_times(tmp_path / "out")
    assert found["ada"][0] == datetime(2024, 3, 1, 17, 3, tzinfo=UTC)
    assert found["bob"][0] == datetime(2024, 3, 2, 14, 0, tzinfo=UTC) and found["grace"][0] is None
    pages[1].write_text('[{"user_id": 102, "submitted_at": "2024-03-02 noon"}]')
    with pytest.raises(ValueError, match=r"page2.json, submission 1: submitted_at '2024-03-02 noon' is not ISO 8601"):
        import_export("canvas", archive, tmp_path / "out2", roster=roster, times=pages)
    pages[1].write_text('{"errors": [{"message": "user authorization required"}]}')
    with pytest.raises(ValueError, match="not the JSON of Canvas's Submissions API"):
        import_export("canvas", archive, tmp_path / "out2", roster=roster, times=pages)


def test_the_canvas_file_name_is_read_as_canvas_reads_it_back():
    name = parse_canvas_name("lovelaceada_late_101_5001_hw_2-1.ipynb")
    assert name is not None and (name.user_id, name.file_id, name.late, name.given) == ("101", "5001", True,
                                                                                          "hw_2-1.ipynb")
    anonymous = parse_canvas_name("101_5001_hw.ipynb")  # anonymous grading: no name
    assert anonymous is not None and (anonymous.user_id, anonymous.late) == ("101", False)
    assert parse_canvas_name("lovelaceada_101_text.html") is None  # a text entry: no file id
    assert parse_canvas_name("folder/lovelaceada_101_5001_hw.ipynb") is None


def test_a_canvas_file_of_nobody_in_the_roster_is_refused_naming_it(canvas, tmp_path):
    archive, roster = canvas
    files = {**CANVAS_FILES, "turingalan_104_6001_attention.ipynb": notebook("alan")}
    archive = write_zip(tmp_path / "more.zip", files)
    with pytest.raises(ValueError, match=r"turingalan_104_6001_attention\.ipynb: Canvas user id 104 is not in"):
        import_export("canvas", archive, tmp_path / "out", roster=roster)
    assert not (tmp_path / "out").exists()
    done = import_export("canvas", archive, tmp_path / "out", roster=roster, skip_unmatched=True)
    assert set(done.learners) == {"ada", "bob", "grace"} and any("104" in note for note in done.notes)


def test_two_canvas_users_with_one_login_are_refused_unless_the_latest_is_kept(tmp_path):
    rows = [*ROSTER[:4], ["Lovelace, Ada (again)", "105", "S105", "ada", "B", ""]]
    roster = write_roster(tmp_path / "roster.csv", rows)
    archive = write_zip(tmp_path / "c.zip", {"lovelaceada_101_1_a.ipynb": notebook("first"),
                                            "lovelaceadaagain_105_2_a.ipynb": notebook("second")})
    with pytest.raises(ValueError, match=r"'ada' has 2 submissions .*--keep-latest"):
        import_export("canvas", archive, tmp_path / "out", roster=roster)
    with pytest.raises(ValueError, match="needs the time of each"):
        import_export("canvas", archive, tmp_path / "out", roster=roster, keep_latest=True)
    times = tmp_path / "times.csv"
    times.write_text("user_id,submitted_at\n101,2024-03-02T10:00:00+00:00\n105,2024-03-01T10:00:00+00:00\n")
    import_export("canvas", archive, tmp_path / "out", roster=roster, times=times, keep_latest=True)
    assert (tmp_path / "out" / "ada" / "a.ipynb").read_bytes() == notebook("first")


METADATA = """\
---
submission_1:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1001'
    :email: ada@uni.edu
  :created_at: 2024-03-01 17:03:00.123456000 Z
  :score: 5.0
submission_2:
  :submitters:
  - :name: Charles Babbage
    :sid: '1002'
    :email: bob@uni.edu
  - :name: Grace Hopper
    :sid: '1003'
    :email: grace@uni.edu
  :created_at: 2024-03-01 09:00:00.000000000 -08:00
  :score: 4.0
submission_3:
  :submitters:
  - :name: Dee
    :sid: '1004'
    :email: dee@uni.edu
  :created_at: 2024-03-03 08:00:00.000000000 Z
"""

GRADESCOPE_FILES = {
    "assignment_77_export/submission_metadata.yml": METADATA.encode(),
    "assignment_77_export/submission_1/attention.ipynb": notebook("ada"),
    "assignment_77_export/submission_1/extra/more.ipynb": notebook("ada more"),
    "assignment_77_export/submission_2/attention.ipynb": notebook("group"),
    "assignment_77_export/submission_3/answers.pdf": b"%PDF-1.4",
    "assignment_77_export/submission_1/../../../evil.ipynb": notebook("evil"),
    "assignment_77_export/__MACOSX/._submission_metadata.yml": b"\0",
}


def test_a_gradescope_export_becomes_the_folder_grade_reads_a_group_s_notebooks_for_each_member(tmp_path):
    archive = write_zip(tmp_path / "gs.zip", GRADESCOPE_FILES)
    out = tmp_path / "submissions"
    done = import_export("gradescope", archive, out)
    assert find_learners(out) == ({
        "ada": [Path("ada/attention.ipynb"), Path("ada/more.ipynb")],
        "bob": [Path("bob/attention.ipynb")],
        "dee": [],  # submitted a PDF alone: graded as not attempted, not forgotten
        "grace": [Path("grace/attention.ipynb")],
    }, [])
    assert (out / "grace" / "attention.ipynb").read_bytes() == notebook("group")
    times = submission_times(out)
    assert times["ada"] == (datetime(2024, 3, 1, 17, 3, 0, 123456, tzinfo=UTC), None)
    assert times["bob"] == times["grace"] == (datetime(2024, 3, 1, 17, 0, tzinfo=UTC), None)
    assert "climbs out" in "\n".join(done.skipped) and "answers.pdf" in "\n".join(done.skipped)
    assert nowhere_else(tmp_path, out) == []


def test_a_learner_s_file_named_like_the_metadata_stops_no_import_of_a_zip_laid_out_at_its_top(tmp_path):
    """Red team 18: in an export re-zipped from its contents (the metadata at the zip's top),
    a learner's upload named submission_metadata.yml lands one folder down, and import
    refused the whole class for holding two. The shallowest one is the export's."""
    files = {name.removeprefix("assignment_77_export/"): data for name, data in GRADESCOPE_FILES.items()}
    files["submission_2/submission_metadata.yml"] = b"submission_9: {}"
    out = tmp_path / "submissions"
    import_export("gradescope", write_zip(tmp_path / "gs.zip", files), out)
    assert sorted(find_learners(out)[0]) == ["ada", "bob", "dee", "grace"]
    two_exports = {**GRADESCOPE_FILES, "assignment_78_export/submission_metadata.yml": METADATA.encode()}
    with pytest.raises(ValueError, match="holds 2"):  # two exports side by side: which is meant is not known
        import_export("gradescope", write_zip(tmp_path / "two.zip", two_exports), tmp_path / "two")


def test_gradescope_learners_by_student_id(tmp_path):
    archive = write_zip(tmp_path / "gs.zip", GRADESCOPE_FILES)
    done = import_export("gradescope", archive, tmp_path / "out", match="sid")
    assert set(done.learners) == {"1001", "1002", "1003", "1004"}


def test_a_learner_in_two_gradescope_submissions_is_refused_unless_the_latest_is_kept(tmp_path):
    metadata = METADATA.replace("dee@uni.edu", "ada@uni.edu")
    archive = write_zip(tmp_path / "gs.zip", {**GRADESCOPE_FILES, "assignment_77_export/submission_metadata.yml":
                                              metadata.encode(),
                                              "assignment_77_export/submission_3/late.ipynb": notebook("later")})
    with pytest.raises(ValueError, match=r"'ada' has 2 submissions \(assignment_77_export/submission_1; "
                                         r"assignment_77_export/submission_3\)"):
        import_export("gradescope", archive, tmp_path / "out")
    import_export("gradescope", archive, tmp_path / "out", keep_latest=True)
    assert find_learners(tmp_path / "out")[0]["ada"] == [Path("ada/late.ipynb")]


def test_a_gradescope_submitter_without_an_email_names_no_learner(tmp_path):
    metadata = METADATA.replace("    :email: dee@uni.edu\n", "")
    archive = write_zip(tmp_path / "gs.zip", {**GRADESCOPE_FILES, "assignment_77_export/submission_metadata.yml":
                                              metadata.encode()})
    with pytest.raises(ValueError, match="submission_3: a submitter with no email"):
        import_export("gradescope", archive, tmp_path / "out")


def test_a_learner_whose_name_cannot_be_a_folder_stops_only_their_own_import_with_skip_unmatched(tmp_path):
    """Red team 14: one submitter's (valid) address zed/x@uni.edu stopped the whole class's
    import, --skip-unmatched or not."""
    metadata = METADATA.replace("dee@uni.edu", "zed/x@uni.edu")
    archive = write_zip(tmp_path / "gs.zip", {**GRADESCOPE_FILES, "assignment_77_export/submission_metadata.yml":
                                              metadata.encode()})
    with pytest.raises(ValueError, match=r"cannot be folders \(import the others with --skip-unmatched\).*'zed/x'"):
        import_export("gradescope", archive, tmp_path / "out")
    done = import_export("gradescope", archive, tmp_path / "out", skip_unmatched=True)
    assert sorted(done.learners) == ["ada", "bob", "grace"]
    assert any(note.startswith("not imported: 'zed/x'") and "slash" in note for note in done.notes)


def test_an_out_folder_is_written_only_when_new_empty_or_an_unchanged_import_of_the_same_kind(canvas, tmp_path):
    archive, roster = canvas
    out = tmp_path / "submissions"
    out.mkdir()
    (out / "mine.txt").write_text("the instructor's")
    with pytest.raises(ValueError, match="not empty"):
        import_export("canvas", archive, out, roster=roster)
    assert (out / "mine.txt").read_text() == "the instructor's"
    (out / "mine.txt").unlink()
    import_export("canvas", archive, out, roster=roster)
    import_export("canvas", archive, out, roster=roster)  # the same import again replaces the first
    with pytest.raises(ValueError, match="canvas export, not gradescope"):
        import_export("gradescope", write_zip(tmp_path / "gs.zip", GRADESCOPE_FILES), out)
    (out / "ada" / "attention.ipynb").write_bytes(notebook("edited by hand"))
    with pytest.raises(ValueError, match="changed one since"):
        import_export("canvas", archive, out, roster=roster)
    assert (out / "ada" / "attention.ipynb").read_bytes() == notebook("edited by hand")


def test_a_refused_import_names_what_changed_since_the_last(canvas, tmp_path):
    archive, roster = canvas
    out = tmp_path / "submissions"
    import_export("canvas", archive, out, roster=roster)
    (out / "ada" / "attention.ipynb").write_bytes(notebook("edited by hand"))
    (out / "bob" / "late.ipynb").write_bytes(notebook("sent by e-mail"))
    (out / "grace" / "my notebook _final__.ipynb").unlink()
    (out / "eve").mkdir()
    with pytest.raises(ValueError) as refused:
        import_export("canvas", archive, out, roster=roster)
    for named in ("ada/attention.ipynb (changed)", "bob/late.ipynb (added)",
                  "grace/my notebook _final__.ipynb (removed)", "eve/ (added)"):
        assert named in str(refused.value), named


def test_a_zip_that_unpacks_past_the_cap_is_refused_leaving_nothing(canvas, tmp_path):
    archive, roster = canvas
    with pytest.raises(ValueError, match="--max-size"):
        import_export("canvas", archive, tmp_path / "out", roster=roster, max_bytes=100)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.import-*"))


def test_one_learner_s_file_larger_than_grade_reads_is_left_out_alone(canvas, tmp_path, monkeypatch):
    """Red team 19: one learner's 1.1 GB notebook (a megabyte compressed) took the whole
    import past --max-size, and nothing was imported. A notebook larger than grade reads is
    left out, and listed; the others are imported."""
    from attncourse.instructor.lms import importing

    monkeypatch.setattr(importing, "LARGEST_NOTEBOOK", 2000)
    files = {**CANVAS_FILES, "hoppergrace_103_5009_huge.ipynb": b" " * 3000 + notebook("grace huge")}
    out = tmp_path / "out"
    done = importing.import_export("canvas", write_zip(tmp_path / "c.zip", files), out,
                                   roster=write_roster(tmp_path / "r.csv"), max_bytes=2500)
    assert sorted(find_learners(out)[0]) == ["ada", "bob", "grace"]
    assert any("huge.ipynb" in line and "larger than" in line for line in done.skipped)
    assert not (out / "grace" / "huge.ipynb").exists()


def test_the_budget_counts_every_byte_decompressed_across_entries(tmp_path):
    archive = write_zip(tmp_path / "z.zip", {"one.ipynb": b"x" * 5000, "two.ipynb": b"y" * 5000})
    budget = Budget(8000)
    with zipfile.ZipFile(archive) as zipped:
        budget.copy(zipped, zipped.getinfo("one.ipynb"), tmp_path / "one.ipynb")
        with pytest.raises(ValueError, match=r"more than 0.00762939 MiB \(reached in 'two.ipynb'\)"):
            budget.copy(zipped, zipped.getinfo("two.ipynb"), tmp_path / "two.ipynb")
        with pytest.raises(FileExistsError):  # never over a file that is there
            Budget(10**6).copy(zipped, zipped.getinfo("one.ipynb"), tmp_path / "one.ipynb")


def test_an_entry_that_lies_about_its_size_is_refused_by_name(tmp_path):
    archive = write_zip(tmp_path / "z.zip", {"big.ipynb": b"x" * 5000})
    with zipfile.ZipFile(archive) as zipped:
        info = zipped.getinfo("big.ipynb")
        info.file_size = 10  # what it declares; Python's zipfile reads no more, and the checksum fails
        with pytest.raises(ValueError, match="'big.ipynb' in the zip cannot be read"):
            Budget(10**6).read(zipped, info)


def test_notebook_names_are_made_safe_and_distinct():
    assert notebook_names(["a/b/../hw.ipynb", "HW.ipynb", "..ipynb", "x\x00y.IPYNB"]) == [
        "hw.ipynb", "HW-2.ipynb", "notebook.ipynb", "x_y.ipynb"]


def test_a_long_name_in_letters_of_four_bytes_is_cut_to_what_a_disk_holds(tmp_path):
    """Red team 16: 80 CJK letters (4 bytes each in UTF-8) kept a 320-byte name, which the
    disk refused (File name too long), and import stopped for the whole class."""
    wide = "\U00020000" * 80
    [name, again] = notebook_names([f"ada_{wide}.ipynb", f"ada_{wide}x.ipynb"])
    assert len(name.encode()) <= 100 and again != name
    (tmp_path / name).write_text("{}", encoding="utf-8")  # the disk takes it
    (tmp_path / again).write_text("{}", encoding="utf-8")


def test_names_in_scripts_that_join_letters_are_imported_and_control_characters_are_not(tmp_path):
    """Red team 17: Persian spelling's zero-width non-joiner (U+200C) and the joiner of emoji
    sequences (U+200D) are format characters, not control characters; refusing them filed an
    honest learner under "submitted nothing". Terminal escapes and line separators stay out."""
    persian, emoji = "تمرین\u200cها", "\U0001F469\u200d\U0001F4BB"
    files = {f"lovelaceada_101_5001_{persian}.ipynb": notebook("ada = 1"),
             f"babbagecharles_102_5002_{emoji}notes.ipynb": notebook("bob = 1"),
             "hoppergrace_103_5003_a\x1b]52;c;x\x07.ipynb": notebook("grace = 1"),
             "hoppergrace_103_5004_b\u2028c.ipynb": notebook("grace = 2")}
    out = tmp_path / "submissions"
    done = import_export("canvas", write_zip(tmp_path / "c.zip", files), out, roster=write_roster(tmp_path / "r.csv"))
    learners, _ = find_learners(out)
    assert sorted(learners) == ["ada", "bob"]
    assert sum("control characters" in line for line in done.skipped) == 2


def test_the_command_line_imports_and_refuses_with_the_file_named(canvas, tmp_path, capsys):
    archive, roster = canvas
    assert main(["import", "canvas", str(archive), "--out", str(tmp_path / "s"), "--roster", str(roster)]) == 0
    assert "3 learner(s), 4 notebook(s)" in capsys.readouterr().out
    bare = write_roster(tmp_path / "bare.csv", ROSTER[:3])
    assert main(["import", "canvas", str(archive), "--out", str(tmp_path / "t"), "--roster", str(bare)]) == 2
    assert "babbagecharles_late_102_5004_attention-1.ipynb: Canvas user id 102" in capsys.readouterr().err


def test_submission_times_reads_what_import_writes_and_refuses_a_malformed_value(tmp_path):
    assert submission_times(tmp_path) == {}  # a folder filled by hand
    (tmp_path / SUBMITTED_TIMES).write_text("learner,submitted_at,late_in_lms,source\n"
                                            "ada,2024-03-01T17:03:00+01:00,true,x\nbob,,,y\n", encoding="utf-8")
    assert submission_times(tmp_path) == {"ada": (datetime(2024, 3, 1, 17, 3, tzinfo=timezone(timedelta(hours=1))),
                                                  True), "bob": (None, None)}
    (tmp_path / SUBMITTED_TIMES).write_text("learner,submitted_at,late_in_lms,source\nada,2024-03-01T17:03:00,,x\n",
                                            encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: submitted_at .* has no offset"):
        submission_times(tmp_path)
    (tmp_path / SUBMITTED_TIMES).write_text("learner,submitted_at,late_in_lms,source\nada,,maybe,x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="late_in_lms is true, false or empty"):
        submission_times(tmp_path)


def test_grade_passes_over_submitted_csv_at_the_top_alone(tmp_path):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "hw.ipynb").write_bytes(notebook("ada"))
    (tmp_path / SUBMITTED_TIMES).write_text("learner,submitted_at,late_in_lms,source\n", encoding="utf-8")
    (tmp_path / "ada" / SUBMITTED_TIMES).write_text("a learner's file\n", encoding="utf-8")
    assert find_learners(tmp_path) == ({"ada": [Path("ada/hw.ipynb")]}, ["ada/submitted.csv: not a notebook (.ipynb)"])


# --- a sixth red team ---------------------------------------------------------------------


def test_a_canvas_file_that_names_two_students_is_filed_under_neither(tmp_path):
    """Mallory's sortable name "Mallory_1002" (Canvas keeps _ and digits) makes Canvas read
    her file back as Jane's, user 1002; Jane names her file after Mallory's ids; Mallory,
    renamed "Hopper, Grace_1003_1" since the roster (red team 9), names herself after Grace's.
    Either part of a name may be a student's choosing: none of them is filed, the rest are."""
    rows = [*ROSTER[:2], ["Mallory_1002", "1001", "", "mallory", "A", ""], ["Doe, Jane", "1002", "", "jdoe", "A", ""],
            ["Hopper, Grace", "1003", "", "grace", "A", ""], ["Lovelace, Ada", "1004", "", "ada", "A", ""]]
    roster = write_roster(tmp_path / "roster.csv", rows)
    files = {"mallory_1002_1001_5002_ch1.ipynb": notebook("mallory"), "doejane_1002_5003_1001_7_ch1.ipynb":
             notebook("jane"), "hoppergrace_1003_1_1001_5009_ch1.ipynb": notebook("mallory again"),
             "lovelaceada_1004_5010_ch1.ipynb": notebook("ada")}
    done = import_export("canvas", write_zip(tmp_path / "c.zip", files), tmp_path / "out", roster=roster)
    assert done.learners == {"ada": ["ch1.ipynb"]}
    for name in list(files)[:3]:
        assert any(note.startswith(f"{name}: ambiguous: its name holds the ids of Canvas users") for note in done.skipped)


def test_a_file_named_with_a_classmate_s_ids_never_lands_in_their_folder(canvas, tmp_path):
    """Red team 8: user 104, enrolled after the roster was exported, uploads "103_1_x.ipynb"
    (103 is Grace); and Charles (102) uploads one named with Grace's ids too."""
    _, roster = canvas
    stranger = write_zip(tmp_path / "s.zip", {"newstudent_104_9001_103_1_attention.ipynb": notebook("not grace")})
    with pytest.raises(ValueError, match=r"newstudent_104_9001_103_1_attention.ipynb: its name reads as the file of "
                                         r"Canvas user 104, who is not in the roster, and holds the ids of user 103"):
        import_export("canvas", stranger, tmp_path / "out", roster=roster)
    done = import_export("canvas", stranger, tmp_path / "out", roster=roster, skip_unmatched=True)
    assert done.learners == {} and not (tmp_path / "out" / "grace").exists()
    own = write_zip(tmp_path / "o.zip", {"babbagecharles_102_9002_103_1_attention.ipynb": notebook("bob"),
                                        "lovelaceada_101_9003_attention.ipynb": notebook("ada")})
    done = import_export("canvas", own, tmp_path / "out2", roster=roster)  # the class is imported, Charles's is not
    assert find_learners(tmp_path / "out2")[0] == {"ada": [Path("ada/attention.ipynb")]}
    assert any("102 (Babbage, Charles) or 103 (Hopper, Grace)" in note for note in done.skipped)


def test_without_the_student_s_name_canvas_s_own_reading_is_taken(canvas, tmp_path):
    """Anonymous grading writes no NAME; a student renamed since the roster keeps their old one."""
    _, roster = canvas
    archive = write_zip(tmp_path / "a.zip", {"101_9003_hw.ipynb": notebook("ada"),
                                            "hopperdr_late_103_9004_hw.ipynb": notebook("grace")})
    import_export("canvas", archive, tmp_path / "out", roster=roster)
    assert find_learners(tmp_path / "out")[0] == {"ada": [Path("ada/hw.ipynb")], "grace": [Path("grace/hw.ipynb")]}


def test_two_people_whose_emails_share_a_name_are_never_merged(tmp_path):
    metadata = METADATA.replace("dee@uni.edu", "ada@gmail.com").replace(":email: bob@uni.edu",
                                                                        ':email: "Zed <zed@uni.edu>"')
    archive = write_zip(tmp_path / "gs.zip", {**GRADESCOPE_FILES, "assignment_77_export/submission_metadata.yml":
                                              metadata.encode(),
                                              "assignment_77_export/submission_3/late.ipynb": notebook("guest")})
    for keep_latest in (False, True):  # the latest would replace one person's work with another's
        with pytest.raises(ValueError, match=r"'ada' names 2 people \(ada@gmail.com, ada@uni.edu\)"):
            import_export("gradescope", archive, tmp_path / "out", keep_latest=keep_latest)
    done = import_export("gradescope", archive, tmp_path / "out", match="sid")
    assert set(done.learners) == {"1001", "1002", "1003", "1004"}
    renamed = write_zip(tmp_path / "z.zip", {**GRADESCOPE_FILES, "assignment_77_export/submission_metadata.yml":
                                             METADATA.replace(":email: bob@uni.edu", ':email: "Zed <zed@uni.edu>"')
                                             .encode()})
    assert "zed" in import_export("gradescope", renamed, tmp_path / "out3").learners  # the address, not "Zed <zed"


def test_people_whose_emails_share_a_name_are_learners_by_their_whole_address(tmp_path):
    """Red team 8: bob@mallory.example beside bob@uni.edu refused the whole export; a course
    without student ids had no way out."""
    metadata = METADATA.replace("dee@uni.edu", "ada@gmail.com")
    archive = write_zip(tmp_path / "gs.zip", {**GRADESCOPE_FILES, "assignment_77_export/submission_metadata.yml":
                                              metadata.encode()})
    with pytest.raises(ValueError, match="another --match .*address, the whole e-mail"):
        import_export("gradescope", archive, tmp_path / "out")
    done = import_export("gradescope", archive, tmp_path / "out", match="address")
    assert {"ada@gmail.com", "ada@uni.edu"} <= set(done.learners)
    assert find_learners(tmp_path / "out")[0]["ada@gmail.com"] != find_learners(tmp_path / "out")[0]["ada@uni.edu"]


def test_a_canvas_import_without_times_says_late_work_cannot_be_penalised(canvas, tmp_path):
    archive, roster = canvas
    notes = import_export("canvas", archive, tmp_path / "out", roster=roster).notes
    assert any("carries no submission times" in note and "--times" in note for note in notes)
