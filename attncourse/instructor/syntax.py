"""Python's parser, safe to call from the grader's threads.

Python 3.11 keeps the depth of the syntax tree ``ast.parse`` is building in one place for
the whole process (CPython issue gh-106905). When a thread switch lands inside a parse (a
garbage collection that runs Python code can cause one) and another thread parses
meanwhile, the first fails with "SystemError: AST constructor recursion depth mismatch".
The grader reads notebooks in threads, so everything it parses goes through ``parse``,
one parse at a time: parsing takes milliseconds, running a notebook seconds.
"""

from __future__ import annotations

import ast
import threading

# What Python raises for a cell it cannot parse: bad syntax, a null byte (ValueError before
# Python 3.11.4), nesting too deep for the parser (RecursionError, or MemoryError from its stack).
UNPARSEABLE = (SyntaxError, ValueError, RecursionError, MemoryError)

_ONE_AT_A_TIME = threading.Lock()


def parse(source: str) -> ast.Module:
    """``ast.parse(source)``, never while another thread parses; raises one of UNPARSEABLE
    for source Python cannot parse."""
    with _ONE_AT_A_TIME:
        return ast.parse(source)
