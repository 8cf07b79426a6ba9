// Block sizes explorer (chapter 9): the fast memory one step of FlashAttention's loop holds
// and the values the whole loop moves, at a real model's size, for the blocks the reader
// types. Runs in the browser with or without a kernel (anywidget keeps this file in the
// saved widget state). The counts follow attncourse.flash (d_k = d_v = d, no mask):
// fast_memory_values = 2 B_q d + 2 B_k d + B_q B_k + 2 B_q;
// tiled_traffic = 2 N d + N + ceil(N / B_q) 2 N d (K and V read again for every query block);
// naive_traffic = 4 N d + 4 N^2. A tune exercise's goal on the blocks shows above the
// readouts. Every label is written with textContent, never as HTML.

import { controlRow, el, inlineLabel, markScrollingBoxes, numberField, statusNote } from "./dom.js";
import { goalView, readoutStatus } from "./goal.js";
import { onChanges, saveChanges } from "./sync.js";

const FIELDS = [["seq", "tokens N"], ["d", "width d"], ["budget", "fast memory M (values)"],
  ["block_q", "block_q"], ["block_k", "block_k"]];

export function fastMemoryValues(blockQ, blockK, d) {
  return 2 * blockQ * d + 2 * blockK * d + blockQ * blockK + 2 * blockQ;
}

export function tiledTraffic(seq, d, blockQ) {
  return 2 * seq * d + seq + Math.ceil(seq / blockQ) * 2 * seq * d;
}

// The readouts a goal may name, as attncourse.explorers.block_explorer.block_readouts.
export function readouts({ seq, d, block_q: blockQ, block_k: blockK }) {
  return { footprint: fastMemoryValues(blockQ, blockK, d), block_k: blockK, traffic: tiledTraffic(seq, d, blockQ) };
}

// A tune exercise's goal on the explorer's values (seq, d, budget, block_q, block_k): the
// goal's status, and the readouts it was decided on.
export function blockGoalStatus({ goal, values }) {
  const now = readouts(values);
  return { ...readoutStatus({ goal, readouts: now, inputs: values }), readouts: now };
}

const count = (value) => value.toLocaleString("en-US");
const MAX_SEQ = 1 << 20; // as block_explorer.py

function render({ model, el: host }) {
  const root = el("div", "attn-explorer block-explorer");
  const goal = goalView(blockGoalStatus);
  // A number the explorer cannot use is refused out loud, not ignored.
  const note = statusNote("note");
  const refusal = (name) => (value) => (Number.isInteger(value) && value >= 1 && (name !== "seq" || value <= MAX_SEQ) ? ""
    : name === "seq" ? `N is a whole number from 1 to ${count(MAX_SEQ)}` : "Each number is a whole number of at least 1");
  const form = controlRow();
  const fields = {};
  for (const [name, text] of FIELDS) {
    fields[name] = numberField({ role: name, label: text }, { refusal: refusal(name), note,
      use: (value) => saveChanges(model, { [name]: value }) });
    form.append(inlineLabel(text, fields[name].input));
  }
  const memory = el("p");
  memory.dataset.role = "footprint";
  const traffic = el("p");
  traffic.dataset.role = "traffic";
  // Announced politely when a typed block changes what they say.
  for (const line of [memory, traffic]) {
    line.setAttribute("aria-live", "polite");
    line.style.margin = "0.3em 0";
  }
  root.append(goal.node, form, note, memory, traffic);
  host.append(root);
  const scrolling = markScrollingBoxes(root);

  function update() {
    const values = Object.fromEntries(FIELDS.map(([name]) => [name, model.get(name)]));
    for (const [name] of FIELDS) fields[name].show(values[name]);
    const now = readouts(values);
    const fits = now.footprint <= values.budget;
    memory.dataset.value = String(now.footprint);
    memory.textContent = `One step holds ${count(now.footprint)} values in fast memory, `
      + `${fits ? "within" : "more than"} its ${count(values.budget)}.`;
    traffic.dataset.value = String(now.traffic);
    const blocks = Math.ceil(values.seq / values.block_q);
    traffic.textContent = `The loop moves ${count(now.traffic)} values (K and V read ${count(blocks)} `
      + `time${blocks > 1 ? "s" : ""}, once per query block); the direct computation (4Nd + 4N²): `
      + `${count(4 * values.seq * values.d + 4 * values.seq * values.seq)}.`;
    goal.update(model.get("goal"), { values });
    scrolling.check();
  }

  update();
  const names = [...FIELDS.map(([n]) => n), "goal"];
  return onChanges(model, Object.fromEntries(names.map((name) => [name, update])), scrolling.stop);
}

export default { render };
