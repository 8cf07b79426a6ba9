// A static host for anywidgets: shows every widget a built page saved, with no kernel and
// no widget manager. Replaces @jupyter-widgets/html-manager (3.6 MB, with require.js) on
// the site: every widget the course shows is an anywidget, whose front end is an
// anywidget front-end module (AFM: https://anywidget.dev/en/afm/) saved in its state as
// `_esm`, with its stylesheet as `_css`. The host implements AFM's narrow model interface
// (get, set, on/off "change:NAME", save_changes, send) over the saved state and calls the
// module's initialize({ model }) once per model and render({ model, el }) once per view.
// In a live kernel (Jupyter, Colab, Binder) none of this runs: the real widget manager
// and anywidget's own glue do.
//
// Loaded as an async, render-blocking module from the page's head. It reads the page's
// widget state (one <script type="application/vnd.jupyter.widget-state+json">, in a built
// chapter's head, before this script) once the parser is past it, wherever it is, and shows
// each view (a <script type="application/vnd.jupyter.widget-view+json"> where it goes) as
// the parser passes it, before the text below the view is first painted (in Chromium;
// other browsers ignore blocking="render", and may paint before the host has run), never
// waiting for the deferred scripts (the theme's icons, MathJax: 2.7 MB) as a deferred
// script would. A widget that cannot be shown is reported on the console by model id and
// name; the others are shown all the same.

const STATE = 'script[type="application/vnd.jupyter.widget-state+json"]';
const VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]';

// What html-manager's models throw on save_changes() with no kernel (@jupyter-widgets/base,
// WidgetModel.sync: a string, not an Error). The course's widgets catch it by this text,
// as they must in any static page, so the host fails the same way.
export const NO_COMM = "Syncing error: no comm channel defined";

// Equal as JSON data (what saved state holds): a set() that changes nothing fires no
// change event, as in the widget manager (Backbone compares with _.isEqual).
function sameData(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length
    && keys.every((key) => Object.hasOwn(b, key) && sameData(a[key], b[key]));
}

// AFM's model over one widget's saved state. Events are "change:NAME" (after set() changed
// NAME) and "change" (after any set() that changed something); on(name, callback) and
// off(name, callback) take one event each, as AFM documents (one listener per trait), and
// refuse Backbone's space-separated lists, which would otherwise never fire.
export class SavedModel {
  #state;
  #listeners = new Map(); // event name -> callbacks, in the order they were added

  constructor(state) {
    this.#state = { ...state };
  }

  get(name) {
    return this.#state[name];
  }

  set(name, value) {
    if (sameData(this.#state[name], value)) return;
    this.#state[name] = value;
    this.#emit(`change:${name}`);
    this.#emit("change");
  }

  on(event, callback) {
    SavedModel.#oneEvent(event);
    if (!this.#listeners.has(event)) this.#listeners.set(event, []);
    this.#listeners.get(event).push(callback);
  }

  off(event, callback) {
    SavedModel.#oneEvent(event);
    this.#listeners.set(event, (this.#listeners.get(event) || []).filter((c) => c !== callback));
  }

  static #oneEvent(event) {
    if (typeof event !== "string" || !event || /\s/.test(event)) {
      throw new Error(`one event name per call, such as "change:X"; got ${JSON.stringify(event)}`);
    }
  }

  // No kernel to send to: fail as the widget manager does on a static page.
  save_changes() {
    throw NO_COMM;
  }

  // A custom message with no kernel goes nowhere, silently, as in the widget manager
  // (WidgetModel.send does nothing without a comm): a widget may ask whether a kernel is
  // there and hear nothing back.
  send() {}

  #emit(event) {
    // A copy: a callback may add or remove listeners.
    for (const callback of [...(this.#listeners.get(event) || [])]) callback();
  }
}

// The widget state saved in the page, {model id: {model_module, model_name, state}}, once
// the parser is past it (or the page has none); null while it may still be arriving.
export function savedState(root = document) {
  const script = root.querySelector(STATE);
  if (script ? !parsedPast(script, root) : root.readyState === "loading") return null;
  return script ? JSON.parse(script.textContent).state : {};
}

// The anywidget model `id` of `state`, with its saved traits; an Error naming what is
// wrong for anything else (a standard ipywidgets control needs the full widget manager).
export function anywidgetState(state, id) {
  const saved = state[id];
  if (!saved) throw new Error(`no saved state for widget model ${id}`);
  if (saved.model_module !== "anywidget") {
    throw new Error(`widget model ${id} is a ${saved.model_module} ${saved.model_name}: `
      + "this page's host shows anywidgets only");
  }
  if (saved.buffers && saved.buffers.length) {
    throw new Error(`widget model ${id} saved binary buffers, which this host does not read`);
  }
  if (typeof saved.state._esm !== "string") {
    throw new Error(`widget model ${id} has no front-end module (_esm)`);
  }
  return saved.state;
}

// A module from its source text, imported from a blob: URL (no request leaves the page).
async function importSource(source) {
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  try {
    return await import(url);
  } finally {
    URL.revokeObjectURL(url);
  }
}

// The course's own widget modules (attncourse/esm.py: only `export function` lines and
// one `export default {` line) run at once as a function body, giving { default }; null
// for any other module, or where the page forbids eval (a Content-Security-Policy
// without 'unsafe-eval'): those are imported. An import() waits for the parser to yield
// (150-250 ms on a chapter page), and a view the parser passed meanwhile appeared late
// and pushed the text below it down.
const STATEMENT = /^(import|export)\b(.*)$/gm;
const FUNCTION_EXPORT = /^ (async )?function\b/;
export function evaluateNow(source, name = "widget") {
  const statements = [...source.matchAll(STATEMENT)];
  const defaults = statements.filter(([, word, rest]) => word === "export"
    && rest.startsWith(" default {"));
  const other = statements.filter(([, word, rest]) => word === "import"
    || !(rest.startsWith(" default {") || FUNCTION_EXPORT.test(rest)));
  if (defaults.length !== 1 || other.length) return null;
  const body = source.replace(/^export default \{/m, "__hostExports.default = {")
    .replace(/^export (?=(async )?function\b)/gm, "");
  let run;
  try {
    run = new Function("__hostExports", `"use strict";\n${body}\n//# sourceURL=${name}.js`);
  } catch {
    return null; // a module-only form (import.meta, top-level await), or eval forbidden
  }
  const exported = {};
  run(exported);
  return exported;
}

// The widget's lifecycle methods: a default export that is the object or a function
// returning it (AFM), or an older module exporting render itself.
async function widgetDefinition(source, name) {
  const course = typeof name === "string" && name.startsWith("attncourse.");
  const module = (course && evaluateNow(source, name)) || await importSource(source);
  if (module.default) {
    return typeof module.default === "function" ? await module.default() : module.default;
  }
  if (module.render) return { render: module.render };
  throw new Error("the front-end module exports neither a default nor render");
}

// One <style> per anywidget id, as anywidget itself does, however many views share it.
function addStylesheet(css, id) {
  if (!css || document.getElementById(id)) return;
  const style = document.createElement("style");
  style.id = id;
  style.textContent = css;
  document.head.appendChild(style);
}

// Each model once: its module loaded (once per distinct source: a page's explorers share
// one) and initialize() called before its first view.
function modelLoader(state) {
  const modules = new Map(); // front-end module source -> its widget definition
  const models = new Map(); // model id -> { model, widget }
  const definition = (source, name) => {
    if (!modules.has(source)) modules.set(source, widgetDefinition(source, name));
    return modules.get(source);
  };
  return (id) => {
    if (!models.has(id)) {
      models.set(id, (async () => {
        const saved = anywidgetState(state, id);
        const model = new SavedModel(saved);
        addStylesheet(saved._css, saved._anywidget_id || `anywidget-${id}`);
        const widget = await definition(saved._esm, saved._anywidget_id);
        await widget.initialize?.({ model });
        return { model, widget };
      })());
    }
    return models.get(id);
  };
}

// The view where its script is: a div.widget-subarea before the script, as html-manager
// inserts it (the site's stylesheets style widgets by that class), in the page before
// render() so that a view can measure itself.
async function showView(script, load) {
  const { model_id: id } = JSON.parse(script.textContent);
  const { model, widget } = await load(id);
  const area = document.createElement("div");
  area.className = "widget-subarea";
  const el = document.createElement("div");
  area.appendChild(el);
  script.before(area);
  await widget.render?.({ model, el });
}

// Whether the parser has finished ``node``: the parser inserts a <script> as soon as it
// reads its start tag and appends its text as the text arrives, so a script read earlier
// may be half its JSON (a page that arrives in parts, as on a busy machine). Past it once
// anything follows it in the document, or the page is parsed.
function parsedPast(node, root) {
  if (root.readyState !== "loading") return true;
  for (let at = node; at && at !== root; at = at.parentNode) {
    if (at.nextSibling) return true;
  }
  return false;
}

// Every view of the page, each as soon as the parser has passed it: the models are loaded
// as soon as the widget state is whole (on a built page it is in the head, before this
// script; the course's modules at once, see evaluateNow), so the view is drawn before the
// text below it is first painted, and nothing moves.
export function showWidgets(root = document) {
  const report = (error) => console.error("anywidget host:", error);
  let load = null; // once the state is read
  const readState = () => {
    let state;
    try {
      state = savedState(root);
    } catch (error) {
      report(error); // a page edited by hand: its views are then named as unknown models
      state = {};
    }
    if (state === null) return false;
    load = modelLoader(state);
    for (const [id, saved] of Object.entries(state)) {
      // A failure is reported once, when a view of the model is shown.
      if (saved.model_module === "anywidget") load(id).catch(() => {});
    }
    return true;
  };
  const shown = new WeakSet();
  const showNew = () => {
    if (!load && !readState()) return;
    for (const script of root.querySelectorAll(VIEW)) {
      if (shown.has(script) || !parsedPast(script, root)) continue;
      shown.add(script);
      showView(script, load).catch(report);
    }
  };
  if (root.readyState === "loading") {
    const parsing = new MutationObserver(showNew);
    parsing.observe(root, { childList: true, subtree: true });
    root.addEventListener("readystatechange", () => {
      showNew(); // views the observer has not reported yet: disconnect() drops them
      parsing.disconnect();
    }, { once: true });
  }
  showNew();
}

if (typeof document !== "undefined") showWidgets();
