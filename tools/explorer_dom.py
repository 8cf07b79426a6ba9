"""What an attention explorer shows, read from its DOM in a browser: one reader for the
browser tests of the static site and of a live JupyterLab.

The DOM contract (attncourse/explorers/attention_explorer.js): root ``.attn-explorer``; editable grids
``table[data-role="edit-<name>"]`` of inputs labelled ``<name>[i][j]``; heatmaps
``canvas[data-role="scores"|"weights"|"output"]`` carrying the full-precision matrix they
draw in ``data-values``, their labels in ``data-rows`` / ``data-cols``, the decimals they
print in ``data-decimals`` and where their cells are in ``data-grid`` (JSON, CSS pixels; one heatmap per head, ``data-head``, when
there are several); ``svg[data-role="graph"]`` whose ``.attn-edge`` carry ``data-from``,
``data-to`` and ``data-weight`` (an edge j -> i for weights[i][j]).
"""

from __future__ import annotations

import re

import numpy as np

# For ``locator.evaluate`` on an explorer's root: {tables: {view: per head, the matrix},
# cells: {view: per head, per cell {background, inked}}, graphs: per head [[from, to,
# weight]], grids: {name: [[aria-label, value]]}, tokens: the row labels, decimals: per
# heatmap [role, the decimals it prints]}. A cell's background is read just inside its
# top-left corner (clear of its number); it is inked when it holds more than one colour
# (a printed number).
READ_EXPLORER = """(root) => {
  const drawnCells = (canvas) => {
    const grid = JSON.parse(canvas.dataset.grid);
    const ratio = canvas.width / parseFloat(canvas.style.width);
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const rgb = (x, y) => {
      const k = 4 * (Math.round(y * ratio) * canvas.width + Math.round(x * ratio));
      return [data[k], data[k + 1], data[k + 2]];
    };
    return JSON.parse(canvas.dataset.values).map((row, i) => row.map((_, j) => {
      const left = grid.left + j * grid.cellWidth;
      const top = grid.top + i * grid.cellHeight;
      const colours = new Set();
      for (let y = top + 2; y < top + grid.cellHeight - 2; y++) {
        for (let x = left + 2; x < left + grid.cellWidth - 2; x++) colours.add(rgb(x, y).join());
      }
      return { background: rgb(left + 3, top + 3), inked: colours.size > 1 };
    }));
  };
  const byHead = (nodes) => [...nodes]
    .sort((a, b) => Number(a.dataset.head || 0) - Number(b.dataset.head || 0));
  const tables = {};
  const cells = {};
  for (const role of ['scores', 'weights', 'output']) {
    const heatmaps = byHead(root.querySelectorAll(`canvas[data-role="${role}"]`));
    tables[role] = heatmaps.map((canvas) => JSON.parse(canvas.dataset.values));
    cells[role] = heatmaps.map(drawnCells);
  }
  const graphs = byHead(root.querySelectorAll('svg[data-role="graph"]')).map((svg) =>
    [...svg.querySelectorAll('.attn-edge')]
      .map((edge) => [edge.dataset.from, edge.dataset.to, edge.dataset.weight]));
  const grids = {};
  for (const table of root.querySelectorAll('table[data-role^="edit-"]')) {
    grids[table.dataset.role.slice('edit-'.length)] = [...table.querySelectorAll('input')]
      .map((input) => [input.getAttribute('aria-label'),
                       input.type === 'checkbox' ? input.checked : input.value]);
  }
  // Token labels head the rows of the views (or of the X grid when no view is a heatmap).
  const heatmap = root.querySelector('canvas[data-role]');
  const grid = root.querySelector('table[data-role="edit-X"]');
  const tokens = heatmap ? JSON.parse(heatmap.dataset.rows)
    : grid ? [...grid.querySelectorAll('tr')].filter((tr) => tr.querySelector('td'))
      .map((tr) => tr.querySelector('th').textContent) : [];
  const decimals = [...root.querySelectorAll('canvas[data-role]')]
    .map((canvas) => [canvas.dataset.role, canvas.dataset.decimals]);
  return { tables, cells, graphs, grids, tokens, decimals };
}"""


def grid_matrix(entries):
    """[(aria-label "X[i][j]", value), ...] -> the matrix, bools for checkboxes."""
    cells = {tuple(map(int, re.findall(r"\[(\d+)\]", label))): value for label, value in entries}
    rows, cols = (max(index) + 1 for index in zip(*cells))
    kind = bool if all(isinstance(v, bool) for v in cells.values()) else float
    return np.array([[kind(cells[i, j]) for j in range(cols)] for i in range(rows)])
