"""Explorers that fit, on every chapter page with no kernel: at a desktop width (1280 px)
and a phone's (390 px) no explorer is wider than its column and no page is wider than the
viewport; the pointer hint shows once per explorer; a view that scrolls shows a cue; Reset
puts back what the reader changed."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

import tools
from attncourse.widgets import AttentionExplorer, with_scale_slider
from tools.explorer_dom import READ_EXPLORER

pytestmark = pytest.mark.browser

NOTEBOOK_PAGES = tools.notebook_pages()
WIDTHS = {"desktop": 1280, "phone": 390}
SLACK = 0.5  # px: sub-pixel rounding of layout boxes

# For every explorer: its box and its column's (the article's content box), the widest
# part inside it (a scrolling view is as wide as the part of it that shows), and the
# page's width against the viewport's.
_FIT = """() => {
  const article = document.querySelector('article.bd-article');
  const style = getComputedStyle(article);
  const box = article.getBoundingClientRect();
  const column = { left: box.left + parseFloat(style.paddingLeft),
                   right: box.right - parseFloat(style.paddingRight) };
  const roots = '.attn-explorer, .attn-graph-explorer, .conv-explorer';
  const explorers = [...document.querySelectorAll(roots)].map((root) => {
    const own = root.getBoundingClientRect();
    const parts = [...root.querySelectorAll('figure, .attn-inputs > table, canvas, svg')]
      .filter((node) => !node.closest('figure') || node.tagName === 'FIGURE')
      .map((node) => node.getBoundingClientRect().right);
    return { left: own.left, right: Math.max(own.right, ...parts) };
  });
  return { column, explorers, page: document.documentElement.scrollWidth,
           viewport: window.innerWidth };
}"""


# Found by this test and left open (issue 16): at 390 px these pages are wider than the
# viewport (436 and 636 px), not because of an explorer's width (checked below) but of
# something else on the page, not yet traced. Strict: the test fails once they fit.
PANS_ON_A_PHONE = {"chapters/05_attention_as_a_graph", "chapters/06_attention_versus_convolution"}


def fit_cases():
    for entry in NOTEBOOK_PAGES:
        for screen in WIDTHS:
            known = screen == "phone" and entry in PANS_ON_A_PHONE
            marks = [pytest.mark.xfail(strict=True, reason="pans sideways at 390 px")] if known else []
            yield pytest.param(entry, screen, marks=marks, id=f"{entry}-{screen}")


@pytest.mark.parametrize(("entry", "screen"), fit_cases())
def test_explorers_fit_their_column_and_pages_their_viewport(entry, screen, visit,
                                                             watched_page):
    page = watched_page
    page.set_viewport_size({"width": WIDTHS[screen], "height": 900})
    visit(f"{entry}.html")
    fit = page.evaluate(_FIT)
    assert fit["page"] <= fit["viewport"], f"{entry} pans sideways at {WIDTHS[screen]} px"
    column = fit["column"]
    for k, explorer in enumerate(fit["explorers"]):
        assert explorer["left"] >= column["left"] - SLACK, f"explorer {k} starts left of its column"
        assert explorer["right"] <= column["right"] + SLACK, \
            f"explorer {k} is {explorer['right'] - column['right']:.0f} px wider than its column"


def eleven_tokens():
    tokens = ["the", "ball", "hit", "the", "window", "and", "it", "broke", "into", "many", "bits"]
    X = [[((3 * i + j) % 5 - 2) / 2 for j in range(4)] for i in range(len(tokens))]
    return AttentionExplorer(tokens, X, views=("scores", "weights"))


def test_a_wide_map_scales_on_a_desktop_and_scrolls_with_a_cue_on_a_phone(site, visit,
                                                                          watched_page):
    page = watched_page
    url = site.write_page("wide.html", [eleven_tokens()], "Wide explorer")
    scroller = page.locator(".attn-explorer figure").first
    canvas = scroller.locator("canvas")

    page.set_viewport_size({"width": 600, "height": 900})  # a column narrower than the map
    visit(url)
    natural = float(canvas.evaluate("(c) => parseFloat(c.style.width)"))
    shown = canvas.bounding_box()["width"]
    assert 0.74 * natural <= shown < natural, (natural, shown)  # scaled down, not to dust
    assert scroller.evaluate("(f) => f.scrollWidth <= f.clientWidth")
    mask = "(f) => getComputedStyle(f).maskImage"
    assert scroller.evaluate(mask) == "none"  # nothing to scroll, no cue

    page.set_viewport_size({"width": 390, "height": 900})
    visit(url)
    assert canvas.bounding_box()["width"] == pytest.approx(natural)  # full size on a phone
    assert scroller.evaluate("(f) => f.scrollWidth > f.clientWidth")  # ... and scrolls
    assert "gradient" in scroller.evaluate(mask)  # the cue


_WEIGHTS = "(root) => root.querySelector('canvas[data-role=weights]').dataset.values"


def test_the_hint_shows_once_and_reset_restores_the_first_values(site, visit, watched_page):
    page = watched_page
    explorer = AttentionExplorer(["a", "b", "c"], [[1, 0], [0, 1], [1, 1]])
    visit(site.write_page("reset.html", [with_scale_slider(explorer)], "Reset"))
    root = page.locator(".attn-explorer")
    hints = root.locator(".attn-readout[data-idle]")
    assert hints.count() == 3  # scores, weights, output: each idle
    assert [hints.nth(k).is_visible() for k in range(3)] == [True, False, False]

    before = root.evaluate(READ_EXPLORER)
    weights = root.evaluate(_WEIGHTS)
    readout = page.locator(".widget-readout").first
    scale = readout.inner_text()
    page.get_by_label("X[2][0]").fill("-3")
    page.locator(".noUi-handle").first.focus()
    page.keyboard.press("End")  # the scale slider to its maximum
    expect(readout).not_to_have_text(scale)
    page.wait_for_function(f"() => ({_WEIGHTS})(document.querySelector('.attn-explorer')) "
                           f"!== {weights!r}")
    assert root.evaluate(READ_EXPLORER)["grids"] != before["grids"]

    root.get_by_role("button", name="Reset the explorer to its first values").click()
    expect(readout).to_have_text(scale)  # the linked slider follows
    page.wait_for_function(f"() => ({_WEIGHTS})(document.querySelector('.attn-explorer')) "
                           f"=== {weights!r}")
    after = root.evaluate(READ_EXPLORER)
    assert after["grids"] == before["grids"] and after["tables"] == before["tables"]
