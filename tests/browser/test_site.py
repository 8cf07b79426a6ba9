"""Every page of the table of contents, opened in headless Chromium from 127.0.0.1 with
every other host blocked: it answers, carries its title, logs no error, shows typeset
maths (rendered when the site was built), offers Binder and Colab, and leaves a full-page screenshot for a person to look at.
"""

import json
import re

import pytest
from playwright.sync_api import expect

import tools
from tests.test_references import addressed, entries

pytestmark = pytest.mark.browser

NOTEBOOK_PAGES = tools.notebook_pages()

# TeX that KaTeX should have rendered; found outside code and formulas, it means maths left raw.
RAW_TEX = (r"\frac", r"\sqrt", "$$", r"\(")

# The page's own text without code, highlighted sources or typeset maths.
_PROSE = """() => {
  const copy = document.querySelector('main').cloneNode(true);
  copy.querySelectorAll('pre, code, script, style, .katex').forEach((n) => n.remove());
  return copy.textContent;
}"""
# Sphinx marks every formula with class "math"; KaTeX's rendering sits inside.
_MATH = """() => {
  const math = [...document.querySelectorAll('main .math')];
  return { math: math.length, typeset: math.filter((m) => m.querySelector('.katex')).length };
}"""
# Alt text that names no content: what a build writes when nobody described the figure.
GENERIC_ALT = {"png", "output", "image", "figure", "plot", "img", "chart", "graph"}
_FIGURES = """() => [...document.querySelectorAll('article.bd-article img')]
  .map((img) => [img.getAttribute('src'), img.getAttribute('alt')])"""
_HEADING = """(h1) => [...h1.childNodes]
  .filter((node) => !(node.classList && node.classList.contains('headerlink')))
  .map((node) => node.textContent).join('').trim()"""


def source_title(entry):
    """The first level-1 heading of a page's source (.ipynb or .md), markup removed."""
    notebook = tools.ROOT / f"{entry}.ipynb"
    if notebook.exists():
        cells = json.loads(notebook.read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    else:
        text = (tools.ROOT / f"{entry}.md").read_text()
    heading = next(line[2:] for line in text.splitlines() if line.startswith("# "))
    return heading.replace("*", "").replace("`", "").strip()


def launch_links(entry):
    """The Binder and Colab addresses sphinx-book-theme builds from _config.yml."""
    repository = tools.CONFIG["repository"]
    launch = tools.CONFIG["launch_buttons"]
    github = repository["url"].removeprefix("https://github.com/")
    branch = repository["branch"]
    opener = {"classic": "tree", "jupyterlab": "lab/tree"}[launch["notebook_interface"]]
    return (
        f"{launch['binderhub_url']}/v2/gh/{github}/{branch}?urlpath={opener}/{entry}.ipynb",
        f"{launch['colab_url']}/github/{github}/blob/{branch}/{entry}.ipynb",
    )


@pytest.mark.parametrize("entry", tools.toc_pages())
def test_page(entry, visit, watched_page, screenshots):
    page = watched_page
    visit(f"{entry}.html")  # 200, every widget rendered

    heading = page.locator("article.bd-article h1")
    expect(heading).to_have_count(1)
    title = heading.evaluate(_HEADING)
    assert title == source_title(entry)
    assert page.title() == f"{title} — {tools.CONFIG['title']}"

    math = page.evaluate(_MATH)
    assert math["typeset"] == math["math"], f"{math['math'] - math['typeset']} formulas raw"
    prose = page.evaluate(_PROSE)
    assert not [raw for raw in RAW_TEX if raw in prose], "raw TeX left in the text"

    if entry in NOTEBOOK_PAGES:
        links = page.eval_on_selector_all("a[href]", "links => links.map((a) => a.href)")
        for link in launch_links(entry):
            assert link in links

    # A chapter is 18,000-20,000 px tall: drawing all of it took 12-20 s at a load of 19 on
    # two cores, past the page's 15 s.
    page.screenshot(path=screenshots / f"{entry.replace('/', '--')}.png", full_page=True, timeout=90_000)



@pytest.mark.parametrize("entry", NOTEBOOK_PAGES)
def test_exercises_are_numbered_and_solutions_stay_collapsed_until_clicked(entry, visit,
                                                                          watched_page):
    page = watched_page
    visit(f"{entry}.html")
    exercises = page.locator("div.exercise.admonition")
    assert exercises.count() >= 3, "each chapter ends with at least three exercises"
    titles = exercises.locator("> .admonition-title").all_inner_texts()
    assert all(title.startswith("Exercise ") for title in titles), titles
    solutions = page.locator("div.solution.dropdown.admonition")
    assert solutions.count() == exercises.count()
    for k in range(solutions.count()):
        solution = solutions.nth(k)
        code = solution.locator(".cell.tag_solution")
        expect(code).to_have_count(1)  # the executed solution sits inside its dropdown
        expect(code).to_be_hidden()
        solution.locator("> .admonition-title").click()
        expect(code).to_be_visible()


def describes_in_words(alt):
    """Whether ``alt`` reads as a description: a few words, not empty, not a file name or
    path, not a generic label."""
    alt = (alt or "").strip()
    words = re.findall(r"[^\W\d_]+", alt)
    names_a_file = re.search(r"\.(png|jpe?g|svg|gif|webp)\b|_images/|^\S*/\S*$", alt, re.I)
    return len(words) >= 3 and not names_a_file and alt.lower() not in GENERIC_ALT


@pytest.mark.parametrize("entry", NOTEBOOK_PAGES)
def test_every_figure_has_alt_text_that_describes_it_in_words(entry, visit, watched_page):
    visit(f"{entry}.html")
    figures = watched_page.evaluate(_FIGURES)
    assert figures, f"{entry}: no figure found (has the theme's article changed?)"
    undescribed = [(src, alt) for src, alt in figures if not describes_in_words(alt)]
    assert not undescribed, f"{entry}: figures without a description: {undescribed}"


def test_every_reference_with_an_address_links_to_it(visit, watched_page):
    visit("bibliography.html")
    shown = watched_page.locator("div.citation")
    linked = watched_page.locator("div.citation", has=watched_page.locator('a[href^="https://"]'))
    assert shown.count() == len(entries())
    assert linked.count() == len(addressed())


_WIDGET_MODELS = """() => [...document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-state+json"]')]
  .flatMap((tag) => Object.values(JSON.parse(tag.textContent).state))
  .map((model) => model.model_name)"""


@pytest.mark.parametrize("entry", NOTEBOOK_PAGES)
def test_no_progress_bar_is_saved_into_a_page(entry, visit, watched_page):
    """A progress bar run at build time saves its timings into the page: a build that
    differs every time, and a bar that never moves on the static site."""
    visit(f"{entry}.html")
    models = watched_page.evaluate(_WIDGET_MODELS)
    assert not [name for name in models if name.endswith("ProgressModel")]


# Every result of a search shown with its summary (Sphinx fetches each page in turn).
_SUMMARIES = """() => {
  const results = document.querySelectorAll('#search-results li');
  const summaries = [...document.querySelectorAll('#search-results li p.context')];
  return results.length && summaries.length === results.length
    ? summaries.map((p) => p.textContent) : null;
}"""


def test_search_results_quote_formulas_as_text_not_tex(visit, watched_page):
    """Chapter 1's heading "Why the scores are divided by \\(\\sqrt{d}\\)" is found
    by "divided"; its summary quotes the formula as √d, not as TeX."""
    page = watched_page
    visit("search.html?q=divided")
    summaries = page.wait_for_function(_SUMMARIES).json_value()
    assert any("√d" in summary for summary in summaries), summaries
    assert not [summary for summary in summaries if any(raw in summary for raw in RAW_TEX)]


@pytest.mark.parametrize("entry", NOTEBOOK_PAGES)
def test_no_page_shows_the_reader_a_warning_or_error_stream(entry):
    """What a cell writes to stderr (a RuntimeWarning of numpy, a deprecation) is the book's
    noise, not the reader's: chapter 5 showed two "divide by zero" warnings."""
    page = (tools.SITE / f"{entry}.html").read_text(encoding="utf-8")
    shown = re.findall(r'class="output stderr[^"]*"><div class="highlight"><pre><span></span>([^<]{0,160})', page)
    assert not shown, f"{entry} shows: {shown}"

