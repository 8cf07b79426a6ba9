// Position explorer (chapter 8): one content-free head with a positional encoding, computed
// in the browser with or without a kernel (anywidget keeps this file in the saved widget
// state). The maths follows attncourse.explorers.position_explorer.position_view:
// * sinusoidal: score(j - i) = scale * sum_l cos((j - i - offset) w_l), w_l = base^(-2l/d);
// * rope: every key the vector of ones, every query that key turned by `offset` positions,
//   both rotated by RoPE (interleaved pairs) at their positions, scores times `scale`;
// * alibi: score(j - i) = -slope * |j - i - offset|, slope 2^(-8(h+1)/8) for head h of 8.
// A causal mask hides the keys after each query; each row of the map is a softmax.
// RoPE's key may be given (`key`, its length the width). A tune exercise's goal on the
// offset and the scale shows above the views, its readout `previous_weight` (the least
// weight a token puts on the one before it) computed here on every edit.
// Every label is written with textContent (and fillText), never as HTML.

import { el, element, markScrollingBoxes, numberField, statusNote } from "./dom.js";
import { goalView, readoutStatus } from "./goal.js";
import { heatmap } from "./heatmap.js";
import { softmaxRows } from "./linalg.js";
import { onChanges, saveChanges } from "./sync.js";

const ENCODINGS = [["sinusoidal", "sinusoidal table"], ["rope", "RoPE"], ["alibi", "ALiBi"]];
const WIDTHS = [4, 8, 16, 32, 64];
const ALIBI_HEADS = 8;

export function frequencies(d, base) {
  return Array.from({ length: d / 2 }, (_, l) => base ** (-(2 * l) / d));
}

// RoPE of one vector at one position: pair (2l, 2l+1) turned by position * theta_l.
export function rotate(vector, position, base) {
  const theta = frequencies(vector.length, base);
  const out = new Array(vector.length);
  theta.forEach((t, l) => {
    const c = Math.cos(position * t);
    const s = Math.sin(position * t);
    out[2 * l] = vector[2 * l] * c - vector[2 * l + 1] * s;
    out[2 * l + 1] = vector[2 * l] * s + vector[2 * l + 1] * c;
  });
  return out;
}

export function alibiSlope(head) {
  return 2 ** (-(8 * (head + 1)) / ALIBI_HEADS);
}

// { offsets, curve, scores, weights } as position_view computes them in Python.
export function construct({ encoding, seq, d, base, alibi_head, offset, scale, causal, key: given = [] }) {
  const offsets = Array.from({ length: 2 * seq - 1 }, (_, k) => k - (seq - 1));
  let score; // score of the query at i on the key at j
  if (encoding === "sinusoidal") {
    const w = frequencies(d, base);
    const at = (delta) => scale * w.reduce((sum, wl) => sum + Math.cos((delta - offset) * wl), 0);
    score = (i, j) => at(j - i);
  } else if (encoding === "rope") {
    const key = given.length ? given : new Array(d).fill(1);
    const query = rotate(key, offset, base);
    const keys = Array.from({ length: seq }, (_, j) => rotate(key, j, base));
    const queries = Array.from({ length: seq }, (_, i) => rotate(query, i, base));
    score = (i, j) => scale * queries[i].reduce((sum, q, l) => sum + q * keys[j][l], 0);
  } else {
    const slope = alibiSlope(alibi_head);
    score = (i, j) => -slope * Math.abs(j - i - offset) + 0;
  }
  const scores = Array.from({ length: seq }, (_, i) => Array.from({ length: seq }, (_, j) => score(i, j)));
  // the query at seq - 1 on every key, then every later key on the query at 0
  const curve = offsets.map((delta) => (delta <= 0 ? scores[seq - 1][seq - 1 + delta] : scores[0][delta]));
  const allowed = causal ? scores.map((row, i) => row.map((_, j) => j <= i)) : null;
  const weights = softmaxRows(scores, allowed);
  return { offsets, curve, scores, weights };
}

// The readouts a tune exercise's goal may name: the least weight a token after the first
// puts on the token just before it (0 for a single token: none has a token before it).
export function readouts(weights) {
  const previous = weights.slice(1).map((row, i) => row[i]);
  return { previous_weight: previous.length ? Math.min(...previous) : 0 };
}

// A tune exercise's goal on the explorer's state (construct's argument, with its tokens):
// the goal's status, and the readouts it was decided on.
export function positionGoalStatus({ goal, state }) {
  const now = readouts(construct(state).weights);
  return { ...readoutStatus({ goal, readouts: now, inputs: state }), readouts: now };
}

function labelled(text, ...controls) {
  const row = el("div", "position-row");
  row.style.cssText = "display:flex;flex-wrap:wrap;gap:0.5em;align-items:center;margin:0.2em 0";
  const name = el("span", "", text);
  name.style.minWidth = "8em";
  row.append(name, ...controls);
  return row;
}

// A view under its caption; on a screen narrower than the view it scrolls sideways
// inside the column instead of widening the page.
function view(caption, content) {
  const box = el("figure");
  box.style.cssText = "margin:0.3em 0;max-width:100%;overflow-x:auto";
  const title = el("figcaption", "", caption);
  title.style.cssText = "text-align:left;color:inherit;font-size:inherit;margin:0";
  box.append(title, content);
  return box;
}

// The score against the offset j - i: a line through the points, the favoured offset marked.
// Drawn at the width it is shown at (its column's, at most 600 px), so that its labels keep
// their size on a phone instead of shrinking with a scaled-down picture.
function drawCurve(node, offsets, curve, offset) {
  const ratio = window.devicePixelRatio || 1;
  const box = node.parentElement;
  const style = box ? getComputedStyle(box) : null; // its content box: the theme pads figures
  const room = box ? box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) : 0;
  const width = Math.max(200, Math.min(600, Math.floor(room) || 600));
  const height = 170;
  node.width = width * ratio;
  node.height = height * ratio;
  node.style.width = `${width}px`;
  node.style.maxWidth = "100%";
  node.style.height = "auto"; // keeps its shape when a phone narrows it
  const ctx = node.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const left = 46;
  const bottom = height - 20;
  const lo = Math.min(0, ...curve);
  const hi = Math.max(0, ...curve);
  const span = hi - lo || 1;
  const x = (k) => left + ((k - offsets[0]) / Math.max(1, offsets.length - 1)) * (width - left - 10);
  const y = (v) => 8 + ((hi - v) / span) * (bottom - 8);
  ctx.font = "11px sans-serif";
  ctx.fillStyle = getComputedStyle(node).color; // the page's ink: readable in light and dark mode
  ctx.strokeStyle = "#999";
  ctx.beginPath();
  ctx.moveTo(left, y(0));
  ctx.lineTo(width - 10, y(0));
  ctx.stroke();
  ctx.textAlign = "right";
  ctx.fillText(hi.toPrecision(3), left - 4, y(hi) + 4);
  ctx.fillText(lo.toPrecision(3), left - 4, y(lo) + 4);
  ctx.textAlign = "center";
  // An offset's label every 1, 2, 5 or 10 offsets: at least 20 px apart, never crowded.
  const spacing = (width - left - 10) / Math.max(1, offsets.length - 1);
  const every = [1, 2, 5, 10].find((step) => step * spacing >= 20) ?? 10;
  offsets.forEach((k) => {
    if (k % every === 0) ctx.fillText(String(k), x(k), height - 5);
  });
  ctx.strokeStyle = "#d62728";
  ctx.beginPath();
  ctx.moveTo(x(offset), 4);
  ctx.lineTo(x(offset), bottom);
  ctx.stroke();
  ctx.strokeStyle = "#1f77b4";
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  curve.forEach((v, k) => (k ? ctx.lineTo(x(offsets[k]), y(v)) : ctx.moveTo(x(offsets[k]), y(v))));
  ctx.stroke();
  ctx.lineWidth = 1;
  ctx.fillStyle = "#1f77b4";
  curve.forEach((v, k) => {
    ctx.beginPath();
    ctx.arc(x(offsets[k]), y(v), 2.2, 0, 2 * Math.PI);
    ctx.fill();
  });
}

function render({ model, el: host }) {
  const root = el("div", "attn-explorer position-explorer");
  const save = (values) => saveChanges(model, values);
  // Input the explorer cannot use (a base out of range, an empty or too long sentence) is
  // refused or cut out loud, not silently.
  const note = statusNote("note");
  const encoding = el("select");
  encoding.dataset.role = "encoding";
  encoding.setAttribute("aria-label", "encoding");
  for (const [value, text] of ENCODINGS) {
    const option = el("option", "", text);
    option.value = value;
    encoding.append(option);
  }
  const width = el("select");
  width.dataset.role = "d";
  width.setAttribute("aria-label", "width d");
  for (const d of WIDTHS) {
    const option = el("option", "", String(d));
    option.value = String(d);
    width.append(option);
  }
  // the base on a logarithmic slider (10^1 .. 10^6), or typed
  const baseSlider = element("input", { type: "range", min: "1", max: "6", step: "0.05",
    "data-role": "base-slider", "aria-label": "log10 of the base" });
  const baseField = numberField({ role: "base", label: "base", min: "2", max: "1000000", step: "any", width: "7em" },
    { refusal: (value) => (value >= 2 && value <= 1e6 ? "" : "The base goes from 2 to 1,000,000"),
      use: (value) => save({ base: value }), note });
  const head = element("input", { type: "range", min: "0", max: String(ALIBI_HEADS - 1), step: "1",
    "data-role": "alibi-head", "aria-label": "ALiBi head" });
  const headText = el("span");
  const offset = element("input", { type: "range", step: "1", "data-role": "offset", "aria-label": "favoured offset" });
  const offsetText = el("span");
  const scale = element("input", { type: "range", min: "0", max: "50", step: "0.5", "data-role": "scale",
    "aria-label": "scale" });
  const scaleText = el("span");
  const causal = element("input", { type: "checkbox", "data-role": "causal", "aria-label": "causal mask" });
  const sentence = element("input", { type: "text", "data-role": "sentence", "aria-label": "sentence",
    style: "width:24em;max-width:100%" });
  const curve = el("canvas");
  curve.dataset.role = "curve";
  curve.setAttribute("role", "img"); // named on every redraw with what it shows
  const mapBox = el("div");
  const goal = goalView(positionGoalStatus);

  const rows = {
    encoding: labelled("encoding", encoding),
    d: labelled("width d", width),
    base: labelled("base", baseSlider, baseField.input),
    head: labelled("ALiBi head", head, headText),
    offset: labelled("favoured offset", offset, offsetText),
    scale: labelled("scale", scale, scaleText),
  };
  root.append(goal.node, rows.encoding, labelled("sentence", sentence), rows.d, rows.base, rows.head,
    rows.offset, rows.scale, labelled("causal mask", causal), note,
    view("The score of a query on a key against their offset j - i (the red line: the favoured offset):", curve),
    mapBox);
  host.append(root);
  const scrolling = markScrollingBoxes(root);
  let map = null;
  let mapTokens = null;

  function update() {
    const tokens = model.get("tokens");
    const seq = tokens.length;
    const state = {
      encoding: model.get("encoding"), seq, d: model.get("d"), base: model.get("base"),
      alibi_head: model.get("alibi_head"), offset: model.get("offset"), scale: model.get("scale"),
      causal: model.get("causal"), key: model.get("key"),
    };
    const result = construct(state);
    const alibi = state.encoding === "alibi";
    rows.d.hidden = alibi || state.key.length > 0; // a given key fixes the width
    rows.base.hidden = alibi;
    rows.scale.hidden = alibi;
    rows.head.hidden = !alibi;
    encoding.value = state.encoding;
    width.value = String(state.d);
    baseField.show(state.base);
    baseSlider.value = String(Math.log10(state.base));
    baseSlider.setAttribute("aria-valuetext", `base ${state.base}`); // not its logarithm
    head.value = String(state.alibi_head);
    headText.textContent = `head ${state.alibi_head}: slope ${alibiSlope(state.alibi_head)}`;
    head.setAttribute("aria-valuetext", headText.textContent);
    offset.min = String(-(seq - 1));
    offset.max = String(seq - 1);
    offset.value = String(state.offset);
    offsetText.textContent = `j - i = ${state.offset}`;
    offset.setAttribute("aria-valuetext", offsetText.textContent);
    scale.value = String(state.scale);
    scaleText.textContent = String(state.scale);
    causal.checked = state.causal;
    if (document.activeElement !== sentence) sentence.value = tokens.join(" ");
    curve.dataset.values = JSON.stringify(result.curve);
    drawCurve(curve, result.offsets, result.curve, state.offset);
    const top = result.curve.indexOf(Math.max(...result.curve));
    curve.setAttribute("aria-label", `The score against the offset j - i from ${result.offsets[0]} to `
      + `${result.offsets[result.offsets.length - 1]}: largest, ${result.curve[top].toPrecision(3)}, at j - i = `
      + `${result.offsets[top]}; the favoured offset is ${state.offset}.`);
    const key = JSON.stringify(tokens);
    if (key !== mapTokens) {
      map?.stop();
      map = heatmap({ rowLabels: tokens, colLabels: tokens, decimals: 2, role: "weights",
        caption: "attention weights" });
      mapBox.replaceChildren(view("Attention weights over the sentence (row i: query, column j: key):", map.node));
      mapTokens = key;
    }
    map.update(result.weights, (v) => v);
    goal.update(model.get("goal"), { state: { ...state, tokens } });
    scrolling.check();
  }

  encoding.addEventListener("change", () => save({ encoding: encoding.value }));
  width.addEventListener("change", () => save({ d: Number(width.value) }));
  baseSlider.addEventListener("input", () => save({ base: Number((10 ** Number(baseSlider.value)).toPrecision(4)) }));
  head.addEventListener("input", () => save({ alibi_head: Number(head.value) }));
  offset.addEventListener("input", () => save({ offset: Number(offset.value) }));
  scale.addEventListener("input", () => save({ scale: Number(scale.value) }));
  causal.addEventListener("change", () => save({ causal: causal.checked }));
  sentence.addEventListener("input", () => {
    const typed = sentence.value.split(/\s+/).filter((w) => w.length > 0);
    const words = typed.slice(0, 24);
    note.textContent = typed.length === 0 ? "The sentence needs at least one word: the map keeps the last one."
      : typed.length > 24 ? `The map shows the first 24 of your ${typed.length} words.` : "";
    if (words.length === 0) return;
    const limit = words.length - 1;
    save({ offset: Math.max(-limit, Math.min(limit, model.get("offset"))), tokens: words });
  });
  update();
  // A new column width (a phone turned, a window resized) draws the curve again at it.
  let drawnFor = root.clientWidth;
  const resize = new ResizeObserver(() => {
    if (root.clientWidth === drawnFor) return;
    drawnFor = root.clientWidth;
    update();
  });
  resize.observe(root);
  // The curve's labels are drawn in the page's ink: drawn again when the theme changes.
  const theme = new MutationObserver(update);
  theme.observe(document.documentElement, { attributeFilter: ["data-theme"] });
  // Every input redraws both views.
  const names = ["encoding", "tokens", "d", "base", "alibi_head", "offset", "scale", "causal", "key", "goal"];
  return onChanges(model, Object.fromEntries(names.map((name) => [name, update])), () => resize.disconnect(),
    () => map?.stop(),
    () => theme.disconnect(), scrolling.stop);
}

export default { render };
