"""What a page of the built site weighs and how much it moves while it loads: shared by the
browser tests (tests/browser/test_reader_weight.py) and ``make bench`` (section page-weight).
"""

from __future__ import annotations

from typing import Any

BUDGET_BYTES = 2_000_000  # every page, everything it loads, uncompressed (issue 23)
MAX_LAYOUT_SHIFT = 0.01  # cumulative layout shift while the page loads

# From the start of a navigation: every layout shift not caused by the reader, with the
# elements that moved.
WATCH_SHIFTS = """(() => {
  window.__attnShifts = [];
  new PerformanceObserver((list) => {
    for (const shift of list.getEntries()) {
      if (shift.hadRecentInput) continue;
      window.__attnShifts.push({ value: shift.value, moved: (shift.sources || []).map((s) =>
        s.node ? (s.node.nodeName + '.' + (s.node.className || '')).slice(0, 60) : '?') });
    }
  }).observe({ type: 'layout-shift', buffered: true });
})()"""
# Until the page has requested nothing new for ``quiet`` ms (fonts are fetched once text
# that needs them is laid out, after the load event).
SETTLED = """async (quiet) => {
  let seen = -1;
  while (performance.getEntriesByType('resource').length !== seen) {
    seen = performance.getEntriesByType('resource').length;
    await new Promise((later) => setTimeout(later, quiet));
  }
}"""
# The page's own HTML and every file it loaded, with its uncompressed size; the shifts.
_FIGURES = """() => ({
  files: [performance.getEntriesByType('navigation')[0], ...performance.getEntriesByType('resource')]
    .map((e) => [e.name.replace(location.origin, ''), e.decodedBodySize]),
  shifts: window.__attnShifts,
})"""


def measure(page, url: str, quiet_ms: int = 500) -> dict[str, Any]:
    """Load ``url`` in ``page`` (fresh, no cache) and return what it loaded and how it
    moved: ``bytes`` (total, uncompressed), ``files`` [(path, bytes)], ``shift``
    (cumulative layout shift), ``shifts`` (each shift and the elements it moved)."""
    page.add_init_script(WATCH_SHIFTS)
    page.goto(url)
    page.wait_for_load_state("load")
    page.evaluate(SETTLED, quiet_ms)
    figures = page.evaluate(_FIGURES)
    figures["bytes"] = sum(size for _, size in figures["files"])
    figures["shift"] = sum(shift["value"] for shift in figures["shifts"])
    return figures


def heaviest(figures: dict[str, Any], count: int = 4) -> list[tuple[str, int]]:
    """The ``count`` largest files a measured page loaded."""
    return sorted(figures["files"], key=lambda file: -file[1])[:count]
