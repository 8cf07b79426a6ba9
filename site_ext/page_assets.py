"""Sphinx extension: what every page loads, small and served by the site itself.

- Maths is rendered when the site is built (sphinxcontrib-katex with ``katex_prerender``),
  by the KaTeX of the npm package `katex` in node_modules, whose stylesheet and fonts the
  Makefile's site-assets copies into _static/vendor/katex: one KaTeX for the HTML and for
  its stylesheet, no MathJax (1.2 MB) and no formula that moves the page once typeset.
- Icons: the theme writes Font Awesome icons as ``<i class="fa-solid fa-bars">`` and loads
  a 1.5 MB script (fontawesome.js) that swaps each for an SVG. Instead, _static/icons.css
  draws each icon the built pages name as a CSS mask of the same SVG, taken from the npm
  package `@fortawesome/fontawesome-free` (the theme's version); the script is removed
  from every page and from the site.
- The theme's search button and myst-nb's hidden-cell toggles are named by their visible
  text ("Search Ctrl+K", "Show code cell source"), not by a label that hides it.
- The theme starts in "auto" mode (it follows the reader's system until they choose).
- pydata-sphinx-theme's inline search scripts (searchtools, language_data, searchindex:
  100 kB) stay on the search page; this site does not search as you type.
- A bibliography's entries are list items (docutils' role="doc-biblioentry" is deprecated).
- jupyter-book 1.0.4.post1 adds sphinx-thebe's settings script twice
  (``const THEBE_JS_URL``: a SyntaxError on every page): an inline script written twice
  into a page is left there once.
"""

from __future__ import annotations

import pathlib
import re
import socket
import time
from subprocess import PIPE, Popen
from urllib.parse import quote

import katex_fonts  # site_ext/, which Sphinx puts on the path of its local extensions
from sphinx.errors import ConfigError, ExtensionError

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE_MODULES = ROOT / "node_modules"
KATEX_JS = NODE_MODULES / "katex" / "dist" / "katex.min.js"
ICON_SVGS = NODE_MODULES / "@fortawesome" / "fontawesome-free" / "svgs"
ICONS_CSS = "icons.css"
KATEX_CSS = NODE_MODULES / "katex" / "dist" / "katex.min.css"
KATEX_FONTS = "vendor/katex/fonts"  # in _static (Makefile: site-assets)

# Font Awesome's style classes (and their older short names) and the folder of its SVGs.
_STYLES = {"fa-solid": "solid", "fas": "solid", "fa-brands": "brands", "fab": "brands",
           "fa-regular": "regular", "far": "regular"}
# Classes that change how an icon is drawn, not which icon it is.
_MODIFIERS = {"fa-lg", "fa-sm", "fa-xs", "fa-fw", "fa-spin", "fa-2x", "fa-3x"}
_CLASSES = re.compile(r'class="([^"]*\b(?:fa-solid|fa-brands|fa-regular|fas|fab|far)\b[^"]*)"')
# An icon a theme script writes (pydata-sphinx-theme.js: "fa-solid fa-xmark").
_SCRIPT_ICONS = re.compile(r"\b(fa-solid|fa-brands|fa-regular) (fa-[a-z0-9-]+)")
_FONTAWESOME_TAGS = re.compile(
    r"[ \t]*<!-- So that users can add custom icons -->\n"
    r"|[ \t]*<script[^>]*scripts/fontawesome\.js[^>]*></script>\n?"
    r"|[ \t]*<link[^>]*scripts/fontawesome\.js[^>]*/?>\n?")
# The theme's search button is named "Search" while it shows "Search Ctrl+K": a name that
# hides part of the visible text (WCAG 2.5.3); without the aria-label its text names it.
_SEARCH_BUTTON_NAME = re.compile(r'(<button[^>]*search-button__button[^>]*?) aria-label="Search"')
# myst-nb names a hidden cell's toggle "Toggle hidden content" over its visible "Show code
# cell source": the same fault; its text names it.
_TOGGLE_NAME = '<summary aria-label="Toggle hidden content">'
# docutils writes each entry of a bibliography's role="list" as role="doc-biblioentry", a
# role DPUB-ARIA 1.1 deprecates: axe then finds a list whose children are not list items
# (WCAG 1.3.1). Each entry is a list item.
_BIBLIOENTRY = ('role="doc-biblioentry"', 'role="listitem"')
_INLINE_SCRIPT = re.compile(r"[ \t]*<script>[^<]*</script>\n?")
_VIEWBOX = re.compile(r'viewBox="0 0 (\d+) (\d+)"')
# What pydata-sphinx-theme loads on every page for its search-as-you-type, which this site
# leaves off (theme option search_as_you_type): 100 kB per page, needed on search.html only.
_INLINE_SEARCH = re.compile(
    r'[ \t]*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)"></script>\n?')


def start_katex_server(cls, rundir, timeout):
    """sphinxcontrib-katex 0.9.11's KaTeXServer.start_server_process, but connecting until
    the server listens: Node creates the socket file when it binds, before it listens, and
    a connection in between is refused (a failed build, seen on a loaded machine)."""
    socket_path = rundir / "katex.sock"
    process = Popen(cls.build_command(socket=socket_path), stdin=PIPE, stdout=PIPE, cwd=rundir)
    deadline = time.monotonic() + timeout
    while True:
        if socket_path.is_socket():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(socket_path))
                return process, sock
            except ConnectionRefusedError:
                sock.close()
        if time.monotonic() > deadline:
            process.kill()
            raise cls.timeout_error(timeout)
        time.sleep(0.01)


def configure(app, config):
    if not KATEX_JS.exists():
        raise ConfigError(f"{KATEX_JS} is missing: run `make site-assets` (npm ci)")
    config.katex_js_path = str(KATEX_JS)


def preload_fonts(context):
    """Links that fetch the KaTeX fonts of the page's maths with its stylesheets: fetched
    only once text needs them, they arrived after the first paint and every formula drawn
    in them reflowed (a layout shift of 0.1 on the glossary, 0.03 on the notation page)."""
    fonts = katex_fonts.fonts_used(context.get("body", ""), KATEX_CSS.read_text(encoding="utf-8"))
    links = [f'<link rel="preload" href="{context["pathto"](f"_static/{KATEX_FONTS}/{font}", 1)}" '
             f'as="font" type="font/woff2" crossorigin>' for font in fonts]
    context["metatags"] = context.get("metatags", "") + "\n".join(links) + "\n" * bool(links)


def prepare_page(app, pagename, templatename, context, doctree):
    preload_fonts(context)
    # pydata-sphinx-theme reads its default mode from the page context, empty unless set
    # ("Got invalid theme mode" on a reader's first visit); _config.yml has no key for it.
    if not context.get("default_mode"):
        context["default_mode"] = "auto"


def once_each(page: str) -> str:
    """``page`` with each inline script written once: the first of identical ones stays."""
    seen: set[str] = set()

    def first(match):
        script = match.group(0).strip()
        if script in seen:
            return ""
        seen.add(script)
        return match.group(0)

    return _INLINE_SCRIPT.sub(first, page)


def icons_named(text: str) -> set[tuple[str, str]]:
    """The (style, name) of every Font Awesome icon an HTML page or a script names."""
    icons = set(_SCRIPT_ICONS.findall(text))
    for classes in _CLASSES.findall(text):
        names = classes.split()
        style = next(name for name in names if name in _STYLES)
        icons.update((style, name) for name in names
                     if name.startswith("fa-") and name not in _STYLES and name not in _MODIFIERS)
    return icons


def icon_rule(style: str, name: str) -> str:
    """The CSS that draws icon ``name`` (of Font Awesome ``style``) in the current colour,
    as wide as its SVG for a height of 1em."""
    path = ICON_SVGS / _STYLES[style] / f"{name.removeprefix('fa-')}.svg"
    if not path.exists():
        raise ExtensionError(f"no SVG for the icon {style} {name} in {ICON_SVGS}")
    svg = re.sub(r"<!--.*?-->", "", path.read_text()).strip()
    width, height = map(int, _VIEWBOX.search(svg).groups())
    return (f'.{style}.{name}::before{{--attn-icon:url("data:image/svg+xml,{quote(svg)}");'
            f"width:{width / height:.4g}em}}")


ICON_BASE = """/* Font Awesome icons as CSS masks of their SVGs (site_ext/page_assets.py), in place of
   the theme's 1.5 MB fontawesome.js. The icon elements do not use the icon fonts either
   (an empty element in a web font still fetches it: 118 kB for the GitHub icon alone). */
.fa-solid, .fa-brands, .fa-regular, .fas, .fab, .far { font-family: inherit !important; }
.fa-solid::before, .fa-brands::before, .fa-regular::before, .fas::before, .fab::before,
.far::before {
  content: "" !important; display: inline-block; height: 1em; vertical-align: -0.125em;
  background-color: currentColor;
  -webkit-mask: var(--attn-icon) center / contain no-repeat;
  mask: var(--attn-icon) center / contain no-repeat;
}
"""


def icons_without_fontawesome(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    out = pathlib.Path(app.outdir)
    static = out / "_static"
    icons = set()
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        icons |= icons_named(text)
        stripped = _FONTAWESOME_TAGS.sub("", text)
        if page != out / "search.html":
            stripped = _INLINE_SEARCH.sub("", stripped)
        stripped = _SEARCH_BUTTON_NAME.sub(r"\1", once_each(stripped)).replace(_TOGGLE_NAME, "<summary>")
        stripped = stripped.replace(*_BIBLIOENTRY)
        if stripped != text:
            page.write_text(stripped, encoding="utf-8")
    for script in (static / "scripts").glob("*.js"):
        if not script.name.startswith("fontawesome"):
            icons |= icons_named(script.read_text(encoding="utf-8"))
    for leftover in (static / "scripts").glob("fontawesome.js*"):
        leftover.unlink()
    rules = [icon_rule(style, name) for style, name in sorted(icons)]
    (static / ICONS_CSS).write_text(ICON_BASE + "\n".join(rules) + "\n", encoding="utf-8")


def setup(app):
    from sphinxcontrib.katex import KaTeXServer

    KaTeXServer.start_server_process = classmethod(start_katex_server)
    app.connect("config-inited", configure)
    app.connect("html-page-context", prepare_page, priority=100)  # before one that returns a template
    app.connect("build-finished", icons_without_fontawesome)
    app.add_css_file(ICONS_CSS)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
