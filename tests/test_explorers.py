"""attncourse.explorers: one package, each explorer's Python beside its front end, names
loaded on first use, and what the explorers share defined once (common.py)."""

import subprocess
import sys

import pytest

from attncourse import explorers
from attncourse.explorers import common
from attncourse.explorers.esm import FRONT_END


@pytest.mark.parametrize("name", explorers.__all__)
def test_every_public_name_comes_from_the_module_it_names(name):
    value = getattr(explorers, name)
    home = explorers._HOMES[name]
    assert value.__module__ == f"attncourse.explorers.{home}"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        explorers.Nope  # noqa: B018


def test_importing_one_explorer_loads_no_other():
    """A chapter importing the attention explorer depends on it alone (the execution cache
    is keyed on what a chapter imports)."""
    code = ("import sys\nfrom attncourse.explorers import AttentionExplorer\n"
            "print(sorted(m for m in sys.modules if m.startswith('attncourse.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    loaded = eval(done.stdout)  # a printed list of strings
    assert "attncourse.explorers.attention_explorer" in loaded
    others = set(explorers._HOMES.values()) - {"attention_explorer", "common"}
    assert not {m.rsplit(".", 1)[-1] for m in loaded} & others, loaded


def test_every_explorer_raises_the_shared_error_class():
    from attncourse.explorers import AttentionExplorer

    with pytest.raises(common.InvalidExplorerInput):
        AttentionExplorer(["a"], [[1.0, 2.0]], dims=["only one"])
    assert issubclass(common.InvalidExplorerInput, ValueError)


def test_every_front_end_file_sits_beside_the_python_that_uses_it():
    """Each ``<name>_explorer.py`` has its ``.js`` in the same folder."""
    assert sorted(FRONT_END.glob("*_explorer.py"))
    for python in FRONT_END.glob("*_explorer.py"):
        assert python.with_suffix(".js").is_file(), python.name
    assert not (FRONT_END.parent / "static").exists()
