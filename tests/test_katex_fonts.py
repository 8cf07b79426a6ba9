"""site_ext/katex_fonts.py: the fonts a page's formulas draw with, read from katex.css. The
browser's own choice is checked page by page in tests/browser/test_reader_weight.py."""

from __future__ import annotations

import pathlib

import pytest

from site_ext import katex_fonts

KATEX_CSS = pathlib.Path(__file__).resolve().parents[1] / "node_modules/katex/dist/katex.min.css"
STYLESHEET = (
    '@font-face{font-family:KaTeX_Main;font-style:normal;font-weight:400;'
    'src:url(fonts/KaTeX_Main-Regular.woff2) format("woff2"),url(fonts/KaTeX_Main-Regular.woff)}'
    '@font-face{font-family:KaTeX_Main;font-style:normal;font-weight:700;'
    'src:url(fonts/KaTeX_Main-Bold.woff2) format("woff2")}'
    '@font-face{font-family:"KaTeX_Math";font-style:italic;font-weight:400;'
    'src:url(fonts/KaTeX_Math-Italic.woff2) format("woff2")}'
    '@font-face{font-family:KaTeX_Size1;font-style:normal;font-weight:400;'
    'src:url(fonts/KaTeX_Size1-Regular.woff2) format("woff2")}'
    ".katex{font:normal 1.21em KaTeX_Main,serif}"
    ".katex .textbf{font-weight:700}"
    ".katex .mathnormal{font-family:KaTeX_Math;font-style:italic}"
    ".katex .op-symbol.small-op,.katex .delimsizing.mult .delim-size1>span{font-family:KaTeX_Size1}"
    ".katex .boldsymbol{font-family:KaTeX_Math;font-style:italic;font-weight:700}"
    ".katex-display>.katex{text-align:center}"
)


def formula(*classes: str) -> str:
    spans = "".join(f'<span class="{names}">x</span>' for names in classes)
    return f'<p>Text <span class="katex"><span class="katex-html">{spans}</span></span></p>'


def test_each_rule_names_its_classes_and_the_file_of_its_family_weight_and_style():
    chosen = dict(katex_fonts.class_fonts(STYLESHEET))
    assert chosen == {
        frozenset({"textbf"}): "KaTeX_Main-Bold.woff2",  # a weight alone: KaTeX_Main's
        frozenset({"mathnormal"}): "KaTeX_Math-Italic.woff2",
        frozenset({"op-symbol", "small-op"}): "KaTeX_Size1-Regular.woff2",
        frozenset({"delim-size1"}): "KaTeX_Size1-Regular.woff2",
    }  # boldsymbol's face has no @font-face here: left out, not guessed


@pytest.mark.parametrize(("classes", "fonts"), [
    (["mord mathnormal"], ["KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2"]),
    (["mop op-symbol small-op"], ["KaTeX_Main-Regular.woff2", "KaTeX_Size1-Regular.woff2"]),
    (["mop op-symbol"], ["KaTeX_Main-Regular.woff2"]),  # one of the rule's two classes
    (["small-op"], ["KaTeX_Main-Regular.woff2"]),
    (["mord textbf", "mord mathnormal"],
     ["KaTeX_Main-Bold.woff2", "KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2"]),
])
def test_a_page_needs_the_base_font_and_the_font_of_every_rule_its_elements_match(classes, fonts):
    assert katex_fonts.fonts_used(formula(*classes), STYLESHEET) == fonts


def test_a_page_without_a_formula_needs_no_font_even_if_its_classes_look_like_katex():
    assert katex_fonts.fonts_used('<p class="mathnormal">prose</p>', STYLESHEET) == []


def test_katex_s_own_stylesheet_gives_the_fonts_katex_draws_with():
    chosen = dict(katex_fonts.class_fonts(KATEX_CSS.read_text(encoding="utf-8")))
    assert chosen[frozenset({"mathnormal"})] == "KaTeX_Math-Italic.woff2"
    assert chosen[frozenset({"op-symbol", "small-op"})] == "KaTeX_Size1-Regular.woff2"
    assert chosen[frozenset({"delimsizing", "size4"})] == "KaTeX_Size4-Regular.woff2"
    assert chosen[frozenset({"mathbb"})] == "KaTeX_AMS-Regular.woff2"
    assert chosen[frozenset({"boldsymbol"})] == "KaTeX_Math-BoldItalic.woff2"
    assert chosen[frozenset({"textbf"})] == "KaTeX_Main-Bold.woff2"
