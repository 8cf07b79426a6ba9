"""The reader edition in a real JupyterLab (issue 35): chapters 1 and 9, opened from the
edition `make book` wrote (_build/reader), read as a learner reads them. Before any cell
runs: no MyST role, directive or label anywhere in the rendered text, every glued number
as the site's page shows it, the maths typeset, each solution folded, and a line, not an
object's repr, where each widget will be, and every in-page link's target in the page. Then
the whole chapter runs in the session's JupyterLab (tests/browser/conftest.py) and an
explorer and an answer box are drawn as widgets. Chapter 9's "[below](#prefill-decode-padding)"
is followed with a click, in Lab's default windowing mode. Screenshots:
build/screenshots/reader_edition_lab_*.png."""

from __future__ import annotations

import contextlib
import json
import re
import shutil

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.test_reader_edition_book import EDITION, in_order, page_texts

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("lab")]

CHAPTERS = ["chapters/01_dot_product_similarity", "chapters/09_attention_at_scale"]
KERNEL_MS = 60_000  # a kernel's start on a busy machine
RUN_MS = 600_000  # a whole chapter, run in the browser on a busy machine
WIDGET_LINE = "appears here when this cell runs"

# The text of the rendered markdown cells, without their typeset maths (whose assistive
# text spells out TeX), and how much maths was typeset.
_MARKDOWN = """() => {
  const cells = [...document.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown')];
  const text = cells.map((cell) => {
    const copy = cell.cloneNode(true);
    copy.querySelectorAll('mjx-container, .MathJax, script').forEach((node) => node.remove());
    return copy.textContent;
  }).join('\\n');
  return { text, cells: cells.length,
           maths: document.querySelectorAll('.jp-RenderedMarkdown mjx-container').length };
}"""
# Anything a MyST role, directive or label leaves in rendered Markdown: "{name}" before a
# role's (rendered) content, a directive's fence line, a "(label)=" line.
_MYST = re.compile(r"\{[A-Za-z][\w:+-]*\}|^\s*(?:`{3,}|:{3,})\{|^\s*\([\w-]+\)=\s*$", re.MULTILINE)
# Each in-page link of the rendered Markdown (not the "¶" Lab adds to headings) and whether
# its target is in the page, as Lab's link handler looks for it: an element with that id, or
# a heading's data-jupyter-id.
IN_PAGE_LINKS = """() => [...document.querySelectorAll(
    '.jp-RenderedMarkdown a[href^="#"]:not(.jp-InternalAnchorLink)')].map((link) => {
  const id = decodeURIComponent(link.getAttribute('href').slice(1));
  const target = document.getElementById(id)
    || document.querySelector(`[data-jupyter-id="${CSS.escape(id)}"]`);
  return { id, found: target !== null };
})"""
# The prompts of the code cells (one whose input is collapsed shows none).
_PROMPTS = """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
  .map((prompt) => prompt.textContent.trim()).filter((text) => text)"""
# Every cell has run (the prompts were emptied first): none waiting, every one numbered.
_ALL_RAN = f"""() => {{
  const prompts = ({_PROMPTS})();
  return prompts.length > 20 && prompts.every((text) => /^\\[\\d+\\]:$/.test(text));
}}"""


def open_chapter(lab, page, entry: str):
    (lab.root / "chapters").mkdir(exist_ok=True)
    shutil.copy(EDITION / f"{entry}.ipynb", lab.root / f"{entry}.ipynb")
    page.goto(lab.notebook_url(f"{entry}.ipynb"))
    expect(page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\| Idle"))) \
        .to_be_visible(timeout=KERNEL_MS)
    page.locator(".jp-MarkdownCell .jp-RenderedMarkdown").first.wait_for()


def assert_no_dead_links(page) -> None:
    """Every in-page link of the open notebook has its target in the page, once the notebook
    has rendered its markdown cells (one after another, after the first)."""
    try:
        page.wait_for_function(f"() => ({IN_PAGE_LINKS})().every((link) => link.found)",
                               timeout=KERNEL_MS)
    except PlaywrightTimeout:
        dead = [link["id"] for link in page.evaluate(IN_PAGE_LINKS) if not link["found"]]
        pytest.fail(f"in-page links to nothing: {dead}")


@contextlib.contextmanager
def windowing(server, page, mode: str):
    """The notebooks of ``server`` opened in windowing ``mode``, then in the session's again
    ("none": every cell attached, tests/browser/conftest.py)."""
    settings = f"{server.url}lab/api/settings/@jupyterlab/notebook-extension:tracker"
    headers = {"Authorization": f"token {server.token}"}

    def put(value: str):
        response = page.request.put(settings, headers=headers,
                                    data=json.dumps({"raw": json.dumps({"windowingMode": value})}))
        assert response.ok, f"settings not saved: {response.status} {response.text()}"

    put(mode)
    try:
        yield
    finally:
        put("none")


def menu(page, name: str, item: str):
    page.get_by_role("menuitem", name=name, exact=True).click()
    page.get_by_role("menuitem", name=item, exact=True).click()


def run_all(page):
    """Empty every output and prompt (the edition holds the book's), then run every cell."""
    menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_function(f"() => ({_PROMPTS})().every((text) => !/\\d/.test(text))")
    menu(page, "Run", "Run All Cells")
    try:
        page.wait_for_function(_ALL_RAN, timeout=RUN_MS, polling=1000)
    except PlaywrightTimeout:
        pytest.fail(f"the chapter did not finish running: prompts {page.evaluate(_PROMPTS)}")


@pytest.mark.parametrize("entry", CHAPTERS)
def test_the_reader_edition_reads_like_the_page_in_jupyterlab(entry, lab, lab_page, screenshots):
    page = lab_page
    open_chapter(lab, page, entry)
    name = entry.split("/")[-1][:2]

    read = page.evaluate(_MARKDOWN)
    assert read["cells"] > 20, f"{entry}: only {read['cells']} markdown cells rendered"
    left = sorted(set(_MYST.findall(read["text"])))
    assert not left, f"{entry}: MyST shows in JupyterLab: {left}"
    text = " ".join(read["text"].split())
    missing = in_order(page_texts(entry, "pasted-text"), text)
    assert not missing, f"{entry}: glued numbers not shown as on the site: {missing[:5]}"
    assert read["maths"] > 10 and "\\frac" not in text, f"{entry}: maths not typeset"
    solutions = page.locator(".jp-RenderedMarkdown details")
    titles = [t for t in page_texts(entry, "admonition-title") if t.startswith("Solution to")]
    assert solutions.count() == len(titles) > 0
    for k in range(solutions.count()):
        assert not solutions.nth(k).evaluate("(node) => node.open"), "a solution shows unfolded"
        assert solutions.nth(k).locator("summary").inner_text().startswith("Solution to Exercise")
    assert_no_dead_links(page)
    assert len(page.evaluate(IN_PAGE_LINKS)) >= (2 if name == "09" else 0)
    waiting = page.locator(".jp-OutputArea-output", has_text=WIDGET_LINE)
    assert waiting.count() >= 2, f"{entry}: no line where a widget will be"
    assert not page.locator(".jp-OutputArea-output", has_text=re.compile(r"Explorer\(|AnswerBox\(")).count()
    first = solutions.first
    first.scroll_into_view_if_needed()
    page.screenshot(path=screenshots / f"reader_edition_lab_{name}_solution.png")

    run_all(page)
    assert not page.locator(".jp-OutputArea-output", has_text="Traceback").count(), \
        f"{entry}: a cell failed in JupyterLab"
    explorer = page.locator(".jp-OutputArea-output .attn-explorer").first
    expect(explorer).to_be_visible()
    answer = page.locator(".jp-OutputArea-output .attn-answer").first
    expect(answer).to_be_visible()
    expect(page.locator(".jp-OutputArea-output", has_text=WIDGET_LINE)).to_have_count(0)
    explorer.scroll_into_view_if_needed()
    page.screenshot(path=screenshots / f"reader_edition_lab_{name}_explorer.png")


LINKED = "chapters/09_attention_at_scale"
LINKED_LABEL = "prefill-decode-padding"


def follow_the_link_below(page) -> None:
    """Click chapter 9's first "below" (a cell that asks where padding is masked) and see
    the notebook scroll to the label's anchor, above its heading, many cells further on."""
    below = page.locator(f'.jp-RenderedMarkdown a[href="#{LINKED_LABEL}"]').first
    below.scroll_into_view_if_needed()
    # Lab's sanitizer keeps the anchor's id as data-jupyter-id, where its link handler looks.
    anchor = page.locator(f'.jp-RenderedMarkdown a[data-jupyter-id="{LINKED_LABEL}"]')
    heading = page.locator(".jp-RenderedMarkdown h3", has_text="Reading the prompt, then writing")
    expect(anchor).to_have_count(1)
    expect(heading).not_to_be_in_viewport()
    below.click()
    expect(heading).to_be_in_viewport()
    top = anchor.evaluate("(node) => node.getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"] / 4, f"the anchor is {top} px down the window"


def test_an_in_page_link_leads_to_its_label_in_jupyterlab(lab, lab_page, screenshots):
    """In the windowing mode a learner's Lab has ("contentVisibility", the default), where
    the link handler finds its target only among the cells the notebook attached."""
    page = lab_page
    with windowing(lab, page, "contentVisibility"):
        open_chapter(lab, page, LINKED)
        assert_no_dead_links(page)
        follow_the_link_below(page)
        page.screenshot(path=screenshots / "reader_edition_lab_09_anchor.png")
