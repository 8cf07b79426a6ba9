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
