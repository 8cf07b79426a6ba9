"""The convolution explorer (chapter 6) in headless Chromium with no kernel: it renders the
numbers Python computes, follows the alpha slider and box, the query slider and edited taps with
the numbers numpy computes for them, and runs on the chapter's page."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.explorers.conv_explorer import ConvolutionExplorer

pytestmark = pytest.mark.browser

EXPLORER_ID = "attncourse.explorers.conv_explorer.ConvolutionExplorer"
CHAPTER = "chapters/06_attention_versus_convolution"
TOLERANCE = 1e-9  # the explorer's JavaScript against the numpy reference

_READ = """(root) => ({
  heads: JSON.parse(root.querySelector('canvas[data-role="heads"]').dataset.values),
  output: JSON.parse(root.querySelector('canvas[data-role="outputs"]').dataset.output),
  convolution: JSON.parse(root.querySelector('canvas[data-role="outputs"]').dataset.convolution),
  error: Number(root.querySelector('[data-role="max-error"]').dataset.value),
  readout: root.querySelector('[data-role="max-error"]').textContent,
  alpha: root.querySelector('[data-role="alpha-value"]').value,
  painted: [...root.querySelectorAll('canvas')].map((canvas) => {
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    return pixels.some((value, k) => k % 4 === 3 && value > 0);
  }),
})"""


def expected(x, kernel, alpha, query):
    """What the explorer should show, from numpy: each head's row for ``query`` over the
    key offsets -reach..reach, the output, the convolution and the largest error."""
    explorer = ConvolutionExplorer(x, kernel, alpha=alpha, query=query)
    half = len(kernel) // 2
    reach = half + 3
    weights = np.pad(explorer.weights, ((0, 0), (0, 0), (reach, reach)))  # zero past the ends
    first = query + half  # the padded key of offset -reach, once padded by reach more
    rows = weights[:, query, first:first + 2 * reach + 1]  # (K, 2 reach + 1)
    return dict(heads=rows, output=explorer.output, convolution=explorer.convolution,
                error=explorer.max_error)


def assert_shows(read, want, where):
    for name in ("heads", "output", "convolution"):
        np.testing.assert_allclose(read[name], want[name], rtol=0, atol=TOLERANCE,
                                   err_msg=f"{where}: {name}")
    assert abs(read["error"] - want["error"]) < TOLERANCE, where
    assert read["readout"] == f"largest error against the convolution: {want['error']:.2e}".replace(
        "e-0", "e-").replace("e+0", "e+"), where
    assert all(read["painted"]), f"{where}: a canvas is blank"


def changed(root, before):
    """Wait until the explorer shows something else than ``before``; return it."""
    root.page.wait_for_function(
        "([root, before]) => root.querySelector('[data-role=\"max-error\"]').textContent !== before",
        arg=[root.element_handle(), before["readout"]])
    return root.evaluate(_READ)


def test_the_explorer_follows_alpha_query_and_taps(site, visit, watched_page):
    rng = np.random.default_rng(5)
    x, kernel = rng.standard_normal(32).round(2), [0.5, -1.0, 0.0, 1.0, -0.5]
    visit(site.write_page("convolution.html", [ConvolutionExplorer(x, kernel)], "Convolution"))
    root = watched_page.locator(".conv-explorer")
    read = root.evaluate(_READ)
    assert_shows(read, expected(x, kernel, 1.0, 16), "as rendered")
    assert read["alpha"] == "1"  # the box beside the slider
    assert np.all(np.array(read["heads"]).max(axis=1) < 0.6)  # soft bumps

    root.locator('[data-role="alpha"]').fill("30")
    read = changed(root, read)
    assert_shows(read, expected(x, kernel, 30.0, 16), "at alpha 30")
    heads = np.array(read["heads"])  # (K, offsets -5..5): one-hot at each head's shift
    assert np.allclose(heads.max(axis=1), 1.0) and list(heads.argmax(axis=1)) == [3, 4, 5, 6, 7]
    assert read["error"] < 1e-10

    root.locator('[data-role="alpha"]').fill("5")
    read = changed(root, read)
    root.locator('[data-role="alpha"]').press("ArrowRight")  # one step, as a reader would
    read = changed(root, read)
    assert read["alpha"] == "5.1"
    assert_shows(read, expected(x, kernel, 5.1, 16), "at alpha 5.1, by the keyboard")

    root.locator('[data-role="alpha-value"]').fill("7.27")  # typed: finer than the slider's step
    read = changed(root, read)
    assert root.locator('[data-role="alpha"]').input_value() == "7.3"  # the slider, to its step
    assert_shows(read, expected(x, kernel, 7.27, 16), "at alpha 7.27, typed")
    root.locator('[data-role="alpha-value"]').fill("5.1")
    read = changed(root, read)

    root.locator('[data-role="tap"]').nth(2).fill("2")
    read = changed(root, read)
    kernel[2] = 2.0
    assert_shows(read, expected(x, kernel, 5.1, 16), "after editing the centre tap")

    root.locator('[data-role="query"]').fill("0")
    watched_page.wait_for_function(
        "(root) => root.querySelector('[data-role=\"query-value\"]').textContent === 'i = 0'",
        arg=root.element_handle())
    assert_shows(root.evaluate(_READ), expected(x, kernel, 5.1, 0), "at the first token")


def test_the_explorer_on_the_chapter_page(saved_explorers, watched_page):
    saved = saved_explorers(CHAPTER, EXPLORER_ID, "conv_explorer.js")
    # The section's explorer, and the tune exercise's with its goal.
    assert sorted(s["goal"] is None for s in saved) == [False, True], "two convolution explorers"
    (s,) = [s for s in saved if s["goal"] is None]
    root = watched_page.locator(".conv-explorer:not(:has(.attn-goal))")
    assert root.count() == 1
    read = root.evaluate(_READ)
    assert_shows(read, expected(s["x"], s["kernel"], s["alpha"], s["query"]), "on the chapter page")
    root.locator('[data-role="alpha"]').fill("12")
    read = changed(root, read)
    assert_shows(read, expected(s["x"], s["kernel"], 12.0, s["query"]), "after moving alpha")
