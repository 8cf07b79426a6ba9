// The goal of a tune exercise on an explorer (bundled into attention_explorer.js and
// conv_explorer.js: see esm.py). The goal is the JSON of attncourse.checks.tune.Goal, the
// declaration the exercise's check decides with: goalStatus applies the same rules as Goal.holds, so
// the checkmark and the check agree (tests/test_tune_goals.py runs both).
// Text is only ever written with textContent.

import { el } from "./dom.js";

const COMPARE = {
  "<": (a, b) => a < b, "<=": (a, b) => a <= b, ">": (a, b) => a > b, ">=": (a, b) => a >= b,
};
const LETTER = { scores: "S", weights: "W" }; // as the chapters name the matrices
const SYMBOL = { "<": "<", "<=": "≤", ">": ">", ">=": "≥" };

// A cell of a view times its factor, or a cycle's ratio: exp of the sum of
// S[a, b] - S[b, a] round the cycle, summed in the order CycleRatio sums it.
function cellValue(cell, tokens, views) {
  if (cell.cycle) {
    const at = cell.cycle.map((token) => tokens.indexOf(token));
    const { scores } = views;
    return Math.exp(at.reduce((sum, a, k) => {
      const b = at[(k + 1) % at.length];
      return sum + (scores[a][b] - scores[b][a]);
    }, 0));
  }
  return cell.factor * views[cell.view][tokens.indexOf(cell.row)][tokens.indexOf(cell.col)];
}

function cellText(cell) {
  if (cell.cycle) return `ratio of ${cell.cycle.join(" ⇝ ")}`;
  const text = `${LETTER[cell.view]}[${cell.row}, ${cell.col}]`;
  return cell.factor === 1 ? text : `${cell.factor} × ${text}`;
}

// np.allclose(row, reference) with the goal's tolerances: |a - b| <= atol + rtol |b|.
function rowsClose(row, reference, { rtol, atol }) {
  return row.every((a, k) => Math.abs(a - reference[k]) <= atol + rtol * Math.abs(reference[k]));
}

// Every requirement of the goal, {text, now, holds, constraint}, and whether all hold.
// The conditions are always listed; the constraints (scale, fixed rows, bounds) only
// matter to the reader when broken. `inputs` holds the explorer's matrices by name,
// `scores` and `weights` its single head's (seq, seq) views, `inputName` X's name in the
// chapter's notation.
export function goalStatus({ goal, tokens, inputs, scale, scores, weights, inputName = "X" }) {
  const views = { scores, weights };
  const requirements = goal.conditions.map(({ left, comparison, right }) => {
    const value = cellValue(left, tokens, views);
    const bound = right.view ? cellValue(right, tokens, views) : right.number;
    const rightText = right.view ? cellText(right) : String(right.number);
    return {
      text: `${cellText(left)} ${SYMBOL[comparison]} ${rightText}`,
      now: right.view ? `now ${value.toFixed(3)} and ${bound.toFixed(3)}` : `now ${value.toFixed(3)}`,
      holds: COMPARE[comparison](value, bound),
      constraint: false,
    };
  });
  const scaleHolds = Math.abs(scale - goal.scale) <= goal.scale_tolerance * Math.max(1, Math.abs(goal.scale));
  requirements.push({ text: `scale ${goal.scale}`, now: `now ${scale.toFixed(2)}`, holds: scaleHolds, constraint: true });
  const changed = Object.entries(goal.fixed_rows)
    .filter(([token, reference]) => !rowsClose(inputs.X[tokens.indexOf(token)], reference, goal.row_tolerance))
    .map(([token]) => token);
  requirements.push({ text: "only the exercise's rows may change", now: `changed: ${changed.join(", ")}`,
    holds: changed.length === 0, constraint: true });
  for (const [name, [low, high]] of Object.entries(goal.bounds)) {
    const inside = inputs[name].every((row) => row.every((v) => v >= low && v <= high));
    const shown = name === "X" ? inputName : name; // the chapter's letter (chapter 1: A)
    requirements.push({ text: `every entry of ${shown} between ${low} and ${high}`, now: "one is not",
      holds: inside, constraint: true });
  }
  return { met: requirements.every((r) => r.holds), requirements };
}

// A goal on one setting (attncourse.checks.tune.SettingGoal, "kind": "setting"), with
// the rules of SettingGoal.holds: the readout meets the target at the setting, the setting
// is no more than the margin above the smallest one that meets it, and the fixed inputs
// are the exercise's. `readoutAt(setting)` is the explorer's own maths on its current
// inputs. The smallest setting is bisected as the check bisects it and never shown: it
// is the exercise's answer.
export function smallestSetting(goal, readoutAt) {
  let [low, high] = goal.search;
  for (let k = 0; k < goal.steps; k++) {
    const middle = (low + high) / 2;
    if (COMPARE[goal.comparison](readoutAt(middle), goal.target)) high = middle;
    else low = middle;
  }
  return high;
}

export function settingStatus({ goal, setting, inputs, readoutAt, smallest = null }) {
  const readout = readoutAt(setting);
  const lowest = smallest ?? smallestSetting(goal, readoutAt);
  const meets = COMPARE[goal.comparison](readout, goal.target);
  const near = setting <= lowest + goal.margin;
  const name = goal.setting;
  // "Near the smallest that meets it" only holds of a setting that meets it: below the
  // smallest, the second condition was ticked before the first.
  const requirements = [
    { text: `${goal.readout_text} ${SYMBOL[goal.comparison]} ${goal.target}`,
      now: `now ${readout.toExponential(2)}`, holds: meets, constraint: false },
    { text: `${name} at most ${goal.margin} above the smallest ${name} that meets it`,
      now: !meets ? "not yet: the first condition does not hold"
        : near ? "now within" : `now more than ${goal.margin} above`,
      holds: meets && near, constraint: false },
  ];
  const changed = Object.entries(goal.fixed)
    .filter(([key, reference]) => inputs[key].length !== reference.length
      || !rowsClose(inputs[key], reference, goal.row_tolerance))
    .map(([key]) => key);
  requirements.push({ text: `only ${name} may change`, now: `changed: ${changed.join(", ")}`,
    holds: changed.length === 0, constraint: true });
  return { met: requirements.every((r) => r.holds), requirements };
}

// A goal on an explorer's readouts (attncourse.checks.tune.ReadoutGoal, "kind": "readout"),
// with the rules of ReadoutGoal.holds: every readout meets its target, and the inputs the
// goal fixes are the exercise's. `readouts` holds the explorer's numbers by name, `inputs`
// its current inputs by name (compared as JSON, as Python compares them).
function shown(value) {
  return Number.isInteger(value) ? value.toLocaleString("en-US") : value.toFixed(3);
}

export function readoutStatus({ goal, readouts, inputs }) {
  const requirements = goal.conditions.map(({ name, text, comparison, target }) => ({
    text: `${text} ${SYMBOL[comparison]} ${shown(target)}`, now: `now ${shown(readouts[name])}`,
    holds: COMPARE[comparison](readouts[name], target), constraint: false,
  }));
  const changed = Object.entries(goal.fixed)
    .filter(([name, value]) => JSON.stringify(inputs[name]) !== JSON.stringify(value))
    .map(([name]) => name);
  requirements.push({ text: `only ${goal.settings.join(" and ")} may change`, now: `changed: ${changed.join(", ")}`,
    holds: changed.length === 0, constraint: true });
  return { met: requirements.every((r) => r.holds), requirements };
}

// The goal line: the exercise's sentence, a checkmark when the goal is met, and each
// condition with its current value. Built for one goal; update(status) on every edit.
function goalLine(goal) {
  const box = el("div", "attn-goal");
  box.dataset.role = "goal";
  box.dataset.goal = goal.label;
  const mark = el("span", "attn-goal-mark");
  mark.setAttribute("aria-hidden", "true"); // the summary says it in words
  // Announced politely, and only when it changes: met, or how many conditions hold.
  const summary = el("span", "attn-goal-summary");
  summary.setAttribute("role", "status");
  summary.setAttribute("aria-live", "polite");
  const list = el("ul", "attn-goal-conditions");
  box.append(mark, el("span", "attn-goal-sentence", goal.sentence), summary, list);
  function update({ met, requirements }) {
    box.dataset.met = String(met);
    mark.textContent = met ? "✓" : "○";
    const shown = requirements.filter((r) => !r.constraint || !r.holds);
    const conditions = requirements.filter((r) => !r.constraint);
    const holding = conditions.filter((r) => r.holds).length;
    // When every condition holds but a rule is broken, say which rule, not "3 of 3 hold".
    const broken = requirements.filter((r) => r.constraint && !r.holds).map((r) => r.text);
    const said = met ? "Goal met."
      : holding === conditions.length
        ? `Not yet: all ${conditions.length} conditions hold, but a rule is broken (${broken.join("; ")}).`
        : conditions.length === 1 ? "Not yet: the condition does not hold."
          : `Not yet: ${holding} of ${conditions.length} conditions hold.`;
    if (summary.textContent !== said) summary.textContent = said;
    list.replaceChildren(...shown.map((r) => {
      const item = el("li", null, `${r.holds ? "✓" : "✗"} ${r.text} (${r.now})`);
      item.dataset.holds = String(r.holds);
      return item;
    }));
  }
  return { node: box, update };
}

// Where an explorer shows its goal: empty when it has none, rebuilt when the goal changes.
// `status` turns the goal and the explorer's state into requirements: goalStatus for a
// goal on the views, settingStatus for a goal on one setting.
export function goalView(status = goalStatus) {
  const node = el("div", "attn-goal-slot");
  let shown = null; // the JSON of the goal the line was built for
  let line = null;
  function update(goal, state) {
    const key = goal ? JSON.stringify(goal) : null;
    if (key !== shown) {
      line = goal ? goalLine(goal) : null;
      node.replaceChildren(...(line ? [line.node] : []));
      shown = key;
    }
    if (line) line.update(status({ goal, ...state }));
  }
  return { node, update };
}
