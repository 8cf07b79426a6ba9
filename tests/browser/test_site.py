"""Every page of the table of contents, opened in headless Chromium from 127.0.0.1 with
every other host blocked: it answers, carries its title, logs no error, shows typeset
maths, offers Binder and Colab, and leaves a full-page screenshot for a person to look at.
"""

import json

import pytest
from playwright.sync_api import expect

import tools

pytestmark = pytest.mark.browser

NOTEBOOK_PAGES = tools.notebook_pages()

# TeX that MathJax should have consumed; found outside code, it means maths left raw.
RAW_TEX = (r"\frac", r"\sqrt", "$$", r"\(")

# The page's own text without code, highlighted sources or typeset maths.
_PROSE = """() => {
  const copy = document.querySelector('main').cloneNode(true);
  copy.querySelectorAll('pre, code, script, style, mjx-container').forEach((n) => n.remove());
  return copy.textContent;
}"""
# Sphinx marks every formula with class "math"; MathJax puts an mjx-container inside.
_MATH = """() => {
  const math = [...document.querySelectorAll('main .math')];
  return { math: math.length, typeset: math.filter((m) => m.querySelector('mjx-container')).length };
}"""
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
    visit(f"{entry}.html")  # 200, every widget rendered, maths typeset

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

    page.screenshot(path=screenshots / f"{entry.replace('/', '--')}.png", full_page=True)



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
