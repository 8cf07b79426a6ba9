// Listening to the model and sending the reader's changes to Python, shared by the widgets
// (bundled into each one: see esm.py).

// Set `values` ({trait: value}) on the model and send them to the kernel when there is
// one. On a static page there is no comm: save_changes throws, and the page alone
// follows. Any other failure is a bug, and is thrown.
export function saveChanges(model, values) {
  for (const [name, value] of Object.entries(values)) model.set(name, value);
  try {
    model.save_changes();
  } catch (err) {
    if (!String(err).includes("no comm channel")) throw err;
  }
}

// One model.on("change:NAME") per trait, as AFM documents: `handlers` maps each trait to
// what its change redraws. Returns render's cleanup: what removes them all, then calls
// each of `releases` (what else render set up: an observer's disconnect, ...).
export function onChanges(model, handlers, ...releases) {
  const listeners = Object.entries(handlers).map(([name, handler]) => [`change:${name}`, handler]);
  listeners.forEach(([event, handler]) => model.on(event, handler));
  return () => {
    listeners.forEach(([event, handler]) => model.off(event, handler));
    releases.forEach((release) => release());
  };
}

// Python sends several traits in one message and the model fires a change event for each:
// one redraw for them all. The function returned asks for a redraw, saying `what` it must
// redo: the first ask queues the redraw in a microtask (it runs after the message's last
// change event), later asks join it, and redraw(asked) gets every `what` as a Set.
// Its cancel() drops a redraw not yet run, and every later ask (render's cleanup).
export function batched(redraw) {
  let asked = null; // what the queued redraw must redo; null while none is queued
  let cancelled = false;
  const ask = (what) => {
    if (cancelled) return;
    if (asked === null) {
      asked = new Set();
      queueMicrotask(() => {
        const all = asked;
        asked = null;
        if (!cancelled) redraw(all);
      });
    }
    asked.add(what);
  };
  ask.cancel = () => {
    cancelled = true;
  };
  return ask;
}
