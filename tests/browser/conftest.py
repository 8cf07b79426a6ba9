"""Browser fixtures: the built site served on 127.0.0.1, Debian's Chromium, a page that
fails the test on any request to another host or any unexpected console error, and a
JupyterLab server with a live kernel."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
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
    harmless: tuple[str, ...] = ()  # errors this page's test knows and has verified harmless
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
        if not any(known in text for known in KNOWN_HARMLESS + self.harmless):
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


def _watch(page, watched: Watch) -> None:
    page.route("**/*", watched.route)
    page.route_web_socket(lambda url: not watched.is_local(url), watched.refuse_socket)
    page.on("console", watched.console)
    page.on("pageerror", lambda error: watched.error(str(error)))
    page.on("response", watched.response)
    page.on("dialog", watched.dialog)


@pytest.fixture
def watch_page(page):
    """``watch_page(origin)`` makes Playwright's page abort and record every request or
    websocket that does not go to ``origin``, and record console errors, uncaught
    exceptions, failed responses and dialogs; any of these fails the test at its end
    (but the errors named in ``harmless``)."""
    watches = []

    def start(origin, harmless=()):
        watched = Watch(origin, tuple(harmless))
        _watch(page, watched)
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


def _open(page, url: str):
    """Open ``url`` in ``page``, check it answers 200, and wait until every widget is
    rendered and every colour has settled."""
    response = page.goto(url)
    assert response.status == 200, f"{url}: HTTP {response.status}"
    try:
        page.wait_for_function(f"() => !({_UNRENDERED_WIDGETS})().length")
    except PlaywrightTimeout:
        missing = page.evaluate(_UNRENDERED_WIDGETS)
        pytest.fail(f"{url}: widgets never rendered: {missing}")
    page.evaluate(_TRANSITIONS_DONE)
    return response


@pytest.fixture
def visit(watched_page, site):
    """Open a URL (relative to the site's root, or absolute) in the watched page, check it
    answers 200, and wait until every widget is rendered and every colour has settled."""
    return lambda url: _open(watched_page, url if "://" in url else site.url + url)


# ---------------------------------------------------------------------------------------
# Pages shared by the checks that only read them. A chapter page takes 2-3 s to load and
# lay out on two busy cores, and about 170 checks (what sticks out, what is cut off, what
# scrolls, how large a control is, what an input is called) only read one of 56 pages
# (14 toc entries, at a phone's and a laptop's width, in both themes): each is loaded once
# per worker and handed to every check that reads it.


@dataclass
class _Shown:
    context: Any
    page: Any
    watch: Watch


class ShownPages:
    """A worker's pages of the site kept loaded, keyed by (entry, width, height, theme); the
    oldest is closed beyond ``keep`` (the checks of one entry run together, one after the
    other: see pytest_collection_modifyitems)."""

    def __init__(self, browser, site: Site, keep: int = 6):
        self.browser, self.site, self.keep = browser, site, keep
        self.shown: dict[tuple, _Shown] = {}

    def get(self, key: tuple) -> _Shown:
        if key in self.shown:
            self.shown[key] = self.shown.pop(key)  # now the newest
            return self.shown[key]
        entry, width, height, scheme = key
        context = self.browser.new_context(viewport={"width": width, "height": height},
                                           color_scheme=scheme)
        page = context.new_page()
        page.set_default_timeout(15_000)
        watch = Watch(self.site.url)
        _watch(page, watch)
        self.shown[key] = _Shown(context, page, watch)
        try:
            _open(page, f"{self.site.url}{entry}.html")
        except BaseException:
            self.drop(key)
            raise
        while len(self.shown) > self.keep:
            self.drop(next(iter(self.shown)))
        return self.shown[key]

    def drop(self, key: tuple) -> None:
        self.shown.pop(key).context.close()

    def close(self) -> None:
        for key in list(self.shown):
            self.drop(key)


@pytest.fixture(scope="session")
def _shown_pages(browser, site):
    pages = ShownPages(browser, site)
    yield pages
    pages.close()


@pytest.fixture
def shown_page(_shown_pages):
    """``shown_page(entry, width, scheme="light", height=900)``: the built page of a toc
    ``entry`` (e.g. "chapters/03_queries_keys_values"), loaded and settled as ``visit``
    leaves it, at that viewport and with the browser preferring that colour scheme, for a
    check that only reads it (the tests before it may have read the same page). Anything
    the page did since it loaded that ``watch_page`` would fail fails the test, and the
    page is then closed."""
    handed = []

    def show(entry: str, width: int, scheme: str = "light", height: int = 900):
        key = (entry, width, height, scheme)
        handed.append(key)
        return _shown_pages.get(key).page

    yield show
    for key in handed:
        shown = _shown_pages.shown.get(key)
        if shown and (shown.watch.offsite or shown.watch.errors or shown.watch.dialogs):
            _shown_pages.drop(key)
            shown.watch.assert_clean()


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items):
    """The checks that read a shared page of one toc entry run in one worker, one after the
    other (`make test` runs pytest with --dist loadgroup), so each page loads once there."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        entry = callspec.params.get("entry") if callspec else None
        if entry and "shown_page" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(f"page {entry}"))


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


# ---------------------------------------------------------------------------------------
# JupyterLab with a live kernel: one server for the session (the explorer's sync test and
# the reader edition's test share it: mark them xdist_group("lab"), so that `make test`'s
# --dist loadgroup runs them in one worker, on one server).

KERNEL_NAME = "attncourse-live-test"
KERNEL_DISPLAY = "attncourse (test)"
SERVER_START = 60  # seconds; a cold JupyterLab on two cores takes a few
# Straight to 127.0.0.1, even where the environment names an HTTP proxy.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Server:
    """A JupyterLab process being started: its log, and a failure that quotes the log."""

    def __init__(self, process: subprocess.Popen, log: pathlib.Path, deadline: float):
        self.process, self.log, self.deadline = process, log, deadline

    def fail(self, why: str):
        tail = "\n".join(self.log.read_text().splitlines()[-20:])
        pytest.fail(f"JupyterLab {why}; the end of its log ({self.log}):\n{tail}")

    def wait_a_moment(self, waiting_for: str) -> None:
        """Fail if the server died or the start took too long; else pause a moment."""
        if self.process.poll() is not None:
            self.fail(f"exited with code {self.process.returncode} before {waiting_for}")
        if time.monotonic() > self.deadline:
            self.fail(f"took over {SERVER_START} s before {waiting_for}")
        time.sleep(0.2)

    def port(self, runtime_dir: pathlib.Path) -> int:
        """The port the server chose (it was asked for port 0), from the info file it
        writes into its runtime folder once it has bound it."""
        info = runtime_dir / f"jpserver-{self.process.pid}.json"
        while True:
            # Until the file is there and whole, there is nothing to read.
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
                return json.loads(info.read_text())["port"]
            self.wait_a_moment(f"writing {info.name}")

    def wait_until_ready(self, status_url: str) -> None:
        """Poll the authenticated /api/status until it answers 200."""
        while True:
            try:
                with _NO_PROXY.open(status_url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError):
                pass  # not listening yet
            self.wait_a_moment("answering /api/status")


@dataclass
class Lab:
    url: str  # the server's root, ending in /
    token: str
    root: pathlib.Path  # the folder it serves: a test writes its notebooks here
    kernel_name: str = KERNEL_NAME  # a kernel running this test session's Python
    kernel_display: str = KERNEL_DISPLAY

    def notebook_url(self, name: str) -> str:
        """Opens ``name`` alone: the server is shared, and Lab would reopen beside it the
        notebooks an earlier test left open (``reset`` empties the saved workspace)."""
        return f"{self.url}lab/tree/{name}?token={self.token}&reset"


def write_kernel(data: pathlib.Path) -> None:
    """A kernelspec that runs this session's Python, so the kernel imports the ipykernel and
    attncourse installed beside the code that checks them."""
    kernel = data / "kernels" / KERNEL_NAME
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": KERNEL_DISPLAY,
        "language": "python",
    }))


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving a temporary folder (``lab.root``), with
    configuration, data, runtime, settings and workspaces of its own. Its notebooks render
    every cell, not only those in view (Lab 4's windowing), so a test reads a whole one."""
    with _jupyter_server(tmp_path_factory, "jupyterlab") as server:
        yield server


@pytest.fixture(scope="session")
def notebook_7(tmp_path_factory):
    """Notebook 7 (the `notebook` package) on a server of its own, set up as ``lab`` is:
    beside the JupyterLab a test had used, the shared server answered its fonts with 403
    and its front end called a file-browser command Lab had left in the shared state."""
    with _jupyter_server(tmp_path_factory, "notebook") as server:
        yield server


@contextlib.contextmanager
def _jupyter_server(tmp_path_factory, app: str):
    home = tmp_path_factory.mktemp(app)
    root, data, runtime, config = (
        home / name for name in ("notebooks", "data", "runtime", "config"))
    for folder in (root, data, runtime, config):
        folder.mkdir()
    write_kernel(data)
    settings = home / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    # The front end's news plugin asks the reader whether to fetch news from the internet
    # (and checks for updates): disabled as `jupyter labextension disable` would, here.
    (config / "labconfig").mkdir()
    (config / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))

    env = {key: value for key, value in os.environ.items()
           if key not in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_TOKEN")}
    env |= {
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(data),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "lab-workspaces"),
        "IPYTHONDIR": str(home / "ipython"),  # no profile or startup script of this machine
    }
    token = secrets.token_hex(16)
    command = [
        sys.executable, "-m", app,
        "--no-browser",
        "--allow-root",  # these machines run everything as root
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port=0",  # the system picks a free port; see Server.port
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
        # Nothing that reaches the internet: no news feed, no update check, an extension
        # manager that lists what is installed instead of querying PyPI.
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    log_path = home / "server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, which teardown ends
        )
    try:
        server = Server(process, log_path, deadline=time.monotonic() + SERVER_START)
        url = f"http://127.0.0.1:{server.port(runtime)}/"
        server.wait_until_ready(f"{url}api/status?token={token}")
        yield Lab(url, token, root)
    finally:
        # SIGTERM lets the server shut its kernels down (they run in sessions of their own).
        with contextlib.suppress(ProcessLookupError):  # it may have died on its own
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def lab_page(watch_page, lab):
    """Playwright's page, watched against the Lab server's origin (conftest.watch_page: any
    request elsewhere, console error, uncaught exception or dialog fails the test; Lab
    4.6.6 with the settings above logs no console error). Tall enough for a screenshot to
    hold an explorer and the cells below it."""
    page = watch_page(lab.url)
    page.set_default_timeout(30_000)
    page.set_viewport_size({"width": 1280, "height": 1400})
    return page
