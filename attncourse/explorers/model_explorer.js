// Model explorer (chapter 7): the heads of a real model's layer, sentence by sentence.
// Runs in the browser with or without a kernel (anywidget keeps this file in the saved
// widget state); model_explorer.py computes every number at build time and, in a
// live kernel, again for the heads the reader switches off. Weights arrive as base64 of
// their hundredths (encode_maps); rows are queries, columns keys. Sentences 2k and 2k + 1
// are pair k. Token labels are only ever written with textContent.

import { el, markScrollingBoxes } from "./dom.js";
import { heatmap } from "./heatmap.js";
import { batched, onChanges, saveChanges } from "./sync.js";

const THUMBNAIL = 80; // CSS pixels at most: a small map, whatever the number of tokens
const WEIGHT_DECIMALS = 2;
const BLUE = [31, 119, 180]; // a weight of 1 in a small map; 0 is white

// model_explorer.py's decode_maps: [layer][head][query][key] weights.
export function decodeMaps({ encoded, seq, nHeads }) {
  const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
  const cells = seq * seq;
  const nLayers = bytes.length / (nHeads * cells);
  return Array.from({ length: nLayers }, (_, l) => Array.from({ length: nHeads }, (_, h) =>
    Array.from({ length: seq }, (_, i) => Array.from({ length: seq }, (_, j) =>
      bytes[(l * nHeads + h) * cells + i * seq + j] / 10 ** WEIGHT_DECIMALS))));
}

const sameHeads = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// What the line under the maps says: the pair's similarity with every head on, and with
// the heads switched off when it is known (computed in a live kernel for exactly these
// heads, or at build time for a single head); null while a kernel computes it. `live` is
// the kernel's number, when it has one for these heads.
export function similarityReadout({ full, without, ablated, live }) {
  const signed = (x) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(3)}`;
  const intact = `${full.toFixed(3)} with every head on`;
  if (!ablated.length) return { value: full, text: intact };
  const single = ablated.length === 1 ? without[ablated[0][0]][ablated[0][1]] : null;
  const value = typeof live === "number" ? live : single;
  const which = ablated.length === 1 ? `layer ${ablated[0][0]}, head ${ablated[0][1]}`
    : `${ablated.length} heads`;
  if (value === null) return { value, text: `${intact}; without ${which}: computing…` };
  return { value, text: `${intact}; without ${which}: ${value.toFixed(3)} (${signed(value - full)})` };
}

// A labelled <select> of `options`; onPick(index).
function picker(role, text, options, onPick) {
  const select = el("select", "mx-select");
  select.dataset.role = role;
  options.forEach((option, k) => select.appendChild(new Option(option, String(k))));
  select.addEventListener("change", () => onPick(Number(select.value)));
  const label = el("label", "mx-picker", text);
  label.appendChild(select);
  return { node: label, select };
}

// A head's map, small: colour only (weight 1 is BLUE), on a button that shows it large. data-values holds the matrix drawn, for the browser tests.
function thumbnail(head, onPick, onSwitch) {
  const box = el("div", "mx-head"); // not a figure: explorer.css makes figures scroll
  box.dataset.head = String(head);
  const button = el("button", "mx-pick");
  button.type = "button";
  const canvas = el("canvas");
  canvas.dataset.role = "head-map";
  canvas.dataset.head = String(head);
  button.appendChild(canvas);
  button.addEventListener("click", () => onPick(head));
  const on = el("input");
  on.type = "checkbox";
  on.dataset.role = "head-on";
  on.addEventListener("change", () => onSwitch(head, on.checked));
  const label = el("label", "mx-switch");
  label.append(on, document.createTextNode(` head ${head}`));
  box.append(button, label);

  // One canvas pixel per cell, scaled up by CSS (image-rendering: pixelated): twelve
  // maps of 16 x 16 cells cost 3,072 pixels written at once, not 3,072 fillRects.
  const ctx = canvas.getContext("2d");
  function draw(matrix, layer, chosen, off) {
    const seq = matrix.length;
    if (canvas.width !== seq) {
      canvas.width = canvas.height = seq;
      canvas.style.width = canvas.style.height = `${Math.max(2, Math.floor(THUMBNAIL / seq)) * seq}px`;
    }
    const image = ctx.createImageData(seq, seq);
    matrix.forEach((row, i) => row.forEach((w, j) => {
      const k = 4 * (i * seq + j);
      BLUE.forEach((c, channel) => { image.data[k + channel] = 255 + w * (c - 255); }); // over white
      image.data[k + 3] = 255;
    }));
    ctx.putImageData(image, 0, 0);
    canvas.dataset.values = JSON.stringify(matrix);
    button.setAttribute("aria-pressed", String(chosen));
    button.setAttribute("aria-label", `Show layer ${layer}, head ${head} large`);
    on.checked = !off;
    on.setAttribute("aria-label", `layer ${layer}, head ${head} on`);
    box.classList.toggle("mx-off", off);
  }
  return { node: box, draw };
}

const REDRAWN_ON = ["sentence", "layer", "head", "ablated", "ablated_maps", "ablated_for",
  "ablated_similarity"];

function render({ model, el: root }) {
  root.classList.add("attn-explorer", "model-explorer");
  const texts = model.get("texts");
  const nHeads = model.get("pair_similarity_without")[0][0].length;
  const nLayers = model.get("pair_similarity_without")[0].length;
  // Without a kernel a single head can go off (its effect on the similarity was computed
  // at build time); with one, any set (Python recomputes). Python answers this question
  // (ModelExplorer._answer); on a static page nobody does.
  let live = false;
  const onMessage = (message) => {
    live = live || message.kernel === true;
  };
  model.on("msg:custom", onMessage);
  model.send({ ask: "kernel" });

  const choose = (name) => (value) => saveChanges(model, { [name]: value });
  const sentencePicker = picker("sentence", "Sentence ",
    texts.map((text, k) => `${Math.floor(k / 2) + 1}${"ab"[k % 2]}: ${text}`), choose("sentence"));
  const layerPicker = picker("layer", "Layer ",
    Array.from({ length: nLayers }, (_, l) => String(l)), choose("layer"));
  let revived = ""; // said once: the head a static page switched back on
  const switchHead = (head, on) => {
    const layer = model.get("layer");
    const others = model.get("ablated").filter(([l, h]) => l !== layer || h !== head);
    const off = live ? others : [];
    revived = !live && !on && others.length
      ? `Layer ${others[0][0]}, head ${others[0][1]} is back on: this page switches off one head `
        + "at a time (a running notebook switches off several)." : "";
    if (!on) off.push([layer, head]);
    saveChanges(model, { ablated: off.sort((a, b) => a[0] - b[0] || a[1] - b[1]) });
  };
  const heads = Array.from({ length: nHeads }, (_, h) => thumbnail(h, choose("head"), switchHead));
  const grid = el("div", "mx-heads");
  grid.append(...heads.map((head) => head.node));
  const detail = el("figure", "attn-view mx-detail");
  const caption = el("figcaption");
  const line = el("p", "mx-similarity");
  line.dataset.role = "similarity";
  line.setAttribute("aria-live", "polite");
  const note = el("p", "mx-note");
  note.dataset.role = "maps-note";
  note.setAttribute("aria-live", "polite");
  const controls = el("div", "mx-controls");
  controls.append(sentencePicker.node, layerPicker.node);
  root.append(controls, grid, line, note, detail);
  const scrolling = markScrollingBoxes(root);

  const decoded = new Map(); // encoded maps -> [layer][head][query][key]
  const maps = (encoded, seq) => {
    if (!decoded.has(encoded)) decoded.set(encoded, decodeMaps({ encoded, seq, nHeads }));
    return decoded.get(encoded);
  };
  let large = null; // the large map and the (sentence, layer, head) it was built for
  let builtFor = null;

  function redraw() {
    const k = model.get("sentence");
    const layer = model.get("layer");
    const head = model.get("head");
    const ablated = model.get("ablated");
    const tokens = model.get("tokens")[k];
    const computed = model.get("ablated_for");
    const fresh = computed.sentence === k && sameHeads(computed.ablated, ablated);
    const recomputed = fresh && ablated.length > 0 && model.get("ablated_maps");
    const weights = maps(recomputed || model.get("maps")[k], tokens.length)[layer];
    sentencePicker.select.value = String(k);
    layerPicker.select.value = String(layer);
    heads.forEach((thumb, h) => thumb.draw(weights[h], layer, h === head,
      ablated.some(([l, a]) => l === layer && a === h)));

    const pair = Math.floor(k / 2);
    const readout = similarityReadout({ full: model.get("pair_similarity")[pair],
      without: model.get("pair_similarity_without")[pair], ablated,
      live: fresh ? model.get("ablated_similarity") : undefined });
    const said = `“${texts[2 * pair]}” and “${texts[2 * pair + 1]}”, cosine similarity: ${readout.text}`;
    if (line.textContent !== said) line.textContent = said; // aria-live: only news is read out
    line.dataset.value = readout.value === null ? "" : String(readout.value);
    const earlier = ablated.filter(([l]) => l < layer);
    const oneAtATime = !live && ablated.length
      ? "One head at a time on this page (a running notebook switches off several)." : "";
    const later = recomputed ? "Maps recomputed with those heads off."
      : earlier.length ? `Layer ${layer}'s maps change when a head of an earlier layer is off; `
        + "this page shows the intact model's (a running notebook recomputes them)." : "";
    note.textContent = [revived || oneAtATime, later].filter(Boolean).join(" ");
    revived = "";

    const key = JSON.stringify([k, layer, head]);
    if (key !== builtFor) {
      const title = `Layer ${layer}, head ${head}: rows are queries, columns keys`;
      large?.stop();
      large = heatmap({ rowLabels: tokens, colLabels: tokens, decimals: WEIGHT_DECIMALS,
        role: "weights", head, caption: title });
      caption.textContent = title + (large.numbers ? "" : " (colour only: point at a cell for its value)");
      detail.replaceChildren(caption, large.node);
      builtFor = key;
    }
    large.update(weights[head], (v) => v);
  }

  // Python sends several traits in one message: one redraw.
  const later = batched(redraw);
  redraw();
  const handlers = Object.fromEntries(REDRAWN_ON.map((name) => [name, () => later()]));
  return onChanges(model, handlers, later.cancel, () => model.off("msg:custom", onMessage), scrolling.stop,
    () => large?.stop());
}

export default { render };
