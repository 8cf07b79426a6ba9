"""The attention explorer in a real JupyterLab with a live kernel, driven from headless
Chromium: an edit in the browser reaches Python (``explorer.X``, and the weights Python
recomputes from it, numpy arrays equal to the numpy reference), and an assignment in
Python (``explorer.X = ...``) redraws the explorer with the reference numbers.

The server (the session's ``lab`` fixture, tests/browser/conftest.py) runs on 127.0.0.1
from a temporary folder, with its own user configuration, data, runtime and settings
folders, every feature that would reach the internet off, and a kernel that is this test's
own Python. The page may request nothing from anywhere else.
"""

from __future__ import annotations

import json
import re
import sys
import time

import nbformat
import numpy as np
import pytest
from playwright.sync_api import expect

from attncourse.explorers.attention_explorer import explorer_view
from tools.explorer_dom import READ_EXPLORER, grid_matrix

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("lab")]

NOTEBOOK = "live.ipynb"
TOLERANCE = 1e-9  # the explorer's JavaScript against the numpy reference
KERNEL_MS = 60_000  # a kernel's start, or a cell's run, on a busy machine

TOKENS = ["a", "b", "c"]
X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
W_Q = np.array([[1.0, 0.5], [0.0, 1.0]])
W_K = np.array([[1.0, 0.0], [0.5, 1.0]])
W_V = np.array([[2.0, 0.0], [0.0, 3.0]])
# The reader's edits, then what Python assigns: each changes every view (scores, weights,
# output), so a view that failed to follow would show.
X_EDIT = (2, 0, 1.5)  # X[2][0] := 1.5
W_Q_EDIT = (1, 0, -0.75)  # W_q[1][0] := -0.75
X_FROM_PYTHON = np.array([[0.25, -1.0], [2.0, 0.5], [-0.5, 1.25]])
W_Q_FROM_PYTHON = np.array([[0.5, -1.5], [1.0, 0.25]])

# The notebook: cell 0 displays the explorer and defines report(), which prints what the
# kernel holds as one JSON line; the other cells run one at a time, when the test says.
SETUP = f"""\
import json
import sys
import numpy as np
from attncourse.explorers.attention_explorer import AttentionExplorer

explorer = AttentionExplorer(
    {TOKENS!r}, np.array({X.tolist()!r}),
    W_q=np.array({W_Q.tolist()!r}), W_k=np.array({W_K.tolist()!r}),
    W_v=np.array({W_V.tolist()!r}),
    editable=("X", "W_q"), views=("scores", "weights", "output"),
    scale_slider=(0.0, 2.0, 0.25),
)

def report():
    names = ("X", "W_q", "scores", "weights", "output")
    print(json.dumps({{
        "values": {{name: getattr(explorer, name).tolist() for name in names}},
        "types": {{name: type(getattr(explorer, name)).__name__ for name in names}},
        "python": sys.executable,
    }}))

explorer"""
CELLS = {
    "setup": SETUP,
    "report after X edit": "report()",
    "report after W_q edit": "report()",
    "assign X": f"explorer.X = np.array({X_FROM_PYTHON.tolist()!r})",
    "assign W_q": f"explorer.W_q = np.array({W_Q_FROM_PYTHON.tolist()!r})",
    "report after assignments": "report()",
    # What changes the explorer's layout rather than its numbers, assigned in Python.
    "assign n_heads": "explorer.n_heads = 2",
    "assign decimals": "explorer.decimals = 4",
    "assign dims": "explorer.dims = ['p', 'q']",
    "assign views": "explorer.views = ['weights', 'graph']",
    "report scale": "print(json.dumps({'scale': explorer.scale, "
                    "'weights': explorer.weights.tolist()}))",
}


def shown_by(read) -> dict[str, np.ndarray]:
    """{"X", "W_q", "scores", "weights", "output"} -> the matrix an explorer shows (from
    READ_EXPLORER): the inputs' values, and the full numbers its heatmaps draw (one head)."""
    return {name: grid_matrix(entries) for name, entries in read["grids"].items()} | {
        view: np.array(heads[0], dtype=float) for view, heads in read["tables"].items() if heads}


def reference(X, W_q) -> dict[str, np.ndarray]:
    """The inputs and what the explorer must show for them, from the numpy reference."""
    scores, weights, output = explorer_view(X, W_q=W_q, W_k=W_K, W_v=W_V)
    return {"X": X, "W_q": W_q, "scores": scores, "weights": weights, "output": output}


def mismatches(actual: dict, expected: dict) -> list[str]:
    """Names whose matrices differ (beyond TOLERANCE) or are missing, with both values."""
    return [
        f"{name}: shown {actual.get(name)!r}, expected {value!r}"
        for name, value in expected.items()
        if name not in actual or actual[name].shape != value.shape
        or not np.allclose(actual[name], value, rtol=0, atol=TOLERANCE)
    ]


def wait_for(explorer, problems, after: str, timeout: float = KERNEL_MS / 1000) -> None:
    """Wait until ``problems(read)``, what is still wrong in the explorer's DOM as
    READ_EXPLORER reads it, is empty; fail naming it after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while wrong := problems(explorer.evaluate(READ_EXPLORER)):
        if time.monotonic() > deadline:
            pytest.fail(f"after {after}, the explorer did not show within {timeout} s: {wrong}")
        explorer.page.wait_for_timeout(50)


def wait_until_shown(explorer, expected: dict, after: str) -> None:
    """Wait until the explorer shows ``expected`` ({name: matrix})."""
    wait_for(explorer, lambda read: mismatches(shown_by(read), expected), after)


def run_cell(page, name: str):
    """Run the notebook cell CELLS[name] as a reader would (click into it, Shift+Enter);
    returns the cell."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(list(CELLS).index(name))
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    return cell


_REPORT = re.compile(r'^\{"values": .*"\}\s*$', re.S)  # the whole line report() prints


def assert_kernel_holds(page, report_cell: str, expected: dict, after: str) -> None:
    """Run a report() cell: the kernel (this test's Python) holds the inputs as the browser
    shows them, and the scores, weights and output Python recomputed, as numpy arrays
    equal to the reference; the rows of the weights sum to 1."""
    output = run_cell(page, report_cell).locator(".jp-OutputArea-output")
    expect(output).to_have_text(_REPORT, timeout=KERNEL_MS)
    printed = json.loads(output.inner_text())
    assert printed["python"] == sys.executable, f"the kernel runs {printed['python']}"
    assert printed["types"] == dict.fromkeys(expected, "ndarray"), \
        f"after {after}: explorer attributes of types {printed['types']}"
    for name, value in expected.items():
        np.testing.assert_allclose(printed["values"][name], value, rtol=0, atol=TOLERANCE,
                                   err_msg=f"explorer.{name} after {after}")
    np.testing.assert_allclose(np.sum(printed["values"]["weights"], axis=-1), 1.0, rtol=0,
                               atol=TOLERANCE, err_msg=f"rows of explorer.weights after {after}")


def edit(explorer, name: str, i: int, j: int, value: float) -> str:
    """Type ``value`` into the explorer's input for ``name[i][j]`` as a reader would (fill
    fires the input event that typing fires); returns what was done, for messages."""
    explorer.locator(f'table[data-role="edit-{name}"] [data-cell="{name}[{i}][{j}]"]').fill(
        repr(value))
    return f"editing {name}[{i}][{j}] in the browser"


def write_notebook(lab) -> None:
    """The notebook of CELLS, on the session's kernel of this test's Python."""
    spec = {"name": lab.kernel_name, "display_name": lab.kernel_display, "language": "python"}
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in CELLS.values()],
        metadata={"kernelspec": spec},
    )
    nbformat.write(notebook, lab.root / NOTEBOOK)


def test_explorer_syncs_with_a_live_kernel(lab, lab_page, screenshots):
    page = lab_page
    write_notebook(lab)
    page.goto(lab.notebook_url(NOTEBOOK))
    # The status bar names the kernel once the notebook has one; the toolbar's indicator
    # says "idle" before that, and a cell run then is dropped.
    expect(page.locator(".jp-StatusBar-TextItem", has_text=f"{lab.kernel_display} | Idle")) \
        .to_be_visible(timeout=KERNEL_MS)
    explorer = run_cell(page, "setup").locator(".attn-explorer")
    explorer.wait_for(timeout=KERNEL_MS)
    wait_until_shown(explorer, reference(X, W_Q), "displaying it")

    # Browser -> Python: the reader edits X, then W_q; after each edit the kernel holds
    # the edited matrix and the numbers recomputed from it.
    X_edited, W_q_edited = X.copy(), W_Q.copy()
    i, j, value = X_EDIT
    X_edited[i, j] = value
    after = edit(explorer, "X", i, j, value)
    assert_kernel_holds(page, "report after X edit", reference(X_edited, W_Q), after)
    i, j, value = W_Q_EDIT
    W_q_edited[i, j] = value
    after = edit(explorer, "W_q", i, j, value)
    assert_kernel_holds(page, "report after W_q edit", reference(X_edited, W_q_edited), after)

    # Python -> browser: each assignment redraws the inputs and every view...
    run_cell(page, "assign X")
    wait_until_shown(explorer, reference(X_FROM_PYTHON, W_q_edited), "explorer.X = ...")
    run_cell(page, "assign W_q")
    expected = reference(X_FROM_PYTHON, W_Q_FROM_PYTHON)
    wait_until_shown(explorer, expected, "explorer.W_q = ...")
    # ...and Python holds the numbers for them.
    assert_kernel_holds(page, "report after assignments", expected, "assignments in Python")

    # Python -> browser, the layout: each trait the explorer reads redraws what it shapes.
    scale = 1 / np.sqrt(2)  # the explorer's default for d_head = 2, kept as the heads split
    run_cell(page, "assign n_heads")
    two_heads = explorer_view(X_FROM_PYTHON, W_q=W_Q_FROM_PYTHON, W_k=W_K, W_v=W_V,
                              scale=scale, n_heads=2)[1]
    wait_for(explorer, lambda read: mismatches(
        {"weights": np.array(read["tables"]["weights"], dtype=float)}, {"weights": two_heads}),
        "explorer.n_heads = 2")
    run_cell(page, "assign decimals")
    wait_for(explorer, lambda read: [
        f"{role} prints {decimals} decimals" for role, decimals in read["decimals"]
        if decimals != "4"] + ([] if len(read["decimals"]) == 5 else [
            f"{len(read['decimals'])} heatmaps, not 2 heads x (scores, weights) + output"]),
        "explorer.decimals = 4")
    run_cell(page, "assign dims")
    expect(explorer.locator('table[data-role="edit-X"] th.attn-col')).to_have_text(["p", "q"])
    run_cell(page, "assign views")
    wait_for(explorer, lambda read: [] if (
        len(read["graphs"]) == 2 and len(read["tables"]["weights"]) == 2
        and not read["tables"]["scores"] and not read["tables"]["output"]
    ) else [f"{len(read['graphs'])} graphs and heatmaps {read['decimals']}"],
        "explorer.views = ['weights', 'graph'] (a weights heatmap and a graph per head)")

    # Browser -> Python, the explorer's own scale slider moved (fill sets a range input and
    # fires its input event, as dragging does): the kernel holds the scale and the weights
    # recomputed for it.
    explorer.locator('input[data-role="scale"]').fill("0.75")
    expect(explorer.locator(".attn-scale output")).to_have_text("0.75")
    output = run_cell(page, "report scale").locator(".jp-OutputArea-output")
    expect(output).to_have_text(re.compile(r'^\{"scale": '), timeout=KERNEL_MS)
    printed = json.loads(output.inner_text())
    assert printed["scale"] == 0.75, f"the kernel holds scale={printed['scale']}"
    np.testing.assert_allclose(printed["weights"], explorer_view(
        X_FROM_PYTHON, W_q=W_Q_FROM_PYTHON, W_k=W_K, W_v=W_V, scale=0.75, n_heads=2)[1],
        rtol=0, atol=TOLERANCE, err_msg="explorer.weights after the scale slider moved")

    explorer.scroll_into_view_if_needed()
    page.screenshot(path=screenshots / "live_kernel_lab.png")
