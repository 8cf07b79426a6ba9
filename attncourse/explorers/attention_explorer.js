// Attention explorer: editable matrices in, scores / weights / outputs / graph out.
// Runs in the browser with or without a kernel (anywidget keeps this file in the saved
// widget state). Conventions follow attncourse.attention and attention_explorer.py:
// rows are tokens; Q = X W_q, K = X W_k, V = X W_v (an empty W means the identity);
// the columns of Q, K, V are split into n_heads equal blocks, one per head;
// weights[h] = softmax(scale * Q_h K_h^T, masked) row by row; a head switched off
// (heads_on) outputs zeros; output = the heads' outputs side by side, times W_o when
// given (combine "concat"), or their sum (combine "sum", W_o unused).
// Token labels are only ever written with textContent.

import { el, markScrollingBoxes, svg } from "./dom.js";
import { goalView } from "./goal.js";
import { finiteRange, heatmap } from "./heatmap.js";
import { matmul, softmaxRows, transpose } from "./linalg.js";
import { batched, onChanges, saveChanges } from "./sync.js";

// Columns [start, start + width) of every row.
function columns(A, start, width) {
  return A.map((row) => row.slice(start, start + width));
}

// The same computation as explorer_view in attention_explorer.py.
// Returns per-head scores (n_heads, seq, seq), weights (n_heads, seq, seq) and the
// output: concatenated (seq, d_v), times W_o (seq, d_out), or summed (seq, d_head_v).
export function attend({ X, W_q, W_k, W_v, scale, mask, n_heads, W_o, heads_on, combine }) {
  const project = (W) => (W && W.length ? matmul(X, W) : X);
  const Q = project(W_q); // (seq, n_heads * d_head)
  const K = project(W_k); // (seq, n_heads * d_head)
  const V = project(W_v); // (seq, n_heads * d_head_v)
  const heads = n_heads || 1;
  const dHead = Q[0].length / heads;
  const dHeadV = V[0].length / heads;
  const allowed = mask && mask.length ? mask : null;
  const scores = [];
  const weights = [];
  const headOutputs = [];
  for (let h = 0; h < heads; h++) {
    const Qh = columns(Q, h * dHead, dHead); // (seq, d_head)
    const Kh = columns(K, h * dHead, dHead); // (seq, d_head)
    const Vh = columns(V, h * dHeadV, dHeadV); // (seq, d_head_v)
    const s = matmul(Qh, transpose(Kh)); // (seq_q, seq_k), before scaling
    const w = softmaxRows(s.map((row) => row.map((x) => x * scale)), allowed);
    scores.push(s);
    weights.push(w);
    const on = !heads_on || !heads_on.length || heads_on[h]; // none given: all on
    headOutputs.push(on ? matmul(w, Vh) : Vh.map((row) => row.map(() => 0))); // (seq, d_head_v)
  }
  if (combine === "sum") {
    const output = X.map((_, i) => headOutputs[0][i].map((_, k) =>
      headOutputs.reduce((sum, out) => sum + out[i][k], 0))); // (seq, d_head_v)
    return { scores, weights, output };
  }
  const concatenated = X.map((_, i) => headOutputs.flatMap((out) => out[i])); // (seq, d_v)
  const output = W_o && W_o.length ? matmul(concatenated, W_o) : concatenated;
  return { scores, weights, output };
}

function labels(n, prefix) {
  return Array.from({ length: n }, (_, k) => `${prefix}${k}`);
}

function headerRow(table, corner, colLabels) {
  const head = table.insertRow();
  head.appendChild(el("th", "attn-corner", corner));
  colLabels.forEach((label) => head.appendChild(el("th", "attn-col", label)));
}

// An editable grid of numbers, shown to the explorer's decimals (a full-precision entry
// would be cut off in its box; the model keeps it exact until the reader edits it);
// edits call onEdit(i, j, value).
// `shown` is the matrix's name in the chapter's notation (the trait is `name`).
function editableTable(name, shown, matrix, rowLabels, colLabels, decimals, onEdit) {
  const table = el("table", "attn-table attn-editable");
  table.dataset.role = `edit-${name}`;
  headerRow(table, shown, colLabels);
  matrix.forEach((row, i) => {
    const tr = table.insertRow();
    tr.appendChild(el("th", "attn-row", rowLabels[i]));
    row.forEach((value, j) => {
      const input = el("input", "attn-input");
      input.type = "number";
      input.step = "0.1";
      input.value = String(Number(value.toFixed(decimals))); // Number: no -0, no 0.50
      input.dataset.cell = `${name}[${i}][${j}]`; // the tests' handle (tools/explorer_dom.py)
      // Announced by what it is: a token's dimension, or a weight's row and column.
      input.setAttribute("aria-label", name === "X"
        ? `${rowLabels[i]}, dimension ${colLabels[j]} of ${shown}`
        : `${shown}, row ${rowLabels[i]}, column ${colLabels[j]}`);
      input.addEventListener("input", () => {
        const parsed = parseFloat(input.value);
        if (Number.isFinite(parsed)) onEdit(i, j, parsed);
      });
      tr.insertCell().appendChild(input);
    });
  });
  return table;
}

// The mask as a grid of checkboxes (checked = may attend); read-only without onToggle.
// onToggle(i, j, allowed) returns false to refuse a change, and the box springs back.
function maskTable(mask, tokens, onToggle) {
  const table = el("table", "attn-table attn-mask");
  table.dataset.role = onToggle ? "edit-mask" : "mask";
  headerRow(table, "mask", tokens);
  mask.forEach((row, i) => {
    const tr = table.insertRow();
    tr.appendChild(el("th", "attn-row", tokens[i]));
    row.forEach((allowed, j) => {
      const box = el("input", "attn-mask-box");
      box.type = "checkbox";
      box.checked = allowed;
      box.disabled = !onToggle;
      box.dataset.cell = `mask[${i}][${j}]`;
      box.setAttribute("aria-label", `${tokens[i]} may attend to ${tokens[j]}`);
      if (onToggle) {
        box.addEventListener("change", () => {
          if (!onToggle(i, j, box.checked)) box.checked = true;
        });
      }
      tr.insertCell().appendChild(box);
    });
  });
  return table;
}

// Tokens on a circle; an arrow j -> i whose width and opacity grow with weights[i][j]
// (information flows from key j into query i); a loop for each token's self-weight.
// A masked pair (weight exactly 0) shows no edge: the mask is the graph's edge set.
// Built once; update(weights) restyles the edges.
function graphView(tokens, head) {
  const n = tokens.length;
  const size = 260;
  const centre = size / 2;
  const radius = n > 1 ? size / 2 - 45 : 0;
  const at = (k) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * k) / n;
    return [centre + radius * Math.cos(angle), centre + radius * Math.sin(angle), angle];
  };
  const root = svg("svg", { width: size, height: size, viewBox: `0 0 ${size} ${size}` });
  root.dataset.role = "graph";
  if (head !== undefined) root.dataset.head = String(head);
  const markerId = `attn-arrow-${Math.random().toString(36).slice(2)}`;
  const marker = svg("marker", {
    id: markerId, viewBox: "0 0 10 10", refX: 9, refY: 5, markerUnits: "userSpaceOnUse",
    markerWidth: 9, markerHeight: 9, orient: "auto-start-reverse",
  });
  marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "rgb(31, 119, 180)" }));
  root.appendChild(svg("defs", {})).appendChild(marker);
  const edges = tokens.map((_, i) =>
    tokens.map((_, j) => {
      const style = { stroke: "rgb(31, 119, 180)", fill: "none" };
      let edge;
      if (i === j) {
        const [x, y, angle] = at(i);
        edge = svg("circle", {
          cx: x + 22 * Math.cos(angle), cy: y + 22 * Math.sin(angle), r: 10, ...style,
        });
      } else {
        const [x1, y1] = at(j);
        const [x2, y2] = at(i);
        // Bend every edge to its left so that j -> i and i -> j do not overlap.
        const mx = (x1 + x2) / 2 - (y2 - y1) * 0.15;
        const my = (y1 + y2) / 2 + (x2 - x1) * 0.15;
        const shorten = (x, y, fx, fy) => {
          const d = Math.hypot(x - fx, y - fy) || 1;
          return [x + ((fx - x) * 16) / d, y + ((fy - y) * 16) / d];
        };
        const [sx, sy] = shorten(x1, y1, mx, my);
        const [ex, ey] = shorten(x2, y2, mx, my);
        edge = svg("path", { d: `M ${sx} ${sy} Q ${mx} ${my} ${ex} ${ey}`, ...style });
        edge.setAttribute("marker-end", `url(#${markerId})`);
      }
      edge.classList.add("attn-edge");
      edge.dataset.from = String(j);
      edge.dataset.to = String(i);
      edge.appendChild(svg("title", {}));
      return root.appendChild(edge);
    }),
  );
  tokens.forEach((token, k) => {
    const [x, y] = at(k);
    root.appendChild(svg("circle", { cx: x, cy: y, r: 13, class: "attn-node" }));
    const text = svg("text", { x, y: y + 4, "text-anchor": "middle", class: "attn-node-label" });
    text.textContent = token;
    root.appendChild(text);
  });
  function update(weights) {
    weights.forEach((row, i) => {
      row.forEach((w, j) => {
        const edge = edges[i][j];
        edge.dataset.weight = String(w);
        edge.style.display = w === 0 ? "none" : "";
        edge.setAttribute("stroke-width", (0.5 + 6 * w).toFixed(2));
        edge.setAttribute("stroke-opacity", (0.15 + 0.85 * w).toFixed(3));
        edge.firstChild.textContent = `${tokens[j]} → ${tokens[i]}: ${w.toFixed(3)}`;
      });
    });
  }
  return { node: root, update };
}

// Titles in the chapter's notation: before W_q and W_k exist the scores are X Xᵀ, with X
// named as the chapter names it (input_name).
const TITLES = {
  scores: ({ inputName, projectedQK }) => (projectedQK ? "Scores Q Kᵀ"
    : `Scores ${inputName} ${inputName}ᵀ`) + " (before scaling and softmax)",
  weights: "Attention weights (each row sums to 1)",
  output: ({ inputName, projectedV }) =>
    `Output rows: weights × ${projectedV ? "values" : inputName}`,
  outputProjected: "Output rows: heads side by side × W_O",
  outputSummed: "Output rows: the sum of the raw heads (no W_O)",
  graph: "Attention as a graph (arrow j → i: i reads from j)",
  mask: "Mask (checked: may attend)",
};

// One figure per head when there are several; its title says which.
function titleOf(name, layout) {
  const entry = TITLES[name];
  return typeof entry === "function" ? entry(layout) : entry;
}

function perHead(layout, name, build) {
  const { heads } = layout;
  return Array.from({ length: heads }, (_, h) => {
    const head = heads > 1 ? h : undefined;
    return build(h, head, titleOf(name, layout) + (heads > 1 ? ` — head ${h}` : ""));
  });
}

function heatmapFigure(title, map, update) {
  const note = map.numbers ? "" : " (colour only: point at a cell for its value)";
  return { title: title + note, node: map.node, update, stop: map.stop, mapWidth: map.width };
}

// Each view, built from the explorer's layout ({tokens, decimals, heads, dv, mask,
// editable}) into figures {title, node, update(result), stop?()}: built again when the
// layout changes (the old ones stopped), updated in place on every other change.
const VIEW_BUILDERS = {
  scores: (layout) => perHead(layout, "scores", (h, head, title) => {
    const map = heatmap({ rowLabels: layout.tokens, colLabels: layout.tokens,
      decimals: layout.decimals, role: "scores", head, caption: title });
    // Scores shade from their smallest (white) to their largest: only their order along
    // a row matters to the softmax.
    return heatmapFigure(title, map, (r) => {
      const [lo, hi] = finiteRange(r.scores[h]);
      map.update(r.scores[h], (v) => (hi > lo ? (v - lo) / (hi - lo) : 0.5) * 0.85);
    });
  }),
  weights: (layout) => perHead(layout, "weights", (h, head, title) => {
    const map = heatmap({ rowLabels: layout.tokens, colLabels: layout.tokens,
      decimals: layout.decimals, role: "weights", head, caption: title });
    return heatmapFigure(title, map, (r) => map.update(r.weights[h], (v) => v));
  }),
  output: (layout) => {
    const title = layout.combine === "sum" ? TITLES.outputSummed
      : layout.projected ? TITLES.outputProjected : titleOf("output", layout);
    const map = heatmap({ rowLabels: layout.tokens,
      colLabels: labels(layout.dv, layout.projected && layout.combine !== "sum" ? "o" : "v"),
      decimals: layout.decimals, role: "output", caption: title });
    return [heatmapFigure(title, map, (r) => {
      const largest = Math.max(...finiteRange(r.output).map(Math.abs));
      map.update(r.output, (v) => (largest > 0 ? (0.85 * v) / largest : 0));
    })];
  },
  graph: (layout) => perHead(layout, "graph", (h, head, title) => {
    const graph = graphView(layout.tokens, head);
    return { title, node: graph.node, update: (r) => graph.update(r.weights[h]) };
  }),
  // The mask as the reader cannot edit it (an editable mask is among the inputs).
  mask: (layout) => (layout.mask.length && !layout.editable.includes("mask")
    ? [{ title: TITLES.mask, node: maskTable(layout.mask, layout.tokens, null), update() {} }]
    : []),
};

// A map's figure knows its map's width, and the views' box its widest map's: with room,
// maps shrink a little to sit side by side in equal columns (explorer.css).
function figure({ title, node, mapWidth }) {
  const box = el("figure", "attn-view");
  if (mapWidth) {
    box.classList.add("attn-view-map");
    box.style.setProperty("--attn-map-width", `${mapWidth}px`);
  }
  box.append(el("figcaption", null, title), node);
  return box;
}

const given = (matrix) => Boolean(matrix && matrix.length);

// What the views are built for: a change here rebuilds them, any other only updates them.
function viewLayout(model, result) {
  const editable = model.get("editable");
  return {
    tokens: model.get("tokens"), views: model.get("views"), decimals: model.get("decimals"),
    heads: result.weights.length, dv: result.output[0].length, editable,
    mask: editable.includes("mask") ? [] : model.get("mask") || [],
    combine: model.get("combine"), projected: (model.get("W_o") || []).length > 0,
    inputName: model.get("input_name"), projectedV: given(model.get("W_v")),
    projectedQK: given(model.get("W_q")) || given(model.get("W_k")),
  };
}

// Editable grids for the inputs named in `editable`; edit(name, matrix) takes a change.
function inputGrids(model, edit) {
  const tokens = model.get("tokens");
  const dims = model.get("dims");
  const edited = (name, i, j, value) => {
    const matrix = model.get(name).map((row) => row.slice());
    matrix[i][j] = value;
    return matrix;
  };
  return model.get("editable").map((name) => {
    if (name === "heads_on") return headSwitches(model, edit);
    if (name === "combine") return combineChoice(model, edit);
    if (name === "mask") {
      // A row's last allowed key cannot be taken (refused: the box springs back): a token
      // attending to nothing has no weights (0/0), and Python refuses such a mask too.
      return maskTable(model.get("mask"), tokens, (i, j, allowed) => {
        const mask = edited("mask", i, j, allowed);
        if (!mask[i].some(Boolean)) return false;
        edit("mask", mask);
        return true;
      });
    }
    const matrix = model.get(name);
    const rowLabels = name === "X" ? tokens : name === "W_o" ? headRows(model) : dims;
    const colLabels = name === "X" ? dims : labels(matrix[0].length, name.slice(2));
    const shown = name === "X" ? model.get("input_name") : name;
    return editableTable(name, shown, matrix, rowLabels, colLabels, model.get("decimals"),
      (i, j, value) => edit(name, edited(name, i, j, value)));
  });
}

// W_o's rows, one block per head: "h0 v0", "h0 v1", ..., "h1 v0", ...
function headRows(model) {
  const heads = model.get("n_heads") || 1;
  const perHeadRows = model.get("W_o").length / heads;
  return Array.from({ length: heads * perHeadRows },
    (_, r) => `h${Math.floor(r / perHeadRows)} v${r % perHeadRows}`);
}

// A switch per head (checked: on); a head switched off outputs zeros (zero ablation).
function headSwitches(model, edit) {
  const heads = model.get("n_heads") || 1;
  const box = el("fieldset", "attn-heads");
  box.dataset.role = "heads_on";
  box.appendChild(el("legend", null, "heads on (off = its output is zero)"));
  for (let h = 0; h < heads; h++) {
    const label = el("label", "attn-head-switch");
    const input = el("input");
    input.type = "checkbox"; // checked by syncControls
    input.setAttribute("aria-label", `head ${h} on`);
    input.addEventListener("change", () => {
      const next = [...box.querySelectorAll("input")].map((other) => other.checked);
      edit("heads_on", next);
    });
    label.append(input, document.createTextNode(` head ${h}`));
    box.appendChild(label);
  }
  return box;
}

// Concatenate the heads then apply W_O, or add the raw heads.
function combineChoice(model, edit) {
  const select = el("select", "attn-combine");
  select.dataset.role = "combine";
  select.setAttribute("aria-label", "how the heads are combined");
  for (const [value, text] of [["concat", "concatenate, then W_O"], ["sum", "sum the raw heads"]]) {
    const option = el("option", null, text);
    option.value = value;
    select.appendChild(option);
  }
  select.addEventListener("change", () => edit("combine", select.value));
  return select;
}

// The head switches and the combination choice show the model's current values.
function syncControls(box, model) {
  const on = model.get("heads_on");
  box.querySelectorAll('[data-role="heads_on"] input').forEach((input, h) => {
    input.checked = !on || !on.length || on[h];
  });
  const choice = box.querySelector('select[data-role="combine"]');
  if (choice) choice.value = model.get("combine");
}

// The traits the explorer reads, and what a change to each redraws: the input grids
// ("inputs": the grids and every view) or only the views ("views").
const REDRAWS = {
  X: "inputs", W_q: "inputs", W_k: "inputs", W_v: "inputs", W_o: "inputs", mask: "inputs",
  tokens: "inputs", dims: "inputs", editable: "inputs", n_heads: "inputs", input_name: "inputs",
  // The switches and the choice are set in place (syncControls): rebuilding every input
  // grid for a click would cost a frame.
  decimals: "inputs", // the grids show their entries to it
  scale: "views", views: "views", heads_on: "views", combine: "views",
  goal: "views",
};

// A button that puts back what the reader can change (the editable matrices, the scale,
// the head switches and the combination) as the page first showed it: exercises send
// readers "back to the explorer above".
function resetButton(model) {
  const names = [...model.get("editable"), "scale", "heads_on", "combine"]
    .filter((name) => model.get(name) !== undefined);
  const initial = JSON.stringify(names.map((name) => model.get(name)));
  const button = el("button", "attn-reset", "Reset");
  button.type = "button";
  button.setAttribute("aria-label", "Reset the explorer to its first values");
  button.addEventListener("click", () => {
    JSON.parse(initial).forEach((value, k) => saveChanges(model, { [names[k]]: value }));
  });
  return button;
}

// The goal line from the views just computed (a goal reads one head: attention_explorer.py checks).
function updateGoal(goal, model, result) {
  const inputs = Object.fromEntries(["X", "W_q", "W_k", "W_v", "W_o"].map((k) => [k, model.get(k)]));
  goal.update(model.get("goal"), { tokens: model.get("tokens"), inputs, scale: model.get("scale"),
    scores: result.scores[0], weights: result.weights[0], inputName: model.get("input_name") });
}

// The scale slider (trait scale_slider = [min, max, step]; empty: none): a labelled range
// input with the value shown beside it, drawn by the explorer itself so that a static page
// needs no widget manager for it. Returns the nodes to show and what shows a new scale
// (called on every redraw: the explorer listens to each trait once).
function scaleSlider(model) {
  const [min, max, step] = model.get("scale_slider") || [];
  if (step === undefined) return { nodes: [], follow() {} };
  const id = `attn-scale-${Math.random().toString(36).slice(2)}`;
  const row = el("div", "attn-scale");
  const label = el("label", null, "scale");
  label.htmlFor = id;
  const input = el("input");
  Object.assign(input, { type: "range", id, min, max, step });
  input.dataset.role = "scale";
  const shown = el("output");
  shown.htmlFor = id;
  row.append(label, input, shown);
  const follow = () => {
    input.value = String(model.get("scale"));
    shown.textContent = model.get("scale").toFixed(2);
  };
  input.addEventListener("input", () => saveChanges(model, { scale: Number(input.value) }));
  follow();
  return { nodes: [row], follow };
}

function render({ model, el: root }) {
  root.classList.add("attn-explorer");
  const inputsBox = el("div", "attn-inputs");
  const viewsBox = el("div", "attn-views");
  const goal = goalView(); // a tune exercise's goal, between the inputs and the views
  const slider = scaleSlider(model);
  root.append(resetButton(model), ...slider.nodes, inputsBox, goal.node, viewsBox);
  const scrolling = markScrollingBoxes(root);
  let figures = []; // the views' figures, for the layout they were built for
  const stopFigures = () => figures.forEach((view) => view.stop?.());
  let builtFor = null;
  let editing = false; // while the reader's edit is set: its grid already shows it

  // The views, and the input grids too when `inputs` (a trait they show changed).
  function redraw(inputs) {
    if (inputs) inputsBox.replaceChildren(...inputGrids(model, edit));
    syncControls(inputsBox, model);
    slider.follow();
    const result = attend(Object.fromEntries(
      ["X", "W_q", "W_k", "W_v", "scale", "mask", "n_heads", "W_o", "heads_on", "combine"]
        .map((k) => [k, model.get(k)])));
    const layout = viewLayout(model, result);
    const key = JSON.stringify(layout);
    if (key !== builtFor) {
      stopFigures();
      figures = layout.views.flatMap((name) => VIEW_BUILDERS[name](layout));
      viewsBox.replaceChildren(...figures.map(figure));
      const widest = Math.max(0, ...figures.map((view) => view.mapWidth || 0));
      viewsBox.style.setProperty("--attn-widest-map", `${widest}px`);
      builtFor = key;
    }
    figures.forEach((view) => view.update(result));
    updateGoal(goal, model, result);
  }

  function edit(name, value) {
    editing = true;
    saveChanges(model, { [name]: value });
    editing = false;
  }

  // Several traits change together (one message from Python): one redraw, one attend().
  const later = batched((asked) => redraw(asked.has("inputs")));
  redraw(true);
  const handlers = Object.fromEntries(Object.entries(REDRAWS).map(([name, what]) =>
    [name, () => later(what === "inputs" && !editing ? "inputs" : "views")]));
  return onChanges(model, handlers, later.cancel, scrolling.stop, stopFigures);
}

export default { render };
