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
// what its change redraws. Returns what removes them all (render's cleanup).
export function onChanges(model, handlers) {
  const listeners = Object.entries(handlers).map(([name, handler]) => [`change:${name}`, handler]);
  listeners.forEach(([event, handler]) => model.on(event, handler));
  return () => listeners.forEach(([event, handler]) => model.off(event, handler));
}
