// KV-cache calculator (chapter 9): 2 x layers x kv heads x d_head x tokens x batch x bytes
// per value, with presets. Runs in the browser with or without a kernel; the product is taken
// with BigInt, exact however large, as attncourse.kv_cache.kv_cache_bytes does with Python's
// integers. Every label is written with textContent.

import { controlRow, el, inlineLabel, numberField, statusNote } from "./dom.js";
import { onChanges, saveChanges } from "./sync.js";

const FIELDS = [["n_layers", "layers"], ["n_kv_heads", "key/value heads"], ["d_head", "d_head"],
  ["seq_len", "tokens"], ["batch", "batch"]];

export function cacheBytes({ n_layers, n_kv_heads, d_head, seq_len, batch, bytes_per_value }) {
  return [n_layers, n_kv_heads, d_head, seq_len, batch, bytes_per_value]
    .reduce((product, factor) => product * BigInt(factor), 2n);
}

// "2,147,483,648 bytes = 2 GiB": the exact count, then the largest binary unit below it.
export function describe(bytes) {
  const units = [["TiB", 40n], ["GiB", 30n], ["MiB", 20n], ["KiB", 10n]];
  const exact = bytes.toLocaleString("en-US");
  for (const [unit, power] of units) {
    if (bytes >= 1n << power) {
      const value = Number(bytes) / Number(1n << power);
      return `${exact} bytes = ${Number(value.toPrecision(4))} ${unit}`;
    }
  }
  return `${exact} bytes`;
}

// The readout's text for one set of factors (for tests in Node: BigInt does not cross JSON).
export function cacheBytesText(values) {
  return describe(cacheBytes(values));
}

// The preset to show for a shape: the one chosen while the shape is its own (two presets may
// share a shape), else the first preset of that shape, else "" (custom). As preset_for in
// kv_cache_explorer.py.
export function presetFor(presets, chosen, { n_layers, n_kv_heads, d_head }) {
  const fits = ([layers, heads, width]) => layers === n_layers && heads === n_kv_heads && width === d_head;
  if (presets[chosen] && fits(presets[chosen])) return chosen;
  const match = Object.entries(presets).find(([, shape]) => fits(shape));
  return match ? match[0] : "";
}

function render({ model, el: host }) {
  const root = el("div", "attn-explorer kv-cache-calculator");
  root.style.cssText = "font:14px sans-serif;max-width:640px";
  const preset = el("select");
  preset.dataset.role = "preset";
  preset.setAttribute("aria-label", "model preset");
  preset.append(el("option", "", "(custom)"));
  for (const name of Object.keys(model.get("presets"))) {
    const option = el("option", "", name);
    option.value = name;
    preset.append(option);
  }
  const precision = el("select");
  precision.dataset.role = "precision";
  precision.setAttribute("aria-label", "precision");
  for (const [name, size] of Object.entries(model.get("precisions"))) {
    const option = el("option", "", `${name} (${size} byte${size > 1 ? "s" : ""})`);
    option.value = String(size);
    precision.append(option);
  }
  const save = (values) => saveChanges(model, values);
  // A factor that is not a whole number of at least 1 is refused out loud, not ignored.
  const note = statusNote("factor-note");
  const fields = {};
  const form = controlRow();
  form.append(inlineLabel("model", preset));
  const refusal = (value) => (Number.isInteger(value) && value >= 1 ? "" : "Each factor is a whole number of at least 1");
  for (const [name, text] of FIELDS) {
    fields[name] = numberField({ role: name, label: text }, { refusal, note, use: (value) => save({ [name]: value }) });
    form.append(inlineLabel(text, fields[name].input));
  }
  form.append(inlineLabel("precision", precision));
  const result = el("p");
  result.dataset.role = "cache-bytes";
  result.setAttribute("aria-live", "polite"); // the new size, read out after each change
  result.style.fontWeight = "bold";
  root.append(form, note, result);
  host.append(root);

  function update() {
    const values = Object.fromEntries([...FIELDS.map(([name]) => name), "bytes_per_value"]
      .map((name) => [name, model.get(name)]));
    for (const [name] of FIELDS) fields[name].show(values[name]);
    precision.value = String(values.bytes_per_value);
    const shown = presetFor(model.get("presets"), model.get("preset"), values);
    preset.value = shown || "(custom)";
    const bytes = cacheBytes(values);
    result.dataset.value = bytes.toString();
    result.textContent = `KV cache${shown ? ` of ${shown}` : ""}: ${describe(bytes)}`;
  }

  preset.addEventListener("change", () => {
    const shape = model.get("presets")[preset.value];
    if (shape) save({ preset: preset.value, n_layers: shape[0], n_kv_heads: shape[1], d_head: shape[2] });
  });
  precision.addEventListener("change", () => save({ bytes_per_value: Number(precision.value) }));
  update();
  const names = [...FIELDS.map(([n]) => n), "bytes_per_value", "preset"];
  return onChanges(model, Object.fromEntries(names.map((name) => [name, update])));
}

export default { render };
