"""Browser fixtures: the built site served on 127.0.0.1, Debian's Chromium, and a page
that fails the test on any request to another host or any unexpected console error."""

from __future__ import annotations

import pathlib
import time
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

import tools  # the repository's tools/, on pytest's pythonpath (pyproject.toml)

SCREENSHOTS = tools.ROOT / "build" / "screenshots"
_SESSION_START = pytest.StashKey[float]()

# Console errors that are known and verified harmless; anything else fails the test.
KNOWN_HARMLESS = (
    # jupyter-book 1.0.4.post1 writes `const THEBE_JS_URL` twice into every page, even with
    # thebe off; the second declaration is a SyntaxError that stops nothing else.
    "Identifier 'THEBE_JS_URL' has already been declared",
    # pydata-sphinx-theme on a first visit, before a theme mode is stored; it then picks auto.
    "Got invalid theme mode",
)


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
    """What a page did that a test must know about."""

    origin: str
    offsite: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    dialogs: list = field(default_factory=list)

    def route(self, route):
        url = route.request.url
        if url.startswith(self.origin) or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.offsite.append(url)
            route.abort()

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


@pytest.fixture
def watched_page(page, site):
    """Playwright's page with every request leaving 127.0.0.1 aborted and recorded, and
    console errors, uncaught exceptions, failed responses and dialogs recorded; any of these
    fails the test."""
    watch = Watch(origin=site.url)
    page.route("**/*", watch.route)
    page.on("websocket", lambda socket: watch.offsite.append(socket.url))  # the site opens none
    page.on("console", watch.console)
    page.on("pageerror", lambda error: watch.error(str(error)))
    page.on("response", watch.response)
    page.on("dialog", watch.dialog)
    page.set_default_timeout(15_000)
    yield page
    assert not watch.offsite, f"requests to other hosts or websockets: {watch.offsite}"
    assert not watch.errors, f"console errors: {watch.errors}"
    assert not watch.dialogs, f"dialogs opened: {watch.dialogs}"


# Every widget view tag has been replaced by its rendered view (html-manager inserts a
# div.widget-subarea before the tag), and MathJax has typeset the page.
_UNRENDERED_WIDGETS = """() => [...document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]')]
  .filter((tag) => {
    const area = tag.previousElementSibling;
    return !(area && area.classList.contains('widget-subarea') && area.childElementCount);
  })
  .map((tag) => JSON.parse(tag.textContent).model_id)"""
_MATH_TYPESET = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
}"""


@pytest.fixture
def visit(watched_page, site):
    """Open a URL (relative to the site's root, or absolute) in the watched page, check it
    answers 200, and wait until every widget and all the maths are rendered."""

    def go(url):
        response = watched_page.goto(url if "://" in url else site.url + url)
        assert response.status == 200, f"{url}: HTTP {response.status}"
        try:
            watched_page.wait_for_function(f"() => !({_UNRENDERED_WIDGETS})().length")
        except PlaywrightTimeout:
            missing = watched_page.evaluate(_UNRENDERED_WIDGETS)
            pytest.fail(f"{url}: widgets never rendered: {missing}")
        watched_page.evaluate(_MATH_TYPESET)
        return response

    return go
