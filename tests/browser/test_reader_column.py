"""At a laptop's width every explorer fits its column (issue 23, item 6): no plot of an
explorer needs its box to scroll sideways there (chapter 6's exercise explorer, in an
exercise's narrower column, overflowed by 6 px, and the "scroll it sideways" line it then
gained moved the page once drawn). Scrolling is for phones."""

from __future__ import annotations

import pytest

import tools

pytestmark = pytest.mark.browser

LAPTOP = 1280

# Boxes of an explorer that scroll sideways, with the amount by which their content is wider.
_SCROLLING = """() => [...document.querySelectorAll('.widget-subarea *')]
  .filter((box) => ['auto', 'scroll'].includes(getComputedStyle(box).overflowX)
                   && box.scrollWidth > box.clientWidth + 1)
  .map((box) => `${box.tagName.toLowerCase()} "${(box.textContent || '').trim().slice(0, 40)}"`
                + ` by ${box.scrollWidth - box.clientWidth} px`)"""


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_no_explorer_scrolls_sideways_at_a_laptops_width(entry, visit, watched_page):
    page = watched_page
    page.set_viewport_size({"width": LAPTOP, "height": 900})
    visit(f"{entry}.html")
    assert not page.evaluate(_SCROLLING), f"{entry} at {LAPTOP} px"
