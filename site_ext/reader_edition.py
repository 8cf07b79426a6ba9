"""Sphinx extension: the reader edition of every chapter, written when the site is built
(attncourse/reader_edition.py writes each notebook; this gathers what it needs from the build).

For each chapter (a page whose source is a notebook) it reads

- the chapter as the book executed it, from the execution cache (``_build/.jupyter_cache``,
  jupyter-cache, where myst-nb keeps it): its outputs, and the values it glued (outputs
  with myst-nb's metadata);
- what the page shows for each citation (sphinxcontrib-bibtex's text, from the resolved
  page), where each glossary term, label and page lives, and each exercise's number;
- the site's URL (``html.baseurl`` in _config.yml, set by ``site_ext.set_repository``), in
  front of every link the edition writes;

and writes the edition twice: ``_build/reader/chapters/NAME.ipynb``, what the publishing
step puts on the reader branch (``site_ext.publish_edition``), and
``_build/html/_sources/chapters/NAME.ipynb``, the file the page's download button serves.
"""

from __future__ import annotations

import pathlib
import time
from urllib.parse import urljoin

import nbformat
from docutils import nodes
from jupyter_cache import get_cache
from sphinx.errors import ConfigError, ExtensionError
from sphinx.util import logging

from attncourse.reader_edition import Link, References, escape_markdown, reader_notebook

EDITION_FOLDER = "reader"  # beside the site: _build/reader
logger = logging.getLogger(__name__)


def site_url(config) -> str:
    """The published site's URL from ``html_baseurl``, ending in "/"."""
    url = (config.html_baseurl or "").strip()
    if not url.startswith(("https://", "http://")):
        raise ConfigError("html.baseurl in _config.yml must be the published site's URL "
                          f"(https://...), got {url!r}: see README.md, Publishing")
    return url.rstrip("/") + "/"


def chapters(env) -> list[str]:
    """The docnames of the pages whose source is a notebook, in the book's order."""
    return sorted(doc for doc in env.found_docs if str(env.doc2path(doc)).endswith(".ipynb"))


def as_markdown(node: nodes.Node, page_url: str) -> str:
    """A resolved inline node as Markdown: text, emphasis, strong, links made absolute."""
    if isinstance(node, nodes.Text):
        return escape_markdown(node.astext())
    inner = "".join(as_markdown(child, page_url) for child in node.children)
    if isinstance(node, nodes.reference):
        target = node.get("refuri") or "#" + node.get("refid", "")
        return f"[{inner}]({urljoin(page_url, target)})"
    if isinstance(node, nodes.emphasis):
        return f"*{inner}*"
    if isinstance(node, nodes.strong):
        return f"**{inner}**"
    return inner


def site_references(app) -> References:
    env, url = app.env, site_url(app.config)
    page = {doc: f"{url}{doc}.html" for doc in env.found_docs}
    std = env.get_domain("std")
    terms = {name.lower(): f"{page[doc]}#{anchor}"
             for (kind, name), (doc, anchor) in std.objects.items() if kind == "term"}
    labels = {label: Link(escape_markdown(title), f"{page[doc]}#{anchor}")
              for label, (doc, anchor, title) in std.labels.items() if doc in page}
    for doc, numbers in env.toc_fignumbers.items():
        for label, number in numbers.get("exercise", {}).items():
            labels[label] = Link(f"Exercise {'.'.join(map(str, number))}", f"{page[doc]}#{label}")
    citations = {}
    for doc in chapters(env):
        if doc not in _RESOLVED:  # not written in this build, or written in another process
            _RESOLVED[doc] = env.get_and_resolve_doctree(doc, app.builder)
        for citation in _RESOLVED[doc].findall(nodes.inline):
            if "bibtex-citation" in citation["classes"]:
                citations[citation.rawsource] = as_markdown(citation, page[doc])
    pages = {doc: Link(escape_markdown(env.titles[doc].astext()), page[doc])
             for doc in env.found_docs}
    return References(citations, terms, labels, pages, frozenset(chapters(env)))


# The chapters' pages as the builder resolved them to write them (their citations' text).
_RESOLVED: dict[str, nodes.document] = {}


def keep_resolved(app, doctree, docname):
    if str(app.env.doc2path(docname)).endswith(".ipynb"):
        _RESOLVED[docname] = doctree


def write_editions(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    env, started = app.env, time.perf_counter()
    references = site_references(app)
    cache = get_cache(env.mystnb_config.execution_cache_path)
    out = pathlib.Path(app.outdir)
    edition_folder = out.parent / EDITION_FOLDER
    for doc in chapters(env):
        source = pathlib.Path(env.doc2path(doc))
        chapter = nbformat.read(source, as_version=4)
        try:
            _, executed = cache.merge_match_into_notebook(chapter)
        except KeyError as missing:
            raise ExtensionError(f"{doc}: no executed copy in the execution cache "
                                 f"{cache.path}") from missing
        try:
            edition = reader_notebook(chapter, executed=executed, references=references,
                                      docname=doc)
            nbformat.validate(edition)
        except (ValueError, nbformat.ValidationError) as error:
            raise ExtensionError(f"the reader edition of {doc}: {error}") from error
        for target in (edition_folder / f"{doc}.ipynb", out / "_sources" / f"{doc}.ipynb"):
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(edition, target)
    logger.info(f"reader edition: {len(chapters(env))} chapters in {edition_folder} "
                f"({time.perf_counter() - started:.1f} s)")


def setup(app):
    app.connect("builder-inited", lambda app: _RESOLVED.clear())
    app.connect("doctree-resolved", keep_resolved)
    app.connect("build-finished", write_editions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
