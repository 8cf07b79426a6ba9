// Sending the reader's changes to Python, shared by the widgets (bundled into each one:
// see attncourse.esm).

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
