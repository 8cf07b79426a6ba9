"""Developer tools shared by the browser tests (tests/browser/) and the benchmark
(``python -m tools.bench``): serve the built site on 127.0.0.1, launch Debian's Chromium,
and write stand-alone pages holding explorers that load the site's own widget scripts.
"""

from __future__ import annotations

import contextlib
import functools
import html
import http.server
import json
import os
import pathlib
import threading
import time
from typing import Any

import yaml
from ipywidgets.embed import dependency_state, embed_data, escape_script

ROOT = pathlib.Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())

# Playwright cannot download browsers here; it drives the system's Chromium instead
# (Debian's, from `make system-packages`), or the one ATTNCOURSE_CHROMIUM names.
CHROMIUM: dict[str, Any] = {
    "executable_path": os.environ.get("ATTNCOURSE_CHROMIUM") or "/usr/bin/chromium",
    "args": [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ],
}

# Pages written by the tests and the benchmark are served under this prefix, next to the
# site (one level below its root, like a chapter), and never written into _build.
GENERATED_PREFIX = "/_generated/"
# Where a generated page stops arriving for a while (see _SiteHandler.do_GET).
PAUSE = "<!-- pause -->"
PAUSE_SECONDS = 0.5


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


class _SiteHandler(_QuietHandler):
    """Serves ``generated`` under GENERATED_PREFIX and the site everywhere else."""

    def __init__(self, *args, generated, **kwargs):
        self.generated = generated
        super().__init__(*args, **kwargs)

    def translate_path(self, path):
        if path.startswith(GENERATED_PREFIX):
            self.directory = str(self.generated)
            path = "/" + path[len(GENERATED_PREFIX):]
        return super().translate_path(path)

    def do_GET(self):
        """A generated page holding PAUSE is sent in two parts, PAUSE_SECONDS apart, so a
        test sees the browser parse a page that has not fully arrived."""
        path = pathlib.Path(self.translate_path(self.path.split("?")[0]))
        if not (self.path.startswith(GENERATED_PREFIX) and path.suffix == ".html"
                and path.is_file() and PAUSE in (text := path.read_text())):
            return super().do_GET()
        parts = [part.encode() for part in text.split(PAUSE, 1)]
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(sum(map(len, parts))))
        self.end_headers()
        self.wfile.write(parts[0])
        self.wfile.flush()
        time.sleep(PAUSE_SECONDS)
        self.wfile.write(parts[1])


@contextlib.contextmanager
def serve(generated: pathlib.Path, site: pathlib.Path = SITE):
    """Serve ``site`` at / and ``generated`` at GENERATED_PREFIX on a free port of
    127.0.0.1 from a background thread; yields the base URL (ending in /)."""
    handler = functools.partial(_SiteHandler, directory=str(site), generated=generated)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def toc_pages() -> list[str]:
    """Every page of the book in table-of-contents order, as _toc.yml names them
    (source path without suffix; the built page is that path + .html)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())

    def files(node):
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key, []):
                if "file" in child:
                    yield child["file"]
                yield from files(child)

    return [toc["root"], *files(toc)]


def notebook_pages() -> list[str]:
    """The pages of toc_pages() that are notebooks (the chapters)."""
    return [entry for entry in toc_pages() if (ROOT / f"{entry}.ipynb").exists()]


def widget_scripts() -> list[str]:
    """The <script> tags a built chapter page loads for its widgets, in order, as a page one
    level below the site root refers to them (nb_ipywidgets_js in _config.yml: each
    script, which Sphinx serves from _static, with its attributes)."""
    scripts = CONFIG["sphinx"]["config"]["nb_ipywidgets_js"]
    return [
        "<script" + "".join(f' {name}="{html.escape(value)}"' for name, value in attributes.items())
        + f' src="../_static/{html.escape(path)}"></script>'
        for path, attributes in scripts.items()
    ]


def write_widget_page(folder: pathlib.Path, name: str, widgets, title: str, head="") -> str:
    """Write ``folder/name`` showing ``widgets`` with the site's own widget scripts, as a
    built chapter does, and ``head`` (more HTML for <head>); returns its URL path (below
    GENERATED_PREFIX) for ``serve``."""
    state = dependency_state(widgets, drop_defaults=False)
    data = embed_data(views=widgets, drop_defaults=False, state=state)
    scripts = "\n".join(widget_scripts())
    views = "\n".join(
        f'<div><script type="application/vnd.jupyter.widget-view+json">'
        f"{escape_script(json.dumps(spec))}</script></div>"
        for spec in data["view_specs"]
    )
    (folder / name).write_text(
        f'<!DOCTYPE html>\n<html lang="en" data-content_root="../">\n<head>\n'
        f'<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n{head}\n{scripts}\n</head>\n'
        f'<body>\n<script type="application/vnd.jupyter.widget-state+json">'
        f'{escape_script(json.dumps(data["manager_state"]))}</script>\n{views}\n'
        f"</body>\n</html>\n"
    )
    return GENERATED_PREFIX + name
