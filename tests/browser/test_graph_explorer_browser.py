"""The graph explorer in headless Chromium with no kernel: it shows the numbers numpy
computes for every setting of its controls (threshold, causal and window masks,
W_Q = W_K, the layer stepper), its nodes are sized by how much each token is read, no
label overlaps an arrowhead with 11 tokens, and labels are text, never HTML."""

from __future__ import annotations

import numpy as np
import pytest

import tools
from attncourse.examples import tennis_sentence
from attncourse.explorers.esm import bundle
from attncourse.explorers.graph_explorer import GraphExplorer, graph_explorer_view
from tests.browser.test_explorer_browser import _INJECTED, LABELS  # the same hostile labels

pytestmark = pytest.mark.browser

EXPLORER_ID = "attncourse.explorers.graph_explorer.GraphExplorer"
TOLERANCE = 1e-9

# Everything the explorer shows, read from its DOM.
READ = """(root) => {
  const panel = (role) => {
    const svg = root.querySelector(`svg[data-role="${role}"]`);
    return {
      edges: [...svg.querySelectorAll('.ge-edge')]
        .filter((g) => g.style.display !== 'none')
        .map((g) => [Number(g.dataset.from), Number(g.dataset.to), Number(g.dataset.weight)]),
      weights: [...svg.querySelectorAll('.ge-edge')]
        .map((g) => [Number(g.dataset.from), Number(g.dataset.to), Number(g.dataset.weight)]),
      read: [...svg.querySelectorAll('.ge-source')].map((c) => Number(c.dataset.read)),
      radii: [...svg.querySelectorAll('.ge-source')].map((c) => Number(c.getAttribute('r'))),
      labels: [...svg.querySelectorAll('.ge-label')].map((t) => t.textContent),
    };
  };
  const cycle = root.querySelector('[data-role="cycle"]');
  return {
    layer: root.querySelector('[data-role="layer"]').textContent.trim(),
    graph: panel('layer-graph'),
    rollout: panel('rollout-graph'),
    cycleValue: cycle.dataset.value,
    cycle: cycle.dataset.cycle,
    cycleText: cycle.textContent,
    edgesText: root.querySelector('[data-role="edges"]').textContent,
  };
}"""

# Bounding boxes (page pixels) of every label and every visible arrowhead.
BOXES = """(root) => {
  const box = (e) => { const r = e.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom]; };
  return {
    labels: [...root.querySelectorAll('.ge-label')].map(box),
    heads: [...root.querySelectorAll('.ge-edge')].filter((g) => g.style.display !== 'none')
      .map((g) => box(g.querySelector('.ge-arrowhead'))),
  };
}"""


def explorer_model():
    """Chapter 5's model: six random single heads on the tennis sentence, skip connections."""
    sentence = tennis_sentence()
    rng = np.random.default_rng(0)
    d_model = sentence.X.shape[1]
    W_q, W_k = rng.standard_normal((2, 6, d_model, d_model))
    W_v = rng.standard_normal((6, d_model, d_model)) / np.sqrt(d_model)
    return list(sentence.tokens), dict(X=sentence.X, W_q=W_q.round(2), W_k=W_k.round(2),
                                       W_v=W_v.round(2))


def matrix_of(edges, seq):
    matrix = np.zeros((seq, seq))
    for source, target, weight in edges:
        matrix[int(target), int(source)] = weight
    return matrix


class Shown:
    """One graph explorer on the page, compared with graph_explorer_view after each action."""

    def __init__(self, page, tokens, inputs, scale, **settings):
        self.root = page.locator(".attn-graph-explorer").first
        self.tokens, self.inputs, self.scale = tokens, inputs, scale
        self.settings = dict(skip=True, causal=False, window=False, window_radius=2, tied=False)
        self.settings |= settings
        self.threshold, self.layer = 0.1, 0
        self.read = self.root.evaluate(READ)

    def expected(self):
        return graph_explorer_view(**self.inputs, scale=self.scale, **self.settings)

    def check(self, where):
        self.read = read = self.root.evaluate(READ)
        view, seq, layer = self.expected(), len(self.tokens), self.layer
        assert read["layer"] == f"layer {layer + 1} of 6", where
        for panel, reference in (("graph", view["weights"][layer]),
                                 ("rollout", view["rollouts"][layer])):
            shown = read[panel]
            np.testing.assert_allclose(matrix_of(shown["weights"], seq), reference, rtol=0,
                                       atol=TOLERANCE, err_msg=f"{where}: {panel} weights")
            visible = matrix_of(shown["edges"], seq)
            np.testing.assert_array_equal(visible > 0, reference > self.threshold,
                                          err_msg=f"{where}: {panel} edges above the threshold")
            np.testing.assert_allclose(shown["read"], reference.sum(axis=0), atol=TOLERANCE,
                                       err_msg=f"{where}: {panel} column sums")
            radii = np.array(shown["radii"])  # area proportional to how much a token is read
            np.testing.assert_allclose(radii**2 / radii.max() ** 2,
                                       reference.sum(axis=0) / reference.sum(axis=0).max(),
                                       atol=1e-3, err_msg=f"{where}: {panel} node sizes")
        found = view["cycles"][layer]
        if found is None:
            assert read["cycleValue"] == "" and "no cycle through three tokens" in read["cycleText"]
        else:
            assert float(read["cycleValue"]) == pytest.approx(found[0], rel=1e-9), where
        shown_edges = int((view["weights"][layer] > self.threshold).sum())
        assert read["edgesText"].startswith(f"Layer {layer + 1}: {shown_edges} of its"), where
        return read


@pytest.fixture
def explorer_page(site, visit, watched_page):
    tokens, inputs = explorer_model()
    explorer = GraphExplorer(tokens, **inputs)
    visit(site.write_page("graph_explorer.html", [explorer], "Graph explorer"))
    watched_page.wait_for_selector(".attn-graph-explorer svg[data-role='layer-graph']")
    return Shown(watched_page, tokens, inputs, explorer.scale)


def test_every_control_shows_the_numpy_reference(explorer_page):
    shown = explorer_page
    root = shown.root
    shown.check("as built")

    slider = root.locator('input[data-role="threshold"]')
    slider.fill("0.3")  # a range input: fill sets the value and fires input
    shown.threshold = 0.3
    fewer = shown.check("threshold 0.3")
    assert len(fewer["graph"]["edges"]) < len(shown.expected()["weights"][0].ravel())

    root.locator('input[data-role="causal"]').check()
    shown.settings["causal"] = True
    read = shown.check("causal mask")
    assert all(source <= target for source, target, _ in read["graph"]["edges"])
    assert "every edge runs forward" in read["cycleText"]
    root.locator('input[data-role="causal"]').uncheck()
    shown.settings["causal"] = False

    root.locator('input[data-role="window"]').check()
    shown.settings["window"] = True
    read = shown.check("window")
    assert all(abs(source - target) <= 2 for source, target, weight in read["graph"]["weights"]
               if weight > 0)
    root.locator('input[data-role="window"]').uncheck()
    shown.settings["window"] = False

    untied = float(shown.check("untied again")["cycleValue"])
    assert untied > 2
    root.locator('input[data-role="tied"]').check()
    shown.settings["tied"] = True
    read = shown.check("W_Q = W_K")
    assert float(read["cycleValue"]) == pytest.approx(1.0, abs=1e-9)  # snaps to 1
    assert "ratio 1.000" in read["cycleText"]
    root.locator('input[data-role="tied"]').uncheck()
    shown.settings["tied"] = False

    previous = root.locator('button[data-role="previous"]')
    next_layer = root.locator('button[data-role="next"]')
    assert previous.is_disabled()
    for layer in range(1, 6):
        next_layer.click()
        shown.layer = layer
        shown.check(f"layer {layer + 1}")
    assert next_layer.is_disabled()
    previous.click()
    shown.layer = 4
    shown.check("back to layer 5")


def test_eleven_labels_never_overlap_an_arrowhead(explorer_page, screenshots):
    shown = explorer_page
    shown.root.locator('input[data-role="threshold"]').fill("0")  # every edge drawn
    shown.threshold = 0.0
    for layer in range(2):
        if layer:
            shown.root.locator('button[data-role="next"]').click()
            shown.layer = layer
        shown.check(f"all edges, layer {layer + 1}")
        boxes = shown.root.evaluate(BOXES)
        assert len(boxes["labels"]) == 4 * 11 and len(boxes["heads"]) >= 2 * 11
        for label in boxes["labels"]:
            for head in boxes["heads"]:
                overlap = min(label[2], head[2]) - max(label[0], head[0]) > 0 \
                    and min(label[3], head[3]) - max(label[1], head[1]) > 0
                assert not overlap, f"label {label} overlaps arrowhead {head}"
        labels = sorted(boxes["labels"], key=lambda box: (box[0], box[1]))
        for first, second in zip(labels, labels[1:]):  # labels in a column do not touch
            if abs(first[0] - second[0]) < 1:
                assert first[3] <= second[1] + 0.5, (first, second)
    shown.root.screenshot(path=str(screenshots / "graph_explorer.png"))


def test_token_labels_are_text_never_html(site, visit, watched_page):
    requested = []
    watched_page.on("request", lambda request: requested.append(request.url))
    rng = np.random.default_rng(1)
    explorer = GraphExplorer(LABELS, rng.standard_normal((3, 2)), *rng.standard_normal((3, 2, 2, 2)))
    visit(site.write_page("graph_labels.html", [explorer], "Graph labels"))
    root = watched_page.locator(".attn-graph-explorer")
    for when in ("rendered", "redrawn"):
        if when == "redrawn":
            root.locator('button[data-role="next"]').click()
        labels = root.evaluate("(r) => [...r.querySelectorAll('.ge-label')].map((t) => t.textContent)")
        assert labels == [label for label in LABELS for _side in ("read", "reader")] * 2, when
        assert root.evaluate(_INJECTED) == [], f"labels became HTML ({when})"
    watched_page.wait_for_timeout(300)
    assert not [url for url in requested if url.endswith("/x")], "an <img src=x> was created"


def pages_with_graph_explorers():
    built = [(entry, tools.SITE / f"{entry}.html") for entry in tools.toc_pages()]
    return [entry for entry, html in built if html.exists() and EXPLORER_ID in html.read_text()]


@pytest.mark.parametrize("entry", pages_with_graph_explorers())
def test_graph_explorers_on_the_site(entry, visit, watched_page):
    """Each graph explorer on a chapter page runs this checkout's JavaScript and shows
    what numpy computes for its saved inputs."""
    visit(f"{entry}.html")
    state = watched_page.evaluate("""() => JSON.parse(document.querySelector(
      'script[type="application/vnd.jupyter.widget-state+json"]').textContent).state""")
    saved = [m["state"] for m in state.values() if m["state"].get("_anywidget_id") == EXPLORER_ID]
    current = bundle("graph_explorer.js")
    assert saved and all(s["_esm"] == current for s in saved), \
        f"{entry} carries an older graph_explorer.js: clear _build/.jupyter_cache and rebuild"
    first = saved[0]
    inputs = {name: np.array(first[name]) for name in ("X", "W_q", "W_k", "W_v")}
    settings = {name: first[name] for name in ("skip", "causal", "window", "window_radius", "tied")}
    shown = Shown(watched_page, first["tokens"], inputs, first["scale"], **settings)
    shown.layer = first["layer"]
    shown.threshold = first["threshold"]
    shown.check(f"{entry} as built")
    shown.root.locator('input[data-role="tied"]').check()
    shown.settings["tied"] = True
    assert float(shown.check(f"{entry}, W_Q = W_K")["cycleValue"]) == pytest.approx(1.0)
