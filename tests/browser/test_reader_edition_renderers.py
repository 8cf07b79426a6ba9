"""The reader edition's Markdown in the other front ends a learner opens it in (issue 35):
the solutions are folded (``<details>``), no MyST shows and every in-page link has its
target (chapter 9's "below" is followed with a click in Notebook 7), in

- Notebook 7 (the `notebook` package), on a server of its own;
- VS Code's notebook renderer: markdown-it with raw HTML allowed (``html: true``,
  ``linkify: true``), as in a trusted workspace, and its output sanitized by DOMPurify, as
  in Restricted Mode (VS Code's own allow-list, extensions/markdown-language-features/
  notebook/index.ts, keeps details and summary, as DOMPurify's default one used here does),
  run in Chromium from node_modules (package.json).

Colab cannot run here; it renders the same CommonMark with HTML (its documentation's own
notebooks fold sections with details). JupyterLab: tests/browser/test_reader_edition_lab.py."""

from __future__ import annotations

import re
import shutil

import nbformat
import pytest
from playwright.sync_api import expect

import tools
from tests.browser.test_reader_edition_lab import (
    _MARKDOWN,
    _MYST,
    KERNEL_MS,
    LINKED,
    assert_no_dead_links,
    follow_the_link_below,
    windowing,
)
from tests.test_reader_edition_book import EDITION, in_order, page_texts

pytestmark = pytest.mark.browser

NODE_MODULES = tools.ROOT / "node_modules"
SOLUTION_TITLES = "Solution to Exercise"


def solutions_on_the_page(entry: str) -> list[str]:
    return [t for t in page_texts(entry, "admonition-title") if t.startswith("Solution to")]


# Notebook 7.6.5 beside JupyterLab 4.6.6 throws this on opening any page, its file browser
# or a notebook holding one line of text alike (notebook_core.js: its keyboard shortcuts'
# settings read the schema of a plugin it has not registered); the page works on.
NOTEBOOK_7_STARTUP = "Cannot read properties of undefined (reading 'schema')"


def open_in_notebook_7(notebook_7, watch_page, entry: str):
    page = watch_page(notebook_7.url, harmless=[NOTEBOOK_7_STARTUP])
    page.set_default_timeout(30_000)
    page.set_viewport_size({"width": 1280, "height": 1400})
    (notebook_7.root / "chapters").mkdir(exist_ok=True)
    shutil.copy(EDITION / f"{entry}.ipynb", notebook_7.root / f"{entry}.ipynb")
    return page


def test_notebook_7_folds_the_solutions_and_shows_no_myst(notebook_7, watch_page, screenshots):
    entry = "chapters/01_dot_product_similarity"
    lab = notebook_7
    page = open_in_notebook_7(lab, watch_page, entry)
    page.goto(f"{lab.url}notebooks/{entry}.ipynb?token={lab.token}")
    solutions = page.locator(".jp-RenderedMarkdown details")
    expect(solutions).to_have_count(len(solutions_on_the_page(entry)), timeout=KERNEL_MS)
    expect(page.locator(".jp-RenderedMarkdown mjx-container").first).to_be_visible()
    read = page.evaluate(_MARKDOWN)
    assert not sorted(set(_MYST.findall(read["text"]))), "MyST shows in Notebook 7"
    assert not in_order(page_texts(entry, "pasted-text"), " ".join(read["text"].split()))
    first = solutions.first
    assert not first.evaluate("(node) => node.open")
    hidden_text = first.locator("p").first
    assert not hidden_text.is_visible(), "a folded solution's text shows"
    first.locator("summary").scroll_into_view_if_needed()
    page.screenshot(path=screenshots / "reader_edition_notebook7_folded.png")
    first.locator("summary").click()
    expect(hidden_text).to_be_visible()
    assert first.locator("summary").inner_text().startswith(SOLUTION_TITLES)


def test_notebook_7_follows_an_in_page_link(notebook_7, watch_page, screenshots):
    """In Notebook 7's default windowing mode, as Lab's (its sanitizer and link handler)."""
    page = open_in_notebook_7(notebook_7, watch_page, LINKED)
    with windowing(notebook_7, page, "contentVisibility"):
        page.goto(f"{notebook_7.url}notebooks/{LINKED}.ipynb?token={notebook_7.token}")
        expect(page.locator(".jp-RenderedMarkdown mjx-container").first).to_be_visible(timeout=KERNEL_MS)
        assert_no_dead_links(page)
        follow_the_link_below(page)
        page.screenshot(path=screenshots / "reader_edition_notebook7_anchor.png")


# VS Code's renderer: each cell's Markdown rendered as it is, or sanitized; then, per cell,
# its details elements (open or not, their summary, whether their text shows) and its text.
_VSCODE = """({ cells, sanitize }) => {
  const md = window.markdownit({ html: true, linkify: true });
  const root = document.body;
  root.replaceChildren();
  for (const source of cells) {
    const html = md.render(source);
    const cell = document.createElement('div');
    cell.innerHTML = sanitize ? DOMPurify.sanitize(html) : html;
    root.append(cell);
  }
  const details = [...root.querySelectorAll('details')].map((node) => ({
    open: node.open,
    summary: node.querySelector(':scope > summary')?.textContent.trim() ?? '',
    textShows: [...node.children].filter((child) => child.tagName !== 'SUMMARY')
      .some((child) => child.checkVisibility()),
  }));
  const links = [...root.querySelectorAll('a[href^="#"]')].map((link) => link.getAttribute('href'));
  const dead = links.filter((href) => !document.getElementById(decodeURIComponent(href.slice(1))));
  return { details, text: root.textContent, links: links.length, dead };
}"""


@pytest.mark.parametrize("sanitize", [False, True], ids=["trusted", "restricted"])
@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_vs_codes_renderer_folds_the_solutions_and_shows_no_myst(entry, sanitize, page):
    nb = nbformat.read(EDITION / f"{entry}.ipynb", as_version=4)
    cells = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
    page.set_content("<!doctype html><html><body></body></html>")
    page.add_script_tag(path=NODE_MODULES / "markdown-it" / "dist" / "markdown-it.min.js")
    page.add_script_tag(path=NODE_MODULES / "dompurify" / "dist" / "purify.min.js")
    shown = page.evaluate(_VSCODE, {"cells": cells, "sanitize": sanitize})
    titles = solutions_on_the_page(entry)
    assert [d["summary"] for d in shown["details"]] == [
        re.sub(r"\s+", " ", title) for title in titles], f"{entry}: solutions not folded under their titles"
    assert not any(d["open"] or d["textShows"] for d in shown["details"]), f"{entry}: a solution shows"
    prose = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", "", shown["text"], flags=re.DOTALL)  # TeX has braces
    assert not _MYST.findall(prose), f"{entry}: MyST shows in VS Code"
    assert not shown["dead"], f"{entry}: in-page links to nothing: {shown['dead']}"
    assert shown["links"] >= (2 if entry == LINKED else 0)
