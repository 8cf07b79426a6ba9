"""Browser fixtures: the built site served on 127.0.0.1, Debian's Chromium, and a page
that fails the test on any request to another host or any unexpected console error."""

from __future__ import annotations

import pathlib
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

import tools  # the repository's tools/, on pytest's pythonpath (pyproject.toml)

SCREENSHOTS = tools.ROOT / "build" / "screenshots"
_SESSION_START = pytest.StashKey[float]()

# Console errors that are known and verified harmless; anything else fails the test.
# (jupyter-book's duplicated THEBE_JS_URL script and the theme's "Got invalid theme mode"
# are gone: site_ext/page_assets.py.)
KNOWN_HARMLESS: tuple[str, ...] = ()


def pytest_configure(config):
    config.stash[_SESSION_START] = time.time()
    # pytest-playwright 0.10.0 declares its base_url fixture as a method, which pytest 9
    # deprecates: a warning about the plugin's code, not ours, on every browser test.
    config.addinivalue_line(
        "filterwarnings",
        "ignore:Session-scoped fixtures defined as instance methods:pytest.PytestRemovedIn10Warning",
    )


def pytest_terminal_summary(terminalreporter, config):
    start = config.stash[_SESSION_START]
    taken = [p for p in SCREENSHOTS.glob("*.png") if p.stat().st_mtime >= start]
    if taken:
        terminalreporter.write_line(f"Screenshots of {len(taken)} pages: {SCREENSHOTS}")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, **tools.CHROMIUM}


@dataclass
class Site:
    url: str  # the site's root, ending in /
    generated: pathlib.Path  # folder served under tools.GENERATED_PREFIX

    def write_page(self, name, widgets, title):
        """A page of ``widgets`` on the site's own scripts; returns its full URL."""
        return self.url + tools.write_widget_page(self.generated, name, widgets, title)[1:]


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    if not (tools.SITE / "index.html").exists():
        pytest.fail(f"no built site in {tools.SITE}: run `make book` first")
    generated = tmp_path_factory.mktemp("generated_pages")
    with tools.serve(generated) as url:
        yield Site(url, generated)


@pytest.fixture(scope="session")
def screenshots():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@dataclass
class Watch:
    """What a page did that fails a test: a request or websocket to anywhere but
    ``origin``, a console error (outside KNOWN_HARMLESS), an uncaught exception, a failed
    response, a dialog (alert) opened."""

    origin: str  # http://127.0.0.1:PORT/
    offsite: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    dialogs: list = field(default_factory=list)

    def is_local(self, url):
        # data: and blob: URLs never leave the page (anywidget imports its module from one).
        parts = urlsplit(url)
        return parts.scheme in ("data", "blob") or parts.netloc == urlsplit(self.origin).netloc

    def route(self, route):
        if self.is_local(route.request.url):
            route.continue_()
        else:
            self.offsite.append(route.request.url)
            route.abort()

    def refuse_socket(self, socket):
        self.offsite.append(socket.url)
        socket.close()

    def console(self, message):
        if message.type == "error":
            self.error(message.text)

    def error(self, text):
        if not any(known in text for known in KNOWN_HARMLESS):
            self.errors.append(text)

    def response(self, response):
        if response.status >= 400:
            self.errors.append(f"HTTP {response.status} for {response.url}")

    def dialog(self, dialog):
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def assert_clean(self):
        assert not self.offsite, f"requests to other hosts or websockets: {self.offsite}"
        assert not self.errors, f"console errors: {self.errors}"
        assert not self.dialogs, f"dialogs opened: {self.dialogs}"


@pytest.fixture
def watch_page(page):
    """``watch_page(origin)`` makes Playwright's page abort and record every request or
    websocket that does not go to ``origin``, and record console errors, uncaught
    exceptions, failed responses and dialogs; any of these fails the test at its end."""
    watches = []

    def start(origin):
        watched = Watch(origin)
        page.route("**/*", watched.route)
        page.route_web_socket(lambda url: not watched.is_local(url), watched.refuse_socket)
        page.on("console", watched.console)
        page.on("pageerror", lambda error: watched.error(str(error)))
        page.on("response", watched.response)
        page.on("dialog", watched.dialog)
        watches.append(watched)
        return page

    yield start
    for watched in watches:
        watched.assert_clean()


@pytest.fixture
def watched_page(watch_page, site):
    """Playwright's page, watched (see ``watch_page``) against the built site's origin."""
    page = watch_page(site.url)
    page.set_default_timeout(15_000)
    return page


# Every widget view tag has been replaced by its rendered view (the host inserts a
# div.widget-subarea before the tag). The maths arrives rendered (KaTeX, at build time).
_UNRENDERED_WIDGETS = """() => [...document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]')]
  .filter((tag) => {
    const area = tag.previousElementSibling;
    return !(area && area.classList.contains('widget-subarea') && area.childElementCount);
  })
  .map((tag) => JSON.parse(tag.textContent).model_id)"""


# The theme's buttons fade their colours (Bootstrap's .btn: 0.15 s) when the page turns
# dark on load: a colour read mid-way (axe's contrast, on a busy machine) is neither theme's.
_TRANSITIONS_DONE = """() => Promise.all(document.getAnimations()
  .filter((animation) => animation instanceof CSSTransition)
  .map((animation) => animation.finished.catch(() => null)))"""


@pytest.fixture
def visit(watched_page, site):
    """Open a URL (relative to the site's root, or absolute) in the watched page, check it
    answers 200, and wait until every widget is rendered and every colour has settled."""

    def go(url):
        response = watched_page.goto(url if "://" in url else site.url + url)
        assert response.status == 200, f"{url}: HTTP {response.status}"
        try:
            watched_page.wait_for_function(f"() => !({_UNRENDERED_WIDGETS})().length")
        except PlaywrightTimeout:
            missing = watched_page.evaluate(_UNRENDERED_WIDGETS)
            pytest.fail(f"{url}: widgets never rendered: {missing}")
        watched_page.evaluate(_TRANSITIONS_DONE)
        return response

    return go


@pytest.fixture
def saved_explorers(visit, watched_page):
    """Open a chapter's page and return the saved states of its explorers of one class
    (``_anywidget_id``), once every one carries the current front end ``esm`` (a stale
    execution cache would not)."""
    from attncourse.explorers.esm import bundle

    def states(chapter: str, explorer_id: str, esm: str) -> list[dict]:
        visit(f"{chapter}.html")
        state = watched_page.evaluate("""() => JSON.parse(document.querySelector(
          'script[type="application/vnd.jupyter.widget-state+json"]').textContent).state""")
        saved = [m["state"] for m in state.values() if m["state"].get("_anywidget_id") == explorer_id]
        assert saved, f"{chapter} holds no {explorer_id}"
        assert all(s["_esm"] == bundle(esm) for s in saved), \
            f"{chapter} carries an older {esm}: clear _build/.jupyter_cache and rebuild"
        return saved

    return states
