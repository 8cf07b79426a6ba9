"""Chapter 9's explorers in headless Chromium with no kernel: the tiles explorer shows the
loop numpy runs (attncourse.flash.tiled_trace) and follows its step, row, block and mask
controls; the KV-cache calculator shows kv_cache_bytes for its presets and typed numbers;
both run on the chapter's page."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.explorers.flash_explorer import FlashExplorer, default_problem
from attncourse.explorers.kv_cache_explorer import KVCacheCalculator
from attncourse.flash import naive_traffic, tiled_trace, tiled_traffic
from attncourse.kv_cache import kv_cache_bytes

pytestmark = pytest.mark.browser

CHAPTER = "chapters/09_attention_at_scale"
TOLERANCE = 1e-12

_READ = """(root) => ({
  step: root.querySelector('[data-role="step-text"]').textContent,
  state: JSON.parse(root.querySelector('[data-role="row-state"]').dataset.values),
  stateText: root.querySelector('[data-role="row-state"]').textContent,
  traffic: JSON.parse(root.querySelector('[data-role="traffic"]').dataset.values),
  done: Number(root.querySelector('[data-role="grid"]').dataset.done),
  tile: ['x', 'y', 'width', 'height'].map((name) => Number(
    root.querySelector('[data-role="current-tile"]').getAttribute(name))),
})"""


def expected(block_q, block_k, causal, row, step):
    """What the explorer should show at ``step``, from numpy."""
    problem = default_problem()
    steps = tiled_trace(problem["Q"], problem["K"], problem["V"], block_q, block_k, causal=causal)
    now = steps[step]
    mine = [s for s in steps[:step + 1] if s["rows"][0] <= row < s["rows"][1]]
    state = None
    if mine:
        at = row - mine[-1]["rows"][0]
        state = {"m": mine[-1]["m"][at], "l": mine[-1]["l"][at], "o": mine[-1]["o"][at]}
    return {"now": now, "index": step, "state": state, "n_steps": len(steps),
            "total": tiled_traffic(12, 2, block_q, block_k, causal), "naive": naive_traffic(12, 2)}


def assert_shows(read, want, where):
    now = want["now"]
    (r0, r1), (c0, c1) = now["rows"], now["cols"]
    assert read["step"] == (f"tile {want['index'] + 1} of {want['n_steps']}: queries {r0}–{r1 - 1}, "
                            f"keys {c0}–{c1 - 1} in fast memory"), where
    assert read["traffic"] == {"read": now["read"], "written": now["written"], "total": want["total"],
                               "naive": want["naive"]}, where
    cell = 18
    assert read["tile"] == [1 + now["cols"][0] * cell, 1 + now["rows"][0] * cell,
                            (now["cols"][1] - now["cols"][0]) * cell, (now["rows"][1] - now["rows"][0]) * cell], where
    if want["state"] is None:
        assert read["state"] is None, where
    else:
        for name in ("m", "l", "o"):
            np.testing.assert_allclose(read["state"][name], want["state"][name], rtol=TOLERANCE, atol=TOLERANCE,
                                       err_msg=f"{where}: {name}")


def changed(root, before):
    """Wait until the explorer shows something else than the signature ``before``."""
    root.page.wait_for_function(
        "([root, before]) => root.querySelector('[data-role=\"traffic\"]').dataset.values + "
        "root.querySelector('[data-role=\"row-state\"]').textContent !== before",
        arg=[root.element_handle(), before])
    return root.evaluate(_READ)


def signature(root):
    return root.evaluate("(r) => r.querySelector('[data-role=\"traffic\"]').dataset.values + "
                         "r.querySelector('[data-role=\"row-state\"]').textContent")


def test_the_tiles_explorer_steps_through_the_loop(site, visit, watched_page):
    visit(site.write_page("tiles.html", [FlashExplorer(block_q=4, block_k=3, causal=True, row=5)], "Tiles"))
    root = watched_page.locator(".flash-explorer")
    read = root.evaluate(_READ)
    assert_shows(read, expected(4, 3, True, 5, 0), "as rendered")
    assert read["state"] is None  # row 5 is in the second query block: not started

    for step in range(1, 5):  # the first block's 2 tiles, then the second block's 3
        before = signature(root)
        root.locator('[data-role="next"]').click()
        read = changed(root, before)
        assert_shows(read, expected(4, 3, True, 5, step), f"at tile {step + 1}")
    assert "final" in read["stateText"]  # row 5's block has seen its last key block

    before = signature(root)
    root.locator('[data-role="row"]').fill("11")
    read = changed(root, before)
    assert_shows(read, expected(4, 3, True, 11, 4), "row 11 at tile 5")

    before = signature(root)
    root.locator('[data-role="causal"]').uncheck()
    read = changed(root, before)
    assert_shows(read, expected(4, 3, False, 11, 0), "without the mask, back at the first tile")

    before = signature(root)
    root.locator('[data-role="block-k"]').fill("12")
    read = changed(root, before)
    assert_shows(read, expected(4, 12, False, 11, 0), "one key block")


def test_the_calculator_follows_presets_and_typed_numbers(site, visit, watched_page):
    visit(site.write_page("kv_cache.html", [KVCacheCalculator("Llama-2-7B", seq_len=4096)], "KV cache"))
    root = watched_page.locator(".kv-cache-calculator")
    result = root.locator('[data-role="cache-bytes"]')
    assert result.get_attribute("data-value") == str(kv_cache_bytes(32, 32, 128, 4096))
    assert result.text_content() == "KV cache of Llama-2-7B: 2,147,483,648 bytes = 2 GiB"
    root.locator('[data-role="preset"]').select_option("Mistral-7B (GQA)")  # Llama-3-8B's shape: it stays Mistral
    watched_page.wait_for_function("(node) => node.dataset.value === '536870912'", arg=result.element_handle())
    assert root.locator('[data-role="preset"]').input_value() == "Mistral-7B (GQA)"
    assert result.text_content() == "KV cache of Mistral-7B (GQA): 536,870,912 bytes = 512 MiB"
    root.locator('[data-role="preset"]').select_option("Llama-3-8B (GQA)")
    watched_page.wait_for_function("(node) => node.textContent.includes('Llama-3-8B')", arg=result.element_handle())
    root.locator('[data-role="seq_len"]').fill("131072")
    root.locator('[data-role="batch"]').fill("64")
    root.locator('[data-role="precision"]').select_option("4")
    expected_bytes = kv_cache_bytes(32, 8, 128, 131072, 64, 4)
    watched_page.wait_for_function("([node, value]) => node.dataset.value === value",
                                   arg=[result.element_handle(), str(expected_bytes)])
    assert root.locator('[data-role="preset"]').input_value() == "Llama-3-8B (GQA)"
    root.locator('[data-role="n_kv_heads"]').fill("2")
    watched_page.wait_for_function("([node, value]) => node.dataset.value === value",
                                   arg=[result.element_handle(), str(kv_cache_bytes(32, 2, 128, 131072, 64, 4))])
    assert root.locator('[data-role="preset"]').input_value() == "(custom)"
    assert result.text_content().startswith("KV cache: ")  # no model's name on a custom shape


def test_both_explorers_on_the_chapter_page(visit, watched_page):
    visit(f"{CHAPTER}.html")
    root = watched_page.locator(".flash-explorer")
    assert root.count() == 1
    assert_shows(root.evaluate(_READ), expected(4, 3, True, 5, 0), "on the chapter page")
    before = signature(root)
    root.locator('[data-role="next"]').click()
    assert_shows(changed(root, before), expected(4, 3, True, 5, 1), "after one step")
    result = watched_page.locator('.kv-cache-calculator [data-role="cache-bytes"]')
    assert result.get_attribute("data-value") == str(kv_cache_bytes(32, 32, 128, 4096))
