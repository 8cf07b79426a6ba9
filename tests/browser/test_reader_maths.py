"""No formula is cut off (issue 35, item 3). The theme gave div.math `overflow: hidden`
for MathJax, whose container scrolls; with KaTeX a wide display formula lost both ends (at
390 px, chapter 9's 620 px formula in a 358 px column; at 1280 px, chapter 4's 801 px one in
752 px) and nothing showed that there was more. On every page, at a phone's and a laptop's
width, in both themes: every formula fits inside every box that clips it and inside the
column, or scrolls sideways in a box the keyboard reaches and that says it scrolls."""

from __future__ import annotations

import pytest

import tools

pytestmark = pytest.mark.browser

WIDTHS = {"phone": 390, "laptop": 1280}
SLACK = 0.5  # px: sub-pixel rounding of layout boxes

# Each visible formula (inline or display), judged by the box it is drawn in or, where it
# scrolls, by the box that scrolls: cut off by an ancestor that clips, beyond the text
# column, or scrolling in a box that is no Tab stop or does not say that it scrolls.
_FORMULAS = """(slack) => {
  const article = document.querySelector('article.bd-article');
  const style = getComputedStyle(article);
  const box = article.getBoundingClientRect();
  const column = { left: box.left + parseFloat(style.paddingLeft),
                   right: box.right - parseFloat(style.paddingRight) };
  const overflow = (node) => getComputedStyle(node).overflowX;
  const problems = [];
  let scrolling = 0;
  for (const drawn of article.querySelectorAll('.katex-html')) {
    if (!drawn.checkVisibility()) continue;
    const tex = drawn.parentElement.querySelector('annotation')?.textContent.trim().slice(0, 40);
    let judged = drawn;
    for (let up = drawn; up && up !== article; up = up.parentElement) {
      const kind = overflow(up);
      const edges = judged.getBoundingClientRect();
      if (['auto', 'scroll'].includes(kind)) {
        if (up.scrollWidth > up.clientWidth + 1) {
          scrolling += 1;
          const label = up.getAttribute('aria-label') || '';
          if (up.tabIndex < 0 || !/scroll/i.test(label))
            problems.push(`${tex}: scrolls in a box the keyboard cannot reach or that does not say so`);
        }
        judged = up;  // what scrolls inside it is reachable; the box itself must fit
      } else if (['hidden', 'clip'].includes(kind)) {
        const clip = up.getBoundingClientRect();
        if (edges.left < clip.left - slack || edges.right > clip.right + slack)
          problems.push(`${tex}: cut off by ${up.tagName.toLowerCase()}.${up.className} by `
                        + `${Math.max(clip.left - edges.left, edges.right - clip.right).toFixed(0)} px`);
      }
    }
    const edges = judged.getBoundingClientRect();
    if (edges.left < column.left - slack || edges.right > column.right + slack)
      problems.push(`${tex}: beyond the column by `
                    + `${Math.max(column.left - edges.left, edges.right - column.right).toFixed(0)} px`);
  }
  return { problems: problems.slice(0, 8), scrolling };
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("entry", tools.toc_pages())
def test_no_formula_is_cut_off(entry, width, scheme, shown_page):
    page = shown_page(entry, WIDTHS[width], scheme)  # the theme starts in "auto" mode: it follows this
    assert page.evaluate("document.documentElement.dataset.theme") == scheme
    page.evaluate("document.fonts.ready")
    found = page.evaluate(_FORMULAS, SLACK)
    assert not found["problems"], f"{entry} at {WIDTHS[width]} px, {scheme}: {found['problems']}"


def test_a_formula_that_scrolls_is_reached_and_scrolled_with_the_keyboard(visit, watched_page,
                                                                          screenshots):
    """Chapter 4's MultiHead formula (801 px) on a phone: Tab reaches it, the arrow keys
    scroll it to its end."""
    page = watched_page
    page.set_viewport_size({"width": WIDTHS["phone"], "height": 900})
    visit("chapters/04_multi_head_attention.html")
    formula = page.locator("div.math .katex-display[data-scrolls]").first
    formula.wait_for()
    assert formula.get_attribute("aria-label") == "Formula, scrolls sideways"
    formula.focus()
    assert formula.evaluate("(node) => node === document.activeElement")
    for _ in range(40):
        page.keyboard.press("ArrowRight")
    # The browser scrolls smoothly: the keys' scrolling ends a moment after the last key.
    page.wait_for_function("(node) => node.scrollLeft + node.clientWidth >= node.scrollWidth - 1",
                           arg=formula.element_handle(), timeout=5000)
    formula.scroll_into_view_if_needed()
    page.screenshot(path=screenshots / "formula_scrolled_phone.png")
