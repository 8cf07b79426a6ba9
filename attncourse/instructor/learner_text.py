"""Learner text made safe to keep, where it enters the grader.

A string in Python may hold a lone surrogate (a code point of U+D800-U+DFFF): JSON's
escape ``"\\ud800"`` decodes into one, and a kernel or a notebook file can carry it. No
UTF-8 file can hold it, so a report, a ledger or an executed copy written with it would
fail, for the whole class. It is replaced where the text comes in: the kernel's messages
(``run/channels.py``) and the submitted notebook (``submissions.read_submitted``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

REPLACEMENT = "\ufffd"  # what a UTF-8 decoder shows for bytes it cannot read
_SURROGATE = re.compile("[\ud800-\udfff]")


def cleaned(value: Any) -> Any:
    """``value`` (a string, or JSON-like dicts and lists of them) with every lone surrogate
    replaced by U+FFFD, keys too. Dicts and lists are changed in place and returned; the
    walk keeps its own stack, so no nesting a parser accepted is too deep for it.

    >>> cleaned({"text": ["ok", "a\\ud800b"], "\\udcff": 1})
    {'text': ['ok', 'a\ufffdb'], '\ufffd': 1}
    """
    if isinstance(value, str):
        return _SURROGATE.sub(REPLACEMENT, value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in [k for k in node if isinstance(k, str) and _SURROGATE.search(k)]:
                node[_SURROGATE.sub(REPLACEMENT, key)] = node.pop(key)
            entries = list(node.items())
        elif isinstance(node, list):
            entries = list(enumerate(node))
        else:
            continue
        for key, item in entries:
            if isinstance(item, str):
                if _SURROGATE.search(item):
                    node[key] = _SURROGATE.sub(REPLACEMENT, item)
            elif isinstance(item, (dict, list)):
                stack.append(item)
    return value


# What shows nothing besides the format characters: Unicode's other default-ignorable code
# points and variation selectors (DerivedCoreProperties.txt: Default_Ignorable_Code_Point,
# from Other_Default_Ignorable_Code_Point and Variation_Selector in PropList.txt, which
# Python's unicodedata does not expose), U+180E (a format character before Unicode 6.3),
# and the braille pattern blank, a letter that draws no dot.
_SHOWING_NOTHING = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2065, 0x2065),
                    (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
                    (0xE0000, 0xE0FFF))


def invisible(character: str) -> bool:
    """Whether ``character`` shows nothing where it is written: a format character (a
    zero-width space, a soft hyphen, a bidirectional mark, a tag), a variation selector, a
    blank letter, or another of Unicode's default-ignorable code points."""
    code = ord(character)
    return unicodedata.category(character) == "Cf" or any(low <= code <= high for low, high in _SHOWING_NOTHING)


def spaced(name: str) -> str:
    """``name`` with its white space as the grader compares names: one space between
    words, none at either end."""
    return " ".join(name.split())


def the_learner(typed: str, learners: Iterable[str]) -> str | None:
    """The learner of ``learners`` that ``typed`` (what an instructor typed: ``--learners``,
    the overrides, ``--learner``) names: itself, or else the one name that differs from it
    in white space alone (a folder 'zed ' is typed 'zed'); None where none or several do."""
    known = list(dict.fromkeys(learners))
    if typed in known:
        return typed
    alike = [name for name in known if spaced(name) == spaced(typed)]
    return alike[0] if len(alike) == 1 else None
