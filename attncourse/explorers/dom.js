// DOM helpers shared by the explorers (bundled into each one: see esm.py).
// Text is only ever written with textContent, never parsed as HTML.

const SVG_NS = "http://www.w3.org/2000/svg";

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// An element with its attributes (style, data-*, aria-*, type ...) set as written.
export function element(tag, attributes = {}, text) {
  const node = el(tag, null, text);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

export function svg(tag, attributes) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

// A row of labelled controls that wraps on a narrow screen, each control wrapped in the
// label that names it.
export function controlRow() {
  const row = el("div");
  row.style.cssText = "display:flex;flex-wrap:wrap;gap:0.4em 1.2em;align-items:center;margin:0.3em 0";
  return row;
}

export function inlineLabel(text, ...controls) {
  const label = el("label");
  label.style.cssText = "display:inline-flex;gap:0.4em;align-items:center";
  label.append(el("span", "", text), ...controls);
  return label;
}

// A line that says, as a status screen readers read out, why what was typed is not used.
export function statusNote(role) {
  const note = element("p", { "data-role": role, role: "status" });
  note.style.margin = "0.2em 0";
  return note;
}

// A box for a number the reader types. `refusal(value)` says why a number cannot be used
// ("" when it can): such a number is refused out loud, never ignored (the box is marked
// invalid and `note` says "<refusal>: <typed> is not used."), and nothing else changes;
// a usable one goes to `use(value)`. An empty box (the reader deleting to type anew) is
// neither. `show(value)` writes the model's value into the box, unless the reader is
// typing in it. Whole numbers from 1 unless `attributes` (min, max, step) say otherwise.
export function numberField({ role, label, width = "6.5em", ...attributes }, { refusal, use, note }) {
  const input = element("input", { type: "number", min: "1", step: "1", ...attributes,
    "data-role": role, "aria-label": label });
  input.style.width = width;
  input.addEventListener("input", () => {
    const typed = input.value;
    const value = Number(typed);
    const why = typed === "" ? "" : refusal(value);
    input.setAttribute("aria-invalid", String(why !== ""));
    note.textContent = why && `${why}: ${typed} is not used.`;
    if (typed !== "" && !why) use(value);
  });
  const show = (value) => {
    if (input !== document.activeElement) input.value = String(value);
  };
  return { input, show };
}

// Boxes of `root` that scroll sideways (a view or grid wider than the column, on a phone):
// while one does, it is a Tab stop (the arrow keys then scroll it), a region named by its
// caption "..., scrolls sideways", and a line under it says so. Checked whenever the
// explorer or one of its boxes changes size.
const SCROLL_HINT = "Wider than the screen: scroll it sideways (or Tab to it and use the arrow keys).";

export function markScrollingBoxes(root) {
  const hints = new Map(); // box -> its hint line
  function check() {
    for (const box of root.querySelectorAll("*")) {
      if (!["auto", "scroll"].includes(getComputedStyle(box).overflowX)) continue;
      const scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls === box.hasAttribute("data-scrolls")) continue;
      if (scrolls) {
        // Its own caption, or the caption of the figure it scrolls in (a heatmap's).
        const caption = box.querySelector("figcaption, caption")
          || box.closest("figure")?.querySelector(":scope > figcaption");
        const what = (caption && caption.textContent.trim()) || box.getAttribute("aria-label")
          || "This view";
        box.dataset.scrolls = "";
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", `${what.replace(/:$/, "")}, scrolls sideways`);
        const hint = el("p", "attn-scroll-hint", SCROLL_HINT);
        hint.style.cssText = "margin:0.2rem 0;font-size:0.85em;font-style:italic";
        box.after(hint);
        hints.set(box, hint);
      } else {
        delete box.dataset.scrolls;
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
        hints.get(box)?.remove();
        hints.delete(box);
      }
    }
  }
  const watcher = new ResizeObserver(check);
  watcher.observe(root);
  // check: to call again when the explorer redraws at another size; stop: render's cleanup.
  return { check, stop: () => watcher.disconnect() };
}
