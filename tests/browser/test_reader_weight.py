"""Every page small, still and quiet (issue 23, items 4 and 9): at most 2 MB loaded
(uncompressed, everything included), a cumulative layout shift of at most 0.01 while it
loads, maths rendered when the site was built (KaTeX's HTML in the page: no MathJax, no
script typesetting after paint), icons without the theme's 1.5 MB Font Awesome script, a
favicon, and (through the watched page) no console error, failed request or request to
another host. Figures per page: ``make bench`` (section page-weight)."""

from __future__ import annotations

import re

import pytest

import tools
from tools import page_weight

pytestmark = pytest.mark.browser

PAGES = tools.toc_pages()
# What the pages used to load: the theme's icon script and MathJax.
DROPPED = re.compile(r"fontawesome\.js|mathjax", re.I)
_ICONS = """() => [...document.querySelectorAll('i.fa-solid, i.fa-brands, i.fa-regular')]
  .filter((icon) => icon.checkVisibility())
  .map((icon) => { const before = getComputedStyle(icon, '::before');
                   return { icon: icon.className, mask: before.maskImage || before.webkitMaskImage,
                            width: parseFloat(before.width), height: parseFloat(before.height) }; })"""
_PRELOADED_FONTS = """() => [...document.querySelectorAll('link[rel=preload][as=font]')]
  .map((link) => new URL(link.href).pathname.split('/').pop())"""


@pytest.mark.parametrize("entry", PAGES)
def test_a_page_weighs_at_most_2_mb_and_does_not_move_while_it_loads(entry, site, watched_page):
    figures = page_weight.measure(watched_page, f"{site.url}{entry}.html")
    heaviest = ", ".join(f"{name} {size / 1e6:.2f} MB"
                         for name, size in page_weight.heaviest(figures))
    assert figures["bytes"] <= page_weight.BUDGET_BYTES, (
        f"{entry}: {figures['bytes'] / 1e6:.2f} MB; heaviest: {heaviest}")
    assert figures["shift"] <= page_weight.MAX_LAYOUT_SHIFT, (
        f"{entry}: layout shift {figures['shift']:.3f}: {figures['shifts']}")
    dropped = [name for name, _ in figures["files"] if DROPPED.search(name)]
    assert not dropped, f"{entry} still loads {dropped}"
    # A font fetched once text needs it can arrive after the first paint (a shift seen on
    # some runs only): the page asks for the fonts its maths draws with, and only those.
    drawn = sorted(name.rsplit("/", 1)[-1] for name, _ in figures["files"]
                   if "/katex/fonts/" in name)
    assert sorted(watched_page.evaluate(_PRELOADED_FONTS)) == drawn, entry


@pytest.mark.parametrize("entry", PAGES)
def test_maths_arrives_rendered_and_icons_are_drawn_without_a_script(entry, visit, watched_page):
    page = watched_page
    visit(f"{entry}.html")
    formulas = page.locator("main .math")
    rendered = page.locator("main .math .katex")
    assert rendered.count() == formulas.count(), f"{entry}: formulas left to typeset"
    assert not page.evaluate("() => 'MathJax' in window")
    icons = page.evaluate(_ICONS)
    assert icons, f"{entry}: no icon shown (has the theme changed?)"
    undrawn = [icon for icon in icons
               if not icon["mask"].startswith('url("data:image/svg+xml')
               or not (icon["width"] > 0 and icon["height"] > 0)]
    assert not undrawn, f"{entry}: icons not drawn: {undrawn}"


def test_the_site_has_a_favicon(visit, watched_page):
    page = watched_page
    visit(f"{PAGES[0]}.html")
    icon = page.locator('link[rel="icon"]')
    assert icon.count() == 1
    response = page.request.get(icon.evaluate("(link) => link.href"))
    assert response.status == 200 and response.body().startswith(b"<svg")


def test_a_first_visit_logs_nothing(site, page):
    """No error or warning on the console of a first visit (nothing stored yet: the theme
    once logged "Got invalid theme mode"; jupyter-book's settings script written twice
    logged "Identifier 'THEBE_JS_URL' has already been declared")."""
    said = []
    page.on("console", lambda message: message.type in ("error", "warning")
            and said.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: said.append(f"pageerror: {error}"))
    for entry in (PAGES[0], tools.notebook_pages()[0]):
        page.goto(f"{site.url}{entry}.html")
        page.wait_for_load_state("load")
        page.evaluate(page_weight.SETTLED, 300)
    assert not said, said
