"""tools/seed_sweep.py on a tiny generated notebook: a claim that holds for every seed,
one that holds for seed 0 only, and the seed-specific tag."""

from __future__ import annotations

import random

import nbformat
import numpy as np
import pytest

from tools import seed_sweep

pytestmark = pytest.mark.slow  # each run starts a kernel


def _notebook(folder, cells, name="tiny.ipynb"):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for index, (source, tags) in enumerate(cells):
        cell = nbformat.v4.new_code_cell(source)
        cell.id = f"cell-{index}"
        cell.metadata["tags"] = tags
        notebook.cells.append(cell)
    path = folder / name
    nbformat.write(notebook, path)
    return path


SEED_0_DRAW = int(np.random.default_rng(0).integers(1_000_000))

ROBUST = ("import numpy as np\n"
          "x = np.random.default_rng(0).standard_normal(10_000)\n"
          "assert abs(x.mean()) < 0.05  # true for every seed", [])
FRAGILE = (f"assert np.random.default_rng(0).integers(1_000_000) == {SEED_0_DRAW}", [])
TAGGED = (f"assert np.random.default_rng(seed=0).integers(1_000_000) == {SEED_0_DRAW}", ["seed-specific"])


def test_the_prelude_moves_every_integer_seed_and_leaves_the_rest():
    namespace: dict = {}
    state = (np.random.default_rng, np.random.seed, np.random.RandomState, random.seed, random.Random)
    try:
        exec(seed_sweep.prelude(2), namespace)
        assert np.random.default_rng(1).integers(1 << 30) == np.random.Generator(np.random.PCG64(3)).integers(1 << 30)
        random.seed(4)
        first = random.random()
        random.Random(6).random()  # a generator seeded by hand is moved too
        assert first == state[4](6).random()
        assert isinstance(np.random.default_rng(None), np.random.Generator)  # fresh entropy stays fresh
    finally:
        np.random.default_rng, np.random.seed, np.random.RandomState, random.seed, random.Random = state


def test_a_claim_that_holds_for_seed_0_only_is_listed_with_its_shifts(tmp_path):
    path = _notebook(tmp_path, [ROBUST, FRAGILE])
    report = seed_sweep.sweep(path, shifts=2)
    assert not report.ok
    assert [(f.index, f.cell_id, f.shift) for f in report.failures] == [(1, "cell-1", 1), (1, "cell-1", 2)]
    assert report.failures[0].error.startswith("AssertionError")
    assert "cell 1 (id cell-1): fails under shift(s) 1, 2: AssertionError" in "\n".join(report.lines())


def test_one_seed_specific_cell_is_reported_but_not_counted(tmp_path):
    path = _notebook(tmp_path, [ROBUST, TAGGED])
    report = seed_sweep.sweep(path, shifts=1)
    assert report.ok and [f.shift for f in report.failures] == [1]
    assert "[seed-specific, not counted]" in "\n".join(report.lines())


def test_a_second_seed_specific_cell_fails_the_sweep(tmp_path):
    path = _notebook(tmp_path, [ROBUST, TAGGED, TAGGED])
    report = seed_sweep.sweep(path, shifts=0)
    assert report.failures == [] and not report.ok
    assert "at most 1 is allowed" in report.lines()[-1]


def test_the_command_line_exits_0_when_everything_holds_and_1_otherwise(tmp_path, capsys):
    holds = _notebook(tmp_path, [ROBUST], name="holds.ipynb")
    assert seed_sweep.main([str(holds), "--shifts", "0"]) == 0
    fragile = _notebook(tmp_path, [ROBUST, FRAGILE], name="fragile.ipynb")
    assert seed_sweep.main([str(fragile), "--shifts", "1"]) == 1
    out = capsys.readouterr().out
    assert "0 of 1 notebook(s) hold under 1 shift(s); failing:" in out and "fragile.ipynb" in out


def test_legacy_numpy_and_torch_seeds_move_in_the_kernel(tmp_path):
    torch = pytest.importorskip("torch")
    torch_draw = int(torch.randint(1 << 30, (1,), generator=torch.Generator().manual_seed(0)))
    legacy_draw = int(np.random.RandomState(0).randint(1 << 30))
    cells = [("import numpy as np, torch", []),
             (f"assert np.random.RandomState(0).randint(1 << 30) == {legacy_draw}", []),
             (f"np.random.seed(0)\nassert np.random.randint(1 << 30) == {legacy_draw}", []),
             (f"torch.manual_seed(0)\nassert int(torch.randint(1 << 30, (1,))) == {torch_draw}", [])]
    report = seed_sweep.sweep(_notebook(tmp_path, cells), shifts=1)
    assert sorted((f.index, f.shift) for f in report.failures) == [(1, 1), (2, 1), (3, 1)]
