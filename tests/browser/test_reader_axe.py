"""axe-core (npm, the engine of browsers' accessibility panels) finds no WCAG 2.2 A or AA
violation on any page of the site, in light and in dark mode, at a laptop's and at a
phone's width, after a reader has used every explorer (an edit, a pick, a toggle, a step
of a slider) and given a wrong answer to every answer box, so that the states a reader
reaches are checked, not only the page as it loads (issue 23, item 10)."""

from __future__ import annotations

import re

import pytest

import tools

pytestmark = pytest.mark.browser

AXE = tools.ROOT / "node_modules" / "axe-core" / "axe.min.js"
WCAG_22_A_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"]
WIDTHS = {"laptop": 1280, "phone": 390}

# In every explorer: type into its first number box, pick the next option of each select,
# flip its first checkbox twice... as a reader would, through the events the explorers
# listen to. Returns how many controls were used.
_USE_EXPLORERS = """() => {
  let used = 0;
  const fire = (node, ...types) => types.forEach((type) => node.dispatchEvent(new Event(type, { bubbles: true })));
  for (const area of document.querySelectorAll('.widget-subarea')) {
    if (area.querySelector('.attn-answer')) continue;
    const box = area.querySelector('input[type=number]:not(:disabled), input[type=text]:not(:disabled)');
    if (box) { box.value = String((parseFloat(box.value) || 0) + 0.5); fire(box, 'input', 'change'); used++; }
    for (const select of area.querySelectorAll('select:not(:disabled)')) {
      if (select.options.length > 1) {
        select.selectedIndex = (select.selectedIndex + 1) % select.options.length;
        fire(select, 'input', 'change'); used++;
      }
    }
    const tick = area.querySelector('input[type=checkbox]:not(:disabled)');
    if (tick) { tick.click(); used++; }
    const slider = area.querySelector('input[type=range]:not(:disabled)');
    if (slider) { slider.stepUp(); fire(slider, 'input', 'change'); used++; }
  }
  return used;
}"""
_AXE = """async (tags) => {
  const result = await axe.run(document, { runOnly: { type: 'tag', values: tags },
                                           resultTypes: ['violations'] });
  return result.violations.map((v) => ({ rule: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 4).map((n) => [n.target.join(' '), n.failureSummary.slice(0, 160)]),
    count: v.nodes.length }));
}"""


def answer_wrong(page):
    """Give every answer box on the page a wrong answer (its reply shown)."""
    boxes = page.locator(".attn-answer")
    for k in range(boxes.count()):
        box = boxes.nth(k)
        box.locator("input").fill("123456789")
        box.get_by_role("button", name="Check").click()
        box.locator(".attn-answer-message").filter(has_text=re.compile(r"\S")).wait_for()


@pytest.fixture(params=["light", "dark"])
def scheme(request):
    return request.param


@pytest.fixture
def browser_context_args(browser_context_args, scheme):
    return {**browser_context_args, "color_scheme": scheme}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("entry", tools.toc_pages())
def test_no_wcag_violation_once_every_control_is_used(entry, width, scheme, visit, watched_page):
    page = watched_page
    page.set_viewport_size({"width": WIDTHS[width], "height": 900})
    visit(f"{entry}.html")
    if entry in tools.notebook_pages():
        answer_wrong(page)
        page.evaluate(_USE_EXPLORERS)
        page.evaluate("() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 50)))")
    assert page.evaluate("document.documentElement.dataset.theme") == scheme
    page.add_script_tag(path=AXE)
    violations = page.evaluate(_AXE, WCAG_22_A_AA)
    assert not violations, f"{entry}, {scheme}, {width}: " + "\n".join(
        f"{v['rule']} ({v['impact']}, {v['count']} elements): {v['help']}: {v['nodes']}"
        for v in violations)
