// Graph explorer: a stack of single-head attention layers drawn as graphs. Runs in the
// browser with or without a kernel (anywidget keeps this file in the saved widget state).
// Conventions follow attncourse.graph and graph_explorer.py: rows are tokens;
// weights[i][j] is the edge j -> i ("i reads j"); layer l maps X_l to
// A_l X_l W_v[l] (+ X_l with a skip connection), A_l = softmax(scale Q K^T, masked) by
// rows. Token labels are only ever written with textContent.

import { el, markScrollingBoxes, svg } from "./dom.js";
import { matmul, softmaxRows, transpose } from "./linalg.js";
import { onChanges, saveChanges } from "./sync.js";

function identity(n) {
  return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
}

// graph_explorer.explorer_mask: the edges the masks keep.
export function explorerMask(seq, causal, window, radius) {
  return Array.from({ length: seq }, (_, i) =>
    Array.from({ length: seq }, (_, j) => (!causal || j <= i) && (!window || Math.abs(i - j) <= radius)));
}

// graph.attention_rollout: A_hat = r I + (1 - r) A, rows renormalised, A_hat_L ... A_hat_1.
export function rollout(layers, residual = 0.5) {
  const seq = layers[0].length;
  let result = identity(seq);
  for (const layer of layers) {
    const mixed = layer.map((row, i) => {
      const r = row.map((w, j) => residual * (i === j ? 1 : 0) + (1 - residual) * w);
      const total = r.reduce((a, b) => a + b, 0);
      return r.map((w) => w / total);
    });
    result = matmul(mixed, result);
  }
  return result;
}

// graph.largest_cycle_ratio: the cycle a ⇝ b ⇝ c (a reads b, b reads c, c reads a) with
// the largest ratio W_ab W_bc W_ca / (W_ba W_cb W_ac), each cycle once with a smallest,
// among cycles whose six weights are positive; null when there is none.
export function largestCycleRatio(W) {
  const n = W.length;
  const log = W.map((row) => row.map((w) => Math.log(w)));
  let best = null;
  for (let a = 0; a < n; a++) {
    for (let b = a + 1; b < n; b++) {
      for (let c = a + 1; c < n; c++) {
        if (b === c) continue;
        const forward = log[a][b] + log[b][c] + log[c][a];
        const backward = log[b][a] + log[c][b] + log[a][c];
        if (!Number.isFinite(forward) || !Number.isFinite(backward)) continue;
        const logRatio = forward - backward;
        if (best === null || logRatio > best.logRatio) best = { logRatio, cycle: [a, b, c] };
      }
    }
  }
  return best && { ratio: Math.exp(best.logRatio), cycle: best.cycle };
}

// graph_explorer.graph_explorer_view: every layer's weights, the rollouts of layers
// 0..l, the column sums (how much each token is read) and the most lopsided 3-cycle.
export function layersView({ X, W_q, W_k, W_v, scale, skip, causal, window, window_radius, tied }) {
  const allowed = explorerMask(X.length, causal, window, window_radius);
  let state = X; // (seq, d_model)
  const weights = [];
  for (let l = 0; l < W_q.length; l++) {
    const Q = matmul(state, W_q[l]); // (seq, d_k)
    const K = matmul(state, tied ? W_q[l] : W_k[l]); // (seq, d_k)
    const V = matmul(state, W_v[l]); // (seq, d_model)
    const scores = matmul(Q, transpose(K)).map((row) => row.map((s) => s * scale));
    const w = softmaxRows(scores, allowed); // (seq, seq)
    const mixed = matmul(w, V);
    state = skip ? state.map((row, i) => row.map((x, k) => x + mixed[i][k])) : mixed;
    weights.push(w);
  }
  return {
    weights,
    rollouts: weights.map((_, l) => rollout(weights.slice(0, l + 1))),
    read: weights.map((w) => w[0].map((_, j) => w.reduce((sum, row) => sum + row[j], 0))),
    cycles: weights.map(largestCycleRatio),
  };
}

// --- drawing ------------------------------------------------------------------------------

const ROW = 24; // px between tokens
const TOP = 26; // px above the first token
const SOURCE_MAX = 14; // radius of a token read by every reader with weight 1
const READER = 5; // radius of a reader
const GAP = 6; // px between a node (or an arrowhead) and a label
const SPAN = 130; // px between the two columns
const BLUE = "31, 119, 180";

// Two columns, each token twice: read (left, area proportional to its column sum) and
// reader (right). Edge j -> i runs from j on the left to an arrowhead at i on the right.
// Labels sit outside the columns, so no label ever covers an arrowhead.
function graphPanel(tokens, role) {
  const n = tokens.length;
  const labelWidth = Math.min(200, Math.max(40, 7.5 * Math.max(...tokens.map((t) => t.length))));
  const xRead = labelWidth + GAP + SOURCE_MAX;
  const xReader = xRead + SPAN;
  const width = xReader + READER + GAP + labelWidth;
  const height = TOP + n * ROW;
  const y = (k) => TOP + (k + 0.5) * ROW;
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}` });
  root.dataset.role = role;
  root.classList.add("ge-graph");
  for (const [x, text] of [[xRead, "read"], [xReader, "reader"]]) {
    const head = svg("text", { x, y: 12, "text-anchor": "middle", class: "ge-column" });
    head.textContent = text;
    root.appendChild(head);
  }
  const edgeLayer = root.appendChild(svg("g", {}));
  const edges = tokens.map((_, i) => tokens.map((_, j) => {
    const group = svg("g", { class: "ge-edge" });
    group.dataset.from = String(j);
    group.dataset.to = String(i);
    const line = group.appendChild(svg("line", { stroke: `rgb(${BLUE})` }));
    const head = group.appendChild(svg("path", { fill: `rgb(${BLUE})`, class: "ge-arrowhead" }));
    group.appendChild(svg("title", {}));
    edgeLayer.appendChild(group);
    return { group, line, head };
  }));
  const sources = tokens.map((_, k) => {
    const node = svg("circle", { cx: xRead, cy: y(k), class: "ge-source" });
    node.dataset.token = String(k);
    node.appendChild(svg("title", {}));
    return root.appendChild(node);
  });
  tokens.forEach((token, k) => {
    root.appendChild(svg("circle", { cx: xReader, cy: y(k), r: READER, class: "ge-reader" }));
    const left = svg("text", {
      x: xRead - SOURCE_MAX - GAP, y: y(k) + 4, "text-anchor": "end", class: "ge-label",
    });
    const right = svg("text", { x: xReader + READER + GAP, y: y(k) + 4, class: "ge-label" });
    left.dataset.side = "read";
    right.dataset.side = "reader";
    left.textContent = token;
    right.textContent = token;
    root.append(left, right);
  });

  function update(weights, threshold) {
    const read = weights[0].map((_, j) => weights.reduce((sum, row) => sum + row[j], 0));
    sources.forEach((node, k) => {
      const radius = SOURCE_MAX * Math.sqrt(read[k] / n); // area proportional to read
      node.setAttribute("r", radius.toFixed(3));
      node.dataset.read = String(read[k]);
      node.firstChild.textContent = `${tokens[k]} is read ${read[k].toFixed(3)} in total`;
    });
    let shown = 0;
    weights.forEach((row, i) => row.forEach((w, j) => {
      const { group, line, head } = edges[i][j];
      group.dataset.weight = String(w);
      const visible = w > threshold;
      group.style.display = visible ? "" : "none";
      if (!visible) return;
      shown += 1;
      const x1 = xRead + SOURCE_MAX * Math.sqrt(read[j] / n);
      const [y1, y2] = [y(j), y(i)];
      const tipX = xReader - READER - 1;
      const length = Math.hypot(tipX - x1, y2 - y1) || 1;
      const [ux, uy] = [(tipX - x1) / length, (y2 - y1) / length];
      const size = 6 + 5 * w;
      const [bx, by] = [tipX - size * ux, y2 - size * uy]; // base of the arrowhead
      const half = size * 0.45;
      line.setAttribute("x1", x1.toFixed(2));
      line.setAttribute("y1", y1.toFixed(2));
      line.setAttribute("x2", bx.toFixed(2));
      line.setAttribute("y2", by.toFixed(2));
      line.setAttribute("stroke-width", (0.6 + 4 * w).toFixed(2));
      const opacity = (0.25 + 0.75 * w).toFixed(3);
      line.setAttribute("stroke-opacity", opacity);
      head.setAttribute("fill-opacity", opacity);
      head.setAttribute("d", `M ${tipX.toFixed(2)} ${y2.toFixed(2)} `
        + `L ${(bx - half * uy).toFixed(2)} ${(by + half * ux).toFixed(2)} `
        + `L ${(bx + half * uy).toFixed(2)} ${(by - half * ux).toFixed(2)} Z`);
      group.lastChild.textContent = `${tokens[j]} → ${tokens[i]}: ${w.toFixed(3)}`;
    }));
    return shown;
  }
  return { node: root, update };
}

function checkbox(text, role, onChange) {
  const label = el("label", "ge-toggle");
  const input = el("input");
  input.type = "checkbox";
  input.dataset.role = role;
  input.addEventListener("change", () => onChange(input.checked));
  label.append(input, document.createTextNode(` ${text}`));
  return { node: label, input };
}

function formatRatio(ratio) {
  return ratio >= 1000 ? Math.round(ratio).toLocaleString("en-US") : ratio.toFixed(3);
}

function render({ model, el: root }) {
  root.classList.add("attn-graph-explorer");
  const tokens = model.get("tokens");
  const layerCount = () => model.get("W_q").length;
  // The change event redraws; a live kernel hears of the reader's choice and recomputes.
  const set = (name, value) => saveChanges(model, { [name]: value });

  const controls = el("div", "ge-controls");
  const thresholdBox = el("label", "ge-threshold");
  const slider = el("input");
  Object.assign(slider, { type: "range", min: "0", max: "0.5", step: "0.01" });
  slider.dataset.role = "threshold";
  const thresholdValue = el("output");
  slider.addEventListener("input", () => set("threshold", Number(slider.value)));
  thresholdBox.append(document.createTextNode("edges heavier than "), slider, thresholdValue);
  const causal = checkbox("causal mask", "causal", (on) => set("causal", on));
  const windowToggle = checkbox(`window of radius ${model.get("window_radius")}`, "window",
    (on) => set("window", on));
  const tied = checkbox("W_Q = W_K (keys made with each layer's query matrix)", "tied",
    (on) => set("tied", on));
  const stepper = el("div", "ge-stepper");
  const previous = el("button", null, "◀ previous layer");
  const next = el("button", null, "next layer ▶");
  previous.dataset.role = "previous";
  next.dataset.role = "next";
  const layerText = el("span", "ge-layer");
  layerText.dataset.role = "layer";
  previous.addEventListener("click", () => set("layer", Math.max(0, model.get("layer") - 1)));
  next.addEventListener("click",
    () => set("layer", Math.min(layerCount() - 1, model.get("layer") + 1)));
  stepper.append(previous, layerText, next);
  controls.append(thresholdBox, causal.node, windowToggle.node, tied.node, stepper);

  const edgesLine = el("p", "ge-readout");
  edgesLine.dataset.role = "edges";
  const cycleLine = el("p", "ge-readout");
  cycleLine.dataset.role = "cycle";
  const panels = el("div", "ge-panels");
  const layerPanel = graphPanel(tokens, "layer-graph");
  const rolloutPanel = graphPanel(tokens, "rollout-graph");
  const layerCaption = el("figcaption");
  const rolloutCaption = el("figcaption");
  for (const [caption, panel] of [[layerCaption, layerPanel], [rolloutCaption, rolloutPanel]]) {
    const box = el("figure", "ge-panel");
    box.append(caption, panel.node);
    panels.appendChild(box);
  }
  root.append(controls, edgesLine, cycleLine, panels);
  const scrolling = markScrollingBoxes(root);

  function recompute() {
    const view = layersView({
      X: model.get("X"), W_q: model.get("W_q"), W_k: model.get("W_k"), W_v: model.get("W_v"),
      scale: model.get("scale"), skip: model.get("skip"), causal: model.get("causal"),
      window: model.get("window"), window_radius: model.get("window_radius"),
      tied: model.get("tied"),
    });
    const layer = Math.min(Math.max(0, model.get("layer")), layerCount() - 1);
    const threshold = model.get("threshold");
    slider.value = String(threshold);
    thresholdValue.textContent = ` ${threshold.toFixed(2)}`;
    causal.input.checked = model.get("causal");
    windowToggle.input.checked = model.get("window");
    tied.input.checked = model.get("tied");
    layerText.textContent = ` layer ${layer + 1} of ${layerCount()} `;
    previous.disabled = layer === 0;
    next.disabled = layer === layerCount() - 1;
    layerCaption.textContent = `Layer ${layer + 1}: its attention graph`;
    rolloutCaption.textContent = layer === 0
      ? "Rollout of layer 1 (half of each token kept)"
      : `Rollout of layers 1 to ${layer + 1}`;
    const shown = layerPanel.update(view.weights[layer], threshold);
    rolloutPanel.update(view.rollouts[layer], threshold);
    const total = view.weights[layer].flat().filter((w) => w > 0).length;
    edgesLine.textContent = `Layer ${layer + 1}: ${shown} of its ${total} edges weigh more than ${threshold.toFixed(2)}.`;
    const found = view.cycles[layer];
    if (found) {
      const [a, b, c] = found.cycle.map((k) => tokens[k]);
      cycleLine.dataset.value = String(found.ratio);
      cycleLine.dataset.cycle = found.cycle.join(",");
      cycleLine.textContent = `Most lopsided cycle through three tokens in layer ${layer + 1}: `
        + `${a} ⇝ ${b} ⇝ ${c} (${a} reads ${b}, ${b} reads ${c}, ${c} reads ${a}), `
        + `ratio ${formatRatio(found.ratio)}.`;
    } else {
      cycleLine.dataset.value = "";
      cycleLine.dataset.cycle = "";
      cycleLine.textContent = `Layer ${layer + 1} has no cycle through three tokens `
        + "(with the causal mask every edge runs forward: no cycles but self-loops).";
    }
  }

  recompute();
  return onChanges(model, Object.fromEntries(REDRAWN_ON.map((name) => [name, recompute])), scrolling.stop);
}

// Every trait the drawing reads.
const REDRAWN_ON = ["threshold", "causal", "window", "tied", "layer", "X", "W_q", "W_k", "W_v",
  "scale", "skip"];

export default { render };
