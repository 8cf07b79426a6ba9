// Tiles explorer (chapter 9): FlashAttention's loop on one small example, a tile at a time.
// Runs in the browser with or without a kernel (anywidget keeps this file in the saved
// widget state). The maths follows attncourse.flash.tiled_trace: for each block of query
// rows, the key blocks it may see in order (causal: key j <= query i, equal lengths); per
// tile the scores S = Q_block K_block^T / sqrt(d_k), then m' = max(m, rowmax S),
// l' = l e^(m - m') + rowsum e^(S - m'), o' = o e^(m - m') + e^(S - m') V_block; values read
// (a query block at its first tile, a key and a value block at every tile) and written (the
// output and lse at the block's last tile). Every label is written with textContent.

import { controlRow, el, inlineLabel, markScrollingBoxes, numberField, statusNote, svg } from "./dom.js";
import { onChanges, saveChanges } from "./sync.js";

const CELL = 18; // pixels per score in the grid

function tileOrder(seq, blockQ, blockK, causal) {
  const order = [];
  for (let q = 0; q < seq; q += blockQ) {
    const rows = [q, Math.min(q + blockQ, seq)];
    const seen = causal ? Math.min(rows[1], seq) : seq; // keys some row of the block may see
    const cols = [];
    for (let k = 0; k < seen; k += blockK) cols.push([k, Math.min(k + blockK, seq)]);
    order.push({ rows, cols });
  }
  return order;
}

// Every step of the loop, as tiled_trace returns them (rows, cols, m, l, o, read, written).
export function construct({ Q, K, V, block_q: blockQ, block_k: blockK, causal }) {
  const seq = Q.length;
  const dK = Q[0].length;
  const dV = V[0].length;
  const scale = 1 / Math.sqrt(dK);
  const steps = [];
  let read = 0;
  let written = 0;
  for (const { rows, cols: keyBlocks } of tileOrder(seq, blockQ, blockK, causal)) {
    const n = rows[1] - rows[0];
    let m = new Array(n).fill(-Infinity);
    let l = new Array(n).fill(0);
    let o = Array.from({ length: n }, () => new Array(dV).fill(0));
    keyBlocks.forEach((cols, b) => {
      if (b === 0) read += n * dK;
      read += (cols[1] - cols[0]) * (dK + dV);
      const last = b === keyBlocks.length - 1;
      const next = { m: [], l: [], o: [] };
      for (let r = 0; r < n; r++) {
        const i = rows[0] + r;
        const scores = [];
        for (let j = cols[0]; j < cols[1]; j++) {
          const visible = !causal || j <= i;
          scores.push(visible ? Q[i].reduce((sum, q, c) => sum + q * K[j][c], 0) * scale : -Infinity);
        }
        const newM = Math.max(m[r], ...scores); // finite: key 0 is in the first tile, seen by all
        const rescale = Math.exp(m[r] - newM);
        const p = scores.map((s) => Math.exp(s - newM));
        next.m.push(newM);
        next.l.push(l[r] * rescale + p.reduce((a, b2) => a + b2, 0));
        next.o.push(o[r].map((value, c) => value * rescale
          + p.reduce((sum, w, t) => sum + w * V[cols[0] + t][c], 0)));
      }
      ({ m, l, o } = next);
      if (last) written += n * (dV + 1);
      steps.push({ rows, cols, m, l, o, read, written });
    });
  }
  return steps;
}

// The direct computation's traffic, as attncourse.flash.naive_traffic: 4 N d + 4 N^2.
export function naiveTraffic(seq, d) {
  return 4 * seq * d + 4 * seq * seq;
}

export function naiveTrafficOf({ seq, d }) {
  return naiveTraffic(seq, d);
}

function format(value) {
  return Number.isFinite(value) ? value.toFixed(3) : String(value);
}

function render({ model, el: host }) {
  const root = el("div", "attn-explorer flash-explorer");
  root.style.cssText = "font:14px sans-serif;max-width:680px";
  const seq = () => model.get("Q").length;
  const save = (values) => saveChanges(model, values);

  // A block size the explorer cannot use is refused out loud, not ignored.
  const note = statusNote("block-note");
  const block = (role, label, name) => numberField({ role, label, width: "4.5em" }, {
    refusal: (value) => (Number.isInteger(value) && value >= 1 && value <= seq() ? ""
      : `A block holds a whole number of rows from 1 to ${seq()}`),
    use: (value) => save({ [name]: value, step: 0 }), note });
  const blockQ = block("block-q", "query block size", "block_q");
  const blockK = block("block-k", "key block size", "block_k");
  const causal = el("input");
  causal.type = "checkbox";
  causal.dataset.role = "causal";
  causal.setAttribute("aria-label", "causal mask");
  const row = el("input");
  Object.assign(row, { type: "range", min: "0", step: "1" });
  row.dataset.role = "row";
  row.setAttribute("aria-label", "query row");
  const rowText = el("span");
  const step = el("input");
  Object.assign(step, { type: "range", min: "0", step: "1" });
  step.dataset.role = "step";
  step.setAttribute("aria-label", "tile");
  const previous = el("button", "", "◀ previous tile");
  const next = el("button", "", "next tile ▶");
  previous.dataset.role = "previous";
  next.dataset.role = "next";

  const controls = controlRow();
  controls.append(inlineLabel("query block", blockQ.input), inlineLabel("key block", blockK.input),
    inlineLabel("causal", causal), inlineLabel("row", row, rowText));
  const stepper = el("div");
  stepper.style.cssText = "display:flex;flex-wrap:wrap;gap:0.5em;align-items:center;margin:0.3em 0";
  const stepText = el("span");
  stepText.dataset.role = "step-text";
  stepText.setAttribute("aria-live", "polite"); // the tile a key press moved to, read out
  stepper.append(previous, step, next, stepText);

  const grid = svg("svg", { "data-role": "grid", role: "img" });
  const gridBox = el("figure");
  gridBox.style.cssText = "margin:0.3em 0;max-width:100%;overflow-x:auto";
  const caption = el("figcaption", "", "Scores (query i down, key j across): tiles done in blue, the tile in "
    + "fast memory in orange, masked scores grey, the chosen row outlined.");
  caption.style.cssText = "text-align:left;color:inherit;font-size:inherit;margin:0 0 0.2em 0";
  gridBox.append(caption, grid);
  const state = el("p");
  state.dataset.role = "row-state";
  const history = el("table");
  history.dataset.role = "history";
  history.style.cssText = "border-collapse:collapse;font-variant-numeric:tabular-nums;margin:0.2em 0";
  const traffic = el("p");
  traffic.dataset.role = "traffic";
  root.append(controls, note, stepper, gridBox, state, history, traffic);
  host.append(root);
  const scrolling = markScrollingBoxes(root);

  function drawGrid(steps, current) {
    const n = seq();
    grid.replaceChildren();
    grid.setAttribute("width", String(n * CELL + 2));
    grid.setAttribute("height", String(n * CELL + 2));
    grid.setAttribute("aria-label", `score matrix of ${n} by ${n}, tile ${current + 1} of ${steps.length} in fast memory`);
    const done = new Set();
    steps.slice(0, current).forEach((s) => done.add(`${s.rows[0]},${s.cols[0]}`));
    const now = steps[current];
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        let fill = "#ffffff";
        const inTile = (s) => i >= s.rows[0] && i < s.rows[1] && j >= s.cols[0] && j < s.cols[1];
        if (model.get("causal") && j > i) fill = "#d9d9d9";
        else if (inTile(now)) fill = "#fdae6b";
        else if (steps.slice(0, current).some(inTile)) fill = "#9ecae1";
        grid.append(svg("rect", { x: 1 + j * CELL, y: 1 + i * CELL, width: CELL, height: CELL, fill,
          stroke: "#bbbbbb", "stroke-width": 0.5 }));
      }
    }
    grid.append(svg("rect", { x: 1 + now.cols[0] * CELL, y: 1 + now.rows[0] * CELL,
      width: (now.cols[1] - now.cols[0]) * CELL, height: (now.rows[1] - now.rows[0]) * CELL,
      fill: "none", stroke: "#e6550d", "stroke-width": 2.5, "data-role": "current-tile" }));
    const r = model.get("row");
    grid.append(svg("rect", { x: 1, y: 1 + r * CELL, width: n * CELL, height: CELL, fill: "none",
      stroke: "#000000", "stroke-width": 1.5, "stroke-dasharray": "4 2" }));
    grid.dataset.done = String(done.size);
  }

  // The chosen row's state at this step: running m, l and o / l if its block is under way
  // or done, and the row's history over the key blocks it has seen so far.
  function showRow(steps, current) {
    const r = model.get("row");
    const mine = steps.map((s, k) => ({ s, k })).filter(({ s, k }) => k <= current
      && r >= s.rows[0] && r < s.rows[1]);
    history.replaceChildren();
    if (mine.length === 0) {
      state.textContent = `Row ${r}: its query block has not reached fast memory yet.`;
      state.dataset.values = "null";
      return;
    }
    const head = el("tr");
    for (const text of ["key block", "m", "l", "output o / l"]) {
      const cell = el("th", "", text);
      cell.style.cssText = "padding:0 0.8em 0 0;text-align:left";
      head.append(cell);
    }
    history.append(head);
    for (const { s } of mine) {
      const at = r - s.rows[0];
      const tr = el("tr");
      const output = s.o[at].map((v) => format(v / s.l[at])).join(", ");
      for (const text of [`keys ${s.cols[0]}–${s.cols[1] - 1}`, format(s.m[at]), format(s.l[at]), `[${output}]`]) {
        const cell = el("td", "", text);
        cell.style.cssText = "padding:0 0.8em 0 0";
        tr.append(cell);
      }
      history.append(tr);
    }
    const { s } = mine[mine.length - 1];
    const at = r - s.rows[0];
    const finished = steps.slice(current + 1).every((t) => t.rows[0] !== s.rows[0]);
    state.dataset.values = JSON.stringify({ m: s.m[at], l: s.l[at], o: s.o[at] });
    state.textContent = `Row ${r}, after keys 0–${s.cols[1] - 1}: m = ${format(s.m[at])}, `
      + `l = ${format(s.l[at])}${finished ? " (final: the row is done)" : ""}.`;
  }

  function update() {
    const n = seq();
    const problem = { Q: model.get("Q"), K: model.get("K"), V: model.get("V"),
      block_q: model.get("block_q"), block_k: model.get("block_k"), causal: model.get("causal") };
    const steps = construct(problem);
    const current = Math.min(model.get("step"), steps.length - 1);
    blockQ.show(problem.block_q);
    blockK.show(problem.block_k);
    blockQ.input.max = String(n);
    blockK.input.max = String(n);
    causal.checked = problem.causal;
    row.max = String(n - 1);
    row.value = String(model.get("row"));
    rowText.textContent = `i = ${model.get("row")}`;
    row.setAttribute("aria-valuetext", `query row ${model.get("row")}`);
    step.max = String(steps.length - 1);
    step.value = String(current);
    const now = steps[current];
    stepText.textContent = `tile ${current + 1} of ${steps.length}: queries ${now.rows[0]}–${now.rows[1] - 1}, `
      + `keys ${now.cols[0]}–${now.cols[1] - 1} in fast memory`;
    step.setAttribute("aria-valuetext", `tile ${current + 1} of ${steps.length}`);
    drawGrid(steps, current);
    showRow(steps, current);
    const d = problem.Q[0].length;
    const total = steps[steps.length - 1];
    traffic.dataset.values = JSON.stringify({ read: now.read, written: now.written,
      total: total.read + total.written, naive: naiveTraffic(n, d) });
    traffic.textContent = `Moved so far: ${now.read} values read, ${now.written} written. Whole loop: `
      + `${total.read + total.written}; the direct computation (4Nd + 4N²): ${naiveTraffic(n, d)}.`;
    scrolling.check();
  }

  const goTo = (k) => save({ step: Math.max(0, k) });
  step.addEventListener("input", () => goTo(Number(step.value)));
  previous.addEventListener("click", () => goTo(Math.min(model.get("step"), Number(step.max)) - 1));
  next.addEventListener("click", () => goTo(Math.min(model.get("step") + 1, Number(step.max))));
  row.addEventListener("input", () => save({ row: Number(row.value) }));
  causal.addEventListener("change", () => save({ causal: causal.checked, step: 0 }));
  update();
  const names = ["Q", "K", "V", "block_q", "block_k", "causal", "row", "step"];
  return onChanges(model, Object.fromEntries(names.map((name) => [name, update])), scrolling.stop);
}

export default { render };
