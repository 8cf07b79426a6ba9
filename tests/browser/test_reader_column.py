"""Every page fits its column (issue 23, item 6). At a laptop's width no plot of an
explorer needs its box to scroll sideways (chapter 6's exercise explorer, in an
exercise's narrower column, overflowed by 6 px, and the "scroll it sideways" line it then
gained moved the page once drawn). On a phone (390 px) no plot does either (issue 35: the
maps of chapters 2-8 scrolled there): only an input grid, one number box per entry, may
(README, "Explorers"). At 320 px (WCAG's reflow width) nothing sticks out."""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

import tools
from tests.browser.test_reader_access import _STICKING_OUT, SLACK

pytestmark = pytest.mark.browser

LAPTOP = 1280

# Boxes of an explorer that scroll sideways, with the amount by which their content is wider.
_SCROLLING = """() => [...document.querySelectorAll('.widget-subarea *')]
  .filter((box) => ['auto', 'scroll'].includes(getComputedStyle(box).overflowX)
                   && box.scrollWidth > box.clientWidth + 1)
  .map((box) => `${box.tagName.toLowerCase()} "${(box.textContent || '').trim().slice(0, 40)}"`
                + ` by ${box.scrollWidth - box.clientWidth} px`)"""


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_no_explorer_scrolls_sideways_at_a_laptops_width(entry, shown_page):
    page = shown_page(entry, LAPTOP)
    try:  # once the explorers have laid themselves out (on a loaded machine: later)
        page.wait_for_function(f"() => !({_SCROLLING})().length", timeout=5_000)
    except PlaywrightTimeout:
        pytest.fail(f"{entry} at {LAPTOP} px: {page.evaluate(_SCROLLING)}")


PHONE = 390
INPUT_GRID = "table"  # how _SCROLLING names an input grid (.attn-inputs > table)


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_on_a_phone_only_input_grids_scroll_sideways(entry, shown_page):
    page = shown_page(entry, PHONE)
    page.wait_for_function("() => !document.querySelector('canvas.attn-heatmap:not([data-layout])')")
    scrolling = [box for box in page.evaluate(_SCROLLING) if not box.startswith(f"{INPUT_GRID} ")]
    assert not scrolling, f"{entry} at {PHONE} px: {scrolling}"


REFLOW = 320  # CSS px: WCAG 1.4.10 (reflow) asks content to fit 320 px without sideways scrolling


@pytest.mark.parametrize("entry", tools.toc_pages())
def test_every_page_reflows_to_320_px(entry, visit, watched_page):
    """Nothing sticks out of the column at 320 px, the width WCAG's reflow criterion names
    (chapter 5's threshold label, kept on one line, stuck out by 24 px)."""
    page = watched_page
    page.set_viewport_size({"width": REFLOW, "height": 700})
    visit(f"{entry}.html")
    assert page.evaluate("document.documentElement.scrollWidth") <= REFLOW
    out = page.evaluate(_STICKING_OUT, SLACK)
    assert not out, f"{entry} at {REFLOW} px: {out}"
