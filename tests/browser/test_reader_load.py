"""Explorers that appear at once (issue 16): a chapter page shows its widgets through the
site's own anywidget host (site_static/anywidget-host.js), never through the 3.6 MB widget
manager and require.js; every widget it saved is an anywidget the host can show; a widget
drawn before the reader touches anything moves nothing; and one the host cannot show is
named on the console while the others still work. Timings are for `make bench`, not here.
That every explorer renders and responds with no kernel is checked on every page by
test_explorer_browser.py, test_graph_explorer_browser.py, test_conv_explorer_browser.py
and test_reader_answer_box.py, which all go through this host."""

from __future__ import annotations

import re

import pytest

import tools
from attncourse.explorers.attention_explorer import AttentionExplorer

pytestmark = pytest.mark.browser

# What the pages used to load for their widgets: the widget manager, its AMD loader
# (require.js, not MathJax's TeX extension of that name) and anywidget's AMD module.
WIDGET_MANAGER = re.compile(r"html-manager|embed-amd|/requirejs/|/anywidget/index\.js")
_SAVED_MODELS = """() => JSON.parse(document.querySelector(
  'script[type="application/vnd.jupyter.widget-state+json"]').textContent).state"""
_VIEWS = """() => [...document.querySelectorAll(
  'script[type="application/vnd.jupyter.widget-view+json"]')]
  .map((tag) => JSON.parse(tag.textContent).model_id)"""


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_a_chapter_shows_its_widgets_without_the_widget_manager(entry, visit, watched_page):
    requested = []
    watched_page.on("request", lambda request: requested.append(request.url))
    visit(f"{entry}.html")  # every view rendered (or the visit fails)
    models = watched_page.evaluate(_SAVED_MODELS)
    shown = {models[model_id]["model_module"] for model_id in watched_page.evaluate(_VIEWS)}
    assert shown == {"anywidget"}, f"{entry} shows widgets other than anywidgets: {shown}"
    standard = sorted({m["model_name"] for m in models.values()
                       if m["model_module"] == "@jupyter-widgets/controls"})
    assert not standard, f"{entry} saved standard ipywidgets controls: {standard}"
    loaded = [url for url in requested if WIDGET_MANAGER.search(url)]
    assert not loaded, f"{entry} loaded the widget manager: {loaded}"
    assert any(url.split("?")[0].endswith("/_static/anywidget-host.js") for url in requested)


def test_the_built_site_ships_no_widget_manager():
    shipped = [path.relative_to(tools.SITE).as_posix() for path in tools.SITE.rglob("*")
               if WIDGET_MANAGER.search("/" + path.relative_to(tools.SITE).as_posix())]
    assert not shipped, f"left in the site: {shipped[:5]}"


# Every animation frame from the start of the page: its time and, for each widget view,
# its cell's height, whether the host has drawn it, and whether the parser has passed its
# tag (something follows it in the document).
_WATCH_FRAMES = """(() => {
  window.__frames = [];
  const passed = (node) => {
    for (let at = node; at && at !== document; at = at.parentNode) if (at.nextSibling) return true;
    return false;
  };
  const frame = (time) => {
    const tags = document.querySelectorAll(
      'script[type="application/vnd.jupyter.widget-view+json"]');
    window.__frames.push({ time, views: [...tags].map((tag) => {
      const area = tag.previousElementSibling;
      return { drawn: !!(area && area.classList.contains('widget-subarea') && area.childElementCount),
               passed: passed(tag), height: tag.parentElement.getBoundingClientRect().height };
    }) });
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
})()"""


def watch_load(page, url):
    """Load ``url`` watching every frame (_WATCH_FRAMES) until it has loaded and settled;
    the frames and the time of the first paint."""
    page.add_init_script(_WATCH_FRAMES)
    page.goto(url)
    page.wait_for_load_state("load")
    page.evaluate("() => new Promise((settled) => setTimeout(settled, 500))")
    first_paint = page.evaluate("performance.getEntriesByName('first-paint')[0].startTime")
    return page.evaluate("window.__frames"), first_paint


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_a_drawn_widget_keeps_its_size_while_the_page_loads(entry, site, watched_page):
    """Its stylesheet is in place before it is drawn, so a widget never restyles (and moves
    what follows) once the reader has seen it: its cell has one height in every frame
    from the first in which it is drawn until the page has loaded and settled."""
    frames, _ = watch_load(watched_page, f"{site.url}{entry}.html")
    heights = {}
    for frame in frames:
        for k, view in enumerate(frame["views"]):
            if view["drawn"]:
                heights.setdefault(k, set()).add(round(view["height"], 1))
    views = watched_page.evaluate(_VIEWS)
    assert sorted(heights) == list(range(len(views))), f"{entry}: views never drawn"
    changed = {k: sorted(h) for k, h in heights.items() if len(h) > 1}
    assert not changed, f"{entry}: widgets changed height once drawn: {changed}"


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_no_painted_frame_shows_the_text_below_a_view_before_the_view(entry, site, watched_page):
    """A view is drawn before what follows it is painted, so it pushes nothing down: the
    host arrives before the first paint and evaluates the course's modules at once."""
    frames, first_paint = watch_load(watched_page, f"{site.url}{entry}.html")
    # A frame's callbacks run just before it is painted: the first painted frame is the
    # last one that started before the first paint.
    before = [f for f in frames if f["time"] <= first_paint]
    painted = before[-1:] + [f for f in frames if f["time"] > first_paint]
    late = [(round(f["time"]), k) for f in painted
            for k, view in enumerate(f["views"]) if view["passed"] and not view["drawn"]]
    assert not late, f"{entry}: views passed but not drawn in painted frames (ms, view): {late}"


def test_a_widget_the_host_cannot_show_is_named_and_the_others_still_work(site, page):
    # Not the watched page: the console error is what this test expects.
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    shown = AttentionExplorer(["a", "b"], [[1.0, 0.0], [0.0, 1.0]])
    lost = AttentionExplorer(["c", "d"], [[1.0, 0.0], [0.0, 1.0]])
    url = site.write_page("lost.html", [shown, lost], "A lost model")
    # The second view names a model the page did not save (a page edited by hand).
    path = site.generated / "lost.html"
    path.write_text(path.read_text().replace(f'"model_id": "{lost.model_id}"',
                                             '"model_id": "missing-model"'))
    page.goto(url)
    weights = page.locator("canvas[data-role=weights]")
    before = weights.get_attribute("data-values")
    page.locator('[data-cell="X[1][0]"]').fill("2")  # the other explorer responds
    page.wait_for_function("(before) => document.querySelector('canvas[data-role=weights]')"
                           ".dataset.values !== before", arg=before)
    assert page.locator(".attn-explorer").count() == 1
    said = [error.splitlines()[0] for error in errors  # the message, not its stack
            if not error.startswith("Failed to load resource")]  # the generated page's favicon
    assert said == ["anywidget host: Error: no saved state for widget model missing-model"]


def test_a_view_whose_tag_arrives_in_two_parts_is_shown_once_it_is_whole(site, watched_page):
    # The parser inserts a view's <script> before its text has all arrived; a view read
    # then is half a JSON object (CI once failed on it: "Unexpected end of JSON input").
    explorer = AttentionExplorer(["a", "b"], [[1.0, 0.0], [0.0, 1.0]])
    url = site.write_page("slow.html", [explorer], "A page that arrives slowly")
    path = site.generated / "slow.html"
    view = '<script type="application/vnd.jupyter.widget-view+json">{'
    path.write_text(path.read_text().replace(view, view + tools.PAUSE))
    watched_page.goto(url)
    watched_page.locator(".attn-explorer canvas[data-role=weights]").wait_for()
    assert watched_page.locator(".attn-explorer").count() == 1


STATE_TAG = '<script type="application/vnd.jupyter.widget-state+json">'


@pytest.mark.parametrize("pause", ["inside the state", "before the state"])
def test_a_saved_state_that_arrives_late_is_read_once_it_is_whole(site, watched_page, pause):
    # A generated page holds its widget state in the body, after the host's <script> in the
    # head. On a busy machine the test server's second 64 KiB of a page came late and the
    # host, already running, read the state half arrived ("Unterminated string in JSON at
    # position 65253"), or not yet there, and showed no widget. Here the rest of the page
    # comes PAUSE_SECONDS late, from the middle of the state's text or from before its tag.
    explorer = AttentionExplorer(["a", "b"], [[1.0, 0.0], [0.0, 1.0]])
    url = site.write_page("late_state.html", [explorer], "A page whose widget state arrives late")
    path = site.generated / "late_state.html"
    text = path.read_text()
    start = text.index(STATE_TAG)
    cut = (start + text.index("</script>", start)) // 2 if pause == "inside the state" else start
    path.write_text(text[:cut] + tools.PAUSE + text[cut:])
    watched_page.goto(url)
    watched_page.locator(".attn-explorer canvas[data-role=weights]").wait_for()
    assert watched_page.locator(".attn-explorer").count() == 1


def test_where_the_page_forbids_eval_the_explorers_are_still_shown(site, watched_page):
    # The host runs the course's modules with new Function when it may, and imports them
    # when a Content-Security-Policy forbids eval.
    explorer = AttentionExplorer(["a", "b"], [[1.0, 0.0], [0.0, 1.0]])
    policy = "script-src 'self' 'unsafe-inline' blob:"
    path = tools.write_widget_page(site.generated, "no_eval.html", [explorer], "No eval",
                                   head=f'<meta http-equiv="Content-Security-Policy" content="{policy}">')
    watched_page.goto(site.url + path.removeprefix("/"))
    watched_page.locator(".attn-explorer canvas[data-role=weights]").wait_for()
    assert watched_page.locator(".attn-explorer").count() == 1
