"""tools: what the browser tests and the benchmark share."""

import os
import subprocess
import sys

import tools


def chromium_path(**environment):
    done = subprocess.run(
        [sys.executable, "-c", "import tools; print(tools.CHROMIUM['executable_path'])"],
        capture_output=True, text=True, check=True, cwd=tools.ROOT,
        env={k: v for k, v in os.environ.items() if k != "ATTNCOURSE_CHROMIUM"} | environment,
    )
    return done.stdout.strip()


def test_chromium_is_debians_unless_the_environment_names_another():
    assert chromium_path() == "/usr/bin/chromium"
    assert chromium_path(ATTNCOURSE_CHROMIUM="/opt/chrome/chrome") == "/opt/chrome/chrome"


def test_toc_pages_lists_the_chapters_in_order():
    chapters = tools.notebook_pages()
    assert chapters and chapters == sorted(chapters)
    assert all(page.startswith("chapters/") for page in chapters)
    assert tools.toc_pages()[0] == "intro"
