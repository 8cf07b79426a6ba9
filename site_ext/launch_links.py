"""Sphinx extension: live-notebook links in the text, and a release build that refuses the
placeholder repository.

``{launch}`colab``` and ``{launch}`binder``` in a chapter's markdown become links that open
that chapter in Colab or Binder, built from the same settings (and in the same form) as the
theme's launch buttons: ``repository.url``/``branch`` and ``launch_buttons`` in _config.yml.
The repository URL is the one setting to change when the course is published (README).

With ``ATTNCOURSE_RELEASE=1`` the build stops while that URL, or the site's own
(``html.baseurl``), is still the placeholder, so no published site or notebook links to a
repository or a site that does not exist; local builds accept them.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from docutils import nodes
from sphinx.errors import ConfigError

PLACEHOLDER_REPOSITORY = "https://github.com/attention-step-by-step/course"
PLACEHOLDER_SITE = "https://attention-step-by-step.github.io/course/"
RELEASE_VARIABLE = "ATTNCOURSE_RELEASE"
SERVICES = {"colab": "Colab", "binder": "Binder"}
_INTERFACES = {"classic": "tree", "jupyterlab": "lab/tree"}


def launch_url(service: str, theme_options: dict, page: str) -> str:
    """The address that opens ``page`` (a notebook's path in the repository) on ``service``
    ("colab" or "binder"), from the theme options jupyter-book writes from _config.yml."""
    repository = theme_options["repository_url"].rstrip("/")
    parts = urlsplit(repository)
    if parts.netloc != "github.com" or len(parts.path.strip("/").split("/")) != 2:
        raise ValueError(f"launch links need a https://github.com/OWNER/NAME repository, "
                         f"got {repository!r}")
    owner, name = parts.path.strip("/").split("/")
    branch = theme_options.get("repository_branch") or "main"
    docs = theme_options.get("path_to_docs", "").strip("/")
    path = f"{docs}/{page}" if docs else page
    launch = theme_options["launch_buttons"]
    if service == "colab":
        return f"{launch['colab_url'].rstrip('/')}/github/{owner}/{name}/blob/{branch}/{path}"
    if service == "binder":
        interface = _INTERFACES[launch.get("notebook_interface", "classic")]
        return (f"{launch['binderhub_url'].rstrip('/')}/v2/gh/{owner}/{name}/{branch}"
                f"?urlpath={interface}/{path}")
    raise ValueError(f"unknown launch service {service!r}: choose from {sorted(SERVICES)}")


def release_problem(repository_url: str, environ, site_url: str = "") -> str | None:
    """Why a build with this repository and site URL cannot be released, or None."""
    if environ.get(RELEASE_VARIABLE) != "1":
        return None
    if repository_url.rstrip("/") == PLACEHOLDER_REPOSITORY:
        return (f"{RELEASE_VARIABLE}=1 but repository.url in _config.yml is still the "
                f"placeholder {PLACEHOLDER_REPOSITORY}: set it to the published repository "
                "(README.md, Publishing)")
    if site_url.rstrip("/") == PLACEHOLDER_SITE.rstrip("/"):
        return (f"{RELEASE_VARIABLE}=1 but html.baseurl in _config.yml is still the "
                f"placeholder {PLACEHOLDER_SITE}: set it to the published site "
                "(README.md, Publishing)")
    return None


def launch_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    env = inliner.document.settings.env
    service = text.strip().lower()
    if service not in SERVICES:
        message = inliner.reporter.error(
            f"{{launch}} takes one of {sorted(SERVICES)}, got {text!r}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    page = os.path.relpath(env.doc2path(env.docname), env.srcdir).replace(os.sep, "/")
    url = launch_url(service, env.config.html_theme_options, page)
    link = nodes.reference(rawtext, SERVICES[service], refuri=url, classes=["attn-launch"])
    return [link], []


def _check_release(app, config):
    problem = release_problem(config.html_theme_options.get("repository_url", ""), os.environ,
                              config.html_baseurl or "")
    if problem:
        raise ConfigError(problem)


def setup(app):
    app.add_role("launch", launch_role)
    app.connect("config-inited", _check_release)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
