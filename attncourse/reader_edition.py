"""The reader edition of a chapter: its notebook as JupyterLab, Notebook 7, Colab and VS Code
show it, none of which runs the book's Sphinx build.

Only markdown cells change. Every MyST role and directive is written out as plain Markdown, as
the built page shows it: a glued number as its text on the page, a citation as the page's
"[Author et al., year]" linking to the site's references, a glossary term or a reference to
another page's section as a link to the site, a chapter reference as a link to the sibling
notebook, an admonition as a blockquote with a bold title, an exercise as a heading, a
solution folded in ``<details>``. A label becomes an anchor where it was (``<a id="label">``,
as an exercise's label does above its heading), and a reference or a ``[text](#label)`` link
to a label of the same chapter leads to it, in the notebook. A sentence built around a
``{launch}`` link ("open this chapter in Colab or Binder") is dropped, or only the
parenthesis that holds the links: the reader is in a live notebook already, and a handout's
link would open the published edition, solutions included. Comments and an exercise's or
solution's end are removed (and a cell left empty with them). The prose's quotes, dashes and
ellipses are typeset as the page's (Sphinx's smartquotes, run on the same text), never
inside code, maths, HTML or a URL. Code cells keep their source, id and tags byte for byte
(the grader matches a learner's cells by their source); those the page hides (``hide-input``,
``remove-input``, solutions, hidden tests) are collapsed (Jupyter's ``source_hidden``).
Outputs come from the executed book, less what the page leaves out (``remove-output``,
``remove-cell``, hidden tests, checks); a solution's, which the page shows in its dropdown,
are collapsed (``outputs_hidden``); a widget's output is replaced by a line that says what
will appear once the cell runs with a kernel.

The MyST is read by markdown-it-py with the plugins myst-parser itself uses (``myst_role``,
``myst_block``, ``colon_fence``, ``dollarmath``), so a role inside code or maths
is left alone, and the roles found are replaced where the parser found them.

Pure functions: a chapter notebook, the same notebook as the book executed it (its glued
values and outputs) and the site's references (``site_ext/reader_edition.py`` gathers them
from the Sphinx build) in, a notebook out. Besides them, where ``make book`` writes the
edition and whether it is fresh (``edition_folder``, ``edition_problems``), for the two that
read it: the publishing step and the student handout.
"""

from __future__ import annotations

import ast
import copy
import html
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from posixpath import dirname, join, normpath
from typing import Any

import nbformat
from docutils.utils.smartquotes import educate_tokens
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin
from mdit_py_plugins.myst_role import myst_role_plugin

# Admonitions the page titles by their kind (docutils' names, Sphinx's "seealso").
ADMONITION_TITLES = {
    "note": "Note", "tip": "Tip", "hint": "Hint", "important": "Important",
    "warning": "Warning", "caution": "Caution", "attention": "Attention", "danger": "Danger",
    "error": "Error", "seealso": "See also",
}
# Where the build writes the edition, beside the site (_build/html): _build/reader/chapters/.
EDITION_FOLDER = Path("_build") / "reader"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# Cells whose input the page hides (behind a toggle or entirely): collapsed in the edition.
HIDDEN_INPUT_TAGS = {"hide-input", "remove-input", "solution", "hidden-test"}
# Cells whose output the page leaves out, or that give an exercise away.
NO_OUTPUT_TAGS = {"remove-output", "remove-cell", "hidden-test", "check"}
# Cells whose output the page shows only on request (a solution's, in its dropdown): kept,
# collapsed (Jupyter's ``outputs_hidden``), since a code cell cannot sit inside <details>.
FOLDED_OUTPUT_TAGS = {"solution"}
# Characters that would change how a glued text reads as Markdown.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>$|])")
# A line opening with these reads as a list item (a number and "." or ")").
_LIST_MARKER = re.compile(r"(\d{1,9})([.)])(?=[ \t]|$)")
_OPTION = re.compile(r"^:([\w-]+):[ \t]*(.*)$")
_SOLUTION_BODY = "\x00solution\x00"  # where a solution's text begins, until it is folded
# What the page's smartquotes does (Sphinx's default smartquotes_action, which the book
# keeps): quotes, "--" and "---" as dashes, "..." as an ellipsis.
SMARTQUOTES = "qDe"
# The end of a sentence: its mark, closing brackets or quotes, then a space and no
# lower-case word (so "e.g. the" goes on), or the paragraph's end.
_SENTENCE_END = re.compile(r"[.?!][)\]\"'’”]*(?=\s+[^\sa-z]|\s*$)")
# What is left of a parenthesis that holds only {launch} links: commas and "or"/"and".
_LINKS_ONLY = re.compile(r"[\s,;]*(?:(?:or|and)[\s,;]*)*")
_URL = re.compile(r"https?://[^\s<>()]+")
# A link's "](target "title")" after its text (and the emphasis its text closes), an image.
_TARGET = r"\((?:[^()\s]|\([^()]*\))*(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
_LINK_TARGET = re.compile(r"[*_~]*\]" + _TARGET)
_IMAGE = re.compile(r"!\[(?:\\.|[^\]\\])*\]" + _TARGET)
# The rest of a paragraph's last line and the blank lines after it.
_BLANK_LINES = re.compile(r"[ \t]*(?:\n[ \t]*(?=\n))*\n?")


@dataclass(frozen=True)
class Link:
    text: str  # Markdown, as the page shows it
    url: str


@dataclass(frozen=True)
class References:
    """What the built site resolves the roles to (``site_ext/reader_edition.py`` reads them
    from the Sphinx build). URLs are absolute, on the published site."""

    citations: Mapping[str, str] = field(default_factory=dict)  # cite target -> Markdown
    terms: Mapping[str, str] = field(default_factory=dict)  # term, lower case -> URL
    labels: Mapping[str, Link] = field(default_factory=dict)  # label -> text and URL
    pages: Mapping[str, Link] = field(default_factory=dict)  # docname -> title and URL
    notebooks: frozenset[str] = frozenset()  # docnames that have a reader edition


@dataclass(frozen=True)
class Chapter:
    """What one chapter's markdown needs: its docname ("chapters/01_name"), its glued values
    (name -> text/plain, as myst-nb stored them), the titles of its exercises (label ->
    title) and its labels (those of its targets and exercises: the notebook's anchors)."""

    docname: str
    glue: Mapping[str, str]
    references: References
    exercises: Mapping[str, str] = field(default_factory=dict)
    anchors: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Directive:
    name: str
    argument: str
    options: Mapping[str, str]
    body: str


@cache
def myst_parser() -> MarkdownIt:
    """markdown-it-py reading MyST as the book's myst-parser does: roles, directives (fenced
    with backticks or colons), targets and comments, dollar maths (with myst-parser's
    settings), tables."""
    return (MarkdownIt("commonmark", {"html": True}).enable("table")
            .use(myst_role_plugin).use(myst_block_plugin).use(colon_fence_plugin)
            .use(dollarmath_plugin, allow_labels=True, allow_space=True, allow_digits=True,
                 double_inline=False))


def format_glued(text_plain: str, spec: str) -> str:
    """A glued value as myst-nb's ``{glue:text}`name:spec``` writes it: the text/plain the
    kernel displayed, read back as a Python literal where it is one, formatted with the
    format spec's type (myst_nb.core.variables.format_plain_text, whose behaviour this is)."""
    try:
        value = ast.literal_eval(text_plain)
    except (SyntaxError, ValueError):
        value = text_plain
    if spec == "":
        return str(value)
    kind = spec[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, spec)


def glue_key(content: str) -> tuple[str, str]:
    """The name and format spec of a ``{glue:text}`` role's content ("name:.3f")."""
    name, _, spec = content.rpartition(":")
    return (name, spec) if name else (content, "s")


def myst_left(source: str) -> list[str]:
    """Every MyST role, directive, target or comment the parser finds in ``source``, as
    written ("{cite}`key`", "```{note}", "(label)="): none in plain Markdown. Roles inside
    HTML blocks are found too (Markdown does not look inside them)."""
    found = []
    for token in _walk(myst_parser().parse(source)):
        if token.type == "myst_role":
            found.append(f"{{{token.meta['name']}}}`{token.content}`")
        elif token.type in ("fence", "colon_fence") and token.info.strip().startswith("{"):
            found.append(f"{token.markup}{token.info.split()[0]}")
        elif token.type == "myst_target":
            found.append(f"({token.content})=")
        elif token.type in ("myst_line_comment", "myst_block_break"):
            found.append(token.markup + token.content)
        elif token.type in ("html_block", "html_inline"):
            found += myst_left(re.sub(r"<[^>]*>", " ", token.content))
    return found


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)


def reader_markdown(source: str, chapter: Chapter) -> str:
    """A markdown cell's ``source`` with its MyST written out as plain Markdown and its prose
    typeset as the page's (see the module's docstring). Raises ValueError naming a role,
    directive, glued name or in-page link it cannot write out."""
    return typeset(_plain_markdown(source, chapter))


def _plain_markdown(source: str, chapter: Chapter) -> str:
    text = _replace(source, list(_edits(source, chapter)))
    if _SOLUTION_BODY in text:
        head, body = text.split(_SOLUTION_BODY, 1)
        text = head + body.strip("\n") + "\n\n</details>"
    return text.strip("\n")


@cache
def _markdown_parser() -> MarkdownIt:
    """markdown-it-py reading the edition's plain Markdown as the front ends do (with dollar
    maths), each escaped character and entity a token of its own (no "text_join")."""
    return (MarkdownIt("commonmark", {"html": True}).enable("table").disable("text_join")
            .use(dollarmath_plugin, allow_labels=True, allow_space=True, allow_digits=True,
                 double_inline=False))


def typeset(markdown: str) -> str:
    """``markdown`` with the quotes, dashes and ellipses of its prose as the page shows them:
    docutils' smartquotes (what Sphinx runs on the page, with Sphinx's default action) given
    each paragraph's text, with its code, maths, HTML, escaped characters and URLs as literal
    text it leaves alone (HTML blocks, such as a solution's summary, which the page does not
    curl either, are not read)."""
    starts = _line_starts(markdown)
    cursor, edits = 0, []
    for token in _markdown_parser().parse(markdown):
        if token.map:
            cursor = max(cursor, starts[token.map[0]])
        if token.type == "inline":
            pieces, cursor = _prose_pieces(markdown, cursor, token.children or [])
            educated = educate_tokens([(kind, text) for kind, text, _ in pieces],
                                      attr=SMARTQUOTES, language="en")
            edits += [(at, at + len(text), new) for (kind, text, at), new in zip(pieces, educated)
                      if kind == "plain" and new != text]
    return _replace(markdown, edits)


def _prose_pieces(markdown: str, cursor: int,
                  children: list[Token]) -> tuple[list[tuple[str, str, int]], int]:
    """The text of one inline run as smartquotes reads it: ("plain" or "literal", text,
    where it is in ``markdown``), found in the parser's order from ``cursor``; and where the
    run ends. A link's target is stepped over, an autolink's text is literal."""
    pieces: list[tuple[str, str, int]] = []
    autolink = False

    def find(text: str, kind: str) -> None:
        nonlocal cursor
        at = markdown.find(text, cursor)
        if at < 0:
            raise ValueError(f"cannot place {text!r} in its paragraph")
        pieces.append((kind, text, at))
        cursor = at + len(text)

    for token in children:
        if token.type == "text" and not autolink:
            for part in re.split(f"({_URL.pattern})", token.content):  # a URL is literal
                if part:
                    find(part, "literal" if _URL.fullmatch(part) else "plain")
        elif token.type in ("text", "html_inline"):
            find(token.content, "literal")
        elif token.type == "text_special":  # an escaped character or an entity
            find(token.markup, "literal")
        elif token.type in _CODE_OR_MATHS:
            match = _code_or_maths(token).search(markdown, cursor)
            if match is None:
                raise ValueError(f"cannot place {token.markup}{token.content}{token.markup}")
            pieces.append(("literal", token.content, match.start()))
            cursor = match.end()
        elif token.type in ("softbreak", "hardbreak"):
            pieces.append(("literal", "\n", cursor))
        elif token.type == "link_open":
            autolink = token.markup == "autolink"
        elif token.type == "link_close" and not autolink:
            target = _LINK_TARGET.match(markdown, cursor)
            cursor = target.end() if target else cursor
        elif token.type == "image":
            target = _IMAGE.search(markdown, cursor)
            cursor = target.end() if target else cursor
    return pieces, cursor


def anchor(label: str) -> str:
    """The HTML anchor a label leaves in the notebook: an empty link with the label as its id,
    which the front ends' sanitizers keep (JupyterLab's drops ``name``)."""
    return f'<a id="{html.escape(label)}"></a>'


def anchored_links(sources: list[str]) -> list[str]:
    """Markdown ``sources`` (a notebook's cells) with each in-page link whose anchor none of
    them holds reduced to its text: a handout that leaves an exercise out leaves no link to
    it leading nowhere."""
    anchors = {html.unescape(match[1]) for source in sources
               for match in re.finditer(r'<a id="([^"]*)"></a>', source)}
    kept = []
    for source in sources:
        dead = {href for token in _walk(_markdown_parser().parse(source))
                if (href := str(token.attrGet("href") or "")).startswith("#")
                and token.type == "link_open" and href[1:] not in anchors}
        if dead:
            code = [match.span() for match in re.finditer(r"(`+).+?\1", source, re.DOTALL)]
            link = re.compile(r"\[((?:\\.|[^\]\\])*)\]\((" + "|".join(map(re.escape, dead)) + r")\)")
            source = _replace(source, [(*match.span(), match[1]) for match in link.finditer(source)
                                       if not any(a <= match.start() < b for a, b in code)])
        kept.append(source)
    return kept


def _edits(source: str, chapter: Chapter) -> Iterator[tuple[int, int, str]]:
    """(start, end, replacement) for each MyST construct in ``source``, in order."""
    starts = _line_starts(source)
    block = (0, len(source))
    tokens = myst_parser().parse(source)
    for index, token in enumerate(tokens):
        if token.map:
            block = (starts[token.map[0]], starts[token.map[1]])
        if token.type in ("fence", "colon_fence") and token.info.strip().startswith("{"):
            if token.level:
                raise ValueError(f"{chapter.docname}: a directive inside a list or quote "
                                 f"cannot be written out: {token.info.strip()!r}")
            yield (*block, _directive(_read_directive(token), chapter))
        elif token.type == "myst_target":
            # Into the paragraph below, or a paragraph of its own above anything else.
            joins = index + 1 < len(tokens) and tokens[index + 1].type == "paragraph_open"
            yield (*block, anchor(token.content) + ("\n" if joins else "\n\n"))
        elif token.type in ("myst_line_comment", "myst_block_break"):
            yield (*block, "")
        elif token.type == "inline":
            whole = tokens[index - 1].type == "paragraph_open" and tokens[index - 1].level == 0
            yield from _inline_edits(source, block, token, chapter, whole)


def _line_starts(source: str) -> list[int]:
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _inline_edits(source: str, block: tuple[int, int], inline: Token, chapter: Chapter,
                  droppable: bool) -> list[tuple[int, int, str]]:
    """Edits for the roles and links of one inline run (code and maths are stepped over,
    never edited); a sentence built around {launch} links is dropped (the whole paragraph,
    if ``droppable`` and nothing else is in it)."""
    found = list(_located(source, block, inline, chapter))
    dropped = _launch_sentences(source, block, inline, found, droppable, chapter)
    edits = [(start, stop, "") for start, stop in dropped]
    for start, stop, token in found:
        if any(a <= start < b for a, b in dropped):
            continue
        if token.type == "myst_role":
            text = _role(token.meta["name"], token.content, chapter)
            edits.append((start, stop, _safe_at_line_start(source, start, stop, text)))
        elif token.type == "link_open":
            link = _link(str(token.attrGet("href")), chapter)
            if link is not None:
                edits.append((start, stop, "](" + link))
    return sorted(edits)


def _located(source: str, block: tuple[int, int], inline: Token,
             chapter: Chapter) -> Iterator[tuple[int, int, Token]]:
    """(start, end, token) for each role, code span, maths and relative link of one inline
    run, found in the source lines of its block in the parser's order."""
    cursor, end = block
    for token in inline.children or ():
        if token.type == "myst_role":
            pattern = (re.escape(f"{{{token.meta['name']}}}") + "(`+)" + _flexible(token.content)
                       + r"\1")
        elif token.type in _CODE_OR_MATHS:
            pattern = _code_or_maths(token).pattern
        elif token.type == "link_open" and _relative(str(token.attrGet("href") or "")):
            pattern = r"\]\(\s*<?" + re.escape(str(token.attrGet("href")))
        else:
            continue
        match = re.compile(pattern).search(source, cursor, end)
        if not match:
            raise ValueError(f"{chapter.docname}: cannot place {token.type} "
                             f"{token.content or token.attrGet('href')!r} in its paragraph")
        cursor = match.end()
        yield match.start(), match.end(), token


def _launch_sentences(source: str, block: tuple[int, int], inline: Token,
                      found: list[tuple[int, int, Token]], droppable: bool,
                      chapter: Chapter) -> list[tuple[int, int]]:
    """The spans to drop for the {launch} links of one inline run: the parenthesis that holds
    nothing else, or else the sentence (the paragraph, when it is nothing else)."""
    launches = [(start, stop) for start, stop, token in found
                if token.type == "myst_role" and token.meta["name"] == "launch"]
    if not launches:
        return []
    lines = inline.content.split("\n")
    begin = source.find(lines[0], *block)  # the text, after a list's or a quote's marker
    end = source.rfind(lines[-1], begin, block[1]) + len(lines[-1])
    protected = [(start, stop) for start, stop, _ in found]

    def free(position: int) -> bool:
        return not any(start <= position < stop for start, stop in protected)

    ends = [match.end() for match in _SENTENCE_END.finditer(source, begin, end)
            if free(match.start())]
    spans: list[tuple[int, int]] = []
    for start, stop in launches:
        if spans and start < spans[-1][1]:
            continue  # in the sentence or parenthesis just dropped
        span = _parenthesis(source, begin, end, (start, stop), launches, free)
        if span is None:
            after_previous = max([e for e in ends if e <= start], default=begin)
            span = (_after_space(source, after_previous),
                    min([e for e in ends if e >= stop], default=end))
        spans.append(_with_spacing(source, (begin, end), span, droppable, chapter))
    return spans


def _parenthesis(source: str, begin: int, end: int, launch: tuple[int, int],
                 launches: list[tuple[int, int]], free) -> tuple[int, int] | None:
    """The span of the parenthesis around the ``launch`` link, if it holds only launch links
    (and "or", "and", commas), else None."""
    opening = _unmatched(source, range(launch[0] - 1, begin - 1, -1), ")(", free)
    closing = _unmatched(source, range(launch[1], end), "()", free)
    if opening is None or closing is None:
        return None
    inner = _replace(source[opening + 1:closing],
                     [(a - opening - 1, b - opening - 1, "") for a, b in launches
                      if opening < a and b <= closing])
    return (opening, closing + 1) if _LINKS_ONLY.fullmatch(inner) else None


def _unmatched(source: str, positions: range, pair: str, free) -> int | None:
    """The first position, walking ``positions``, of a ``pair[1]`` that no ``pair[0]`` met
    on the way matches (brackets in code, maths or a role do not count)."""
    depth = 0
    for position in positions:
        if free(position) and source[position] in pair:
            depth += 1 if source[position] == pair[0] else -1
            if depth < 0:
                return position
    return None


def _with_spacing(source: str, text: tuple[int, int], span: tuple[int, int], droppable: bool,
                  chapter: Chapter) -> tuple[int, int]:
    """``span`` with the space that separated it from the rest of the paragraph's ``text``;
    the whole paragraph, with the blank lines after it, when nothing else is in it."""
    (begin, end), (start, stop) = text, span
    if source[stop:end].strip():
        return start, _after_space(source, stop)
    if source[begin:start].strip():
        return len(source[:start].rstrip()), stop
    if not droppable:
        raise ValueError(f"{chapter.docname}: a {{launch}} sentence that is a whole heading, "
                         f"list item or quote cannot be dropped: {source[start:stop]!r}")
    blank_lines = _BLANK_LINES.match(source, stop)
    return source.rfind("\n", 0, begin) + 1, blank_lines.end() if blank_lines else stop


def _after_space(source: str, position: int) -> int:
    return len(source) - len(source[position:].lstrip())


_CODE_OR_MATHS = ("code_inline", "math_inline", "math_inline_double")


def _code_or_maths(token: Token) -> re.Pattern[str]:
    """A code span or inline maths as the source may write it."""
    return re.compile(re.escape(token.markup) + r"\s*" + _flexible(token.content) + r"\s*"
                      + re.escape(token.markup))


def _flexible(content: str) -> str:
    """A pattern for ``content`` as the parser read it: where it has whitespace the source
    may have any (a line break, the indentation of a list)."""
    return r"\s+".join(re.escape(part) for part in content.split()) if content.strip() else r"\s*"


def _relative(href: str) -> bool:
    return bool(href) and not re.match(r"[a-zA-Z][\w+.-]*:|/", href)


def _link(href: str, chapter: Chapter) -> str | None:
    """Where a relative link of the chapter leads in the notebook: an in-page one stays where
    it is (None) if the chapter has the label, or goes to the label's page on the site."""
    if not href.startswith("#"):
        return _page_url(href, chapter)
    label = href[1:]
    if label in chapter.anchors:
        return None
    if label in chapter.references.labels:
        return chapter.references.labels[label].url
    raise ValueError(f"{chapter.docname}: the link to {href!r} leads to no label")


def _safe_at_line_start(source: str, start: int, end: int, text: str) -> str:
    """``text`` in place of ``source[start:end]``, with the "." or ")" after it escaped where
    it opens a line with a number ("6. W" would turn the line into a list item)."""
    if source[source.rfind("\n", 0, start) + 1:start].strip():
        return text
    match = _LIST_MARKER.match(text + source[end:].split("\n", 1)[0])
    if not match:
        return text
    mark = match.start(2)
    if mark > len(text):
        raise ValueError(f"a line would open with a list's number: {match[0]!r}")
    return f"{text[:mark]}\\{text[mark:]}"


def _replace(source: str, edits: list[tuple[int, int, str]]) -> str:
    out, position = [], 0
    for start, end, text in edits:
        out += [source[position:start], text]
        position = end
    return "".join(out) + source[position:]


def _read_directive(token: Token) -> Directive:
    name, _, argument = token.info.strip()[1:].partition("}")
    options, body = {}, token.content.splitlines()
    while body and (option := _OPTION.match(body[0].strip())):
        options[option[1]] = option[2].strip()
        body.pop(0)
    return Directive(name, argument.strip(), options, "\n".join(body).strip("\n"))


def _directive(directive: Directive, chapter: Chapter) -> str:
    name = directive.name
    if name in ADMONITION_TITLES or name == "admonition":
        title = directive.argument if name == "admonition" else ADMONITION_TITLES[name]
        body = _plain_markdown(directive.body, chapter)
        if re.search(r"^\s*\$\$\s*$", body, re.MULTILINE):
            raise ValueError(f"{chapter.docname}: display maths over several lines in the "
                             f"{name} {title!r} would break in a quote: write it on one line")
        quoted = "\n".join(f"> {line}".rstrip() for line in body.splitlines())
        return f"> **{title}**\n>\n{quoted}\n"  # a title is MyST Markdown too
    if name in ("exercise-start", "exercise"):
        label = directive.options.get("label", "")
        heading = f"{anchor(label)}\n\n### {_exercise_name(label, directive.argument, chapter)}\n"
        return heading + (f"\n{_plain_markdown(directive.body, chapter)}\n"
                          if directive.body.strip() else "")
    if name in ("solution-start", "solution"):
        label = directive.argument
        title = _exercise_name(label, chapter.exercises.get(label, ""), chapter)
        # Markdown is not read inside HTML: the title's emphasis is written as HTML.
        summary = MarkdownIt("commonmark").renderInline(f"Solution to {title}")
        opening = f"<details>\n<summary>{summary}</summary>\n\n"
        if name == "solution":
            return opening + _plain_markdown(directive.body, chapter) + "\n\n</details>\n"
        return opening + _SOLUTION_BODY
    if name in ("exercise-end", "solution-end"):
        return ""
    raise ValueError(f"{chapter.docname}: no plain Markdown for the directive {{{name}}}")


def _exercise_name(label: str, title: str, chapter: Chapter) -> str:
    """"Exercise 3 (Title)", numbered as the page numbers it."""
    if label not in chapter.references.labels:
        raise ValueError(f"{chapter.docname}: the site has no number for exercise {label!r}")
    number = chapter.references.labels[label].text
    return f"{number} ({title.strip()})" if title.strip() else number


def _role(name: str, content: str, chapter: Chapter) -> str:
    references = chapter.references
    if name == "glue:text":
        key, spec = glue_key(content)
        if "::" in key:
            raise ValueError(f"{chapter.docname}: a value glued in another page ({key!r}) "
                             "has no place in the reader edition")
        if key not in chapter.glue:
            raise ValueError(f"{chapter.docname}: nothing is glued as {key!r}")
        return escape_markdown(format_glued(chapter.glue[key], spec))
    if name == "cite":
        if content not in references.citations:
            raise ValueError(f"{chapter.docname}: the site has no citation {content!r}")
        return references.citations[content]
    text, target = _title_and_target(content)
    if name == "term":
        url = references.terms.get(target.lower())
        if url is None:
            raise ValueError(f"{chapter.docname}: the glossary has no term {target!r}")
        return f"[{escape_markdown(text)}]({url})"
    if name in ("ref", "numref"):
        if target not in references.labels:
            raise ValueError(f"{chapter.docname}: the site has no label {target!r}")
        link = references.labels[target]
        url = f"#{target}" if target in chapter.anchors else link.url  # in the notebook
        return f"[{escape_markdown(text) if text != target else link.text}]({url})"
    if name == "doc":
        docname = normpath(join(dirname(chapter.docname), target)).removesuffix(".md")
        return f"[{escape_markdown(text) if text != target else _page(docname, chapter).text}]" \
               f"({_page_url(target, chapter)})"
    raise ValueError(f"{chapter.docname}: no plain Markdown for the role {{{name}}}")


def _title_and_target(content: str) -> tuple[str, str]:
    """"text <target>" -> (text, target); "target" -> (target, target)."""
    match = re.fullmatch(r"(.*?)\s*<([^<>]+)>", content.strip(), re.DOTALL)
    return (match[1], match[2]) if match else (content.strip(), content.strip())


def _page(docname: str, chapter: Chapter) -> Link:
    if docname not in chapter.references.pages:
        raise ValueError(f"{chapter.docname}: the site has no page {docname!r}")
    return chapter.references.pages[docname]


def _page_url(target: str, chapter: Chapter) -> str:
    """A link to another page of the book: the sibling notebook where that page has a reader
    edition in the same folder (a learner in Jupyter opens it there), else the site's page."""
    path, _, anchor = target.partition("#")
    docname = normpath(join(dirname(chapter.docname), path))
    docname = re.sub(r"\.(md|ipynb)$", "", docname)
    if docname in chapter.references.notebooks and dirname(docname) == dirname(chapter.docname):
        url = docname.rsplit("/", 1)[-1] + ".ipynb"
    else:
        url = _page(docname, chapter).url
    return url + (f"#{anchor}" if anchor else "")


def escape_markdown(text: str) -> str:
    """``text`` with each character Markdown would read as markup escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


# ---------------------------------------------------------------------------------------
# Notebooks

def exercise_titles(nb) -> dict[str, str]:
    """label -> title of every exercise in the notebook ``nb``."""
    titles = {}
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for token in myst_parser().parse(cell.source):
            if token.type in ("fence", "colon_fence") and token.info.strip().startswith(
                    ("{exercise-start}", "{exercise}")):
                directive = _read_directive(token)
                titles[directive.options.get("label", "")] = directive.argument
    return titles


def chapter_labels(nb) -> frozenset[str]:
    """Every label the notebook ``nb`` defines, each an anchor in its edition: its targets'
    ("(label)=") and its exercises'."""
    targets = {token.content for cell in nb.cells if cell.cell_type == "markdown"
               for token in myst_parser().parse(cell.source) if token.type == "myst_target"}
    return frozenset(targets | set(exercise_titles(nb))) - {""}


def widget_line(class_name: str) -> str:
    """What a reader sees where a widget of ``class_name`` ("AttentionExplorer") will be."""
    words = " ".join(word if word.isupper() and len(word) > 1 else word.lower()
                     for word in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", class_name))
    article = "An" if words[:1] in "aeiou" else "A"
    return f"{article} {words} appears here when this cell runs (it needs a live kernel)."


def shown_outputs(cell, executed_cell, widget_classes: Mapping[str, str]) -> list:
    """The outputs of ``executed_cell`` that the edition keeps for ``cell`` (see the module's
    docstring); a widget's view becomes its line."""
    if executed_cell is None or NO_OUTPUT_TAGS & set(cell.metadata.get("tags", [])):
        return []
    outputs = []
    for output in copy.deepcopy(executed_cell.get("outputs", [])):
        data = output.get("data", {})
        if WIDGET_VIEW in data:
            model = data[WIDGET_VIEW].get("model_id", "")
            data.clear()
            data["text/plain"] = widget_line(widget_classes.get(model, "Widget"))
        if "scrapbook" in output.get("metadata", {}):
            continue  # a glued value: written into the text
        outputs.append(output)
    return outputs


def widget_classes(executed) -> dict[str, str]:
    """model id -> the class name of each widget saved in an executed notebook."""
    state = executed.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    classes = {}
    for model, saved in state.items():
        name = saved.get("state", {}).get("_anywidget_id") or saved.get("model_name", "Widget")
        classes[model] = name.rsplit(".", 1)[-1].removesuffix("Model") or "Widget"
    return classes


def glued_values(executed) -> dict[str, str]:
    """name -> text/plain of every value the executed notebook glued: myst-nb's glue writes
    an output whose metadata names it ("scrapbook"), its mime types prefixed when it is not
    displayed."""
    values = {}
    for cell in executed.cells:
        for output in cell.get("outputs", []):
            scrapbook = output.get("metadata", {}).get("scrapbook")
            text = scrapbook and output.get("data", {}).get(
                scrapbook.get("mime_prefix", "") + "text/plain")
            if text is not None and scrapbook:
                values[scrapbook["name"]] = text
    return values


def made_from(edition, nb) -> bool:
    """Whether ``edition`` is the reader edition of ``nb`` as it stands: the edition keeps
    every code cell's source and id, so any difference means the chapter changed since."""
    def code(notebook):
        return [(cell.get("id"), cell.source) for cell in notebook.cells if cell.cell_type == "code"]
    return code(edition) == code(nb)


def edition_folder(chapters: Path) -> Path:
    """Where ``make book`` writes the reader edition of the notebooks in ``chapters`` (the
    chapters/ folder of a checkout, or a link to it): _build/reader/chapters of the same
    checkout."""
    chapters = Path(chapters).resolve()
    return chapters.parent / EDITION_FOLDER / chapters.name


def edition_problems(notebooks: Mapping[Path, Any], folder: Path) -> list[str]:
    """What is wrong with the reader editions in ``folder`` of ``notebooks`` (path -> the
    chapter's notebook): each one missing, or made before its chapter last changed."""
    problems = []
    for path, nb in notebooks.items():
        built = Path(folder) / Path(path).name
        if not built.exists():
            problems.append(f"{built.name}: no reader edition in {built.parent}")
        elif not made_from(nbformat.read(built, as_version=4), nb):
            problems.append(f"{built.name}: its reader edition is older than the chapter")
    return problems


def reader_notebook(nb, *, executed, references: References, docname: str):
    """The reader edition of the chapter notebook ``nb`` (an nbformat NotebookNode, not
    changed), from ``executed``, the same notebook as the book ran it (its glued values, its
    outputs): markdown cells written out, empty ones dropped, code cells as they are."""
    chapter = Chapter(docname, glued_values(executed), references, exercise_titles(nb),
                      chapter_labels(nb))
    edition = copy.deepcopy(nb)
    ran = {cell.get("id"): cell for cell in executed.cells}
    classes = widget_classes(executed)
    cells = []
    for cell in edition.cells:
        if cell.cell_type == "markdown":
            cell.source = reader_markdown(cell.source, chapter)
            if not cell.source.strip():
                continue
        elif cell.cell_type == "code":
            executed_cell = ran.get(cell.get("id"))
            cell.outputs = shown_outputs(cell, executed_cell, classes)
            cell.execution_count = executed_cell.get("execution_count") if executed_cell else None
            tags = set(cell.metadata.get("tags", []))
            if HIDDEN_INPUT_TAGS & tags:
                cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
            if FOLDED_OUTPUT_TAGS & tags and cell.outputs:
                cell.metadata.setdefault("jupyter", {})["outputs_hidden"] = True
        cells.append(cell)
    edition.cells = cells
    edition.metadata.pop("widgets", None)
    if "language_info" in executed.metadata:
        edition.metadata["language_info"] = copy.deepcopy(executed.metadata["language_info"])
    return edition
