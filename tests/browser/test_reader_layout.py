"""Explorers that fit, on every chapter page with no kernel: at a desktop width (1280 px)
and a phone's (390 px) no explorer is wider than its column and no page is wider than the
viewport; the pointer hint shows once per explorer; a view that scrolls shows a cue; Reset
puts back what the reader changed."""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

import tools
from attncourse.explorers.attention_explorer import AttentionExplorer, explorer_view
from tools.explorer_dom import READ_EXPLORER

pytestmark = pytest.mark.browser

NOTEBOOK_PAGES = tools.notebook_pages()
WIDTHS = {"desktop": 1280, "phone": 390}
SLACK = 0.5  # px: sub-pixel rounding of layout boxes

# For every explorer: its box and its column (the article's content box), the widest
# part inside it (a scrolling view is as wide as the part of it that shows), and the
# page's width against the viewport's; and every canvas or svg it draws, as wide as drawn.
_FIT = """() => {
  const article = document.querySelector('article.bd-article');
  const style = getComputedStyle(article);
  const box = article.getBoundingClientRect();
  const column = { left: box.left + parseFloat(style.paddingLeft),
                   right: box.right - parseFloat(style.paddingRight) };
  const roots = '.attn-explorer, .attn-graph-explorer, .conv-explorer';
  const explorers = [...document.querySelectorAll(roots)].filter((root) => !root.parentElement.closest(roots))
    .map((root) => {
    const own = root.getBoundingClientRect();
    const parts = [...root.querySelectorAll('figure, .attn-inputs > table, canvas, svg')]
      .filter((node) => !node.closest('figure') || node.tagName === 'FIGURE')
      .map((node) => node.getBoundingClientRect().right);
    const drawn = [...root.querySelectorAll('canvas, svg')]
      .filter((node) => !node.parentElement.closest('svg') && node.getBoundingClientRect().width)
      .map((node) => ({ what: `${root.className.split(' ').at(-1)} ${node.tagName.toLowerCase()}`
                              + ` ${node.dataset.role || node.getAttribute('class') || ''}`.trimEnd(),
                        width: node.getBoundingClientRect().width }));
    return { left: own.left, right: Math.max(own.right, ...parts), width: own.width, drawn };
  });
  return { column, explorers, page: document.documentElement.scrollWidth,
           viewport: window.innerWidth };
}"""

# The drawings that may be wider than a phone's column, and why: none. (A map too wide
# even drawn narrow and at its smallest legible size scrolls, heatmap.js: no chapter has one.)
WIDER_THAN_THE_COLUMN: dict[str, str] = {}


@pytest.mark.parametrize("screen", WIDTHS)
@pytest.mark.parametrize("entry", NOTEBOOK_PAGES)
def test_explorers_fit_their_column_and_pages_their_viewport(entry, screen, visit,
                                                             watched_page):
    """Every explorer within its column, and every canvas or svg it draws no wider than
    the column (issue 35: at 390 px the maps of chapters 2-8 were drawn 438-1,139 px wide
    and scrolled inside their boxes)."""
    page = watched_page
    page.set_viewport_size({"width": WIDTHS[screen], "height": 900})
    visit(f"{entry}.html")
    # Once every map has been laid out for the width it is shown at.
    page.wait_for_function("() => !document.querySelector('canvas.attn-heatmap:not([data-layout])')")
    fit = page.evaluate(_FIT)
    assert fit["page"] <= fit["viewport"], f"{entry} pans sideways at {WIDTHS[screen]} px"
    column = fit["column"]
    for k, explorer in enumerate(fit["explorers"]):
        width = explorer["width"]  # its column: the explorer takes the width it is given
        assert explorer["left"] >= column["left"] - SLACK, f"explorer {k} starts left of its column"
        assert explorer["right"] <= column["right"] + SLACK, \
            f"explorer {k} is {explorer['right'] - column['right']:.0f} px wider than its column"
        wider = [f"{drawn['what']}: {drawn['width']:.0f} px" for drawn in explorer["drawn"]
                 if drawn["width"] > width + SLACK and drawn["what"] not in WIDER_THAN_THE_COLUMN]
        assert not wider, f"{entry} explorer {k} draws wider than its {width:.0f} px: {wider}"


_VIEW_TOPS = "(views) => views.map((view) => Math.round(view.getBoundingClientRect().top))"

# Each explorer's views: the box's width and gap, and for each view its top, and for a
# map its own width and its shown width.
_VIEW_ROWS = """() => [...document.querySelectorAll('.attn-explorer .attn-views')].map((row) => ({
  width: row.clientWidth, gap: parseFloat(getComputedStyle(row).columnGap),
  views: [...row.children].map((view) => {
    const map = view.querySelector(':scope > div > .attn-heatmap-scroller canvas.attn-heatmap');
    return { top: Math.round(view.getBoundingClientRect().top),
             natural: map && parseFloat(map.style.width), shown: map && map.getBoundingClientRect().width };
  }),
}))"""


@pytest.mark.parametrize("entry", NOTEBOOK_PAGES)
def test_maps_sit_side_by_side_when_each_keeps_three_quarters_of_its_size(entry, visit,
                                                                          watched_page):
    """In equal columns, as many as leave the widest map 3/4 of its size: no map beside
    another below 3/4, maps of one size shown at one size, no room left for one more."""
    page = watched_page
    page.set_viewport_size({"width": WIDTHS["desktop"], "height": 900})
    visit(f"{entry}.html")
    shared_rows = 0
    for k, explorer in enumerate(page.evaluate(_VIEW_ROWS)):
        rows = {}
        for view in explorer["views"]:
            rows.setdefault(view["top"], []).append(view)
        rows = [rows[top] for top in sorted(rows)]
        maps = [view for view in explorer["views"] if view["natural"]]
        for row in rows:
            for view in row:
                if view["natural"] and len(row) > 1:
                    assert view["shown"] >= 0.75 * view["natural"] - SLACK, \
                        f"{entry} explorer {k}: a map beside another shrinks below 3/4"
            shared_rows += len(row) > 1
        by_size = {}
        for view in maps:
            by_size.setdefault(view["natural"], set()).add(round(view["shown"]))
        assert all(len(shown) == 1 for shown in by_size.values()), \
            f"{entry} explorer {k}: maps of one size shown at different sizes: {by_size}"
        if maps and len(rows) > 1:
            columns = len(rows[0])
            widest = max(view["natural"] for view in maps)
            wanted = (columns + 1) * 0.75 * widest + columns * explorer["gap"]
            assert wanted > explorer["width"] + SLACK, \
                f"{entry} explorer {k}: room for another column of views"
    if entry == "chapters/01_dot_product_similarity":
        assert shared_rows, "chapter 1's three-token maps no longer sit side by side"


def many_tokens(n: int = 11):
    words = ["the", "ball", "hit", "the", "window", "and", "it", "broke", "into", "many", "bits"]
    tokens = [words[i % len(words)] for i in range(n)]
    X = [[((3 * i + j) % 5 - 2) / 2 for j in range(4)] for i in range(n)]
    return AttentionExplorer(tokens, X, views=("scores", "weights"))


# A scrolling map's left edge, read on its second token's row: the element there (the
# sticky copy of the labels, once the cells have scrolled under it), whether that copy is
# inked on the row, the last column's right edge against the scroller's, and the
# caption's and readout's left edges (both outside the scroller: they stay in view). The
# map's grid is in its own pixels: `scale` is how much smaller it is shown.
_LEFT_EDGE = """(scroller) => {
  const box = scroller.getBoundingClientRect();
  const map = scroller.querySelector('canvas.attn-heatmap');
  const labels = scroller.querySelector('canvas.attn-heatmap-labels');
  const grid = JSON.parse(map.dataset.grid);
  const shown = map.getBoundingClientRect();
  const scale = shown.width / (map.width / devicePixelRatio);
  const y = shown.top + (grid.top + 1.5 * grid.cellHeight) * scale;
  const ratio = devicePixelRatio;
  const row = labels.getContext('2d').getImageData(0, Math.round((grid.top + grid.cellHeight) * ratio),
    labels.width, Math.round(grid.cellHeight * ratio)).data;
  const colours = new Set();
  for (let k = 0; k < row.length; k += 4) colours.add(row.slice(k, k + 3).join());
  const figure = scroller.closest('figure');
  const columns = JSON.parse(map.dataset.cols).length;
  return {
    under: document.elementFromPoint(box.left + 3, y).className,
    labelsLeft: labels.getBoundingClientRect().left - box.left, inked: colours.size > 2,
    lastColumnRight: shown.left + (grid.left + columns * grid.cellWidth) * scale - box.right,
    captionLeft: figure.querySelector('figcaption').getBoundingClientRect().left - box.left,
    readoutLeft: figure.querySelector('.attn-readout').getBoundingClientRect().left - box.left,
    scrolls: scroller.scrollWidth > scroller.clientWidth, scale,
    cue: getComputedStyle(scroller).maskImage, layout: map.dataset.layout,
  };
}"""


def test_a_wide_map_scales_on_a_desktop_and_turns_its_labels_on_a_phone(site, visit,
                                                                        watched_page):
    """Eleven tokens: scaled down at 600 px; at 390 px drawn narrow (column labels upright,
    colour only) and whole in the column, its values in the readout."""
    page = watched_page
    url = site.write_page("wide.html", [many_tokens()], "Wide explorer")
    scroller = page.locator(".attn-explorer .attn-heatmap-scroller").first
    canvas = scroller.locator("canvas.attn-heatmap")

    page.set_viewport_size({"width": 600, "height": 900})  # a column narrower than the map
    visit(url)
    natural = float(canvas.evaluate("(c) => parseFloat(c.style.width)"))
    shown = canvas.bounding_box()["width"]
    assert 0.74 * natural <= shown < natural, (natural, shown)  # scaled down, not to dust
    assert scroller.evaluate("(f) => f.scrollWidth <= f.clientWidth")
    mask = "(f) => getComputedStyle(f).maskImage"
    assert scroller.evaluate(mask) == "none"  # nothing to scroll, no cue
    assert not scroller.locator("canvas.attn-heatmap-labels").is_visible()  # nor a copy

    page.set_viewport_size({"width": 390, "height": 900})
    visit(url)
    page.wait_for_function("(c) => c.dataset.layout === 'narrow'", arg=canvas.element_handle())
    edge = scroller.evaluate(_LEFT_EDGE)
    assert not edge["scrolls"] and edge["scale"] == pytest.approx(1)  # whole, at full size
    assert edge["lastColumnRight"] <= SLACK and edge["cue"] == "none"
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] - 5, box["y"] + box["height"] - 5)
    expect(page.locator(".attn-explorer .attn-readout").first).to_contain_text("bits, bits:")


def test_a_map_too_wide_even_upright_scrolls_with_a_cue_at_a_legible_size(site, visit,
                                                                         watched_page):
    """Thirty tokens do not fit a phone's column even drawn narrow and scaled to the
    smallest size whose text stays legible (9 px): such a map scrolls, with the cue and
    its tokens in view."""
    page = watched_page
    page.set_viewport_size({"width": 390, "height": 900})
    visit(site.write_page("wider.html", [many_tokens(30)], "Wider explorer"))
    scroller = page.locator(".attn-explorer .attn-heatmap-scroller").first
    canvas = scroller.locator("canvas.attn-heatmap")
    page.wait_for_function("(c) => c.dataset.layout === 'narrow'", arg=canvas.element_handle())
    scroller.scroll_into_view_if_needed()  # below thirty rows of inputs
    at_start = scroller.evaluate(_LEFT_EDGE)
    assert at_start["scale"] == pytest.approx(9 / 13, abs=0.01)  # 13 px text shown at 9 px
    assert at_start["scrolls"] and "gradient" in at_start["cue"]  # scrolls, with the cue
    assert at_start["labelsLeft"] == pytest.approx(0, abs=SLACK)  # on the map's own labels

    scroller.evaluate("(f) => { f.scrollLeft = f.scrollWidth; }")  # to the last column
    page.wait_for_function("(f) => f.scrollLeft > 0", arg=scroller.element_handle())
    at_end = scroller.evaluate(_LEFT_EDGE)
    assert at_end["under"] == "attn-heatmap-labels" and at_end["inked"]  # tokens in view
    assert at_end["labelsLeft"] == pytest.approx(0, abs=SLACK)
    assert at_end["lastColumnRight"] <= SLACK  # the last column and its label in view
    assert at_end["captionLeft"] >= -SLACK and at_end["readoutLeft"] >= -SLACK
    assert "gradient" in at_end["cue"]  # more to see, to the left


def test_the_arrow_keys_scroll_a_wide_map_to_the_selected_cell(site, visit, watched_page):
    page = watched_page
    page.set_viewport_size({"width": 390, "height": 900})
    explorer = many_tokens(30)
    visit(site.write_page("keys.html", [explorer], "Keys"))
    scroller = page.locator(".attn-explorer .attn-heatmap-scroller").first
    canvas = scroller.locator("canvas.attn-heatmap")
    page.wait_for_function("(c) => c.dataset.layout === 'narrow'", arg=canvas.element_handle())
    canvas.focus()
    columns = len(explorer.tokens)
    for _ in range(columns):  # the first press selects the first cell, then one per column
        page.keyboard.press("ArrowRight")
    expect(page.locator(".attn-explorer .attn-readout").first).to_contain_text(
        f"{explorer.tokens[0]}, {explorer.tokens[-1]}:")
    # The selected (last) cell lies between the labels and the scroller's right edge.
    seen = scroller.evaluate("""(f) => {
      const map = f.querySelector('canvas.attn-heatmap');
      const grid = JSON.parse(map.dataset.grid);
      const shown = map.getBoundingClientRect();
      const scale = shown.width / (map.width / devicePixelRatio);
      const box = f.getBoundingClientRect();
      const left = shown.left + (grid.left
        + (JSON.parse(map.dataset.cols).length - 1) * grid.cellWidth) * scale;
      return { from: left - box.left - grid.left * scale,
               to: left + grid.cellWidth * scale - box.right };
    }""")
    assert seen["from"] >= -SLACK and seen["to"] <= SLACK, seen


_WEIGHTS = "(root) => root.querySelector('canvas[data-role=weights]').dataset.values"


def test_the_hint_shows_once_and_reset_restores_the_first_values(site, visit, watched_page):
    page = watched_page
    explorer = AttentionExplorer(["a", "b", "c"], [[1, 0], [0, 1], [1, 1]],
                                 scale_slider=(0.0, 10.0, 0.1))
    visit(site.write_page("reset.html", [explorer], "Reset"))
    root = page.locator(".attn-explorer")
    hints = root.locator(".attn-readout[data-idle]")
    assert hints.count() == 3  # scores, weights, output: each idle
    assert [hints.nth(k).is_visible() for k in range(3)] == [True, False, False]
    # The hint wraps within its map's width: the three maps still share one row.
    tops = root.locator("figure.attn-view").evaluate_all(_VIEW_TOPS)
    assert len(tops) == 3 and len(set(tops)) == 1, tops

    before = root.evaluate(READ_EXPLORER)
    weights = root.evaluate(_WEIGHTS)
    readout = root.locator(".attn-scale output")
    scale = readout.inner_text()
    page.locator('[data-cell="X[2][0]"]').fill("-3")
    root.get_by_label("scale", exact=True).focus()
    page.keyboard.press("End")  # the scale slider to its maximum
    expect(readout).not_to_have_text(scale)
    page.wait_for_function(f"() => ({_WEIGHTS})(document.querySelector('.attn-explorer')) "
                           f"!== {weights!r}")
    assert root.evaluate(READ_EXPLORER)["grids"] != before["grids"]

    root.get_by_role("button", name="Reset the explorer to its first values").click()
    expect(readout).to_have_text(scale)  # the slider follows
    page.wait_for_function(f"() => ({_WEIGHTS})(document.querySelector('.attn-explorer')) "
                           f"=== {weights!r}")
    after = root.evaluate(READ_EXPLORER)
    assert after["grids"] == before["grids"] and after["tables"] == before["tables"]


_OUTPUT = "(root) => JSON.parse(root.querySelector('canvas[data-role=output]').dataset.values)"


def test_input_boxes_show_the_explorer_s_decimals_and_the_model_keeps_the_exact_value(
        site, visit, watched_page):
    page = watched_page
    decimals = 2
    X = np.array([[1.0, 0.5], [0.25, -1.0]])
    W_o = np.array([[-0.152374891, 0.7], [1 / 3, -0.0004]])  # a cut-off one, a -0 to be
    explorer = AttentionExplorer(["a", "b"], X, W_o=W_o, editable=("W_o",),
                                 views=("output",), decimals=decimals)
    visit(site.write_page("precision.html", [explorer], "Precision"))
    root = page.locator(".attn-explorer")
    boxes = root.locator('table[data-role="edit-W_o"] input')
    rounded = [np.format_float_positional(float(f"{v:z.{decimals}f}"), trim="-")
               for v in W_o.flat]
    assert boxes.evaluate_all("(inputs) => inputs.map((input) => input.value)") == rounded

    # What the explorer computes still uses the exact entries...
    exact = explorer_view(X, W_o=W_o)[2]
    assert np.allclose(root.evaluate(_OUTPUT), exact, rtol=0, atol=1e-12)
    # ... until the reader edits one: that one is now what they typed.
    page.locator('[data-cell="W_o[0][1]"]').fill("0.5")
    edited = W_o.copy()
    edited[0, 1] = 0.5
    expected = explorer_view(X, W_o=edited)[2]
    page.wait_for_function(f"() => ({_OUTPUT})(document.querySelector('.attn-explorer'))"
                           f"[0][1] !== {float(exact[0, 1])!r}")
    assert np.allclose(root.evaluate(_OUTPUT), expected, rtol=0, atol=1e-12)
