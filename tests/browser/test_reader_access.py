"""Every reader can use every page (issue 23, items 1, 6 and 7): in light and dark mode
every text of an explorer, answer box and goal line reaches 4.5:1 (an answer box with its
reply shown); at a laptop's and a phone's width nothing sticks out of the text column or
is cut off; on a phone every control of an explorer or answer box is at least 24 x 24 px;
a link skips past each explorer; a box that scrolls can be reached with the keyboard and
says what it holds; every input is named by its token and dimension; Home and End move
along a heatmap's row."""

from __future__ import annotations

import re

import pytest

import tools
from tests.browser.test_reader_axe import AXE, answer_wrong
from tests.browser.test_reader_dark import _TEXT_CONTRAST, AA

pytestmark = pytest.mark.browser

PAGES = tools.toc_pages()
NOTEBOOK_PAGES = tools.notebook_pages()
WIDTHS = {"laptop": 1280, "phone": 390}
SLACK = 0.5  # px: sub-pixel rounding of layout boxes
TARGET = 24  # px, WCAG 2.2 (2.5.8, target size minimum)
EXPLORERS = ".attn-explorer, .attn-graph-explorer, .conv-explorer"

# Whatever shows beyond the text column's right edge, outside a box that scrolls; and
# whatever a box that does not scroll cuts off (its overflow hidden).
_STICKING_OUT = """(slack) => {
  const article = document.querySelector('article.bd-article');
  const style = getComputedStyle(article);
  const right = article.getBoundingClientRect().right - parseFloat(style.paddingRight);
  const scrolls = (node) => ['auto', 'scroll'].includes(getComputedStyle(node).overflowX);
  const clips = (node) => ['hidden', 'clip'].includes(getComputedStyle(node).overflowX);
  const name = (node) => `${node.tagName.toLowerCase()}.${String(node.className.baseVal ?? node.className).split(' ')[0]}`
    + ` "${(node.textContent || '').trim().slice(0, 30)}"`;
  const out = [];
  for (const node of article.querySelectorAll('*')) {
    if (!node.checkVisibility() || node.closest('.attn-skip-link, .attn-skip-target')) continue;
    // A formula is judged whole: KaTeX clips its own parts (a root's long SVG tail).
    if (node.closest('.katex') && !node.matches('.katex-html')) continue;
    const box = node.getBoundingClientRect();
    if (!box.width || !box.height) continue;
    let scroller = null, clipper = null;
    for (let up = node.parentElement; up && up !== article; up = up.parentElement) {
      if (scrolls(up)) { scroller = up; break; }
      if (!clipper && clips(up) && !up.closest('.math')) clipper = up;
    }
    if (scroller) continue;
    if (box.right > right + slack) out.push(`${name(node)} sticks out by ${(box.right - right).toFixed(1)} px`);
    else if (clipper && box.right > clipper.getBoundingClientRect().right + slack + 1
             && node.matches('.katex-html'))  // a formula as drawn (its MathML is hidden)
      out.push(`${name(node)} cut off by ${name(clipper)}`);
  }
  return out.slice(0, 8);
}"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("entry", PAGES)
def test_nothing_sticks_out_of_the_column_or_is_cut_off(entry, width, scheme, shown_page):
    page = shown_page(entry, WIDTHS[width], scheme)
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]
    out = page.evaluate(_STICKING_OUT, SLACK)
    assert not out, f"{entry} at {WIDTHS[width]} px: {out}"


@pytest.fixture(params=["light", "dark"])
def scheme(request):
    return request.param


@pytest.fixture
def browser_context_args(browser_context_args, scheme):
    return {**browser_context_args, "color_scheme": scheme, "device_scale_factor": 2}


@pytest.mark.parametrize("entry", NOTEBOOK_PAGES)
def test_every_text_of_a_widget_is_readable_in_both_themes(entry, scheme, visit, watched_page):
    page = watched_page
    visit(f"{entry}.html")
    assert page.evaluate("document.documentElement.dataset.theme") == scheme
    answer_wrong(page)  # the replies too
    areas = page.locator(".widget-subarea")
    low = []
    for k in range(areas.count()):
        low += [f"widget {k}: {text['what']} at {text['ratio']:.2f}:1"
                for text in areas.nth(k).evaluate(_TEXT_CONTRAST) if text["ratio"] < AA]
    assert not low, f"{entry}, {scheme}: {low}"


# Every control of an explorer or answer box, and its size.
_CONTROLS = """() => [...document.querySelectorAll('.widget-subarea')]
  .flatMap((area) => [...area.querySelectorAll(
    'input, select, button, textarea, a[href], [tabindex]:not([tabindex="-1"]), [role=button]')])
  .filter((node) => node.checkVisibility() && !node.disabled)
  .map((node) => { const box = node.getBoundingClientRect();
    return { what: `${node.tagName.toLowerCase()}[${node.type || node.getAttribute('role') || ''}] `
                   + (node.getAttribute('aria-label') || node.textContent || '').trim().slice(0, 30),
             width: box.width, height: box.height }; })"""


@pytest.mark.parametrize("entry", NOTEBOOK_PAGES)
def test_every_control_is_a_target_of_24_px_on_a_phone(entry, scheme, shown_page):
    page = shown_page(entry, WIDTHS["phone"], scheme)
    small = [f"{c['what']}: {c['width']:.0f} x {c['height']:.0f}" for c in page.evaluate(_CONTROLS)
             if c["width"] < TARGET - SLACK or c["height"] < TARGET - SLACK]
    assert not small, f"{entry}: {len(small)} controls under {TARGET} px: {small[:8]}"


_IN_AREA = "(node, k) => document.querySelectorAll('.widget-subarea')[k].contains(node)"


@pytest.mark.parametrize("entry", NOTEBOOK_PAGES)
def test_a_link_skips_past_each_explorer(entry, visit, watched_page):
    page = watched_page
    visit(f"{entry}.html")
    areas = page.locator(f".widget-subarea:has({EXPLORERS})")
    assert areas.count(), f"{entry}: no explorer"
    for k in range(areas.count()):
        area = areas.nth(k)
        link = area.locator("xpath=preceding-sibling::*[1]")
        assert link.evaluate("(a) => a.matches('a.attn-skip-link')"), f"explorer {k}: no skip link"
        link.focus()
        box = link.bounding_box()
        assert box and box["width"] >= TARGET and box["height"] >= TARGET, "shown when focused"
        page.keyboard.press("Enter")
        assert page.evaluate("() => document.activeElement.classList.contains('attn-skip-target')")
        page.keyboard.press("Tab")  # the next stop is past the explorer
        assert not area.evaluate("(area) => area.contains(document.activeElement)")
        assert area.evaluate("(area) => !!(area.compareDocumentPosition(document.activeElement)"
                             " & Node.DOCUMENT_POSITION_FOLLOWING)")


# The accessible name (as a screen reader announces it, computed by axe-core) of every
# input and select of every explorer; and every box in it that scrolls sideways, with its
# tab index, name and whether it does scroll.
_NAMES = """(explorers) => {
  axe.setup(document);
  const name = (node) => axe.commons.text.accessibleTextVirtual(axe.utils.getNodeFromTree(node));
  const areas = [...document.querySelectorAll('.widget-subarea')].filter((a) => a.querySelector(explorers));
  const inputs = areas.flatMap((area) => [...area.querySelectorAll('input, select')])
    .filter((node) => node.checkVisibility()).map(name);
  const scrollers = areas.flatMap((area) => [...area.querySelectorAll('*')])
    .filter((node) => ['auto', 'scroll'].includes(getComputedStyle(node).overflowX)
                      && node.scrollWidth > node.clientWidth + 1 && node.checkVisibility())
    .map((node) => ({ tabIndex: node.tabIndex, name: name(node) }));
  axe.teardown();
  return { inputs, scrollers };
}"""
INDEXED = re.compile(r"^\s*\w+\s*\[\d+\]\s*\[\d+\]\s*$")  # "X[8][0]": no token, no dimension


@pytest.mark.parametrize("entry", NOTEBOOK_PAGES)
def test_inputs_and_scroll_boxes_say_what_they_hold(entry, scheme, shown_page):
    page = shown_page(entry, WIDTHS["phone"], scheme)
    page.add_script_tag(path=AXE)
    found = page.evaluate(_NAMES, EXPLORERS)
    unnamed = [name for name in found["inputs"] if not name.strip() or INDEXED.match(name)]
    assert not unnamed, f"{entry}: inputs named by index only or not at all: {unnamed[:6]}"
    for box in found["scrollers"]:
        assert box["tabIndex"] >= 0, f"{entry}: a box that scrolls cannot be reached: {box}"
        assert "scroll" in box["name"].lower(), f"{entry}: a box that scrolls does not say so: {box}"


# The element the keyboard's focus is on, and whether it shows that it is: an outline or a
# ring (box shadow) that it would not have without the focus.
_FOCUS_SHOWN = """() => {
  const node = document.activeElement;
  if (!node || node === document.body) return null;
  const style = getComputedStyle(node);
  const ring = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 1) || style.boxShadow !== 'none';
  return { what: `${node.tagName.toLowerCase()}.${String(node.className).split(' ')[0]} `
                 + `"${(node.getAttribute('aria-label') || node.title || node.textContent || '').trim().slice(0, 30)}"`,
           ring };
}"""


@pytest.mark.parametrize("entry", [PAGES[0], NOTEBOOK_PAGES[0]])
def test_the_keyboard_focus_is_always_shown(entry, scheme, visit, watched_page):
    """Tabbing from the top of a page through its header, sidebar and first controls: every
    stop shows a focus ring, in both themes (WCAG 2.4.7)."""
    page = watched_page
    visit(f"{entry}.html")
    unseen = []
    for _ in range(40):
        page.keyboard.press("Tab")
        focused = page.evaluate(_FOCUS_SHOWN)
        if focused and not focused["ring"]:
            unseen.append(focused["what"])
    assert not unseen, f"{entry}, {scheme}: no focus ring on {sorted(set(unseen))}"


def test_home_and_end_move_along_a_heatmap_row(visit, watched_page):
    page = watched_page
    visit(f"{NOTEBOOK_PAGES[0]}.html")
    heatmap = page.locator(".attn-explorer canvas.attn-heatmap[tabindex='0']").first
    heatmap.focus()
    title = lambda: heatmap.get_attribute("title")  # noqa: E731  the selected cell, read out
    page.keyboard.press("ArrowRight")  # the first cell
    first = title()
    page.keyboard.press("End")
    last = title()
    assert last != first, "End selects the row's last cell"
    page.keyboard.press("Home")
    assert title() == first, "Home selects the row's first cell"
    page.keyboard.press("Control+End")
    assert title() not in (first, last), "Ctrl+End selects the last row's last cell"
