"""Every widget the explorers' registry lists follows the anywidget front-end module
conventions (AFM) in Chromium: render() listens with one model.on("change:NAME") per trait,
only to traits the model has, and returns a cleanup that releases all it set up: after
it no model listener is left, no observer watches, no listener on the window or the
document is left, and nothing it queued or observed runs (nothing reads the model again).
Needs no built site: each module is rendered on a blank page over a model that records its
listeners. Parametrised from the registry (tests/explorer_examples.py): a widget added there
without an example fails here."""

from __future__ import annotations

import json

import pytest
from ipywidgets.embed import embed_data

from tests.explorer_examples import example, widget_params

pytestmark = pytest.mark.browser

# A model with AFM's interface over a saved state, recording on() and off() and counting
# get() after the cleanup; observers and global listeners counted as render sets them up.
RENDER = """async ([source, state]) => {
  let cleaned = false;
  const late = []; // what ran after the cleanup
  const observers = [];
  for (const kind of ["ResizeObserver", "MutationObserver", "IntersectionObserver"]) {
    const Original = window[kind];
    window[kind] = class extends Original {
      constructor(callback, options) {
        super((...args) => {
          if (cleaned) late.push(`a ${kind}'s callback`);
          return callback(...args);
        }, options);
        this.watching = 0;
        observers.push([kind, this]);
      }
      observe(...args) { this.watching += 1; return super.observe(...args); }
      unobserve(...args) { this.watching = Math.max(0, this.watching - 1); return super.unobserve(...args); }
      disconnect() { this.watching = 0; return super.disconnect(); }
    };
  }
  const globalListeners = [];
  const globals = () => [window, document, document.documentElement, document.body];
  const { addEventListener: add, removeEventListener: remove } = EventTarget.prototype;
  EventTarget.prototype.addEventListener = function (type, callback, options) {
    if (globals().includes(this)) globalListeners.push([this.constructor.name, type, callback]);
    return add.call(this, type, callback, options);
  };
  EventTarget.prototype.removeEventListener = function (type, callback, options) {
    const k = globalListeners.findIndex(([, t, c]) => t === type && c === callback);
    if (globals().includes(this) && k >= 0) globalListeners.splice(k, 1);
    return remove.call(this, type, callback, options);
  };
  const listeners = [];
  const model = {
    get: (name) => {
      if (cleaned) late.push(`model.get("${name}")`);
      return state[name];
    },
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
  // A message from Python changes traits just before the view goes: a redraw it queued
  // must not run after the cleanup.
  for (const [event, callback] of [...listeners]) if (event.startsWith("change:")) callback();
  if (typeof cleanup === "function") cleanup();
  cleaned = true;
  // What an observer or a listener could still hear: a new size, a new theme, the window.
  el.style.width = "237px";
  document.documentElement.dataset.theme = "dark";
  window.dispatchEvent(new Event("resize"));
  for (let frame = 0; frame < 3; frame++) await new Promise((done) => requestAnimationFrame(done));
  await new Promise((done) => setTimeout(done, 50));
  return {
    events, drawn, cleanup: typeof cleanup, late: [...new Set(late)],
    left: listeners.map(([event]) => event),
    watching: observers.filter(([, observer]) => observer.watching > 0).map(([kind]) => kind),
    globalLeft: globalListeners.map(([target, type]) => `${target} ${type}`),
  };
}"""


def saved_state(widget):
    state = embed_data(views=[widget], drop_defaults=False)["manager_state"]["state"]
    return json.loads(json.dumps(state[widget.model_id]["state"]))


@pytest.mark.parametrize("name", widget_params())
def test_render_listens_once_per_trait_and_its_cleanup_releases_everything(page, name):
    widget = example(name)
    page.set_content("<!doctype html><html><body></body></html>")
    state = saved_state(widget)
    result = page.evaluate(RENDER, [state["_esm"], state])
    assert result["drawn"] > 0, f"{name} drew nothing"
    assert result["cleanup"] == "function", f"{name}: render returns no cleanup"
    assert result["left"] == [], f"{name}: its cleanup left model listeners {result['left']}"
    assert result["watching"] == [], f"{name}: its cleanup left observers watching: {result['watching']}"
    assert result["globalLeft"] == [], f"{name}: its cleanup left listeners {result['globalLeft']}"
    assert result["late"] == [], f"{name}: after its cleanup, ran {result['late']}"
    changes = [event for event in result["events"] if event.startswith("change:")]
    assert all(" " not in event for event in result["events"]), result["events"]
    assert len(changes) == len(set(changes)), f"{name} listens twice to one trait: {changes}"
    unknown = {event.removeprefix("change:") for event in changes} - set(state)
    assert not unknown, f"{name} listens to traits its model lacks: {unknown}"
