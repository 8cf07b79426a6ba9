"""Chapters 8 and 9's explorers as a reader on a phone or with the keyboard meets them
(issue 23, items 5 to 7): the position curve is drawn at the size it is shown, so its
labels keep their size on a phone; a number an explorer cannot use is refused out loud,
never ignored; a slider says its value in words; a heatmap's scroll box is named by its
figure's caption."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from attncourse.explorers import BlockExplorer, FlashExplorer, KVCacheCalculator, PositionExplorer
from attncourse.explorers.position_explorer import MAX_TOKENS

pytestmark = pytest.mark.browser

PHONE = 390


@pytest.mark.parametrize("width", [PHONE, 1280])
def test_the_position_curve_is_drawn_at_the_size_it_is_shown(width, visit, watched_page):
    page = watched_page
    page.set_viewport_size({"width": width, "height": 900})
    visit("chapters/08_positions.html")
    curves = page.locator('.position-explorer canvas[data-role="curve"]')
    assert curves.count() >= 2
    for k in range(curves.count()):
        drawn, shown = curves.nth(k).evaluate(
            "(c) => [c.width / devicePixelRatio, c.getBoundingClientRect().width]")
        assert abs(drawn - shown) <= 1, f"curve {k} at {width} px: drawn {drawn} px wide, shown {shown} px"
        assert shown <= 600
        expect(curves.nth(k)).to_have_attribute("aria-label", re.compile(r"^The score against the offset j - i"))


def test_input_an_explorer_cannot_use_is_refused_out_loud(site, visit, watched_page):
    page = watched_page
    widgets = [FlashExplorer(), KVCacheCalculator(), BlockExplorer(), PositionExplorer("the dog bit the man")]
    visit(site.write_page("refused.html", widgets, "Refused input"))
    cases = [  # explorer, input's label, what is typed, what the note must say
        (".flash-explorer", "query block size", "13", "from 1 to 12: 13 is not used"),
        (".kv-cache-calculator", "layers", "2.5", "2.5 is not used"),
        (".block-explorer", "block_q", "0", "0 is not used"),
        (".position-explorer", "base", "1", "from 2 to 1,000,000: 1 is not used"),
    ]
    for root, label, typed, said in cases:
        explorer = page.locator(root)
        box = explorer.get_by_label(label, exact=True)
        shown = explorer.locator("[data-values], [data-value]").first  # its readout, or a view's numbers
        before = shown.evaluate("(node) => node.dataset.values ?? node.dataset.value")
        box.fill(typed)
        note = explorer.get_by_role("status").filter(has_text="is not used")
        expect(note).to_contain_text(said)
        expect(box).to_have_attribute("aria-invalid", "true")
        assert shown.evaluate("(node) => node.dataset.values ?? node.dataset.value") == before, root
    # A sentence with no word keeps the last one, and says so.
    sentence = page.locator(".position-explorer").get_by_label("sentence", exact=True)
    sentence.fill("   ")
    expect(page.locator(".position-explorer").get_by_role("status").filter(has_text="at least one word"))\
        .to_be_visible()


def test_sliders_say_their_value_in_words(site, visit, watched_page):
    page = watched_page
    visit(site.write_page("sliders.html", [FlashExplorer(), PositionExplorer("a b c", encoding="rope")],
                          "Sliders"))
    flash, positions = page.locator(".flash-explorer"), page.locator(".position-explorer")
    tile = flash.get_by_label("tile", exact=True)
    tile.focus()
    tile.press("ArrowRight")
    expect(tile).to_have_attribute("aria-valuetext", "tile 2 of 9")
    expect(flash.locator('[data-role="step-text"]')).to_have_attribute("aria-live", "polite")
    expect(flash.locator('[data-role="step-text"]')).to_contain_text("tile 2 of 9")
    base = positions.get_by_label("log10 of the base", exact=True)
    base.focus()
    base.press("End")
    expect(base).to_have_attribute("aria-valuetext", "base 1000000")
    offset = positions.get_by_label("favoured offset", exact=True)
    offset.focus()
    offset.press("Home")
    expect(offset).to_have_attribute("aria-valuetext", "j - i = -2")


def test_a_heatmap_that_scrolls_is_named_by_its_figure(site, visit, watched_page):
    """Chapter 8's maps (8 or 9 tokens) fit a phone's column since issue 35 (drawn narrow),
    and so does one of MAX_TOKENS words at 390 px; at 320 px (WCAG's reflow width) it
    scrolls."""
    page = watched_page
    page.set_viewport_size({"width": 320, "height": 900})
    sentence = " ".join(f"w{k}" for k in range(MAX_TOKENS))
    visit(site.write_page("long-sentence.html", [PositionExplorer(sentence)], "A long sentence"))
    scrolling = page.locator(".position-explorer [data-scrolls]")
    expect(scrolling.first).to_be_attached()  # once the map has laid itself out
    for k in range(scrolling.count()):
        expect(scrolling.nth(k)).to_have_attribute(
            "aria-label", re.compile(r"^Attention weights over the sentence .*, scrolls sideways$"))
