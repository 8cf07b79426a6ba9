"""Which of KaTeX's fonts a page's maths draws with, read from KaTeX's own stylesheet.

A web font is fetched once the browser lays out text that needs it. A font fetched that late
can arrive after the first paint, and every formula drawn in it then reflows. The notation
page's table moved by a layout shift of 0.03 when its one inline sum waited for KaTeX_Size1.
So each page asks early for the fonts its maths uses (page_assets.preload_fonts).

katex.css gives each class its font with rules like
``.katex .op-symbol.small-op{font-family:KaTeX_Size1}``. An element with all of a rule's
classes is drawn in that rule's font, and ``@font-face`` names the file of that font's
family, weight and style. Everything else in the formula is KaTeX_Main, the font of
``.katex``.
"""

from __future__ import annotations

import re

BASE_FONT = "KaTeX_Main-Regular.woff2"  # .katex{font: ... KaTeX_Main}: every formula's text

_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_DECLARATION = re.compile(r"([a-z-]+):([^;]+)")
_WOFF2 = re.compile(r"url\((?:[^)]*/)?([^/)]+\.woff2)\)")
_CLASS = re.compile(r"\.([\w-]+)")
_COMBINATOR = re.compile(r"[\s>+~]+")
_CLASS_ATTRIBUTE = re.compile(r'class="([^"]*)"')


def _face(declarations: dict[str, str], family: str) -> tuple[str, bool, bool]:
    """A family, whether it is bold, whether it is italic."""
    weight = declarations.get("font-weight", "400")
    return (family.strip('"'), weight in ("700", "bold"),
            declarations.get("font-style", "normal") == "italic")


def class_fonts(css: str) -> list[tuple[frozenset[str], str]]:
    """Each rule of katex.css that picks a font, as (the classes an element needs, the file
    of the font it is drawn in). A rule that sets only a weight or a style applies it to
    KaTeX_Main, the family every formula inherits."""
    files = {}
    chosen = []
    for selectors, body in _RULE.findall(css):
        declarations = {name: value.strip() for name, value in _DECLARATION.findall(body)}
        selectors = selectors.strip()
        if selectors == "@font-face":
            woff2 = _WOFF2.search(declarations.get("src", ""))
            if woff2:
                files[_face(declarations, declarations["font-family"])] = woff2.group(1)
            continue
        if not {"font-family", "font-weight", "font-style"} & declarations.keys():
            continue
        family = declarations.get("font-family", "KaTeX_Main").split(",")[0]
        for selector in selectors.split(","):
            if not selector.startswith(".katex "):
                continue
            compounds = [part for part in _COMBINATOR.split(selector.strip()) if "." in part]
            chosen.append((frozenset(_CLASS.findall(compounds[-1])), _face(declarations, family)))
    return [(classes, files[face]) for classes, face in chosen if face in files]


def fonts_used(page_html: str, css: str) -> list[str]:
    """The font files the formulas in ``page_html`` draw with, sorted (none without a
    formula): KaTeX_Main's regular face, and the font of every rule of ``css`` whose
    classes some element of the page has."""
    elements = [frozenset(found.split()) for found in _CLASS_ATTRIBUTE.findall(page_html)]
    if not any("katex" in classes for classes in elements):
        return []
    needed = {BASE_FONT}
    for classes, font in class_fonts(css):
        if any(classes <= element for element in elements):
            needed.add(font)
    return sorted(needed)
