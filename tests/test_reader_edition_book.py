"""The reader edition `make book` writes (site_ext/reader_edition.py): for every chapter, a
valid notebook (nbformat 4.5, cell ids kept) with no MyST left in any markdown cell, every
glued value, citation and exercise as the built page shows it (its quotes too), every code
cell the chapter's own, every in-page link leading to an anchor of the notebook, and the
page's download button serving it. The student version the instructor hands out (python -m
attncourse.instructor student), made from it, has no MyST left either, shows the glued
values of every cell it keeps, has no in-page link leading nowhere and points to no solution
it lacks."""

from __future__ import annotations

import html.parser
import json
import re

import nbformat
import pytest
from jupyter_cache import get_cache
from markdown_it import MarkdownIt

import tools
from attncourse.instructor import write_student_version
from attncourse.instructor.course.tags import exercise_labels
from attncourse.reader_edition import format_glued, glue_key, myst_left, myst_parser

EDITION = tools.ROOT / "_build" / "reader"
EXECUTED = tools.ROOT / "_build" / "jupyter_execute"
CHAPTERS = tools.notebook_pages()
SITE_URL = tools.CONFIG["html"]["baseurl"].rstrip("/") + "/"


class _Texts(html.parser.HTMLParser):
    """The text of every element of a page whose class list holds ``wanted``, in order."""

    def __init__(self, wanted: str):
        super().__init__()
        self.wanted, self.open, self.found = wanted, [], []

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "input", "link", "meta", "hr"):
            return
        classes = (dict(attrs).get("class") or "").split()
        if self.wanted in classes:
            self.found.append("")
            self.open.append(len(self.found) - 1)
        else:
            self.open.append(None)

    def handle_endtag(self, tag):
        if tag not in ("br", "img", "input", "link", "meta", "hr") and self.open:
            self.open.pop()

    def handle_data(self, data):
        for index in {i for i in self.open if i is not None}:
            self.found[index] += data


def page_texts(entry: str, css_class: str) -> list[str]:
    page = tools.SITE / f"{entry}.html"
    if not page.exists():
        pytest.fail(f"no built page {page}: run `make book` first")
    parser = _Texts(css_class)
    parser.feed(page.read_text(encoding="utf-8"))
    return [" ".join(text.split()) for text in parser.found]


def edition(entry: str):
    path = EDITION / f"{entry}.ipynb"
    if not path.exists():
        pytest.fail(f"no reader edition {path}: run `make book` first")
    return nbformat.read(path, as_version=4)


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    """The student version of every chapter, every exercise assigned, as `student` writes it."""
    out = tmp_path_factory.mktemp("handout")
    write_student_version(tools.ROOT / "chapters", out)
    return out


@pytest.fixture(scope="module")
def one_exercise_handout(tmp_path_factory):
    """The student version with one exercise of each chapter assigned, the others left out."""
    out = tmp_path_factory.mktemp("one_exercise")
    write_student_version(tools.ROOT / "chapters", out,
                          [exercise_labels(chapter(entry))[-1] for entry in CHAPTERS])
    return out


HANDOUTS = {"student": "handout", "one exercise": "one_exercise_handout"}  # their fixtures


def _from(folder):
    return lambda entry: nbformat.read(folder / f"{entry.rsplit('/', 1)[-1]}.ipynb", as_version=4)


@pytest.fixture(params=list(HANDOUTS))
def handed_out(request):
    """A student version of a chapter: every exercise assigned, or one."""
    return _from(request.getfixturevalue(HANDOUTS[request.param]))


@pytest.fixture(params=["reader", *HANDOUTS])
def opened(request):
    """The reader edition, or a student version, of a chapter."""
    if request.param == "reader":
        return edition
    return _from(request.getfixturevalue(HANDOUTS[request.param]))


def chapter(entry: str):
    return nbformat.read(tools.ROOT / f"{entry}.ipynb", as_version=4)


def roles(source: str, name: str) -> list[str]:
    """The content of every ``name`` role in a MyST source, directive bodies included."""
    found = []
    for token in myst_parser().parse(source):
        if token.type in ("fence", "colon_fence") and token.info.strip().startswith("{"):
            found += roles(token.content, name)
        for child in token.children or ():
            if child.type == "myst_role" and child.meta["name"] == name:
                found.append(child.content)
    return found


def rendered(nb) -> str:
    """The HTML of the notebook's markdown cells, as a CommonMark front end renders them."""
    renderer = MarkdownIt("commonmark", {"html": True}).enable("table")
    return "\n".join(renderer.render(cell.source) for cell in nb.cells if cell.cell_type == "markdown")


def shown_text(nb) -> str:
    """The text a reader sees in the notebook's markdown cells (rendered, tags dropped)."""
    text = re.sub(r"</?(?:p|h\d|li|ul|ol|blockquote|details|summary|table|tr|td|th|pre)\b[^>]*>",
                  " ", rendered(nb))
    text = re.sub(r"<[^>]+>", "", text)
    return " ".join(html.unescape(text).split())


def in_order(needles: list[str], haystack: str) -> list[str]:
    """The needles not found in ``haystack`` one after the other (empty when all are)."""
    missing, position = [], 0
    for needle in needles:
        found = haystack.find(needle, position)
        if found < 0:
            missing.append(needle)
        else:
            position = found + len(needle)
    return missing


@pytest.mark.parametrize("entry", CHAPTERS)
def test_the_edition_is_a_valid_notebook_with_the_chapters_cell_ids(entry):
    built = edition(entry)
    nbformat.validate(built)
    assert (built.nbformat, built.nbformat_minor) == (4, 5)
    source_ids = [cell.id for cell in chapter(entry).cells]
    kept = [cell.id for cell in built.cells]
    assert kept == [i for i in source_ids if i in kept], "cells reordered or ids changed"
    dropped = [c.source for c in chapter(entry).cells if c.id not in kept]
    ends = [s for s in dropped if re.fullmatch(r"\s*(`{3,}|:{3,})\{(exercise|solution)-end\}\s*\n\1\s*", s)]
    assert dropped == ends, "only the cells that just end an exercise or a solution may go"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_no_myst_is_left_in_any_markdown_cell(entry, opened):
    left = {cell.id: myst_left(cell.source) for cell in opened(entry).cells
            if cell.cell_type == "markdown"}
    left = {cell: found for cell, found in left.items() if found}
    assert not left, f"{entry}: MyST left in cells {left}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_every_code_cell_is_the_chapters_own(entry):
    """Source, id, tags and other metadata byte for byte (the grader matches a learner's
    cells by source); only Jupyter's collapsed-input flag may be added."""
    def code(nb):
        return [(c.id, c.source, {k: v for k, v in c.metadata.items() if k != "jupyter"})
                for c in nb.cells if c.cell_type == "code"]
    assert code(edition(entry)) == code(chapter(entry))


def glued_values(entry: str, kept=None) -> list[str]:
    """The text of each {glue:text} role of the chapter (of its cells with an id in ``kept``,
    if given), in order, as the edition's formatter makes it of the executed book's value."""
    glued = json.loads((EXECUTED / f"{entry}.glue.json").read_text())
    keys = [glue_key(content) for cell in chapter(entry).cells
            if cell.cell_type == "markdown" and (kept is None or cell.id in kept)
            for content in roles(cell.source, "glue:text")]
    assert keys, f"{entry} glues nothing"
    return [format_glued(glued[name]["data"]["text/plain"], spec) for name, spec in keys]


@pytest.mark.parametrize("entry", CHAPTERS)
def test_every_glued_value_reads_as_on_the_page(entry):
    """The page's text for each {glue:text} role, in order, is what the edition's formatter
    makes of the executed book's value; and the edition shows each, in order."""
    values = glued_values(entry)
    assert values == page_texts(entry, "pasted-text")
    missing = in_order(values, shown_text(edition(entry)))
    assert not missing, f"{entry}: glued values not shown: {missing[:5]}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_the_student_version_shows_the_glued_values_of_the_cells_it_keeps(entry, handout):
    student = nbformat.read(handout / f"{entry.rsplit('/', 1)[-1]}.ipynb", as_version=4)
    kept = {cell.id for cell in student.cells}
    missing = in_order(glued_values(entry, kept), shown_text(student))
    assert not missing, f"{entry}: glued values not shown: {missing[:5]}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_citations_and_exercises_read_as_on_the_page(entry):
    shown = shown_text(edition(entry))
    citations = page_texts(entry, "bibtex-citation")
    exercises = page_texts(entry, "admonition-title")
    exercises = [title for title in exercises if title.startswith(("Exercise", "Solution to"))]
    assert exercises, f"{entry} has no exercise"
    missing = in_order(citations, shown) + [t for t in exercises if t not in shown]
    assert not missing, f"{entry}: not shown as on the page: {missing[:5]}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_the_download_button_serves_the_edition(entry):
    served = tools.SITE / "_sources" / f"{entry}.ipynb"
    assert served.read_bytes() == (EDITION / f"{entry}.ipynb").read_bytes()


@pytest.mark.parametrize("entry", CHAPTERS)
def test_a_solution_keeps_what_it_printed_on_the_page_folded(entry):
    """A solution's code cell shows its output on the page, in the solution's dropdown: the
    edition keeps that output, collapsed as the dropdown is (reviewer of issue 35: 16 solution
    cells had lost theirs, chapter 4's "the table below" among them)."""
    chapter = nbformat.read(tools.ROOT / f"{entry}.ipynb", as_version=4)
    _, executed = get_cache(tools.ROOT / "_build" / ".jupyter_cache").merge_match_into_notebook(chapter)
    printed = {cell.get("id"): [o for o in cell.get("outputs", [])  # as the page shows them
                                if "scrapbook" not in o.get("metadata", {})]  # glued: in the text
               for cell in executed.cells}
    solutions = [cell for cell in edition(entry).cells
                 if cell.cell_type == "code" and "solution" in cell.metadata.get("tags", [])]
    assert solutions, f"{entry}: no solution code cell"
    for cell in solutions:
        shown = printed[cell.get("id")]
        assert len(cell.outputs) == len(shown), f"{entry}, cell {cell.get('id')}: outputs lost"
        assert cell.metadata.get("jupyter", {}).get("outputs_hidden", False) == bool(shown)


@pytest.mark.parametrize("entry", CHAPTERS)
def test_every_in_page_link_leads_to_an_anchor_of_the_notebook(entry, opened):
    """A label of the chapter is an anchor where it was (reviewer of issue 35: chapter 9's
    "[below](#prefill-decode-padding)" led nowhere once the label was removed), also in a
    handout that leaves the linked exercise out."""
    html_text = rendered(opened(entry))
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', html_text))
    assert anchors, f"{entry}: no anchor"
    dead = set(re.findall(r'href="#([^"]*)"', html_text)) - anchors
    assert not dead, f"{entry}: in-page links leading nowhere: {sorted(dead)}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_a_reference_within_the_chapter_stays_in_the_notebook(entry):
    """A {ref} or a link to a label of the same chapter leads to the notebook's anchor, not to
    the page on the site (reviewer of issue 35: chapters 2 and 7)."""
    own_page = f"{SITE_URL}{entry}.html"
    to_own_page = [href for href in re.findall(r'href="([^"]+)"', rendered(edition(entry)))
                   if href.startswith(own_page)]
    assert not to_own_page, f"{entry}: links to its own page on the site: {to_own_page[:3]}"


_SENTENCE = re.compile(r"(?<=[.?!])\s+(?=[^a-z])")


@pytest.mark.parametrize("entry", CHAPTERS)
def test_the_handout_points_to_no_solution_it_lacks(entry, handed_out):
    """A sentence about an exercise's solution holds in every edition: in a handout, which
    has none, it says the solution is on the course's site (reviewer of issue 35: chapter
    6's "the solution compares" and "then read the solution", chapter 7's "the solution
    then reproduces layer 4")."""
    nb = handed_out(entry)
    assert not any("solution" in cell.metadata.get("tags", []) for cell in nb.cells)
    sentences = _SENTENCE.split(shown_text(nb).replace("’", "'"))
    pointing = [s for s in sentences if re.search(r"\bsolutions?\b", s, re.IGNORECASE)]
    absent = [s for s in pointing if "course's site" not in s]
    assert not absent, f"{entry}: sentences about a solution the handout lacks: {absent}"


@pytest.mark.parametrize("entry", CHAPTERS)
def test_the_prose_has_the_pages_quotes_dashes_and_ellipses(entry):
    """What the page's smartquotes curls is curled in the edition: no straight quote, "--" or
    "..." is left in its prose (code, maths, HTML and link targets aside; a solution's title,
    an HTML summary, is straight on the page too)."""
    renderer = MarkdownIt("commonmark", {"html": True}).enable("table")
    prose = []
    for cell in edition(entry).cells:
        if cell.cell_type == "markdown":
            html_text = renderer.render(re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", "", cell.source, flags=re.DOTALL))
            html_text = re.sub(r"<(code|summary|pre)>.*?</\1>|<[^>]+>", " ", html_text, flags=re.DOTALL)
            prose.append(html.unescape(html_text))
    straight = re.findall(r".{0,30}(?:[\"']|\.\.\.|--).{0,30}", "\n".join(prose))
    assert not straight, f"{entry}: not typeset as on the page: {straight[:5]}"
