"""Launch links: one repository setting, the same addresses as the theme's buttons, and a
release build that refuses the placeholder repository (site_ext/launch_links.py)."""

import html
import json
import os
import re

import pytest
import yaml

import tools
from site_ext.launch_links import (
    PLACEHOLDER_REPOSITORY,
    PLACEHOLDER_SITE,
    RELEASE_VARIABLE,
    launch_url,
    release_problem,
)

THEME = {
    "repository_url": "https://github.com/someone/attention",
    "repository_branch": "live",
    "launch_buttons": {"binderhub_url": "https://mybinder.org/", "notebook_interface": "jupyterlab",
                       "colab_url": "https://colab.research.google.com"},
}
PAGE = "chapters/01_dot_product_similarity.ipynb"


def test_links_open_the_page_on_the_configured_repository_and_branch():
    assert launch_url("colab", THEME, PAGE) == (
        "https://colab.research.google.com/github/someone/attention/blob/live/" + PAGE)
    assert launch_url("binder", THEME, PAGE) == (
        "https://mybinder.org/v2/gh/someone/attention/live?urlpath=lab/tree/" + PAGE)
    assert launch_url("colab", THEME | {"path_to_docs": "book/"}, PAGE).endswith(
        "/blob/live/book/" + PAGE)


@pytest.mark.parametrize("url", ["https://gitlab.com/a/b", "https://github.com/only-owner"])
def test_a_repository_colab_cannot_open_is_refused_by_name(url):
    with pytest.raises(ValueError, match=url):
        launch_url("colab", THEME | {"repository_url": url}, PAGE)


def test_an_unknown_service_is_refused():
    with pytest.raises(ValueError, match="'kaggle'"):
        launch_url("kaggle", THEME, PAGE)


def test_only_a_release_build_refuses_the_placeholder():
    release = {RELEASE_VARIABLE: "1"}
    assert "placeholder" in release_problem(PLACEHOLDER_REPOSITORY, release)
    assert "placeholder" in release_problem(PLACEHOLDER_REPOSITORY + "/", release)
    assert release_problem(PLACEHOLDER_REPOSITORY, {}) is None
    assert release_problem(PLACEHOLDER_REPOSITORY, {RELEASE_VARIABLE: "0"}) is None
    assert release_problem("https://github.com/someone/attention", release) is None
    site = "https://someone.github.io/attention/"
    assert "html.baseurl" in release_problem("https://github.com/someone/attention", release,
                                             PLACEHOLDER_SITE.rstrip("/"))
    assert release_problem("https://github.com/someone/attention", release, site) is None
    assert release_problem(PLACEHOLDER_REPOSITORY, {}, PLACEHOLDER_SITE) is None


def test_this_build_may_be_released():
    """Fails under ATTNCOURSE_RELEASE=1 until _config.yml names the published repository
    and site."""
    problem = release_problem(tools.CONFIG["repository"]["url"], os.environ,
                              tools.CONFIG["html"]["baseurl"])
    assert problem is None, problem


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_colab_installs_the_course_from_the_configured_repository(entry):
    """The install cell a chapter runs in Colab names the one repository setting and the
    branch the reader edition is published to (which holds attncourse/ and pyproject.toml)."""
    cells = json.loads((tools.ROOT / f"{entry}.ipynb").read_text())["cells"]
    sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    installs = [line for source in sources for line in source.splitlines() if "git+" in line]
    assert installs, f"{entry}: no cell installs attncourse in Colab"
    repository = tools.CONFIG["repository"]
    for line in installs:
        assert f"git+{repository['url']}@{repository['branch']}\"" in line, line


def test_set_repository_rewrites_the_settings_and_the_install_cells(tmp_path):
    from site_ext.set_repository import set_repository

    (tmp_path / "chapters").mkdir()
    config = (tools.ROOT / "_config.yml").read_text()
    (tmp_path / "_config.yml").write_text(config)
    for entry in tools.notebook_pages():
        source = tools.ROOT / f"{entry}.ipynb"
        (tmp_path / "chapters" / source.name).write_text(source.read_text())
    new, site = "https://github.com/someone/attention", "https://someone.github.io/attention"

    changed = set_repository(new + "/", site, "published", root=tmp_path)

    assert len(changed) == 1 + len(tools.notebook_pages())
    rewritten = (tmp_path / "_config.yml").read_text()
    settings = yaml.safe_load(rewritten)
    assert settings["repository"] == {"url": new, "branch": "published"}
    assert settings["html"]["baseurl"] == site + "/"
    assert PLACEHOLDER_REPOSITORY not in rewritten
    assert len(rewritten.splitlines()) == len(config.splitlines())  # nothing else touched
    for notebook in (tmp_path / "chapters").glob("*.ipynb"):
        text = notebook.read_text()
        assert f"git+{new}@published\\\"" in text and PLACEHOLDER_REPOSITORY not in text
        json.loads(text)
    assert set_repository(new, site, "published", root=tmp_path) == []  # a second run: nothing
    with pytest.raises(ValueError, match="OWNER/NAME"):
        set_repository("https://example.org/x", site, root=tmp_path)
    with pytest.raises(ValueError, match="published site"):
        set_repository(new, "someone.github.io", root=tmp_path)
    with pytest.raises(ValueError, match="branch"):
        set_repository(new, site, "no branch", root=tmp_path)


def build_page(tmp_path, text, environ_release=False):
    """Build one MyST page with the extension (and the theme options jupyter-book writes);
    returns its HTML."""
    from sphinx.application import Sphinx

    source = tmp_path / "src"
    (source / "chapters").mkdir(parents=True)
    (source / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(tools.ROOT / 'site_ext')!r})\n"
        "extensions = ['myst_parser', 'launch_links']\n"
        f"html_theme_options = {THEME!r}\n"
        "root_doc = 'chapters/ch'\n")
    (source / "chapters" / "ch.md").write_text(text)
    app = Sphinx(source, source, tmp_path / "out", tmp_path / "doctrees", "html",
                 status=None, warning=None, freshenv=True)
    app.build()
    return (tmp_path / "out" / "chapters" / "ch.html").read_text()


def test_the_launch_role_links_the_page_it_is_on(tmp_path):
    html = build_page(tmp_path, "# Ch\n\nOpen this chapter in {launch}`colab` or {launch}`Binder`.\n")
    colab = launch_url("colab", THEME, "chapters/ch.md")
    binder = launch_url("binder", THEME, "chapters/ch.md")
    assert f'href="{colab}">Colab</a>' in html
    assert f'href="{binder.replace("&", "&amp;")}">Binder</a>' in html


def test_the_build_stops_on_the_placeholder_only_in_a_release(tmp_path, monkeypatch):
    from sphinx.errors import ConfigError

    monkeypatch.setitem(THEME, "repository_url", PLACEHOLDER_REPOSITORY)
    build_page(tmp_path / "local", "# Ch\n")
    monkeypatch.setenv(RELEASE_VARIABLE, "1")
    with pytest.raises(ConfigError, match="placeholder"):
        build_page(tmp_path / "release", "# Ch\n")


@pytest.mark.parametrize("entry", tools.notebook_pages())
def test_every_download_binder_and_colab_link_of_a_page_opens_the_reader_edition(entry):
    """The theme's Binder and Colab buttons and the {launch} links open the chapter on the
    branch the publishing step writes the reader edition to, at the path it writes it to;
    the download button serves the reader edition itself."""
    from attncourse.reader_edition import myst_left
    from site_ext.launch_links import SERVICES
    from site_ext.publish_edition import reader_branch

    page = tools.SITE / f"{entry}.html"
    if not page.exists():
        pytest.fail(f"no built page {page}: run `make book` first")
    hrefs = [html.unescape(href) for href in re.findall(r'href="([^"]+)"', page.read_text())]
    theme = {"repository_url": tools.CONFIG["repository"]["url"],
             "repository_branch": reader_branch(tools.ROOT),
             "launch_buttons": tools.CONFIG["launch_buttons"]}
    # The branch holds the edition at the chapter's own path (tests/test_publish_edition.py).
    expected = {launch_url(service, theme, f"{entry}.ipynb") for service in SERVICES}
    launches = [href for href in hrefs if href.startswith(
        (tools.CONFIG["launch_buttons"]["binderhub_url"], tools.CONFIG["launch_buttons"]["colab_url"]))]
    assert set(launches) == expected, f"{entry}: links elsewhere {set(launches) - expected}"
    assert len(launches) >= 4, f"{entry}: not both buttons and both {{launch}} links"
    downloads = [href for href in hrefs if "/_sources/" in href]
    assert downloads == [f"../_sources/{entry}.ipynb"]
    served = tools.SITE / "_sources" / f"{entry}.ipynb"
    assert served.read_bytes() == (tools.ROOT / "_build" / "reader" / f"{entry}.ipynb").read_bytes()
    cells = json.loads(served.read_text())["cells"]
    assert not [m for c in cells if c["cell_type"] == "markdown" for m in myst_left("".join(c["source"]))]
