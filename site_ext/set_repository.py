"""Point the course at the repository it is published from, in one command:

    python -m site_ext.set_repository https://github.com/OWNER/NAME

rewrites ``repository.url`` in _config.yml (which the launch buttons and the ``{launch}``
links read) and the Colab install cell of every chapter (``attncourse @ git+URL``), and
changes nothing else in those files.
"""

from __future__ import annotations

import pathlib
import re
import sys
from urllib.parse import urlsplit

ROOT = pathlib.Path(__file__).resolve().parents[1]
_CONFIG_URL = re.compile(r"^(repository:\n(?:[ \t]*#.*\n)*[ \t]+url:[ \t]*)(\S+)", re.MULTILINE)
_INSTALL_URL = re.compile(r"(attncourse @ git\+)(https://[^\s\"\\]+)")


def set_repository(url: str, root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """Write ``url`` into _config.yml and the chapters' install cells; returns the files
    changed."""
    parts = urlsplit(url)
    if parts.scheme != "https" or parts.netloc != "github.com" \
            or len(parts.path.strip("/").split("/")) != 2:
        raise ValueError(f"expected https://github.com/OWNER/NAME, got {url!r}")
    url = url.rstrip("/")
    changed = []
    config = root / "_config.yml"
    text, count = _CONFIG_URL.subn(lambda m: m.group(1) + url, config.read_text(), count=1)
    if count != 1:
        raise ValueError(f"{config}: no repository.url line to rewrite")
    changed += _write_if_changed(config, text)
    for notebook in sorted((root / "chapters").glob("*.ipynb")):
        text = _INSTALL_URL.sub(lambda m: m.group(1) + url, notebook.read_text())
        changed += _write_if_changed(notebook, text)
    return changed


def _write_if_changed(path: pathlib.Path, text: str) -> list[pathlib.Path]:
    if path.read_text() == text:
        return []
    path.write_text(text)
    return [path]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for path in set_repository(sys.argv[1]):
        print(f"updated {path.relative_to(ROOT)}")
