"""The tiles explorer of chapter 9: FlashAttention's loop on one small example, a tile at a time.

``FlashExplorer`` is an anywidget: its JavaScript (flash_explorer.js) runs the same loop in
the browser, so it works on the static site with no kernel. The reader picks the block
sizes, the causal mask and a query row, and steps through the tiles: the score matrix with
the tiles computed so far and the one in fast memory, the chosen row's running maximum m,
sum l and output o / l after each key block, and the values read and written so far
against the direct computation's 4 N d + 4 N^2.

In a live kernel the inputs sync back and Python recomputes the read-only ``steps``
(``attncourse.flash.tiled_trace``), ``output`` (``tiled_attention``) and ``traffic`` /
``naive`` (``tiled_traffic`` / ``naive_traffic``, None where d_v differs from d_k) on every change.
"""

from __future__ import annotations

import anywidget
import numpy as np
import traitlets

from attncourse.explorers.common import (
    InvalidExplorerInput,
    finite_array,
    matrix_trait,
    result_trait,
)
from attncourse.explorers.esm import bundle, stylesheet
from attncourse.flash import naive_traffic, tiled_attention, tiled_trace, tiled_traffic

__all__ = ["FlashExplorer", "default_problem"]

MAX_SEQ = 32  # one cell per score must stay readable


def default_problem(seq: int = 12, d: int = 2, seed: int = 9) -> dict[str, np.ndarray]:
    """Q, K, V (seq, d) of the chapter's example: standard normal entries, seeded."""
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal((seq, d)) for name in ("Q", "K", "V")}


def _matrix(value, name: str) -> np.ndarray:
    return finite_array(value, name, lambda shape: len(shape) == 2 and 1 <= shape[0] <= MAX_SEQ and shape[1] >= 1,
                        f"(seq, d) with 1 <= seq <= {MAX_SEQ}")


class FlashExplorer(anywidget.AnyWidget):
    """``FlashExplorer(Q=None, K=None, V=None, block_q=4, block_k=3, causal=True, row=5,
    step=0)``: Q, K (seq, d_k) and V (seq, d_v), the chapter's 12-token example by default.

    >>> e = FlashExplorer()
    >>> len(e.steps), e.steps[0]["rows"], e.steps[0]["cols"]  # 9 tiles on or below the diagonal
    (9, (0, 4), (0, 3))
    >>> e.block_q = 12
    >>> len(e.steps)  # one block of all 12 queries meets the 4 key blocks
    4
    """

    _esm = bundle("flash_explorer.js")
    _css = stylesheet("attention_explorer.css")  # controls of 24 px, the theme's ink in dark mode

    Q = matrix_trait()
    K = matrix_trait()
    V = matrix_trait()
    block_q = traitlets.Int(4).tag(sync=True)
    block_k = traitlets.Int(3).tag(sync=True)
    causal = traitlets.Bool(True).tag(sync=True)
    row = traitlets.Int(5).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    steps = result_trait()
    output = result_trait()
    traffic = result_trait()
    naive = result_trait()

    def __init__(self, Q=None, K=None, V=None, block_q=4, block_k=3, causal=True, row=5, step=0):
        example = default_problem()
        Q, K, V = (_matrix(example[name] if value is None else value, name)
                   for value, name in ((Q, "Q"), (K, "K"), (V, "V")))
        if K.shape != Q.shape or V.shape[0] != Q.shape[0]:
            raise InvalidExplorerInput(f"need Q and K of one shape (seq, d_k) and V (seq, d_v), got "
                                       f"{Q.shape}, {K.shape}, {V.shape}")
        super().__init__(Q=Q, K=K, V=V, block_q=block_q, block_k=block_k, causal=causal, row=row, step=step)
        self._recompute()

    @property
    def seq(self) -> int:
        return int(np.shape(self.Q)[0])

    @traitlets.validate("block_q", "block_k")
    def _valid_block(self, proposal):
        value = proposal["value"]
        if not 1 <= value <= MAX_SEQ:
            raise InvalidExplorerInput(f"{proposal['trait'].name} must be in 1..{MAX_SEQ}, got {value}")
        return value

    @traitlets.validate("row")
    def _valid_row(self, proposal):
        if self.Q is not None and not 0 <= proposal["value"] < self.seq:
            raise InvalidExplorerInput(f"row must be a query in 0..{self.seq - 1}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.validate("step")
    def _valid_step(self, proposal):
        if proposal["value"] < 0:
            raise InvalidExplorerInput(f"step must be >= 0, got {proposal['value']}")
        return proposal["value"]  # beyond the last tile the page shows the last one

    @traitlets.observe("Q", "K", "V", "block_q", "block_k", "causal")
    def _recompute(self, change=None):
        if any(M is None for M in (self.Q, self.K, self.V)):
            return  # the constructor has not set every input yet
        Q, K, V = (np.asarray(M, dtype=float) for M in (self.Q, self.K, self.V))
        self.set_trait("steps", tiled_trace(Q, K, V, self.block_q, self.block_k, causal=self.causal))
        self.set_trait("output", tiled_attention(Q, K, V, self.block_q, self.block_k, causal=self.causal))
        # The traffic model takes d_k = d_v = d: with another V there is none (not the last one's).
        d = Q.shape[1] if Q.shape[1] == V.shape[1] else None
        self.set_trait("traffic", None if d is None else tiled_traffic(self.seq, d, self.block_q, self.block_k,
                                                                      self.causal))
        self.set_trait("naive", None if d is None else naive_traffic(self.seq, d))
