"""One ES module per widget, with the explorers' shared helpers inlined.

anywidget takes each widget's front end as a single ES module (``_esm``), saved inside the
widget state so that a built page works with no kernel and no server. A module saved that
way has no URL, so it cannot import a neighbour (``import ... from "./dom.js"`` has
nothing to resolve against). The explorers share their DOM and matrix helpers anyway:
``bundle`` replaces each such relative import of a file in ``attncourse/explorers`` with
that file's own source, once per module. The sources stay plain ES modules that Node or
a browser can also load from disk.

Only one form is understood, the one the front-end files use: a whole line
``import { a, b } from "./name.js";``. A bundler such as esbuild would do more, but it
would have to run wherever the package is installed (Colab, Binder), which has no npm.
"""

from __future__ import annotations

import pathlib
import re

__all__ = ["bundle", "stylesheet"]

# The explorers' front-end files sit beside their Python, in this package.
FRONT_END = pathlib.Path(__file__).parent
_RELATIVE_IMPORT = re.compile(r'^import \{[\w\s,]+\} from "\./([\w-]+\.js)";\n', re.MULTILINE)


def bundle(name: str) -> str:
    """``<name>`` of this package with its relative imports inlined, each file at most once.

    >>> source = bundle("attention_explorer.js")
    >>> "import" in source, source.count("export function el(")
    (False, 1)
    """
    return _inline(name, set())


def _inline(name: str, included: set[str]) -> str:
    path = FRONT_END / name
    if not path.is_file():
        raise FileNotFoundError(f"no front-end module {name!r} in {FRONT_END}")
    included.add(name)

    def replace(match: re.Match[str]) -> str:
        dependency = match.group(1)
        if dependency in included:
            return ""
        return f"// --- {dependency} ---\n{_inline(dependency, included)}// --- end of {dependency} ---\n"

    return _RELATIVE_IMPORT.sub(replace, path.read_text(encoding="utf-8"))


def stylesheet(*names: str) -> str:
    """The CSS files ``<name>`` of this package, in order, as one stylesheet (a widget has one)."""
    return "\n".join((FRONT_END / name).read_text(encoding="utf-8") for name in names)
