// Heatmaps shared by the explorers (bundled into each one: see esm.py).

import { el } from "./dom.js";

// A labelled heatmap on one canvas. A table of the same numbers is one element per cell:
// with 16 tokens and 4 heads (about 2,500 cells) each edit took two frames to lay out and
// paint; a canvas is one element however many cells it draws. Up to NUMBERS_UP_TO rows
// every cell prints its number; larger maps are colour only (printing 2,500 numbers
// costs a frame by itself, and nobody reads them). Every map has a readout line that
// gives the value of the cell under the pointer (mouse, pen or touch) or, with the
// keyboard, of the cell the arrow keys select: the values reach every reader.
// On the element, for the browser tests: data-values (the full-precision matrix drawn),
// data-rows and data-cols (the labels), data-decimals and data-grid (where the cells are,
// CSS pixels).
// Labels are drawn with fillText, which never parses HTML.
const CELL = { height: 22, padding: 6, maxLabel: 96, font: 13 };
// A map wider than a phone's column is drawn narrower (issue 35): its column labels turned
// upright over cells TURNED_CELL px wide, colour only (the readout gives each value); then,
// if still too wide, scaled down, but never below LEGIBLE_PX for its 13 px text (the
// course's figure-legibility rule); only then does it scroll.
const TURNED_CELL = 20;
const LEGIBLE_PX = 9;
const PHONE_BELOW = 560; // px: the explorer's width under which explorer.css scales no map
const NUMBERS_UP_TO = 12;
const SHADES = 100; // colour steps per sign: finer than the eye tells apart
const DARK_TEXT = "#000"; // black or white: every cell's number at >= 4.58:1 (WCAG AA)
const LABEL_BACKGROUND = "#f4f4f4";
const LINE = "#ddd";

// A colour at each opacity step over white, and the text colour that contrasts most
// with it (WCAG relative luminance): white only on the darkest blues.
function palette([r, g, b]) {
  const linear = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  const luminance = (rgb) =>
    0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2]);
  const dark = luminance([0, 0, 0]); // DARK_TEXT
  return Array.from({ length: SHADES + 1 }, (_, k) => {
    const a = k / SHADES;
    const over = (c) => 255 + a * (c - 255);
    const shown = luminance([over(r), over(g), over(b)]);
    const light = 1.05 / (shown + 0.05) > (shown + 0.05) / (dark + 0.05);
    return { fill: `rgba(${r}, ${g}, ${b}, ${a.toFixed(2)})`, text: light ? "white" : DARK_TEXT };
  });
}
const BLUES = palette([31, 119, 180]);
const ORANGES = palette([230, 120, 30]);

// The smallest and largest finite entries (NaN or ±Infinity must not wash out the rest).
export function finiteRange(matrix) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const row of matrix) {
    for (const v of row) {
      if (Number.isFinite(v)) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
  }
  return [lo, hi];
}

// Labels wider than maxLabel end in an ellipsis (the readout shows them whole); cut
// between characters, never inside one (emoji are two UTF-16 units).
function fitLabel(ctx, text) {
  if (ctx.measureText(text).width <= CELL.maxLabel) return text;
  const characters = Array.from(text);
  while (characters.length && ctx.measureText(`${characters.join("")}…`).width > CELL.maxLabel) {
    characters.pop();
  }
  return `${characters.join("")}…`;
}

// Where everything goes, in CSS pixels: a label column, a header row, equal cells wide
// enough for their column labels and, when printed, for numbers up to widestNumber; or,
// `turned`, a header as tall as the longest column label, turned upright over narrow cells.
function heatmapLayout(ctx, font, rowLabels, colLabels, decimals, numbers, turned = false) {
  ctx.font = font(500);
  const rows = rowLabels.map((label) => fitLabel(ctx, label));
  const cols = colLabels.map((label) => fitLabel(ctx, label));
  const widest = (texts) => Math.max(0, ...texts.map((t) => ctx.measureText(t).width));
  const colLabelWidth = widest(cols);
  const left = Math.ceil(widest(rows) + 2 * CELL.padding);
  if (turned) {
    const top = Math.ceil(colLabelWidth + 2 * CELL.padding);
    return {
      rows, cols, widestNumber: "", left, top, cellWidth: TURNED_CELL, cellHeight: CELL.height,
      width: left + cols.length * TURNED_CELL, height: top + rows.length * CELL.height, turned,
    };
  }
  ctx.font = font(400);
  const widestNumber = `-000.${"0".repeat(decimals)}`; // longer ones are squeezed to fit
  const numberWidth = numbers ? ctx.measureText(widestNumber).width : 0;
  const cellWidth = Math.ceil(Math.max(numberWidth, colLabelWidth) + 2 * CELL.padding);
  return {
    rows, cols, widestNumber, left, top: CELL.height, cellWidth, cellHeight: CELL.height,
    width: left + cols.length * cellWidth, height: (rows.length + 1) * CELL.height, turned,
  };
}

// The y of the line above row i (i = 0: the map's top edge; 1: under the header).
const rowLine = ({ top, cellHeight }, i) => (i === 0 ? 0 : top + (i - 1) * cellHeight);

// The label column (the tokens, under a blank corner) and its lines, up to and with the
// line on its right (at left + 0.5): drawn into the map and, alone, into the copy that
// stays in view while a wide map scrolls.
function paintRowLabels(ctx, layout, font) {
  const { rows, left, top, cellHeight, height } = layout;
  ctx.fillStyle = LABEL_BACKGROUND;
  ctx.fillRect(0, 0, left, height);
  ctx.font = font(500);
  ctx.fillStyle = DARK_TEXT;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  rows.forEach((label, i) => ctx.fillText(label, left - CELL.padding, top + (i + 0.5) * cellHeight));
  ctx.beginPath();
  for (let i = 0; i <= rows.length + 1; i++) {
    const y = Math.min(rowLine(layout, i), height - 1) + 0.5;
    ctx.moveTo(0, y);
    ctx.lineTo(left + 1, y);
  }
  ctx.moveTo(left + 0.5, 0); // where the map draws it: one line when the copy sits on it
  ctx.lineTo(left + 0.5, height);
  ctx.strokeStyle = LINE;
  ctx.lineWidth = 1;
  ctx.stroke();
}

// Draw a heatmap: labels, cell colours, numbers (when printed), grid lines, and an
// outline around the `outline` cell ([i, j] or null). shade(value) in [-1, 1] colours a
// cell: blue for positive, orange for negative, stronger further from 0.
function paintHeatmap(ctx, layout, { font, ratio, decimals, numbers, matrix, shade, outline }) {
  const { rows, cols, left, top, cellWidth, cellHeight, width, height } = layout;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.fillStyle = "white";
  ctx.fillRect(0, 0, width, height);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";

  ctx.fillStyle = LABEL_BACKGROUND;
  ctx.fillRect(0, 0, width, top);
  ctx.font = font(500);
  ctx.fillStyle = DARK_TEXT;
  const middle = (k) => top + (k + 0.5) * cellHeight;
  if (layout.turned) { // read from the bottom up, each ending just over its column
    cols.forEach((label, j) => {
      ctx.save();
      ctx.translate(left + (j + 0.5) * cellWidth, top - CELL.padding);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      ctx.fillText(label, 0, 0);
      ctx.restore();
    });
  } else {
    cols.forEach((label, j) =>
      ctx.fillText(label, left + (j + 1) * cellWidth - CELL.padding, middle(-1)));
  }
  paintRowLabels(ctx, layout, font);

  // Backgrounds first, then numbers grouped by colour: few changes of fillStyle.
  const printed = { [DARK_TEXT]: [], white: [] };
  matrix.forEach((row, i) => {
    const y = top + i * cellHeight;
    row.forEach((value, j) => {
      const x = left + j * cellWidth;
      const t = Math.max(-1, Math.min(1, shade(value)));
      const k = Math.round(Math.abs(t) * SHADES) || 0; // 0 for NaN: no colour
      const step = (t > 0 ? BLUES : ORANGES)[k];
      if (k) {
        ctx.fillStyle = step.fill;
        ctx.fillRect(x, y, cellWidth, cellHeight);
      }
      if (numbers && !layout.turned) printed[step.text].push([value, x + cellWidth - CELL.padding, middle(i)]);
    });
  });
  ctx.font = font(400);
  for (const [colour, cells] of Object.entries(printed)) {
    ctx.fillStyle = colour;
    for (const [value, right, y] of cells) {
      const text = value.toFixed(decimals);
      if (text.length > layout.widestNumber.length) {
        ctx.fillText(text, right, y, cellWidth - CELL.padding);
      } else {
        ctx.fillText(text, right, y); // no width limit: measuring costs a frame's worth
      }
    }
  }

  // Lines at half pixels: crisp at whole-number pixel ratios.
  ctx.beginPath();
  for (let i = 0; i <= rows.length + 1; i++) {
    const y = Math.min(rowLine(layout, i), height - 1) + 0.5;
    ctx.moveTo(0, y);
    ctx.lineTo(width, y);
  }
  for (let j = 0; j <= cols.length + 1; j++) {
    const x = Math.min(j === 0 ? 0 : left + (j - 1) * cellWidth, width - 1) + 0.5;
    ctx.moveTo(x, 0);
    ctx.lineTo(x, height);
  }
  ctx.strokeStyle = LINE;
  ctx.lineWidth = 1;
  ctx.stroke();

  if (outline) {
    ctx.strokeStyle = DARK_TEXT;
    ctx.lineWidth = 2;
    ctx.strokeRect(left + outline[1] * cellWidth + 1, top + outline[0] * cellHeight + 1,
      cellWidth - 2, cellHeight - 2);
  }
}

export function heatmap({ rowLabels, colLabels, decimals, role, head, caption }) {
  const numbers = rowLabels.length <= NUMBERS_UP_TO;
  const canvas = el("canvas", "attn-heatmap");
  const readout = el("output", "attn-readout");
  readout.setAttribute("aria-live", "polite");
  // A map wider than its column scrolls inside `scroller` (explorer.css); the copy of the
  // label column (`labels`, sticky) keeps the tokens in view meanwhile. The column labels
  // scroll with their columns, and the caption and readout stay outside the scroller.
  const labels = el("canvas", "attn-heatmap-labels");
  labels.setAttribute("aria-hidden", "true"); // a picture of labels the map already names
  const sheet = el("div", "attn-heatmap-sheet"); // as wide as the map: where labels may go
  sheet.append(labels, canvas);
  const scroller = el("div", "attn-heatmap-scroller");
  scroller.append(sheet);
  const box = el("div");
  box.append(scroller, readout);
  canvas.dataset.role = role;
  canvas.dataset.decimals = String(decimals);
  if (head !== undefined) canvas.dataset.head = String(head);
  canvas.dataset.rows = JSON.stringify(rowLabels);
  canvas.dataset.cols = JSON.stringify(colLabels);
  canvas.tabIndex = 0;
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label",
    `${caption}: arrow keys, Home and End select a cell, the line below reads it`);
  const hint = "Point at a cell, or focus the map and use the arrow keys, for its value.";
  readout.textContent = hint;
  readout.dataset.idle = ""; // showing the hint: explorer.css shows it under one map only

  const ctx = canvas.getContext("2d");
  // The explorer's own font (explorer.css); the canvas may be drawn before it is attached.
  const theme = getComputedStyle(document.documentElement);
  const family = theme.getPropertyValue("--pst-font-family-base").trim() || "sans-serif";
  const font = (weight) => `${weight} ${CELL.font}px ${family}`;
  const natural = heatmapLayout(ctx, font, rowLabels, colLabels, decimals, numbers);
  const narrow = heatmapLayout(ctx, font, rowLabels, colLabels, decimals, false, true);
  const { rows, cols } = natural;
  let layout = null;
  let scale = 1;
  // Drawn for the pixel ratio at build time: a later zoom blurs until the view is rebuilt.
  const ratio = window.devicePixelRatio || 1;

  // Lay the map out for an explorer `explorerWidth` wide, with `room` for the map (natural
  // until they are known): see TURNED_CELL. Its canvases are sized for that layout at
  // `scale`; returns whether anything changed (then it must be painted again).
  function fit(explorerWidth, room) {
    const phone = room > 0 && explorerWidth < PHONE_BELOW && natural.width > room;
    const next = phone ? narrow : natural;
    const shrink = phone ? Math.max(LEGIBLE_PX / CELL.font, Math.min(1, room / narrow.width)) : 1;
    if (room > 0) canvas.dataset.layout = phone ? "narrow" : "natural"; // laid out where shown
    if (next === layout && shrink === scale) return false;
    layout = next;
    scale = shrink;
    const { left, top, cellWidth, cellHeight, width, height } = layout;
    canvas.dataset.grid = JSON.stringify({ left, top, cellWidth, cellHeight });
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = `${width * scale}px`;
    canvas.style.height = `${height * scale}px`;
    const labelsWidth = left + 1; // its right-hand line included
    labels.width = Math.round(labelsWidth * ratio);
    labels.height = canvas.height;
    labels.style.width = `${labelsWidth * scale}px`;
    labels.style.height = canvas.style.height;
    labels.style.marginBottom = `-${height * scale}px`; // the map lies under it, not below it
    scroller.style.setProperty("--attn-labels-width", labels.style.width); // the scroll cue
    const labelsContext = labels.getContext("2d");
    labelsContext.setTransform(ratio, 0, 0, ratio, 0, 0);
    paintRowLabels(labelsContext, layout, font);
    return true;
  }
  fit(0, 0);
  // Laid out again whenever the explorer it is shown in changes width (a phone turned),
  // until `stop` (the explorer calls it when it drops the map or is cleaned up).
  let watched = false;
  const watcher = new ResizeObserver(() => {
    const root = box.isConnected && box.closest(".attn-explorer");
    if (!root) return; // not shown yet
    if (!watched) {
      watched = true;
      watcher.observe(root);
    }
    if (fit(root.clientWidth, roomFor(root))) paint();
  });
  // The map's room in `root`: the explorer's width less the padding, borders and margins
  // of the boxes it sits in (chapter 7's map sits in a padded box: it scrolled by 14 px).
  function roomFor(root) {
    let inset = 0;
    for (let node = box.parentElement; node && node !== root; node = node.parentElement) {
      const style = getComputedStyle(node);
      inset += ["paddingLeft", "paddingRight", "borderLeftWidth", "borderRightWidth",
        "marginLeft", "marginRight"].reduce((sum, side) => sum + (parseFloat(style[side]) || 0), 0);
    }
    return root.clientWidth - inset;
  }
  watcher.observe(box);

  let shown = [];
  let shade = () => 0;
  let selected = null; // [i, j] chosen with the keyboard, outlined while the map has focus

  function read(cell) {
    const [i, j] = cell || [];
    const inside = cell && shown[i] && j >= 0 && j < cols.length;
    const text = inside ? `${rowLabels[i]}, ${colLabels[j]}: ${Number(shown[i][j].toPrecision(6))}`
      : "";
    canvas.title = text;
    readout.textContent = text || hint;
    readout.toggleAttribute("data-idle", !text);
  }

  function pointAt(event) {
    const { left, top, cellWidth, cellHeight, width, height } = layout;
    const bounds = canvas.getBoundingClientRect();
    const x = ((event.clientX - bounds.left) * width) / bounds.width; // CSS may scale it
    const y = ((event.clientY - bounds.top) * height) / bounds.height;
    const i = Math.floor((y - top) / cellHeight);
    const j = Math.floor((x - left) / cellWidth);
    read(i >= 0 && j >= 0 ? [i, j] : null);
  }
  canvas.addEventListener("pointermove", pointAt);
  canvas.addEventListener("pointerdown", pointAt); // a tap: touch screens have no hover

  const MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  const clamp = (k, n) => Math.max(0, Math.min(n - 1, k));
  // Home and End: the first and last cell of the row (with Ctrl, of the whole map).
  const JUMPS = {
    Home: ([i], whole) => [whole ? 0 : i, 0],
    End: ([i], whole) => [whole ? rows.length - 1 : i, cols.length - 1],
  };
  canvas.addEventListener("keydown", (event) => {
    const move = MOVES[event.key];
    const jump = JUMPS[event.key];
    if (!move && !jump) return;
    event.preventDefault(); // the keys move the selection, not the page
    selected = jump ? jump(selected || [0, 0], event.ctrlKey || event.metaKey)
      : selected
        ? [clamp(selected[0] + move[0], rows.length), clamp(selected[1] + move[1], cols.length)]
        : [0, 0];
    read(selected);
    paint();
    reveal(selected[1]);
  });
  canvas.addEventListener("blur", () => paint());

  // Scroll a wide map so that column j shows beside the labels, not under them.
  function reveal(j) {
    const { left, cellWidth, width } = layout;
    const scale = canvas.getBoundingClientRect().width / width;
    const start = (left + j * cellWidth) * scale - scroller.scrollLeft;
    const end = start + cellWidth * scale;
    if (start < left * scale) scroller.scrollLeft += start - left * scale;
    else if (end > scroller.clientWidth) scroller.scrollLeft += end - scroller.clientWidth;
  }

  function paint() {
    const outline = document.activeElement === canvas ? selected : null;
    paintHeatmap(ctx, layout, { font, ratio, decimals, numbers, matrix: shown, shade, outline });
  }

  // shading(value) in [-1, 1] colours a cell (see paintHeatmap).
  function update(matrix, shading) {
    shown = matrix;
    shade = shading;
    paint();
    canvas.dataset.values = JSON.stringify(matrix); // after the paint it describes
  }
  const stop = () => watcher.disconnect();
  return { node: box, update, stop, numbers, width: natural.width }; // width: the map's own, in CSS pixels
}
