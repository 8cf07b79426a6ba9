"""The position explorer (chapter 8) in headless Chromium with no kernel: it renders the
numbers Python computes, follows its encoding, offset, base, causal and sentence controls
with the numbers attncourse.positions computes for them, and runs on the chapter's page."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.explorers.position_explorer import PositionExplorer, position_view

pytestmark = pytest.mark.browser

EXPLORER_ID = "attncourse.explorers.position_explorer.PositionExplorer"
CHAPTER = "chapters/08_positions"
TOLERANCE = 1e-9  # the explorer's JavaScript against the numpy reference

_READ = """(root) => ({
  curve: JSON.parse(root.querySelector('canvas[data-role="curve"]').dataset.values),
  weights: JSON.parse(root.querySelector('canvas[data-role="weights"]').dataset.values),
  rows: JSON.parse(root.querySelector('canvas[data-role="weights"]').dataset.rows),
  painted: [...root.querySelectorAll('canvas[data-role]')].map((canvas) => {
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    return pixels.some((value, k) => k % 4 === 3 && value > 0);
  }),
})"""


def assert_shows(read, settings, where):
    tokens = settings["tokens"]
    _, curve, _, weights = position_view(settings["encoding"], len(tokens), settings["d"], settings["base"],
                                         settings["alibi_head"], settings["offset"], settings["scale"],
                                         settings["causal"])
    assert read["rows"] == tokens, where
    np.testing.assert_allclose(read["curve"], curve, rtol=0, atol=TOLERANCE, err_msg=f"{where}: curve")
    np.testing.assert_allclose(read["weights"], weights, rtol=0, atol=TOLERANCE, err_msg=f"{where}: weights")
    assert all(read["painted"]), f"{where}: a canvas is blank"


def changed(root, before):
    """Wait until the explorer's map or curve shows something else than ``before``; return it."""
    root.page.wait_for_function(
        """([root, before]) => root.querySelector('canvas[data-role="weights"]').dataset.values
             + root.querySelector('canvas[data-role="curve"]').dataset.values !== before""",
        arg=[root.element_handle(), str(before)])
    return root.evaluate(_READ)


def snapshot(root):
    return root.evaluate("""(root) => root.querySelector('canvas[data-role="weights"]').dataset.values
                              + root.querySelector('canvas[data-role="curve"]').dataset.values""")


def test_the_explorer_follows_its_controls(site, visit, watched_page):
    settings = dict(tokens=["the", "dog", "that", "bit", "the", "man"], encoding="rope", d=8, base=10000.0,
                    alibi_head=0, offset=-1, scale=5.0, causal=False)
    explorer = PositionExplorer(" ".join(settings["tokens"]), encoding="rope", offset=-1, scale=5.0)
    visit(site.write_page("positions.html", [explorer], "Positions"))
    root = watched_page.locator(".position-explorer")
    assert_shows(root.evaluate(_READ), settings, "as rendered")

    for control, value, name, setting in [
        ('[data-role="offset"]', "2", "offset", 2),
        ('[data-role="scale"]', "20", "scale", 20.0),
        ('[data-role="base"]', "100", "base", 100.0),
    ]:
        before = snapshot(root)
        root.locator(control).fill(value)
        settings[name] = setting
        assert_shows(changed(root, before), settings, f"after {name} = {value}")

    before = snapshot(root)
    root.locator('[data-role="encoding"]').select_option("alibi")
    settings["encoding"] = "alibi"
    assert_shows(changed(root, before), settings, "as ALiBi")

    before = snapshot(root)
    root.locator('[data-role="causal"]').check()
    settings["causal"] = True
    assert_shows(changed(root, before), settings, "with the causal mask")

    before = snapshot(root)
    root.locator('[data-role="sentence"]').fill("man bites dog")  # the offset 2 still fits
    settings["tokens"] = ["man", "bites", "dog"]
    assert_shows(changed(root, before), settings, "on a new sentence")


def test_the_explorer_on_the_chapter_page(saved_explorers, watched_page):
    # The chapter's explorer, and its tune exercise's (a goal, a key of its own) further down.
    # The saved states come in the order of their random model ids: told apart by their goal.
    states = saved_explorers(CHAPTER, EXPLORER_ID, "position_explorer.js")
    [saved] = [state for state in states if state["goal"] is None]
    [tune] = [state for state in states if state["goal"] is not None]
    assert tune["goal"]["label"] == "ch8-tune-previous-token"
    root = watched_page.locator(".position-explorer").first
    settings = {name: saved[name] for name in
                ("tokens", "encoding", "d", "base", "alibi_head", "offset", "scale", "causal")}
    assert_shows(root.evaluate(_READ), settings, "on the chapter page")
    before = snapshot(root)
    root.locator('[data-role="scale"]').fill("40")
    settings["scale"] = 40.0
    read = changed(root, before)
    assert_shows(read, settings, "after raising the scale")
    assert np.diagonal(np.array(read["weights"]), -1).min() > 0.99  # a previous-token head
