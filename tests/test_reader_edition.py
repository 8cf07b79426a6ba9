"""The reader edition's converter (attncourse/reader_edition.py): every MyST construct the
chapters use written out as plain Markdown, glued values formatted exactly as myst-nb
formats them, labels kept as anchors that in-page links and references lead to, sentences
about opening the chapter in a live notebook dropped, quotes and dashes as the page's
smartquotes shows them, nothing else touched."""

import json

import nbformat
import pytest
from docutils.core import publish_doctree
from hypothesis import given
from hypothesis import strategies as st
from myst_nb.core.variables import format_plain_text

from attncourse.reader_edition import (
    Chapter,
    Link,
    References,
    anchored_links,
    format_glued,
    glued_values,
    made_from,
    myst_left,
    reader_markdown,
    reader_notebook,
    typeset,
    widget_line,
)

SITE = "https://example.org/course/"
REFERENCES = References(
    citations={"vaswani2017": f"\\[[Vaswani *et al.*, 2017]({SITE}bibliography.html#id6)\\]",
               "a,b": f"\\[[A, 2020]({SITE}bibliography.html#id1), [B, 2021]({SITE}bibliography.html#id2)\\]"},
    terms={"row-stochastic": f"{SITE}glossary.html#term-Row-stochastic"},
    labels={"ch1-doubling": Link("Exercise 1", f"{SITE}chapters/ch1.html#ch1-doubling"),
            "order": Link("Order does not matter", f"{SITE}chapters/ch1.html#order"),
            "masks": Link("Masks", f"{SITE}chapters/ch2.html#masks")},
    pages={"notation": Link("Notation", f"{SITE}notation.html"),
           "chapters/ch2": Link("2. Two", f"{SITE}chapters/ch2.html")},
    notebooks=frozenset({"chapters/ch1", "chapters/ch2"}),
)
GLUE = {"w": "0.352893683165331", "n": "6", "big": "2147483648", "words": "'He ⇝ it'",
        "star": "'a*b'"}
CHAPTER = Chapter("chapters/ch1", GLUE, REFERENCES, {"ch1-doubling": "Double *it*"},
                  frozenset({"order", "ch1-doubling"}))


def written(source):
    return reader_markdown(source, CHAPTER)


@pytest.mark.parametrize(("source", "expected"), [
    ("keeps {glue:text}`w:.3f` of it", "keeps 0.353 of it"),
    ("{glue:text}`big:,d` bytes", "2,147,483,648 bytes"),
    ("cycle {glue:text}`words`", "cycle He ⇝ it"),
    ("a {glue:text}`star` b", "a a\\*b b"),  # Markdown's own characters are escaped
    ("as in {cite}`vaswani2017`.", f"as in \\[[Vaswani *et al.*, 2017]({SITE}bibliography.html#id6)\\]."),
    ("{cite}`a,b`", REFERENCES.citations["a,b"]),
    ("is {term}`row-stochastic`", f"is [row-stochastic]({SITE}glossary.html#term-Row-stochastic)"),
    ("is {term}`stochastic by rows <Row-Stochastic>`",
     f"is [stochastic by rows]({SITE}glossary.html#term-Row-stochastic)"),
    # A label of the same chapter is an anchor in the notebook; another page's is on the site.
    ("see {ref}`order`", "see [Order does not matter](#order)"),
    ("see {ref}`ch1-doubling`", "see [Exercise 1](#ch1-doubling)"),
    ("see {ref}`this one <order>`", "see [this one](#order)"),
    ("see {ref}`masks`", f"see [Masks]({SITE}chapters/ch2.html#masks)"),
    ("see [below](#order) and [there](#masks)", f"see [below](#order) and [there]({SITE}chapters/ch2.html#masks)"),
    ("see {doc}`chapter 2 <ch2>`", "see [chapter 2](ch2.ipynb)"),  # the sibling notebook
    ("see {doc}`../notation`", f"see [Notation]({SITE}notation.html)"),
    ("see the [notation page](../notation.md)", f"see the [notation page]({SITE}notation.html)"),
    ("[two](ch2.ipynb#top) and [out](https://x.org/a.md)", "[two](ch2.ipynb#top) and [out](https://x.org/a.md)"),
    ("(order)=\n## Order does not matter", '<a id="order"></a>\n\n## Order does not matter'),
    ("(order)=\n**Bold.** Text", '<a id="order"></a>\n**Bold.** Text'),  # in the paragraph
    ("% a comment\ntext", "text"),
])
def test_each_construct_is_written_as_the_page_shows_it(source, expected):
    assert written(source) == expected
    assert not myst_left(written(source))


def test_roles_in_code_and_maths_are_left_as_written():
    source = "`{glue:text}`w`` in code, $x_{glue}$ in maths, {glue:text}`w:.2f` in text"
    assert written(source) == "`{glue:text}`w`` in code, $x_{glue}$ in maths, 0.35 in text"
    fenced = "```python\nprint('{cite}`x`')\n```"
    assert written(fenced) == fenced


def test_a_role_over_a_line_break_and_in_a_list():
    assert written("as {term}`row\nstochastic <row-stochastic>` is") == \
        f"as [row stochastic]({SITE}glossary.html#term-Row-stochastic) is"
    assert written("1. first {glue:text}`n`\n2. second\n   {glue:text}`w:.1f`") == \
        "1. first 6\n2. second\n   0.4"


def test_a_number_opening_a_line_does_not_start_a_list():
    # "6. Then" and "6) then" would be list items; so would a value at a paragraph's start.
    assert written("{glue:text}`n`. Then") == "6\\. Then"
    assert written("so\n{glue:text}`n`) then") == "so\n6\\) then"
    assert written("{glue:text}`w:.2f`. Then") == "0.35. Then"  # not a list's number


@pytest.mark.parametrize(("source", "expected"), [
    # The sentence goes, the rest of the paragraph stays.
    ("Read on. Try it in a live notebook: open this chapter in {launch}`colab` or "
     "{launch}`binder` (the cells are there, ready to run). Then {glue:text}`n` more.",
     "Read on. Then 6 more."),
    ("A {glue:text}`n`. This one needs Python: open it in\n{launch}`colab`.", "A 6."),
    # A parenthesis of links only goes; a sentence around it stays.
    ("In a running notebook\n({launch}`colab` or {launch}`binder`) any head can go, e.g. this one.",
     "In a running notebook\nany head can go, e.g. this one."),
    ("Run it (in {launch}`colab`, say) now.", ""),  # words besides the link: the sentence goes
    # A paragraph that is only that sentence goes, with its blank line.
    ("First.\n\nOpen this chapter in {launch}`colab` or {launch}`binder`.\n\nLast.", "First.\n\nLast."),
    ("Open this chapter in {launch}`colab` (the `x.y` cells).", ""),
])
def test_a_sentence_built_around_launch_links_is_dropped(source, expected):
    """In a notebook, "open this chapter in Colab or Binder" sends a reader who is in a live
    notebook to another (in a handout, to the published one with its solutions)."""
    assert written(source) == expected


def test_quotes_dashes_and_ellipses_are_typeset_as_the_page_shows_them():
    """As Sphinx's smartquotes typesets the page: docutils' own, with its default action."""
    prose = "He said \"it's *their* 'turn'\" -- twice... and 1990--2000 --- \"again\"."
    page = publish_doctree(prose, settings_overrides={"smart_quotes": True}).astext()
    assert page == "He said “it’s their ‘turn’” – twice… and 1990–2000 — “again”."
    assert written(prose) == page.replace("their", "*their*")
    assert typeset('see [the "link"](https://x.org/a--b) and <https://x.org/c--d>') == \
        "see [the “link”](https://x.org/a--b) and <https://x.org/c--d>"


@pytest.mark.parametrize("text", [
    "`it's \"code\" -- ...`", "$f'(x) -- ...$", "see https://x.org/a--b...", '\\"escaped\\"',
    "<details>\n<summary>layer's -- \"x\"</summary>", "| a | b |\n|---|---|\n| 1 | 2 |",
    "text\n\n---\n\nmore", "Title\n-----",
])
def test_code_maths_urls_escapes_html_and_markup_keep_their_characters(text):
    assert typeset(text) == text


def test_in_page_links_to_a_removed_anchor_become_text():
    sources = ['<a id="kept"></a>\n\n### Kept',
               "see [Kept](#kept), [Gone \\[1\\]](#gone) and `[code](#gone)`"]
    assert anchored_links(sources) == [sources[0], "see [Kept](#kept), Gone \\[1\\] and `[code](#gone)`"]


def test_admonitions_are_quotes_with_a_bold_title():
    assert written("```{note}\nRows are {term}`row-stochastic`.\n```") == (
        f"> **Note**\n>\n> Rows are [row-stochastic]({SITE}glossary.html#term-Row-stochastic).")
    assert written(":::{admonition} In *real* models\n:class: note\nGPT-2, {glue:text}`n` heads.\n"
                   "\nSecond.\n:::\n\nAfter.") == \
        "> **In *real* models**\n>\n> GPT-2, 6 heads.\n>\n> Second.\n\nAfter."


def test_an_exercise_is_a_heading_and_its_solution_is_folded():
    start = "```{exercise-start} Double *it*\n:label: ch1-doubling\n```\n\nKeeps {glue:text}`w:.3f`."
    assert written(start) == '<a id="ch1-doubling"></a>\n\n### Exercise 1 (Double *it*)\n\nKeeps 0.353.'
    assert written("```{exercise-end}\n```") == ""
    solution = "```{solution-start} ch1-doubling\n:class: dropdown\n```\n\nIt is {glue:text}`n`."
    assert written(solution) == ("<details>\n<summary>Solution to Exercise 1 (Double <em>it</em>)"
                                 "</summary>\n\nIt is 6.\n\n</details>")
    assert written("```{solution-end}\n```") == ""


@pytest.mark.parametrize(("source", "names"), [
    ("{foo}`bar`", "{foo}"), ("```{weird} x\n```", "{weird}"), (":::{weird}\n:::", "{weird}"),
    ("{glue:text}`missing:.2f`", "'missing'"), ("{cite}`nobody`", "'nobody'"),
    ("{term}`nothing`", "'nothing'"), ("{ref}`nowhere`", "'nowhere'"),
    ("[below](#nowhere)", "'#nowhere'"),
    ("- Open it in {launch}`colab`.", "whole heading, list item or quote"),
    ("{glue:text}`other::w:.2f`", "'other::w'"),
    ("- item\n\n  ```{note}\n  x\n  ```", "inside a list"),
])
def test_what_cannot_be_written_out_is_refused_by_name(source, names):
    with pytest.raises(ValueError, match=names.replace("{", r"\{").replace("}", r"\}")):
        written(source)


@pytest.mark.parametrize(("source", "left"), [
    ("{glue:text}`x:.2f` and {cite}`a`", ["{glue:text}`x:.2f`", "{cite}`a`"]),
    ("```{note}\nx\n```", ["```{note}"]),
    ("::::{exercise-start} T\n::::", ["::::{exercise-start}"]),
    ("(label)=\n# H", ["(label)="]),
    ("<summary>Solution to {ref}`x`</summary>", ["{ref}`x`"]),
    ("plain `code` and $m$ and [a](b.md) and ```python fences```", []),
])
def test_what_is_left_of_myst_is_found_by_the_parser(source, left):
    assert myst_left(source) == left


FORMATS = ["", "s", "d", ",d", ".0f", ".1f", ".2f", ".3f", ".4f", ".5f", ".0e", ".1e",
           ".2e", "g", ".1g", "+.3f", ",.0f", ".0%"]


@given(value=st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64),
                       st.integers(-10**12, 10**12)),
       spec=st.sampled_from(FORMATS))
def test_glued_values_are_formatted_as_myst_nb_formats_them(value, spec):
    text = repr(value)  # what the kernel displays as text/plain
    try:
        expected = format_plain_text(text, spec)
    except ValueError:
        with pytest.raises(ValueError):
            format_glued(text, spec)
        return
    assert format_glued(text, spec) == expected


def test_glued_text_is_read_back_as_the_kernel_wrote_it():
    for text, spec in [("'He ⇝ it'", ""), ("'He ⇝ it'", "s"), ("np.float64(0.5)", "s"),
                       ("[1, 2]", ""), ("True", "d")]:
        assert format_glued(text, spec) == format_plain_text(text, spec)


def test_widget_lines_say_what_will_appear():
    assert widget_line("AttentionExplorer") == \
        "An attention explorer appears here when this cell runs (it needs a live kernel)."
    assert widget_line("KVCacheExplorer").startswith("A KV cache explorer appears here")
    assert widget_line("AnswerBox").startswith("An answer box appears here")


def _notebook():
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "P",
                                                           "language": "python"}})
    nb.cells = [
        nbformat.v4.new_markdown_cell("# One\n\n(order)=\nKeeps {glue:text}`w:.3f`."),
        nbformat.v4.new_code_cell("x = 1\nx", metadata={"tags": ["hide-input"]}),
        nbformat.v4.new_markdown_cell("```{exercise-start} Double *it*\n:label: ch1-doubling\n```\n\nGo.",
                                      metadata={"tags": ["exercise:ch1-doubling"]}),
        nbformat.v4.new_code_cell("prediction = None", metadata={"tags": ["stub", "exercise:ch1-doubling"]}),
        nbformat.v4.new_markdown_cell("```{exercise-end}\n```", metadata={"tags": ["exercise:ch1-doubling"]}),
        nbformat.v4.new_markdown_cell("```{solution-start} ch1-doubling\n:class: dropdown\n```\n\n2.",
                                      metadata={"tags": ["solution", "exercise:ch1-doubling"]}),
        nbformat.v4.new_code_cell("prediction = 2", metadata={"tags": ["solution", "exercise:ch1-doubling"]}),
        nbformat.v4.new_markdown_cell("```{solution-end}\n```", metadata={"tags": ["solution", "exercise:ch1-doubling"]}),
        nbformat.v4.new_code_cell("check.doubling(prediction)",
                                  metadata={"tags": ["check", "remove-output", "exercise:ch1-doubling"]}),
        nbformat.v4.new_code_cell("explorer"),
    ]
    return nb


def _executed(nb):
    executed = json.loads(json.dumps(nb))
    executed = nbformat.from_dict(executed)
    outputs = {
        1: [nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=1),
            nbformat.v4.new_output("display_data", {"application/papermill.record/text/plain": GLUE["w"]},
                                   metadata={"scrapbook": {"name": "w", "mime_prefix": "application/papermill.record/"}})],
        6: [nbformat.v4.new_output("stream", name="stdout", text="the answer\n")],
        8: [nbformat.v4.new_output("display_data", {"text/plain": "Correct!"})],
        9: [nbformat.v4.new_output("display_data", {
            "text/plain": "AttentionExplorer(X=array([[...]]))",
            "application/vnd.jupyter.widget-view+json": {"model_id": "m1", "version_major": 2,
                                                         "version_minor": 0}})],
    }
    for index, cell_outputs in outputs.items():
        executed.cells[index].outputs = cell_outputs
        executed.cells[index].execution_count = index
    executed.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {
        "m1": {"model_name": "AnyModel", "state": {
            "_anywidget_id": "attncourse.explorers.attention_explorer.AttentionExplorer"}}}}}
    return executed


def test_the_notebook_changes_markdown_only_and_keeps_what_the_page_shows():
    nb = _notebook()
    before = json.dumps(nb, sort_keys=True)
    edition = reader_notebook(nb, executed=_executed(nb), references=REFERENCES,
                              docname="chapters/ch1")
    assert json.dumps(nb, sort_keys=True) == before, "the chapter itself was changed"
    nbformat.validate(edition)
    markdown = [cell for cell in edition.cells if cell.cell_type == "markdown"]
    assert [cell.source for cell in markdown] == [
        '# One\n\n<a id="order"></a>\nKeeps 0.353.',
        '<a id="ch1-doubling"></a>\n\n### Exercise 1 (Double *it*)\n\nGo.',
        "<details>\n<summary>Solution to Exercise 1 (Double <em>it</em>)</summary>\n\n2.\n\n</details>"]
    assert [cell.id for cell in edition.cells] == [
        cell.id for index, cell in enumerate(nb.cells) if index not in (4, 7)]  # ends dropped
    code = [cell for cell in edition.cells if cell.cell_type == "code"]
    assert [(c.id, c.source, c.metadata.get("tags")) for c in code] == [
        (c.id, c.source, c.metadata.get("tags")) for c in nb.cells if c.cell_type == "code"]
    hidden = [c.metadata.get("jupyter", {}).get("source_hidden", False) for c in code]
    assert hidden == [True, False, True, False, False]  # hide-input and the solution
    folded = [c.metadata.get("jupyter", {}).get("outputs_hidden", False) for c in code]
    assert folded == [False, False, True, False, False]  # the solution's, shown in its dropdown on the page
    outputs = [[o.get("text") or o.get("data", {}).get("text/plain") for o in c.outputs] for c in code]
    assert outputs == [["1"], [], ["the answer\n"], [], [widget_line("AttentionExplorer")]]
    assert "widgets" not in edition.metadata
    assert made_from(edition, nb)
    nb.cells[3].source = "prediction = 0.4"
    assert not made_from(edition, nb)


def test_glued_values_are_read_from_the_executed_notebook():
    executed = _executed(_notebook())
    shown = nbformat.v4.new_output("display_data", {"text/plain": "7"},
                                   metadata={"scrapbook": {"name": "n", "mime_prefix": ""}})
    executed.cells[6].outputs.append(shown)  # glue(..., display=True): no prefix
    assert glued_values(executed) == {"w": GLUE["w"], "n": "7"}
