"""site_static/anywidget-host.js, the static site's host for saved anywidgets, in Node: its
model (AFM's get / set / on / off / save_changes) and how it reads a page's saved state.
That it shows every explorer on every chapter page, which then responds to the reader, is
checked in a browser (tests/browser/)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

import tools
from tests.explorer_examples import registry_widgets

HOST = tools.ROOT / "site_static" / "anywidget-host.js"


def run_host(script: str):
    """Run ``script`` (an async function body with the host's exports as ``host``) in Node;
    returns what it returns, through JSON."""
    node = shutil.which("node")
    assert node, "Node.js is needed to test the widget host"
    program = (f"import * as host from {json.dumps(HOST.as_uri())};\n"
               f"const result = await (async () => {{ {script} }})();\n"
               "console.log(JSON.stringify(result));")
    done = subprocess.run([node, "--input-type=module", "-e", program], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_set_fires_change_events_only_for_a_real_change():
    events = run_host("""
      const model = new host.SavedModel({ X: [[1, 2]], scale: 1 });
      const events = [];
      model.on("change:X", () => events.push(["X", model.get("X")]));
      model.on("change", () => events.push(["any"]));
      model.set("X", [[1, 2]]);         // equal data, a new array: no event
      model.set("X", [[1, 3]]);
      model.set("scale", 1);            // unchanged: no event
      model.set("scale", 2);            // no listener for scale, but "change" fires
      return events;
    """)
    assert events == [["X", [[1, 3]]], ["any"], ["any"]]


def test_on_and_off_take_one_event_each_as_afm_does():
    """One listener per trait; a Backbone-style list of names is refused, not ignored."""
    calls, refused = run_host("""
      const model = new host.SavedModel({ a: 0, b: 0 });
      let calls = 0;
      const count = () => { calls += 1; };
      const other = () => { calls += 100; };
      model.on("change:a", count);
      model.on("change:b", count);
      model.on("change:b", other);
      model.set("a", 1); model.set("b", 1);  // 1 + 101
      model.off("change:b", other);
      model.set("b", 2);                     // 1
      model.off("change:a", count);
      model.set("a", 2);                     // 0
      const refused = [];
      for (const call of [() => model.on("change:a change:b", count),
                          () => model.off("change:a  change:b", count), () => model.on("", count)]) {
        try { call(); } catch (error) { refused.push(error.message); }
      }
      return [calls, refused];
    """)
    assert calls == 103
    assert len(refused) == 3 and all("one event name per call" in m for m in refused)


def test_with_no_kernel_save_changes_fails_and_send_is_dropped_as_in_the_widget_manager():
    thrown = run_host("""
      const model = new host.SavedModel({});
      const caught = (call) => { try { call(); return null; } catch (error) { return error; } };
      return [caught(() => model.save_changes()), host.NO_COMM, caught(() => model.send({}))];
    """)
    # html-manager throws this very string: the explorers recognise "no comm channel".
    # Its send() does nothing without a comm (the model explorer asks for a kernel).
    assert thrown == ["Syncing error: no comm channel defined"] * 2 + [None]


def test_a_listener_that_removes_itself_does_not_stop_the_others():
    calls = run_host("""
      const model = new host.SavedModel({ a: 0 });
      const calls = [];
      const once = () => { calls.push("once"); model.off("change:a", once); };
      model.on("change:a", once);
      model.on("change:a", () => calls.push("always"));
      model.set("a", 1); model.set("a", 2);
      return calls;
    """)
    assert calls == ["once", "always", "always"]


@pytest.mark.parametrize(("saved", "message"), [
    ({}, "no saved state for widget model m1"),
    ({"m1": {"model_module": "@jupyter-widgets/controls", "model_name": "FloatSliderModel",
             "state": {}}},
     "widget model m1 is a @jupyter-widgets/controls FloatSliderModel: "
     "this page's host shows anywidgets only"),
    ({"m1": {"model_module": "anywidget", "model_name": "AnyModel", "state": {"_esm": "x"},
             "buffers": [{"path": ["data"], "data": "AA==", "encoding": "base64"}]}},
     "widget model m1 saved binary buffers, which this host does not read"),
    ({"m1": {"model_module": "anywidget", "model_name": "AnyModel", "state": {}}},
     "widget model m1 has no front-end module (_esm)"),
])
def test_a_model_the_host_cannot_show_is_named(saved, message):
    said = run_host(f"""
      try {{ host.anywidgetState({json.dumps(saved)}, "m1"); return null; }}
      catch (error) {{ return error.message; }}
    """)
    assert said == message


def test_an_anywidget_model_gives_its_saved_traits():
    saved = {"m1": {"model_module": "anywidget", "model_name": "AnyModel",
                    "state": {"_esm": "export default {}", "tokens": ["a", "b"]}}}
    state = run_host(f"return host.anywidgetState({json.dumps(saved)}, 'm1');")
    assert state == saved["m1"]["state"]


@pytest.mark.parametrize("name", registry_widgets())
def test_every_course_module_is_evaluated_at_once_with_its_render(name):
    """No import() to wait for: a view is drawn as soon as the parser passes it. Every
    widget of the explorers' registry, its module as its pages save it (esm.py)."""
    found = run_host(f"""
      const exported = host.evaluateNow({json.dumps(registry_widgets()[name]._esm)});
      return exported && typeof exported.default.render;
    """)
    assert found == "function"


@pytest.mark.parametrize(("source", "expected"), [
    # export function lines anywhere, one `export default {` line anywhere: run at once
    ("var exported = 1;\nexport default { render() { return exported; } };", ["function", ["default"]]),
    ("export default { render };\nfunction render() {}\nexport function twice(x) { return 2 * x; }",
     ["function", ["default"]]),
    ("export async function load() {}\nexport default { render: () => 1 };", ["function", ["default"]]),
    # anything else is left to import(): null
    ('import { el } from "./dom.js";\nexport default { render() {} };', None),
    ("export const answer = 42;\nexport default {};", None),
    ("export default class Widget {}\nWidget.render = () => 1;", None),  # a default not `{`
    ("export default function render() {}", None),
    ("export { helper };\nfunction helper() {}\nexport default {};", None),
    ("export function render() {}", None),  # no default: an older module, imported
    ("const here = import.meta.url;\nexport default {};", None),  # module-only syntax
])
def test_only_modules_of_the_course_s_form_are_evaluated_at_once(source, expected):
    found = run_host(f"""
      const exported = host.evaluateNow({json.dumps(source)});
      if (!exported) return null;
      return [typeof exported.default.render, Object.keys(exported)];
    """)
    assert found == expected


def test_where_eval_is_forbidden_a_course_module_is_left_to_import():
    """A Content-Security-Policy without 'unsafe-eval' makes new Function throw EvalError."""
    found = run_host("""
      globalThis.Function = function () { throw new EvalError("unsafe-eval is not allowed"); };
      return host.evaluateNow("export default { render() {} };");
    """)
    assert found is None
