// Answer box for a predict exercise: the reader types a number and presses Check.
// First miss: the hint. Second miss, a right answer or "Show the answer": the answer and
// its explanation. Everything it says comes from the traits (attncourse.answer_box, from
// the exercise's declaration); no kernel is needed and nothing is sent back. Text is only
// ever written with textContent.

// The reader's number, or null: "0,25" (decimal comma) and "1/4" are read as 0.25.
export function readNumber(text) {
  const cleaned = String(text).trim().replace(",", ".");
  const fraction = cleaned.match(/^([-+]?[\d.]+(?:e[-+]?\d+)?)\s*\/\s*([-+]?[\d.]+(?:e[-+]?\d+)?)$/i);
  const value = fraction ? Number(fraction[1]) / Number(fraction[2])
    : cleaned === "" ? NaN : Number(cleaned);
  return Number.isFinite(value) ? value : null;
}

// What the check in attncourse.checks.predict says, worded the same way.
export function judge({ answer, tolerance, answer_text, tolerance_text, hint, explanation },
  value, misses) {
  const said = `You predicted ${value}`;
  if (Math.abs(value - answer) <= tolerance) {
    return { verdict: "right", misses, text: `${said}; the answer is ${answer_text}. ${explanation}` };
  }
  if (misses === 0) {
    return { verdict: "hint", misses: 1, text: `${said}, which is not within ${tolerance_text} of the answer. Hint: ${hint} Then try again.` };
  }
  return { verdict: "answer", misses: misses + 1, text: `${said}; the answer is ${answer_text}. ${explanation}` };
}

const TRAITS = ["label", "prompt", "answer", "tolerance", "answer_text", "tolerance_text",
  "hint", "explanation"];

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
    const value = readNumber(input.value);
    if (value === null) {
      show("unreadable", "Write your prediction as one number, such as 0.25.");
      return;
    }
    const result = judge(exercise(), value, misses);
    misses = result.misses;
    show(result.verdict, result.text);
  });
  reveal.addEventListener("click", () => {
    const { answer_text, explanation } = exercise();
    show("answer", `The answer is ${answer_text}. ${explanation}`);
  });
  const listeners = ["prompt", "label"].map((name) => [`change:${name}`, relabel]);
  listeners.forEach(([event, listener]) => model.on(event, listener));
  return () => listeners.forEach(([event, listener]) => model.off(event, listener));
}

export default { render };
