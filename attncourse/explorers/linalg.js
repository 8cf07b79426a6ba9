// Matrix helpers shared by the explorers (bundled into each one: see
// attncourse.static_bundle). Matrices are arrays of rows; rows are tokens.

export function matmul(A, B) {
  return A.map((row) =>
    B[0].map((_, j) => row.reduce((sum, a, k) => sum + a * B[k][j], 0)),
  );
}

export function transpose(A) {
  return A[0].map((_, j) => A.map((row) => row[j]));
}

// Stable row softmax; entries where allowed[i][j] is false get weight exactly 0
// (no allowed: every entry counts).
export function softmaxRows(scores, allowed) {
  return scores.map((row, i) => {
    const keep = row.map((_, j) => !allowed || allowed[i][j]);
    const max = Math.max(...row.filter((_, j) => keep[j]));
    const exps = row.map((s, j) => (keep[j] ? Math.exp(s - max) : 0));
    const total = exps.reduce((a, b) => a + b, 0);
    return exps.map((e) => e / total);
  });
}
