"""Every attention explorer, in headless Chromium with no kernel: it renders, shows the
numbers Python computed at build time, follows edits and its scale slider with the numbers
Python computes for the edited inputs, and shows token labels as text, never as HTML.

The explorer's DOM contract, and its reader, are in ``tools.explorer_dom``.
"""

from __future__ import annotations

import inspect
import json
import time

import numpy as np
import pytest

import tools
from attncourse.attention import causal_mask
from attncourse.explorers.attention_explorer import AttentionExplorer, explorer_view
from attncourse.explorers.esm import bundle
from tools.explorer_dom import READ_EXPLORER, grid_matrix

pytestmark = pytest.mark.browser

EXPLORER_ID = "attncourse.explorers.attention_explorer.AttentionExplorer"
VIEWS = ("scores", "weights", "output")  # what explorer_view returns, in order
TOLERANCE = 1e-9  # the explorer's JavaScript against the numpy reference

# The model id of the widget view an element belongs to (the site's widget host, like
# html-manager, puts each view in a div.widget-subarea right before its view tag).
_VIEW_MODEL = """(root) => JSON.parse(
  root.closest('.widget-subarea').nextElementSibling.textContent).model_id"""
_WIDGET_STATE = """() => JSON.parse(document.querySelector(
  'script[type="application/vnd.jupyter.widget-state+json"]').textContent).state"""


# --- the saved widget state -------------------------------------------------------------

def references(value):
    """Model ids a widget's state refers to."""
    if isinstance(value, str) and value.startswith("IPY_MODEL_"):
        yield value.removeprefix("IPY_MODEL_")
    elif isinstance(value, list):
        for item in value:
            yield from references(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from references(item)


def reachable(models, root):
    """The model ``root`` and every model its state refers to, transitively."""
    seen, todo = set(), [root]
    while todo:
        model_id = todo.pop()
        if model_id not in seen:
            seen.add(model_id)
            todo.extend(references(models[model_id]["state"]))
    return seen


def view_inputs(state):
    """explorer_view's keyword arguments from an explorer's saved state ([] means None)."""
    names = inspect.signature(explorer_view).parameters
    return {name: (None if state[name] == [] else state[name]) for name in names if name in state}


def expected_views(inputs):
    return dict(zip(VIEWS, (np.asarray(v) for v in explorer_view(**inputs))))


# --- what the DOM shows -----------------------------------------------------------------

def shown_views(read, seq):
    """The numbers an explorer shows: {view: (n_tables, rows, cols)}, and the weights drawn
    as a graph (n_graphs, seq, seq), an absent edge meaning weight 0."""
    shown = {role: np.array(tables, dtype=float) for role, tables in read["tables"].items()
             if tables}
    if read["graphs"]:
        graphs = np.zeros((len(read["graphs"]), seq, seq))
        for head, edges in enumerate(read["graphs"]):
            for source, target, weight in edges:
                graphs[head, int(target), int(source)] = float(weight)
        shown["graph"] = graphs
    return shown


def assert_shows(shown, expected, where):
    """Every number shown equals the numpy reference; every row of weights sums to 1."""
    assert shown, f"{where}: shows no scores, weights, output or graph"
    for view, values in shown.items():
        reference = expected["weights" if view == "graph" else view]
        assert values.size == reference.size, \
            f"{where}: {view} shows {values.shape} numbers, expected {reference.shape}"
        np.testing.assert_allclose(values, reference.reshape(values.shape), rtol=0,
                                   atol=TOLERANCE, err_msg=f"{where}: {view}")
        if view in ("weights", "graph"):
            np.testing.assert_allclose(values.sum(axis=-1), 1.0, rtol=0, atol=TOLERANCE,
                                       err_msg=f"{where}: rows of {view} must sum to 1")


def differs(before, after, view):
    """Whether a view's numbers (or the graph) changed between two reads."""
    return before["tables"][view] != after["tables"][view] or before["graphs"] != after["graphs"]


BLUE = np.array([31, 119, 180])  # explorer.js: the weights' colour, opacity = weight
SHADES = 100  # explorer.js: opacity steps
NUMBERS_UP_TO = 12  # explorer.js: larger heatmaps are colour only


def assert_weights_drawn(read, where):
    """Each weights heatmap paints every cell where its grid says, in the shade of that
    cell's weight (blue at opacity = weight, in steps of 1/100, over white): a heatmap
    drawn transposed, shifted, stale or not at all fails."""
    for head, (weights, cells) in enumerate(zip(read["tables"]["weights"],
                                                read["cells"]["weights"])):
        drawn = [[cell["background"] for cell in row] for row in cells]
        opacity = np.round(np.clip(weights, 0, 1) * SHADES)[..., None] / SHADES
        expected = 255 + opacity * (BLUE - 255)
        np.testing.assert_allclose(drawn, expected, rtol=0, atol=2,
                                   err_msg=f"{where}: colours of the weights, head {head}")


def read_until_changed(explorer, before, timeout=5.0):
    """The explorer's DOM once it differs from ``before`` (or as it is after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        read = explorer.evaluate(READ_EXPLORER)
        if read["tables"] != before["tables"] or read["graphs"] != before["graphs"] \
                or time.monotonic() > deadline:
            return read
        time.sleep(0.02)


# --- one explorer, end to end -----------------------------------------------------------

def shows_grid(state, name, grid):
    """Whether an input grid shows the saved matrix: a mask exactly, numbers to the
    explorer's decimals (its boxes round them)."""
    saved = np.asarray(state[name], dtype=grid.dtype)
    if grid.dtype == bool:
        return np.array_equal(saved, grid)
    return saved.shape == grid.shape and np.allclose(
        saved, grid, rtol=0, atol=0.5 * 10.0 ** -state["decimals"] + TOLERANCE)


def match_model(models, view_root, read):
    """The explorer model behind a DOM explorer: among the explorers of its widget view,
    the one whose tokens and editable matrices are those shown."""
    grids = {name: grid_matrix(entries) for name, entries in read["grids"].items()}
    candidates = [
        model_id for model_id in reachable(models, view_root)
        if models[model_id]["state"].get("_anywidget_id") == EXPLORER_ID
        and models[model_id]["state"]["tokens"] == read["tokens"]
        and all(shows_grid(models[model_id]["state"], name, grid) for name, grid in grids.items())
    ]
    assert len(candidates) == 1, f"{len(candidates)} explorer models fit the one shown"
    return candidates[0]


def edit_cell(matrix):
    """Which entry of an editable matrix to change, and to what: a number gains 1 in the
    last row's first column (so that swapped indices would show); the mask allows its
    first forbidden pair (so that it stays valid: every row still sees a token)."""
    if matrix.dtype == bool:
        i, j = np.argwhere(~matrix)[0] if (~matrix).any() else (len(matrix) - 1, 0)
        return int(i), int(j), not matrix[i, j]
    i, j = len(matrix) - 1, 0
    return i, j, float(matrix[i, j]) + 1.0


class ExplorerCheck:
    """One explorer on the page, its saved model, and the inputs it should now show."""

    def __init__(self, page, models, index):
        self.models = models
        self.explorer = page.locator(".attn-explorer").nth(index)
        self.read = self.explorer.evaluate(READ_EXPLORER)
        self.model_id = match_model(models, self.explorer.evaluate(_VIEW_MODEL), self.read)
        state = self.state = models[self.model_id]["state"]
        self.inputs = view_inputs(state)
        self.seq = len(state["tokens"])
        self.where = f"explorer {index} ({', '.join(state['tokens'])})"

        # The page saves the inputs only (Python's results are never synced: the browser
        # computes its own), and what the browser shows before anyone touches it is the
        # numpy reference for those inputs.
        assert not set(VIEWS) & set(state), f"{self.where}: results saved in the page"
        expected = expected_views(self.inputs)
        assert_shows(shown_views(self.read, self.seq), expected, self.where)
        assert_weights_drawn(self.read, self.where)
        printed = self.seq <= NUMBERS_UP_TO
        for view, heatmaps in self.read["cells"].items():
            inked = np.array([[[cell["inked"] for cell in row] for row in heatmap]
                              for heatmap in heatmaps], dtype=bool)
            assert inked.all() if printed else not inked.any(), \
                f"{self.where}: {view} should " \
                + ("print every number" if printed else "be colour only")

    def changed(self, action, view):
        """After ``action`` changed the inputs: the view changed, and shows the reference."""
        before, self.read = self.read, read_until_changed(self.explorer, self.read)
        assert differs(before, self.read, view), f"{self.where}: {action} changed no {view}"
        assert_shows(shown_views(self.read, self.seq), expected_views(self.inputs),
                     f"{self.where} after {action}")
        assert_weights_drawn(self.read, f"{self.where} after {action}")

    def edit_every_grid(self):
        """One entry of each editable matrix changes, through its input as a reader would."""
        for name, entries in self.read["grids"].items():
            matrix = grid_matrix(entries)
            i, j, value = edit_cell(matrix)
            cell = self.explorer.locator(
                f'table[data-role="edit-{name}"] [aria-label="{name}[{i}][{j}]"]')
            if isinstance(value, bool):
                cell.click()
            else:
                cell.fill(repr(value))  # fires the input event, as typing does
            self.inputs[name] = np.array(self.inputs[name], dtype=matrix.dtype)
            self.inputs[name][i, j] = value
            self.changed(f"editing {name}[{i}][{j}]",
                         "output" if name in ("W_v", "W_o") else "weights")

    def move_the_scale_slider(self):
        """The explorer's own scale slider, if it has one, moves one step from the keyboard
        (as a reader would) and its readout shows the new scale."""
        if not self.state.get("scale_slider"):
            assert not self.explorer.locator('input[data-role="scale"]').count(), \
                f"{self.where}: a scale slider with no scale_slider range"
            return
        minimum, maximum, step = self.state["scale_slider"]
        slider = self.explorer.locator('input[data-role="scale"]')
        assert [float(slider.get_attribute(a)) for a in ("min", "max", "step")] \
            == [minimum, maximum, step], f"{self.where}: the slider's range"
        up = self.inputs["scale"] + step <= maximum
        slider.press("ArrowRight" if up else "ArrowLeft")
        self.inputs["scale"] += step if up else -step
        self.changed(f"moving the scale slider to {self.inputs['scale']}", "weights")
        shown = self.explorer.locator(".attn-scale output").text_content()
        assert float(shown) == pytest.approx(self.inputs["scale"], abs=0.005), self.where


def check_every_explorer(page):
    """Run every check on every explorer the page displays (waiting until all have
    rendered); returns how many there are."""
    models = page.evaluate(_WIDGET_STATE)
    roots = page.eval_on_selector_all(
        'script[type="application/vnd.jupyter.widget-view+json"]',
        "tags => tags.map((tag) => JSON.parse(tag.textContent).model_id)")
    displayed = {model_id for root in roots for model_id in reachable(models, root)
                 if models[model_id]["state"].get("_anywidget_id") == EXPLORER_ID}
    count = len(displayed)
    page.wait_for_function(f"() => document.querySelectorAll('.attn-explorer').length >= {count}")
    rendered = page.locator(".attn-explorer").count()
    assert rendered == count, f"{rendered} explorers rendered for {count} explorer models shown"
    for index in range(count):
        check = ExplorerCheck(page, models, index)
        check.edit_every_grid()
        check.move_the_scale_slider()
    return count


def pages_with_explorers():
    """Pages of the table of contents whose built HTML holds an explorer."""
    built = [(entry, tools.SITE / f"{entry}.html") for entry in tools.toc_pages()]
    return [entry for entry, html in built if html.exists() and EXPLORER_ID in html.read_text()]


@pytest.mark.parametrize("entry", pages_with_explorers())
def test_explorers_on_the_site(entry, visit, watched_page):
    visit(f"{entry}.html")
    # The page must run this checkout's explorer: the execution cache keys on the notebook
    # alone, so after a change to explorer.js it can keep serving the old code.
    current = bundle("attention_explorer.js")
    saved = [m["state"]["_esm"] for m in watched_page.evaluate(_WIDGET_STATE).values()
             if m["state"].get("_anywidget_id") == EXPLORER_ID]
    assert all(esm == current for esm in saved), \
        f"{entry} carries an older explorer.js: clear _build/.jupyter_cache and rebuild"
    assert check_every_explorer(watched_page), f"{entry} holds explorer models, displays none"


def test_every_kind_of_explorer(site, visit, watched_page):
    """The explorer family beyond what the chapters use today: several heads, every matrix
    and the mask editable, the graph, a read-only mask and a scale slider."""
    rng = np.random.default_rng(3)
    tokens = ["the", "ball", "was", "wet", "it"]
    X = rng.standard_normal((5, 6)).round(2)
    W_q, W_k, W_v = (rng.standard_normal((6, 4)).round(2) for _ in range(3))
    every_input = AttentionExplorer(
        tokens, X, W_q=W_q, W_k=W_k, W_v=W_v, mask=causal_mask(5), n_heads=2,
        editable=("X", "W_q", "W_k", "W_v", "mask"), views=("scores", "weights", "output", "graph"))
    with_slider = AttentionExplorer(
        tokens, X, W_q=W_q, W_k=W_k, scale=1.0, mask=causal_mask(5), editable=(),
        views=("weights", "graph", "mask"), scale_slider=(0.0, 5.0, 0.5))
    visit(site.write_page("family.html", [every_input, with_slider], "Explorer family"))
    assert check_every_explorer(watched_page) == 2


def test_large_heatmaps_read_out_values_to_pointer_and_keyboard(site, visit, watched_page):
    """Past 12 tokens a heatmap is colour only (check_every_explorer checks no number is
    printed), as its caption says; its readout line gives the exact value of the cell
    under the pointer, or of the cell the arrow keys select."""
    rng = np.random.default_rng(4)
    tokens = [f"t{k}" for k in range(16)]
    explorer = AttentionExplorer(tokens, rng.standard_normal((16, 8)).round(2), scale=0.5)
    visit(site.write_page("large.html", [explorer], "Large explorer"))
    assert check_every_explorer(watched_page) == 1
    weights = watched_page.locator('.attn-explorer canvas[data-role="weights"]')
    readout = weights.locator("xpath=ancestor::figure//output[@class='attn-readout']")
    caption = weights.locator("xpath=ancestor::figure/figcaption").text_content()
    assert "colour only: point at a cell for its value" in caption, caption
    values = np.array(weights.evaluate("(canvas) => JSON.parse(canvas.dataset.values)"))
    grid = json.loads(weights.get_attribute("data-grid"))
    # The map may be shown smaller than drawn (maps shrink to sit side by side).
    scale = weights.bounding_box()["width"] / float(weights.evaluate("(c) => parseFloat(c.style.width)"))

    def says(row, col):
        return f"t{row}, t{col}: {float(f'{values[row, col]:.6g}')}"

    for row, col in ((5, 4), (15, 14), (0, 0)):
        weights.hover(position={"x": scale * (grid["left"] + (col + 0.5) * grid["cellWidth"]),
                                "y": scale * (grid["top"] + (row + 0.5) * grid["cellHeight"])})
        assert (readout.text_content(), weights.get_attribute("title")) == (says(row, col),) * 2
    weights.hover(position={"x": 2, "y": 2})  # the corner is a header, not a cell
    assert weights.get_attribute("title") == "" and "Point at a cell" in readout.text_content()

    weights.focus()
    for key in ("ArrowDown", "ArrowRight", "ArrowRight", "ArrowDown", "ArrowUp", "ArrowUp"):
        weights.press(key)  # the first press selects (0, 0), then each moves one cell
    assert readout.text_content() == says(0, 2)


LABELS = ["<img src=x onerror=alert(1)>", "<script>alert(2)</script>", "<b onclick=alert(3)>b"]

# Elements or attributes a label parsed as HTML would have created.
_INJECTED = """(root) => [...root.querySelectorAll('*')]
  .filter((e) => ['IMG', 'SCRIPT', 'B'].includes(e.tagName.toUpperCase())
                 || [...e.attributes].some((a) => a.name.startsWith('on')))
  .map((e) => e.outerHTML)"""


def test_token_labels_are_text_never_html(site, visit, watched_page):
    page = watched_page
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    explorer = AttentionExplorer(LABELS, np.eye(3), editable=("X",),
                                 views=("scores", "weights", "output", "graph"))
    visit(site.write_page("labels.html", [explorer], "Labels"))
    shown = page.locator(".attn-explorer")
    for when in ("rendered", "redrawn after an edit"):
        if when != "rendered":
            shown.locator('[aria-label="X[1][0]"]').fill("0.5")
        assert shown.evaluate(READ_EXPLORER)["tokens"] == LABELS, when
        text = shown.evaluate("(root) => root.textContent")
        assert all(label in text for label in LABELS), f"labels not shown literally ({when})"
        assert shown.evaluate(_INJECTED) == [], f"labels became HTML ({when})"
    page.wait_for_timeout(300)  # time for an injected image to fail to load and fire onerror
    assert not [url for url in requested if url.endswith("/x")], "an <img src=x> was created"
    # watched_page fails the test on any dialog (alert) the labels opened


def test_heads_switched_off_and_combined_two_ways_show_numpy_s_numbers(site, visit, watched_page):
    """Several heads joined by an editable W_O: after an edit of W_O, after switching a head
    off and after choosing "sum the raw heads", every number shown is explorer_view's."""
    rng = np.random.default_rng(5)
    tokens = ["the", "dog", "bit", "a", "man"]
    X = rng.standard_normal((5, 6)).round(2)
    W_q, W_k, W_v = (rng.standard_normal((6, 6)).round(2) for _ in range(3))
    W_o = rng.standard_normal((6, 4)).round(2)
    explorer = AttentionExplorer(tokens, X, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=3,
                                 editable=("W_o", "heads_on", "combine"))
    visit(site.write_page("heads.html", [explorer], "Heads"))
    watched_page.wait_for_selector(".attn-explorer canvas[data-role=weights]")
    check = ExplorerCheck(watched_page, watched_page.evaluate(_WIDGET_STATE), 0)
    check.edit_every_grid()  # W_O: one entry, through its input
    switches = check.explorer.locator('[data-role="heads_on"] input')
    assert switches.count() == 3
    weights = check.read["tables"]["weights"]
    switches.nth(1).uncheck()
    check.inputs["heads_on"] = [True, False, True]
    check.changed("switching head 1 off", "output")
    assert check.read["tables"]["weights"] == weights  # a head switched off still attends
    check.explorer.locator('select[data-role="combine"]').select_option("sum")
    check.inputs["combine"] = "sum"
    check.changed("summing the raw heads", "output")
    assert np.array(check.read["tables"]["output"]).shape == (1, 5, 2)  # d_head_v wide, no W_O
    switches.nth(1).check()
    check.inputs["heads_on"] = [True, True, True]
    check.changed("switching head 1 back on", "output")


def test_titles_and_grids_use_the_chapters_notation(site, visit, watched_page):
    """Before W_q and W_k exist the scores are A Aᵀ in the chapter's letter, not Q Kᵀ;
    the grid of embeddings carries that letter too."""
    tokens = ["pool", "sports"]
    embeddings = np.array([[1.0, 0.5], [0.2, 1.0]])
    plain = AttentionExplorer(tokens, embeddings, scale=1.0, input_name="A")
    projected = AttentionExplorer(tokens, embeddings, W_q=np.eye(2), W_k=np.eye(2),
                                  W_v=np.eye(2), scale=1.0, editable=("W_q",))
    visit(site.write_page("notation.html", [plain, projected], "Notation"))
    first, second = (watched_page.locator(".attn-explorer").nth(k) for k in (0, 1))
    captions = [box.locator("figcaption").all_text_contents() for box in (first, second)]
    assert captions[0][0].startswith("Scores A Aᵀ") and captions[0][2] == "Output rows: weights × A"
    assert captions[1][0].startswith("Scores Q Kᵀ") and captions[1][2] == "Output rows: weights × values"
    assert first.locator('table[data-role="edit-X"] th.attn-corner').text_content() == "A"
    assert second.locator('table[data-role="edit-W_q"] th.attn-corner').text_content() == "W_q"
