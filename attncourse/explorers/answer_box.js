// Answer box for a predict exercise: the reader types a number and presses Check.
// First miss: the hint. Second miss, a right answer or "Show the answer": the answer and
// its explanation. Everything it says comes from the traits (answer_box.py, from
// the exercise's declaration); no kernel is needed and nothing is sent back. Text is only
// ever written with textContent.

import { onChanges } from "./sync.js";

// Reading, writing and judging a number: a mirror of attncourse.checks.predict (read_number,
// format_number, judge), line for line; tests/test_answer_box.py runs both on one table.

const SIGNIFICANT = 4; // digits shown of a number that is not whole
const EXAMPLES = "0.25, 1/4, 655,360, 6.5e5 or 2^16";
const PLAIN = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/;
const GROUPED = /^([+-]?)([1-9]\d{0,2}(?:([, _'])\d{3})(?:\3\d{3})*)(\.\d+)?$/;
const DOTS_AND_COMMA = /^([+-]?)(\d{1,3}(?:\.\d{3})+),(\d+)$/;
const DECIMAL_COMMA = /^([+-]?\d*),(\d+)$/;
const TIMES_TEN = /^([+-]?(?:\d+\.?\d*|\.\d+))\s*[x*]\s*10\s*(?:\^|\*\*)\s*([+-]?\d+)$/;
const POWER = /^([+-]?(?:\d+\.?\d*|\.\d+))\s*(?:\^|\*\*)\s*([+-]?\d+)$/;

const group = (digits) => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
const trimZeros = (text) => text.replace(/0+$/, "").replace(/\.$/, "");

export function formatNumber(value) {
  if (value === 0) return "0";
  const sign = value < 0 ? "-" : "";
  const magnitude = Math.abs(value);
  if (Number.isInteger(magnitude) && magnitude < 1e15) return sign + group(String(magnitude));
  const [mantissa, power] = magnitude.toExponential(SIGNIFICANT - 1).split("e");
  const exponent = Number(power);
  const digits = mantissa.replace(".", ""); // 4 digits, the first not 0
  if (exponent >= 3 && exponent < 15) return sign + group(digits + "0".repeat(exponent - 3));
  if (exponent >= -4 && exponent < 3) {
    const fixed = exponent < 0 ? "0".repeat(-exponent) + digits : digits;
    const point = fixed.length - (3 - exponent);
    return sign + trimZeros(`${fixed.slice(0, point)}.${fixed.slice(point)}`);
  }
  const short = trimZeros(`${digits[0]}.${digits.slice(1)}`);
  return `${sign}${short}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
}

function oneNumber(text) {
  let match;
  if (PLAIN.test(text)) return Number(text);
  if ((match = text.match(GROUPED))) {
    const [, sign, whole, separator, decimals] = match;
    return Number(sign + whole.split(separator).join("") + (decimals || ""));
  }
  if ((match = text.match(DOTS_AND_COMMA))) {
    return Number(`${match[1]}${match[2].split(".").join("")}.${match[3]}`);
  }
  if ((match = text.match(DECIMAL_COMMA))) return Number(`${match[1]}.${match[2]}`);
  if ((match = text.match(TIMES_TEN))) return Number(`${match[1]}e${match[2]}`);
  if ((match = text.match(POWER))) {
    const [, base, exponent] = match;
    if (base.replace(/^[+-]+/, "") === "10") return Number(`${base.slice(0, -2)}1e${exponent}`);
    return Number(base) ** Number(exponent);
  }
  return null;
}

// What the reader typed: { value, message: "" }, or { value: null, message: what was
// understood }.
export function readNumber(text) {
  const shown = Array.from(String(text).split(/\s+/).filter(Boolean).join(" ")).slice(0, 40).join("");
  let cleaned = shown.toLowerCase().replaceAll("\u2212", "-").replaceAll("\u00d7", "x")
    .replaceAll("\u00b7", "x").replaceAll("\u22c5", "x");
  if (!cleaned) return { value: null, message: `Write your prediction as one number, such as ${EXAMPLES}.` };
  let scale = 1;
  if (cleaned.endsWith("%")) {
    cleaned = cleaned.slice(0, -1).trimEnd();
    scale = 100;
  }
  const parts = cleaned.split("/").map((part) => part.trim());
  const values = parts.map(oneNumber);
  if (parts.length > 2 || values.includes(null)) {
    return { value: null, message: `Could not read "${shown}" as one number: write it like ${EXAMPLES}.` };
  }
  if (values.length === 2 && values[1] === 0) {
    return { value: null, message: `Read "${shown}" as ${formatNumber(values[0])} divided by 0, which is no number.` };
  }
  const value = (values.length === 2 ? values[0] / values[1] : values[0]) / scale;
  if (!Number.isFinite(value)) {
    return { value: null, message: `Read "${shown}" as a number too large to write down: try a smaller one.` };
  }
  return { value, message: "" };
}

// The verdict after `misses` earlier misses, and its text: "right"; "hint" on a first miss
// (the hint, never the answer); "answer" from the second on.
export function judge({ answer, tolerance, hint, explanation }, value, misses) {
  const said = `you predicted ${formatNumber(value)}`;
  const answered = `${said}; the answer is ${formatNumber(answer)}. ${explanation}`;
  if (Math.abs(value - answer) <= tolerance) return { verdict: "right", misses, text: answered };
  if (misses === 0) {
    return { verdict: "hint", misses: 1,
      text: `${said}, which is not within ${formatNumber(tolerance)} of the answer. Hint: ${hint} Then try again.` };
  }
  return { verdict: "answer", misses: misses + 1, text: answered };
}

const TRAITS = ["label", "prompt", "answer", "tolerance", "hint", "explanation"];
const sentence = (text) => text.charAt(0).toUpperCase() + text.slice(1);

function render({ model, el: root }) {
  const box = document.createElement("form");
  box.className = "attn-answer";
  box.dataset.label = model.get("label");
  const id = `attn-answer-${Math.random().toString(36).slice(2)}`;
  const prompt = document.createElement("label");
  prompt.htmlFor = id;
  const input = document.createElement("input");
  input.id = id;
  input.type = "text";
  input.inputMode = "decimal";
  input.autocomplete = "off";
  const check = document.createElement("button");
  check.type = "submit";
  check.textContent = "Check";
  const reveal = document.createElement("button");
  reveal.type = "button";
  reveal.textContent = "Show the answer";
  const message = document.createElement("p");
  message.className = "attn-answer-message";
  message.setAttribute("role", "status"); // read out by screen readers as it changes
  box.append(prompt, input, check, reveal, message);
  root.appendChild(box);

  let misses = 0;
  const exercise = () => Object.fromEntries(TRAITS.map((name) => [name, model.get(name)]));
  const show = (verdict, text) => {
    box.dataset.verdict = verdict;
    message.textContent = text;
  };
  const relabel = () => {
    prompt.textContent = `${model.get("prompt")}:`;
    box.dataset.label = model.get("label");
  };
  relabel();

  box.addEventListener("submit", (event) => {
    event.preventDefault(); // a static page has nowhere to send it
    const { value, message: unread } = readNumber(input.value);
    if (value === null) {
      show("unreadable", unread);
      return;
    }
    const result = judge(exercise(), value, misses);
    misses = result.misses;
    show(result.verdict, sentence(result.text));
  });
  reveal.addEventListener("click", () => {
    const { answer, explanation } = exercise();
    show("answer", `The answer is ${formatNumber(answer)}. ${explanation}`);
  });
  return onChanges(model, { prompt: relabel, label: relabel });
}

export default { render };
