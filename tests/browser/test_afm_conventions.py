"""Every widget's front end follows the anywidget front-end module conventions (AFM) in
Chromium: render() listens with one model.on("change:NAME") per trait, only to traits the
model has, and returns a cleanup that removes every listener it added. Needs no built
site: each module is rendered on a blank page over a model that records its listeners."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ipywidgets.embed import embed_data

from attncourse.explorers import (
    AttentionExplorer,
    ConvolutionExplorer,
    GraphExplorer,
    ModelExplorer,
    PositionExplorer,
)
from attncourse.explorers.answer_box import answer_box

pytestmark = pytest.mark.browser

# A model with AFM's interface over a saved state, recording on() and off().
RENDER = """async ([source, state]) => {
  const listeners = [];
  const model = {
    get: (name) => state[name],
    set: (name, value) => { state[name] = value; },
    save_changes: () => { throw "Syncing error: no comm channel defined"; },
    send: () => {},
    on: (event, callback) => listeners.push([event, callback]),
    off: (event, callback) => {
      const k = listeners.findIndex(([e, c]) => e === event && c === callback);
      if (k >= 0) listeners.splice(k, 1);
    },
  };
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  const widget = (await import(url)).default;
  const el = document.createElement("div");
  document.body.appendChild(el);
  const cleanup = await widget.render({ model, el });
  const events = listeners.map(([event]) => event);
  const drawn = el.childElementCount;
  if (typeof cleanup === "function") cleanup();
  return { events, left: listeners.map(([event]) => event), cleanup: typeof cleanup, drawn };
}"""


def saved_state(widget):
    state = embed_data(views=[widget], drop_defaults=False)["manager_state"]["state"]
    return json.loads(json.dumps(state[widget.model_id]["state"]))


RNG = np.random.default_rng(0)
WIDGETS = [
    pytest.param(lambda: AttentionExplorer(
        ["a", "b", "c"], RNG.standard_normal((3, 2)), W_q=RNG.standard_normal((2, 2)),
        editable=("X", "W_q"), scale_slider=(0.0, 3.0, 0.1), scale=1.0), id="attention"),
    pytest.param(lambda: GraphExplorer(["a", "b", "c"], RNG.standard_normal((3, 2)),
                                       *RNG.standard_normal((3, 2, 2, 2))), id="graph"),
    pytest.param(lambda: ConvolutionExplorer(RNG.standard_normal(8).round(2), [1.0, 0.0, -1.0]),
                 id="convolution"),
    pytest.param(lambda: PositionExplorer("the dog bit the man"), id="position"),
    pytest.param(lambda: answer_box("ch1-predict-doubling"), id="answer box"),
    pytest.param(lambda: ModelExplorer([("A cat sat.", "A dog ran.")]), id="model",
                 marks=pytest.mark.slow),  # loads the real model
]


@pytest.mark.parametrize("make", WIDGETS)
def test_render_listens_once_per_trait_and_cleans_up(page, make):
    widget = make()
    name = type(widget).__name__
    page.set_content("<!doctype html><html><body></body></html>")
    state = saved_state(widget)
    result = page.evaluate(RENDER, [state["_esm"], state])
    assert result["drawn"] > 0, f"{name} drew nothing"
    assert result["cleanup"] == "function", f"{name}: render returns no cleanup"
    assert result["left"] == [], f"{name}: its cleanup left {result['left']}"
    changes = [event for event in result["events"] if event.startswith("change:")]
    assert all(" " not in event for event in result["events"]), result["events"]
    assert len(changes) == len(set(changes)), f"{name} listens twice to one trait: {changes}"
    unknown = {event.removeprefix("change:") for event in changes} - set(state)
    assert not unknown, f"{name} listens to traits its model lacks: {unknown}"
