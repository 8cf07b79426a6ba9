"""Point the course at where it is published, in one command:

    python -m site_ext.set_repository https://github.com/OWNER/NAME https://SITE/ [BRANCH]

rewrites, in _config.yml, ``repository.url`` and ``repository.branch`` (which the launch
buttons and the ``{launch}`` links open: the branch the publishing step writes the reader
edition to, "notebooks" unless BRANCH names another) and ``html.baseurl`` (the published
site, in front of every link the reader edition writes); and the Colab install cell of every
chapter (``attncourse @ git+URL@BRANCH``). It changes nothing else in those files.
"""

from __future__ import annotations

import pathlib
import re
import sys
from urllib.parse import urlsplit

ROOT = pathlib.Path(__file__).resolve().parents[1]
READER_BRANCH = "notebooks"
# A key of a block of _config.yml, below its other keys and comments.
_KEY = r"^({block}:\n(?:(?:[ \t]+.*|[ \t]*#.*)?\n)*?[ \t]+{key}:[ \t]*)(\S+)"
_SETTINGS = {  # (block, key) -> what it holds, for the message when it is missing
    ("repository", "url"): "the repository",
    ("repository", "branch"): "the reader edition's branch",
    ("html", "baseurl"): "the published site",
}
_INSTALL_URL = re.compile(r"(attncourse @ git\+)(https://[^\s\"\\@]+)(@[^\s\"\\]+)?")
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")


def set_repository(url: str, site: str, branch: str = READER_BRANCH,
                   root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """Write the repository ``url``, its reader ``branch`` and the ``site`` URL into
    _config.yml, and ``url@branch`` into the chapters' install cells; returns the files
    changed."""
    parts = urlsplit(url)
    if parts.scheme != "https" or parts.netloc != "github.com" \
            or len(parts.path.strip("/").split("/")) != 2:
        raise ValueError(f"expected https://github.com/OWNER/NAME, got {url!r}")
    if urlsplit(site).scheme not in ("https", "http") or not urlsplit(site).netloc:
        raise ValueError(f"expected the published site's URL (https://...), got {site!r}")
    if not _BRANCH.fullmatch(branch) or ".." in branch:
        raise ValueError(f"not a branch name: {branch!r}")
    url = url.rstrip("/")
    values = {("repository", "url"): url, ("repository", "branch"): branch,
              ("html", "baseurl"): site.rstrip("/") + "/"}
    config = root / "_config.yml"
    text = config.read_text()
    for (block, key), value in values.items():
        pattern = re.compile(_KEY.format(block=block, key=key), re.MULTILINE)
        text, count = pattern.subn(lambda m, v=value: m.group(1) + v, text, count=1)
        if count != 1:
            raise ValueError(f"{config}: no {block}.{key} line ({_SETTINGS[block, key]}) to rewrite")
    changed = _write_if_changed(config, text)
    for notebook in sorted((root / "chapters").glob("*.ipynb")):
        text = _INSTALL_URL.sub(lambda m: f"{m.group(1)}{url}@{branch}", notebook.read_text())
        changed += _write_if_changed(notebook, text)
    return changed


def _write_if_changed(path: pathlib.Path, text: str) -> list[pathlib.Path]:
    if path.read_text() == text:
        return []
    path.write_text(text)
    return [path]


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    for path in set_repository(*sys.argv[1:]):
        print(f"updated {path.relative_to(ROOT)}")
