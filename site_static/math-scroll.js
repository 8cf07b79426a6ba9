// A display formula wider than the column scrolls sideways in its .katex-display (column.css),
// as a wide table does in the theme's table box. While one does, it is a Tab stop (the arrow
// keys then scroll it) and a region named "Formula, scrolls sideways" (or "Table, ..."), as
// an explorer's scroll box is (attncourse/explorers/dom.js). Checked whenever such a box
// changes size, and once the fonts have arrived (they change a formula's width).
(() => {
  const BOXES = {
    "div.math .katex-display": "Formula, scrolls sideways",
    ".pst-scrollable-table-container": "Table, scrolls sideways",
  };

  function mark(box, label) {
    const scrolls = box.scrollWidth > box.clientWidth + 1;
    if (scrolls === box.hasAttribute("data-scrolls")) return;
    if (scrolls) {
      box.dataset.scrolls = "";
      box.dataset.tabindexBefore = box.getAttribute("tabindex") ?? "";
      box.tabIndex = 0;
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", label);
    } else {
      delete box.dataset.scrolls;
      ["role", "aria-label"].forEach((name) => box.removeAttribute(name));
      const before = box.dataset.tabindexBefore;  // the theme's own, on a table's box
      if (before) box.setAttribute("tabindex", before);
      else box.removeAttribute("tabindex");
      delete box.dataset.tabindexBefore;
    }
  }

  function start() {
    const labels = new Map();
    for (const [selector, label] of Object.entries(BOXES)) {
      document.querySelectorAll(selector).forEach((box) => labels.set(box, label));
    }
    const watcher = new ResizeObserver((entries) =>
      entries.forEach((entry) => mark(entry.target, labels.get(entry.target))));
    labels.forEach((label, box) => watcher.observe(box));
    document.fonts.ready.then(() => labels.forEach((label, box) => mark(box, label)));
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
