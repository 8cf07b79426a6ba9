// Convolution explorer (chapter 6): K attention heads with positional scores against the
// convolution they tend to. Runs in the browser with or without a kernel (anywidget keeps
// this file in the saved widget state). The maths follows attncourse.convolution for one
// channel in and out: the sequence is padded with K//2 zeros on each side; head h (shift
// Delta = h - K//2) scores padded key j from token i with -alpha (j - (i + K//2) - Delta)^2,
// a row softmax gives its weights, and output_i = sum_h kernel[h] * sum_j w[h][i][j] x_pad[j].
// The convolution is torch's cross-correlation: sum_h kernel[h] * x_pad[i + h].
// Every label is written with textContent, never as HTML. A tune exercise's goal on alpha
// (attncourse.checks.tune.SettingGoal) shows above the controls with a live checkmark.

import { element, markScrollingBoxes, numberField } from "./dom.js";
import { goalView, settingStatus, smallestSetting } from "./goal.js";
import { onChanges, saveChanges } from "./sync.js";

const HEAD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

export function construct({ x, kernel, alpha }) {
  const seq = x.length;
  const K = kernel.length;
  const half = (K - 1) / 2;
  const padded = [...new Array(half).fill(0), ...x, ...new Array(half).fill(0)];
  const weights = []; // (K, seq, seq + 2 half)
  const output = new Array(seq).fill(0);
  for (let h = 0; h < K; h++) {
    const delta = h - half;
    const rows = [];
    for (let i = 0; i < seq; i++) {
      const scores = padded.map((_, j) => -alpha * (j - (i + half) - delta) ** 2);
      const max = Math.max(...scores);
      const exps = scores.map((s) => Math.exp(s - max));
      const total = exps.reduce((a, b) => a + b, 0);
      const row = exps.map((e) => e / total);
      output[i] += kernel[h] * row.reduce((sum, w, j) => sum + w * padded[j], 0);
      rows.push(row);
    }
    weights.push(rows);
  }
  const convolution = x.map((_, i) => kernel.reduce((sum, k, h) => sum + k * padded[i + h], 0));
  const maxError = Math.max(...output.map((o, i) => Math.abs(o - convolution[i])));
  return { weights, output, convolution, maxError };
}

// A tune exercise's goal on alpha with the explorer's own maths on the problem (x,
// kernel): the smallest alpha that meets it (bisected as the check bisects), and the
// goal's status at `alpha` (`smallest` passed in when already bisected for this problem).
export function smallestAlpha({ goal, x, kernel }) {
  return smallestSetting(goal, (alpha) => construct({ x, kernel, alpha }).maxError);
}

export function alphaGoalStatus({ goal, x, kernel, alpha, smallest = null }) {
  const readoutAt = (a) => construct({ x, kernel, alpha: a }).maxError;
  return settingStatus({ goal, setting: alpha, inputs: { x, kernel }, readoutAt, smallest });
}

function labelled(text, control) {
  const label = element("label", { style: "display:flex;gap:0.5em;align-items:center;margin:0.2em 0" });
  label.append(element("span", { style: "min-width:9em" }, text), control);
  return label;
}

// A plot under its caption; on a screen narrower than the plot it scrolls sideways
// inside the column instead of widening the page. No padding (Sphinx gives a figure
// 0.5em): in an exercise's narrower column the 620 px plot then still fits at 1280 px.
function view(caption, plot) {
  const box = element("figure", { style: "margin:0;padding:0;max-width:100%;overflow-x:auto" });
  // The caption reads as the explorer's text, not as a centred, muted figure caption.
  const title = element("figcaption", { style: "text-align:left;color:inherit;font-size:inherit;margin:0" },
    caption);
  box.append(title, plot);
  return box;
}

// The plots' width with room for it; in a narrower column, the column's (issue 35: at
// 390 px the 620 px plots scrolled in a 358 px column, and only part of them showed).
const PLOT_WIDTH = 620;

function canvas(role, width, height) {
  const node = element("canvas", { "data-role": role });
  size(node, width, height);
  return node;
}

// Sizes `node` to width x height CSS pixels, sharp at the screen's pixel ratio (and clears it).
function size(node, width, height) {
  const scale = window.devicePixelRatio || 1;
  node.width = Math.round(width * scale);
  node.height = Math.round(height * scale);
  node.style.width = `${width}px`;
  node.style.height = `${height}px`;
  node.getContext("2d").setTransform(scale, 0, 0, scale, 0, 0);
}

// One query's row in each head, over the key offsets -reach..reach: a bar chart per head.
function drawHeads(node, rows, reach) {
  const context = node.getContext("2d");
  const width = parseFloat(node.style.width);
  const height = parseFloat(node.style.height);
  context.clearRect(0, 0, width, height);
  const axis = 16; // room for the offsets under the last head
  const band = (height - axis) / rows.length;
  const slot = (width - 70) / (2 * reach + 1);
  context.font = "11px sans-serif";
  context.fillStyle = "#333";
  context.textAlign = "center";
  for (let k = 0; k <= 2 * reach; k++) {
    context.fillText(String(k - reach), 62 + (k + 0.5) * slot, height - 3);
  }
  context.textAlign = "left";
  rows.forEach((row, h) => {
    const top = h * band;
    context.fillStyle = "#333";
    context.fillText(`Δ = ${h - (rows.length - 1) / 2}`, 2, top + band / 2 + 4);
    context.fillStyle = HEAD_COLOURS[h % HEAD_COLOURS.length];
    row.forEach((weight, k) => {
      const barHeight = weight * (band - 6);
      context.fillRect(62 + k * slot + 1, top + band - 3 - barHeight, slot - 2, barHeight);
    });
    context.strokeStyle = "#ccc";
    context.beginPath();
    context.moveTo(62, top + band - 2.5);
    context.lineTo(width, top + band - 2.5);
    context.stroke();
  });
}

// The attention output (bars) and the convolution (black dots) at every token.
function drawOutputs(node, output, convolution) {
  const context = node.getContext("2d");
  const width = parseFloat(node.style.width);
  const height = parseFloat(node.style.height);
  context.clearRect(0, 0, width, height);
  const extent = Math.max(1e-12, ...output.map(Math.abs), ...convolution.map(Math.abs));
  const middle = height / 2;
  const slot = width / output.length;
  const y = (value) => middle - (value / extent) * (middle - 4);
  context.fillStyle = "#9ecae1";
  output.forEach((value, i) => {
    context.fillRect(i * slot + 1, Math.min(middle, y(value)), slot - 2, Math.abs(y(value) - middle));
  });
  context.fillStyle = "#000";
  convolution.forEach((value, i) => {
    context.beginPath();
    context.arc(i * slot + slot / 2, y(value), 2.5, 0, 2 * Math.PI);
    context.fill();
  });
  context.strokeStyle = "#999";
  context.beginPath();
  context.moveTo(0, middle);
  context.lineTo(width, middle);
  context.stroke();
}

function render({ model, el }) {
  const root = element("div", { class: "conv-explorer", style: "font:14px sans-serif;max-width:640px" });
  const x = () => model.get("x");
  const kernel = () => model.get("kernel");
  const half = () => (kernel().length - 1) / 2;
  const reach = () => half() + 3;

  const save = (values) => saveChanges(model, values);

  // alpha by the slider, or typed to any precision (a tune exercise's goal may need it).
  const alphaInput = element("input", { type: "range", min: "0", max: "30", step: "0.1",
    "data-role": "alpha", "aria-label": "alpha slider" });
  // A typed alpha the slider cannot show is refused out loud, not ignored.
  const alphaNote = element("span", { "data-role": "alpha-note", "aria-live": "polite" });
  const alphaField = numberField({ role: "alpha-value", label: "alpha", min: "0", max: "30", step: "0.1",
    width: "5.5em" }, { refusal: (value) => (value >= 0 && value <= 30 ? "" : "alpha runs from 0 to 30 here"),
    use: (alpha) => save({ alpha }), note: alphaNote });
  const alphaBox = alphaField.input;
  const queryInput = element("input", { type: "range", min: "0", step: "1",
    "data-role": "query", "aria-label": "query token" });
  const queryText = element("span", { "data-role": "query-value" });
  const taps = element("div", { "data-role": "kernel", style: "display:flex;gap:0.3em;flex-wrap:wrap" });
  const heads = canvas("heads", PLOT_WIDTH, 40 * kernel().length + 16);
  const outputs = canvas("outputs", PLOT_WIDTH, 120);
  const readout = element("p", { "data-role": "max-error", style: "font-weight:bold" });

  // Not a <label>: it would name the slider and the box alike; each has its own name.
  // Wraps on a phone, so that the box stays in view.
  const alphaRow = element("div", { style: "display:flex;flex-wrap:wrap;gap:0.5em;align-items:center;margin:0.2em 0" });
  alphaRow.append(element("span", { style: "min-width:9em" }, "alpha"), alphaInput, alphaBox, alphaNote);
  const goal = goalView(alphaGoalStatus);
  const queryRow = labelled("query token i", queryInput);
  queryRow.append(queryText);
  root.append(
    goal.node, alphaRow, queryRow, labelled("kernel taps", taps),
    view("Each head's weights for token i, over the key offsets j - i:", heads),
    view("Output of the heads (bars) and of the convolution (dots), token by token:", outputs),
    readout,
  );
  el.append(root);
  const scrolling = markScrollingBoxes(root);
  // The plots as wide as the explorer, up to PLOT_WIDTH: drawn again when that changes.
  const fitPlots = new ResizeObserver(() => {
    const width = Math.min(PLOT_WIDTH, root.clientWidth);
    if (!width || width === parseFloat(heads.style.width)) return;
    for (const plot of [heads, outputs]) size(plot, width, parseFloat(plot.style.height));
    update();
  });
  fitPlots.observe(root);

  function buildTaps() {
    taps.replaceChildren();
    kernel().forEach((value, h) => {
      const input = element("input", { type: "number", step: "0.1", value: String(value),
        "data-role": "tap", "aria-label": `tap of shift ${h - half()}`, style: "width:4.5em" });
      input.addEventListener("input", () => {
        const number = Number(input.value);
        if (input.value === "" || !Number.isFinite(number)) return;
        const edited = [...kernel()];
        edited[h] = number;
        save({ kernel: edited });
      });
      const tap = element("label", { style: "display:inline-flex;gap:0.2em;align-items:center" });
      tap.append(element("span", {}, `Δ = ${h - half()}`), input);
      taps.append(tap);
    });
  }

  // A new kernel from Python (or another view): rebuild the boxes if the size changed,
  // else refresh the values of those the reader is not typing in.
  function syncTaps() {
    const inputs = [...taps.querySelectorAll("input")];
    if (inputs.length !== kernel().length) return buildTaps();
    inputs.forEach((input, h) => {
      if (input !== document.activeElement) input.value = String(kernel()[h]);
    });
  }

  function update() {
    const alpha = model.get("alpha");
    const query = Math.min(model.get("query"), x().length - 1);
    const result = construct({ x: x(), kernel: kernel(), alpha });
    alphaInput.value = String(alpha);
    alphaField.show(alpha);
    queryInput.max = String(x().length - 1);
    queryInput.value = String(query);
    queryText.textContent = `i = ${query}`;
    const first = query + half() - reach(); // padded key of offset -reach
    const rows = result.weights.map((head) => {
      const row = head[query];
      return Array.from({ length: 2 * reach() + 1 }, (_, k) => row[first + k] ?? 0);
    });
    heads.dataset.values = JSON.stringify(rows);
    outputs.dataset.output = JSON.stringify(result.output);
    outputs.dataset.convolution = JSON.stringify(result.convolution);
    readout.dataset.value = String(result.maxError);
    readout.textContent = `largest error against the convolution: ${result.maxError.toExponential(2)}`;
    drawHeads(heads, rows, reach());
    drawOutputs(outputs, result.output, result.convolution);
    showGoal(alpha);
  }

  // The smallest alpha that meets the goal depends on x and the kernel only: bisected
  // once per problem, not on every move of alpha.
  let bisected = { key: null, smallest: null };
  function showGoal(alpha) {
    const spec = model.get("goal");
    const problem = { x: x(), kernel: kernel() };
    if (spec) {
      const key = JSON.stringify([spec, problem]);
      if (bisected.key !== key) bisected = { key, smallest: smallestAlpha({ goal: spec, ...problem }) };
    }
    goal.update(spec, { ...problem, alpha, smallest: bisected.smallest });
  }

  // Controls change the model; the model's change events redraw (Python's changes too).
  alphaInput.addEventListener("input", () => save({ alpha: Number(alphaInput.value) }));
  alphaBox.addEventListener("change", () => { // leaving the box: it shows alpha again
    alphaBox.value = String(model.get("alpha"));
  });
  queryInput.addEventListener("input", () => save({ query: Number(queryInput.value) }));
  buildTaps();
  update();
  return onChanges(model, {
    alpha: update, query: update, x: update, goal: update,
    kernel: () => {
      syncTaps();
      update();
    },
  }, scrolling.stop, () => fitPlots.disconnect());
}

export default { render };
