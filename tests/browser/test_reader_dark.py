"""Dark mode (the reader's system asks for it; the theme follows): every explorer's text
(titles, grid labels, inputs, readouts, Reset, the scale slider; the attention, graph,
convolution and model explorers alike), and every number printed in an attention heatmap, at >= 4.5:1 contrast (WCAG AA), computed in the browser on every chapter page."""

from __future__ import annotations

import numpy as np
import pytest

import tools
from attncourse.explorers.attention_explorer import AttentionExplorer

pytestmark = pytest.mark.browser

AA = 4.5

# WCAG contrast of each visible element of an explorer that holds
# text of its own or a typed value (SVG labels aside: they carry their own halo; disabled
# controls aside, as WCAG exempts them),
# against the colour behind it: the first opaque background up the tree, with translucent
# layers and text composited over it.
_TEXT_CONTRAST = """(area) => {
  const parse = (c) => { const m = c.match(/[\\d.]+/g).map(Number);
    return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const over = (top, bottom) => [0, 1, 2].map((k) => top[k] * top[3] + bottom[k] * (1 - top[3]));
  const lum = (rgb) => { const f = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(rgb[0]) + 0.7152 * f(rgb[1]) + 0.0722 * f(rgb[2]); };
  const behind = (node) => {
    const layers = [];
    for (let n = node; n; n = n.parentElement) {
      const colour = parse(getComputedStyle(n).backgroundColor);
      if (colour[3] > 0) layers.push(colour);
      if (colour[3] >= 1) break;
    }
    return layers.reverse().reduce((below, layer) => over(layer, [...below, 1]), [255, 255, 255]);
  };
  const ownText = (node) => [...node.childNodes]
    .some((child) => child.nodeType === Node.TEXT_NODE && child.textContent.trim());
  return [...area.querySelectorAll('*')]
    .filter((node) => !node.closest('svg') && !node.disabled && node.checkVisibility({ visibilityProperty: true }) &&
                      ((node.tagName === 'INPUT' && ['text', 'number'].includes(node.type) && node.value) || ownText(node)))
    .map((node) => {
      const background = behind(node);
      const ink = over(parse(getComputedStyle(node).color), [...background, 1]);
      const [a, b] = [lum(ink), lum(background)].sort((x, y) => y - x);
      return { what: `${node.className || node.tagName}: ${(node.value || node.textContent).trim().slice(0, 30)}`,
               ratio: (a + 0.05) / (b + 0.05) };
    });
}"""

# Per heatmap: the lowest contrast of a printed number, over the cells that print one, as
# the contrast between the cell's background and its most contrasting pixel (the glyphs'
# ink; drawn at twice the pixels per CSS pixel, every stroke has fully inked pixels).
_NUMBER_CONTRAST = """(canvas) => {
  const grid = JSON.parse(canvas.dataset.grid);
  const ratio = canvas.width / parseFloat(canvas.style.width);
  const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
  const lum = (k) => { const f = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(data[k]) + 0.7152 * f(data[k + 1]) + 0.0722 * f(data[k + 2]); };
  const at = (x, y) => 4 * (Math.round(y * ratio) * canvas.width + Math.round(x * ratio));
  let lowest = Infinity;
  JSON.parse(canvas.dataset.values).forEach((row, i) => row.forEach((_, j) => {
    const left = grid.left + j * grid.cellWidth;
    const top = grid.top + i * grid.cellHeight;
    const paper = lum(at(left + 2, top + 2));
    let best = 1;
    for (let y = top + 3; y < top + grid.cellHeight - 3; y += 0.5) {
      for (let x = left + 3; x < left + grid.cellWidth - 3; x += 0.5) {
        const [a, b] = [lum(at(x, y)), paper].sort((p, q) => q - p);
        best = Math.max(best, (a + 0.05) / (b + 0.05));
      }
    }
    lowest = Math.min(lowest, best);
  }));
  return lowest;
}"""


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "color_scheme": "dark", "device_scale_factor": 2}


def assert_readable(page, where, themed=True):
    if themed:  # a chapter page: the theme has followed the system into dark mode
        assert page.evaluate("document.documentElement.dataset.theme") == "dark", where
    areas = page.locator(".widget-subarea:has(.attn-explorer, .attn-graph-explorer, "
                         ".conv-explorer)")
    assert areas.count(), f"{where}: no explorer"
    for k in range(areas.count()):
        for text in areas.nth(k).evaluate(_TEXT_CONTRAST):
            assert text["ratio"] >= AA, f"{where}, explorer {k}: {text}"
        canvases = areas.nth(k).locator(".attn-explorer canvas[data-grid]")  # attention heatmaps
        for c in range(canvases.count()):
            canvas = canvases.nth(c)
            if int(canvas.evaluate("(c) => JSON.parse(c.dataset.rows).length")) > 12:
                continue  # colour only: no numbers printed
            lowest = canvas.evaluate(_NUMBER_CONTRAST)
            assert lowest >= AA, f"{where}, explorer {k}, heatmap {c}: numbers at {lowest:.2f}:1"


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_explorer_text_is_readable_in_dark_mode(entry, visit, watched_page):
    visit(f"{entry}.html")
    assert_readable(watched_page, entry)


def test_every_shade_of_a_heatmap_prints_readable_numbers(site, visit, watched_page):
    """Twelve tokens, weights and scores spread over every shade: the text colour of each
    cell (black or white) must contrast with it (dark grey fell to 4.0:1 on mid blues)."""
    X = np.random.default_rng(0).normal(size=(12, 3)) * 1.5
    explorer = AttentionExplorer([f"t{k}" for k in range(12)], X, scale=1.0,
                                 scale_slider=(0.0, 10.0, 0.1))
    visit(site.write_page("shades.html", [explorer], "Shades"))
    assert_readable(watched_page, "shades", themed=False)  # a page without the theme
