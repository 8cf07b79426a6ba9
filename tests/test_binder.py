"""Binder installs what the local set-up installs, at the same versions, with CPU torch."""

import pathlib
import re
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s#]+)")


def pins(path):
    found = {}
    for line in path.read_text().splitlines():
        match = PIN.match(line.strip())
        if match:
            found[match[1].lower()] = match[2]
    return found


def test_binder_pins_match_the_local_pins():
    local = pins(ROOT / "requirements.txt") | pins(ROOT / "constraints.txt")
    binder = pins(ROOT / "binder" / "requirements.txt")
    assert binder, "binder/requirements.txt pins nothing"
    for name, version in binder.items():
        expected = local[name] + "+cpu" if name == "torch" else local[name]
        assert version == expected, f"binder pins {name}=={version}, local {expected}"


def test_binder_installs_everything_attncourse_needs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = {re.split(r"[<>=!\[ ]", dep)[0].lower() for dep in project["dependencies"]}
    needed |= {"torch"}  # chapters that train or compare with PyTorch
    binder_file = (ROOT / "binder" / "requirements.txt").read_text()
    assert needed <= set(pins(ROOT / "binder" / "requirements.txt")), needed
    assert "-e ." in binder_file.splitlines(), "attncourse itself is not installed"
    assert "download.pytorch.org/whl/cpu" in binder_file
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
