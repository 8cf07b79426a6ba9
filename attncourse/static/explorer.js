// Attention explorer: editable matrices in, scores / weights / outputs out.
// Runs in the browser with or without a kernel (anywidget keeps this file in the saved
// widget state). Conventions follow attncourse.attention: rows are tokens,
// Q = X W_q, K = X W_k, V = X W_v, weights = softmax(scale * Q K^T, masked) row by row.
// Token labels are only ever written with textContent, never parsed as HTML.

export function matmul(A, B) {
  return A.map((row) =>
    B[0].map((_, j) => row.reduce((sum, a, k) => sum + a * B[k][j], 0)),
  );
}

export function transpose(A) {
  return A[0].map((_, j) => A.map((row) => row[j]));
}

// Stable row softmax; entries where allowed[i][j] is false get weight exactly 0.
export function softmaxRows(scores, allowed) {
  return scores.map((row, i) => {
    const keep = row.map((_, j) => !allowed || allowed[i][j]);
    const max = Math.max(...row.filter((_, j) => keep[j]));
    const exps = row.map((s, j) => (keep[j] ? Math.exp(s - max) : 0));
    const total = exps.reduce((a, b) => a + b, 0);
    return exps.map((e) => e / total);
  });
}

// The same computation as attncourse.widgets.explorer_view in Python.
export function attend({ X, W_q, W_k, W_v, scale, mask }) {
  const project = (W) => (W && W.length ? matmul(X, W) : X);
  const Q = project(W_q); // (seq, d_k)
  const K = project(W_k); // (seq, d_k)
  const V = project(W_v); // (seq, d_v)
  const scores = matmul(Q, transpose(K)); // (seq_q, seq_k), before scaling
  const scaled = scores.map((row) => row.map((s) => s * scale));
  const weights = softmaxRows(scaled, mask && mask.length ? mask : null);
  const output = matmul(weights, V); // (seq_q, d_v)
  return { scores, weights, output };
}

const VIEW_TITLES = {
  scores: "Scores Q Kᵀ (before scaling and softmax)",
  weights: "Attention weights (each row sums to 1)",
  output: "Output rows: weights × values",
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function format(x, decimals) {
  return Number.isFinite(x) ? x.toFixed(decimals) : String(x);
}

// A labelled table of numbers; `shade` in [0, 1] per cell colours the background.
function numberTable(matrix, rowLabels, colLabels, decimals, shade, role) {
  const table = el("table", "attn-table");
  table.dataset.role = role;
  const head = table.insertRow();
  head.appendChild(el("th", "attn-corner"));
  colLabels.forEach((label) => head.appendChild(el("th", "attn-col", label)));
  matrix.forEach((row, i) => {
    const tr = table.insertRow();
    tr.appendChild(el("th", "attn-row", rowLabels[i]));
    row.forEach((value, j) => {
      const td = el("td", "attn-cell", format(value, decimals));
      td.dataset.value = String(value);
      if (shade) {
        const t = Math.max(0, Math.min(1, shade(value, i, j)));
        td.style.background = `rgba(31, 119, 180, ${t.toFixed(3)})`;
        td.style.color = t > 0.55 ? "white" : "inherit";
      }
      tr.appendChild(td);
    });
  });
  return table;
}

// An editable grid for one of the input matrices; edits call onEdit(i, j, value).
function editableTable(name, matrix, rowLabels, colLabels, onEdit) {
  const table = el("table", "attn-table attn-editable");
  table.dataset.role = `edit-${name}`;
  const head = table.insertRow();
  head.appendChild(el("th", "attn-corner", name));
  colLabels.forEach((label) => head.appendChild(el("th", "attn-col", label)));
  matrix.forEach((row, i) => {
    const tr = table.insertRow();
    tr.appendChild(el("th", "attn-row", rowLabels[i]));
    row.forEach((value, j) => {
      const td = tr.insertCell();
      const input = el("input", "attn-input");
      input.type = "number";
      input.step = "0.1";
      input.value = String(value);
      input.setAttribute("aria-label", `${name}[${i}][${j}]`);
      input.addEventListener("input", () => {
        const parsed = parseFloat(input.value);
        if (Number.isFinite(parsed)) onEdit(i, j, parsed);
      });
      td.appendChild(input);
    });
  });
  return table;
}

function dimLabels(n, prefix) {
  return Array.from({ length: n }, (_, k) => `${prefix}${k}`);
}

function render({ model, el: root }) {
  root.classList.add("attn-explorer");
  const inputsBox = el("div", "attn-inputs");
  const viewsBox = el("div", "attn-views");
  root.append(inputsBox, viewsBox);

  function state() {
    return {
      X: model.get("X"),
      W_q: model.get("W_q"),
      W_k: model.get("W_k"),
      W_v: model.get("W_v"),
      scale: model.get("scale"),
      mask: model.get("mask"),
    };
  }

  function drawViews() {
    const tokens = model.get("tokens");
    const decimals = model.get("decimals");
    const result = attend(state());
    const dv = result.output[0].length;
    viewsBox.replaceChildren();
    for (const view of model.get("views")) {
      const box = el("figure", "attn-view");
      box.appendChild(el("figcaption", null, VIEW_TITLES[view]));
      if (view === "scores") {
        const flat = result.scores.flat();
        const lo = Math.min(...flat);
        const hi = Math.max(...flat);
        const shade = (v) => (hi > lo ? (v - lo) / (hi - lo) : 0.5) * 0.85;
        box.appendChild(numberTable(result.scores, tokens, tokens, decimals, shade, view));
      } else if (view === "weights") {
        box.appendChild(numberTable(result.weights, tokens, tokens, decimals, (v) => v, view));
      } else if (view === "output") {
        box.appendChild(numberTable(result.output, tokens, dimLabels(dv, "v"), decimals, null, view));
      }
      viewsBox.appendChild(box);
    }
    return result;
  }

  function drawInputs() {
    const tokens = model.get("tokens");
    inputsBox.replaceChildren();
    for (const name of model.get("editable")) {
      const matrix = model.get(name);
      const rowLabels = name === "X" ? tokens : dimLabels(matrix.length, "x");
      const colPrefix = { X: "x", W_q: "q", W_k: "k", W_v: "v" }[name];
      const onEdit = (i, j, value) => {
        const edited = model.get(name).map((row) => row.slice());
        edited[i][j] = value;
        model.set(name, edited);
        recompute();
      };
      inputsBox.appendChild(
        editableTable(name, matrix, rowLabels, dimLabels(matrix[0].length, colPrefix), onEdit),
      );
    }
  }

  // Redraw and hand the results back to Python. On a static page there is no kernel
  // (no comm), and save_changes throws: the page still updates, nothing is synced.
  function recompute() {
    const { scores, weights, output } = drawViews();
    model.set("scores", scores);
    model.set("weights", weights);
    model.set("output", output);
    try {
      model.save_changes();
    } catch (err) {
      // no kernel: static page
    }
  }

  drawInputs();
  drawViews();
  const onScale = () => recompute();
  model.on("change:scale", onScale);
  return () => model.off("change:scale", onScale);
}

export default { render };
