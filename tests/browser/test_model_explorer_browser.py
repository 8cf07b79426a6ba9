"""Chapter 7's model explorer on the built page, in headless Chromium with no kernel: the
twelve maps drawn are the model's weights for the chosen sentence and layer, the pickers
and the large map follow the reader, switching a head off reads out the pair's similarity
without it, everything is reached with the keyboard, and it fits a desktop and a phone."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.explorers.esm import bundle
from attncourse.explorers.model_explorer import decode_maps
from attncourse.pretrained import attention_maps, similarity

pytestmark = pytest.mark.browser

EXPLORER_ID = "attncourse.explorers.model_explorer.ModelExplorer"
CHAPTER = "chapters/07_attention_in_a_real_model"
HUNDREDTH = 0.005  # the page keeps the weights in hundredths
THOUSANDTH = 1.5e-3  # similarities to 3 decimals; batched runs differ in float32
BLUE = np.array([31, 119, 180])  # a small map's colour for weight 1, over white

# What the explorer shows: each small map's matrix and the colour at the middle of each
# of its cells, the large map, the similarity line and the note, the switches, the
# pressed map and the pickers.
_READ = """(root) => {
  const smallMaps = [...root.querySelectorAll('canvas[data-role="head-map"]')];
  const colours = (canvas) => {
    const values = JSON.parse(canvas.dataset.values);
    const ratio = canvas.width / parseFloat(canvas.style.width);
    const cell = parseFloat(canvas.style.width) / values.length;
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    return values.map((row, i) => row.map((_, j) => {
      const at = (k) => Math.floor((k + 0.5) * cell * ratio);
      const k = 4 * (at(i) * canvas.width + at(j));
      return [data[k], data[k + 1], data[k + 2]];
    }));
  };
  const large = root.querySelector('canvas[data-role="weights"]');
  const line = root.querySelector('[data-role="similarity"]');
  return {
    heads: smallMaps.map((canvas) => JSON.parse(canvas.dataset.values)),
    colours: smallMaps.map(colours),
    large: { head: Number(large.dataset.head), values: JSON.parse(large.dataset.values),
             rows: JSON.parse(large.dataset.rows) },
    similarity: line.dataset.value === '' ? null : Number(line.dataset.value),
    line: line.textContent,
    note: root.querySelector('[data-role="maps-note"]').textContent,
    on: [...root.querySelectorAll('input[data-role="head-on"]')].map((box) => box.checked),
    pressed: [...root.querySelectorAll('.mx-pick')].map((b) => b.getAttribute('aria-pressed')),
    sentence: Number(root.querySelector('select[data-role="sentence"]').value),
    layer: Number(root.querySelector('select[data-role="layer"]').value),
  };
}"""


@pytest.fixture
def chapter(visit, watched_page):
    """The chapter page, its explorer's root and its saved state (checked to be the
    current front end)."""
    visit(f"{CHAPTER}.html")
    state = watched_page.evaluate("""() => JSON.parse(document.querySelector(
      'script[type="application/vnd.jupyter.widget-state+json"]').textContent).state""")
    saved = [m["state"] for m in state.values() if m["state"].get("_anywidget_id") == EXPLORER_ID]
    assert len(saved) == 1, "the chapter shows one model explorer"
    assert saved[0]["_esm"] == bundle("model_explorer.js"), \
        f"{CHAPTER} carries an older model_explorer.js: clear _build/.jupyter_cache and rebuild"
    root = watched_page.locator(".model-explorer")
    assert root.count() == 1
    return root, saved[0]


def read_after(root, change):
    """Do ``change``, wait for the explorer to redraw, return what it shows."""
    shown = f"(root) => JSON.stringify(({_READ})(root))"
    before = root.evaluate(shown)
    change()
    root.page.wait_for_function(f"([root, before]) => ({shown})(root) !== before",
                                arg=[root.element_handle(), before])
    return root.evaluate(_READ)


def assert_shows_the_model(read, state, sentence, layer):
    """The small maps are the saved maps of (sentence, layer), which are the model's own
    weights to the hundredth, drawn in their colours; the large map is the pressed head's."""
    text, tokens = state["texts"][sentence], state["tokens"][sentence]
    saved = decode_maps(state["maps"][sentence], len(tokens))[layer]  # (n_heads, seq, seq)
    shown = np.array(read["heads"])
    np.testing.assert_array_equal(shown, saved)
    model_tokens, weights = attention_maps(text)
    assert model_tokens == tokens
    assert np.abs(shown - weights[layer]).max() <= HUNDREDTH
    expected = 255 + shown[..., None] * (BLUE - 255)  # (n_heads, seq, seq, rgb) over white
    assert np.abs(np.array(read["colours"]) - expected).max() <= 2, "a small map's colours"
    assert (read["sentence"], read["layer"]) == (sentence, layer)
    head = read["large"]["head"]
    assert read["large"]["rows"] == tokens
    np.testing.assert_array_equal(read["large"]["values"], saved[head])
    assert read["pressed"] == ["true" if h == head else "false" for h in range(len(saved))]


def test_the_maps_drawn_are_the_models_for_the_chosen_sentence_and_layer(chapter):
    root, state = chapter
    read = root.evaluate(_READ)
    assert_shows_the_model(read, state, sentence=0, layer=0)
    assert read["large"]["head"] == 0

    read = read_after(root, lambda: root.locator('select[data-role="layer"]').select_option("3"))
    assert_shows_the_model(read, state, sentence=0, layer=3)
    read = read_after(root, lambda: root.locator('select[data-role="sentence"]').select_option("3"))
    assert_shows_the_model(read, state, sentence=3, layer=3)
    read = read_after(root, lambda: root.get_by_role("button", name="Show layer 3, head 7 large").click())
    assert read["large"]["head"] == 7
    assert_shows_the_model(read, state, sentence=3, layer=3)


def test_a_head_switched_off_reads_out_the_pairs_similarity_without_it(chapter):
    root, state = chapter
    pair = state["texts"][:2]
    read = root.evaluate(_READ)
    assert read["similarity"] == state["pair_similarity"][0]
    assert read["similarity"] == pytest.approx(similarity(*pair), abs=THOUSANDTH)
    assert read["line"].endswith(f"{state['pair_similarity'][0]:.3f} with every head on")
    assert all(read["on"]) and read["note"] == ""

    root.locator('select[data-role="layer"]').select_option("2")
    read = read_after(root, lambda: root.get_by_label("layer 2, head 5 on").uncheck())
    without = state["pair_similarity_without"][0][2][5]
    assert read["similarity"] == without
    assert without == pytest.approx(similarity(*pair, ablate=((2, 5),)), abs=THOUSANDTH)
    assert f"without layer 2, head 5: {without:.3f}" in read["line"]
    assert read["on"] == [h != 5 for h in range(12)]
    assert read["note"] == "One head at a time on this page (a running notebook switches off several)."

    # One head at a time on a static page: switching another off puts the first back.
    read = read_after(root, lambda: root.get_by_label("layer 2, head 9 on").uncheck())
    assert read["on"] == [h != 9 for h in range(12)]
    assert read["similarity"] == state["pair_similarity_without"][0][2][9]
    # A later layer's maps would change without it: the page says it shows the intact ones.
    read = read_after(root, lambda: root.locator('select[data-role="layer"]').select_option("4"))
    assert "intact model" in read["note"] and all(read["on"])
    assert_shows_the_model(read, state, sentence=0, layer=4)
    read = read_after(root, lambda: root.locator('select[data-role="layer"]').select_option("1"))
    assert "intact model" not in read["note"]

    root.locator('select[data-role="layer"]').select_option("2")
    read = read_after(root, lambda: root.get_by_label("layer 2, head 9 on").check())
    assert all(read["on"]) and read["similarity"] == state["pair_similarity"][0]


def test_every_control_is_reached_with_the_keyboard(chapter, watched_page):
    root, state = chapter
    page = watched_page
    root.locator('select[data-role="layer"]').focus()
    page.keyboard.press("Tab")  # the first small map
    page.keyboard.press("Tab")  # its switch
    page.keyboard.press("Tab")  # the second small map
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == \
        "Show layer 0, head 1 large"
    read = read_after(root, lambda: page.keyboard.press("Enter"))
    assert read["large"]["head"] == 1
    page.keyboard.press("Tab")  # head 1's switch
    read = read_after(root, lambda: page.keyboard.press("Space"))
    assert read["on"] == [h != 1 for h in range(12)]
    assert read["similarity"] == state["pair_similarity_without"][0][0][1]

    large = root.locator('canvas[data-role="weights"]')
    large.focus()
    page.keyboard.press("ArrowRight")  # the first cell: [CLS] reading [CLS]
    weight = decode_maps(state["maps"][0], len(state["tokens"][0]))[0, 1, 0, 0]
    assert root.locator(".mx-detail .attn-readout").text_content() == f"[CLS], [CLS]: {weight:g}"


@pytest.mark.parametrize(("width", "columns"), [(1280, 6), (390, 3)])
def test_twelve_maps_fit_a_desktop_and_a_phone(width, columns, chapter, watched_page,
                                               screenshots):
    page = watched_page
    page.set_viewport_size({"width": width, "height": 900})
    root, _ = chapter
    grid = root.locator(".mx-heads")
    assert len(grid.evaluate("(g) => getComputedStyle(g).gridTemplateColumns").split()) == columns
    box, column = root.bounding_box(), page.locator("article.bd-article").bounding_box()
    assert box["x"] + box["width"] <= column["x"] + column["width"] + 0.5
    for k in range(12):  # every small map whole, none cut by the grid
        small = grid.locator("canvas").nth(k).bounding_box()
        cell = grid.locator(".mx-head").nth(k).bounding_box()
        assert small["x"] >= cell["x"] - 0.5 and small["x"] + small["width"] <= cell["x"] + cell["width"] + 0.5
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    root.scroll_into_view_if_needed()
    root.screenshot(path=screenshots / f"ch7-model-explorer-{width}.png")
