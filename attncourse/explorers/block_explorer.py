"""The block sizes explorer of chapter 9: the fast memory and the traffic of FlashAttention's
loop at a real model's size, for the block sizes the reader chooses.

``BlockExplorer`` is an anywidget: its JavaScript (block_explorer.js) counts in the browser,
so it works on the static site with no kernel. The reader sets the tokens N, the head's
width d, the fast memory M (in values) and the blocks; it shows the values one step of the
loop holds (``attncourse.flash.fast_memory_values``) against M, and the values the whole
loop moves with no mask (``tiled_traffic``) against the direct computation
(``naive_traffic``). Given ``goal=`` (a tune exercise's ``attncourse.checks.tune.ReadoutGoal``
on the blocks), it shows the goal with a checkmark evaluated on every edit. In a live
kernel the inputs sync back and Python recomputes ``footprint``, ``traffic`` and ``naive``.
"""

from __future__ import annotations

import anywidget
import numpy as np
import traitlets

from attncourse.explorers.common import InvalidExplorerInput, goal_trait, result_trait
from attncourse.explorers.esm import bundle, stylesheet
from attncourse.flash import fast_memory_values, naive_traffic, tiled_traffic

__all__ = ["BlockExplorer", "block_readouts"]

_INPUTS = ("seq", "d", "budget", "block_q", "block_k")
MAX_SEQ = 1 << 20  # the counts stay exact in the browser's doubles far beyond this
GOAL_READOUTS = ("footprint", "block_k", "traffic")  # what a goal on this explorer may read


def block_readouts(seq: int, d: int, block_q: int, block_k: int) -> dict[str, int]:
    """The explorer's readouts: the values one loop step holds, block_k, the values moved."""
    return {"footprint": fast_memory_values(block_q, block_k, d), "block_k": block_k,
            "traffic": tiled_traffic(seq, d, block_q, block_k)}


class BlockExplorer(anywidget.AnyWidget):
    """``BlockExplorer(seq=4096, d=128, budget=32768, block_q=32, block_k=32, goal=None)``.

    >>> e = BlockExplorer()
    >>> e.footprint, e.footprint <= e.budget  # 2 (32 x 128) + 2 (32 x 128) + 32 x 32 + 2 x 32
    (17472, True)
    >>> e.block_q = 64
    >>> e.traffic < BlockExplorer().traffic  # K and V read half as many times
    True
    """

    _esm = bundle("block_explorer.js")
    _css = stylesheet("attention_explorer.css", "goal.css")

    seq = traitlets.Int(4096).tag(sync=True)
    d = traitlets.Int(128).tag(sync=True)
    budget = traitlets.Int(32768).tag(sync=True)
    block_q = traitlets.Int(32).tag(sync=True)
    block_k = traitlets.Int(32).tag(sync=True)
    goal = goal_trait()  # a tune exercise's ReadoutGoal, shown above the readouts
    footprint = result_trait()
    traffic = result_trait()
    naive = result_trait()

    def __init__(self, seq=4096, d=128, budget=32768, block_q=32, block_k=32, goal=None):
        if goal is not None:
            if not callable(getattr(goal, "as_json", None)) or goal.as_json().get("kind") != "readout":
                raise InvalidExplorerInput(f"goal must be a ReadoutGoal from attncourse.checks.tune, "
                                           f"got {type(goal).__name__}")
            unknown = (sorted({c.name for c in goal.conditions} - set(GOAL_READOUTS))
                       + sorted(set(goal.fixed) - set(_INPUTS)))
            if unknown:
                raise InvalidExplorerInput(f"goal {goal.label}: names {unknown}; this explorer reads out "
                                           f"{list(GOAL_READOUTS)} and has the inputs {list(_INPUTS)}")
        for name, value in zip(_INPUTS, (seq, d, budget, block_q, block_k)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InvalidExplorerInput(f"{name} must be a positive integer, got {value!r}")
        super().__init__(seq=int(seq), d=int(d), budget=int(budget), block_q=int(block_q),
                         block_k=int(block_k), goal=goal)
        self._recompute()

    @traitlets.validate(*_INPUTS)
    def _positive(self, proposal):
        name, value = proposal["trait"].name, proposal["value"]
        if value < 1 or (name == "seq" and value > MAX_SEQ):
            raise InvalidExplorerInput(f"{name} must be a positive integer"
                                       f"{f' up to {MAX_SEQ}' if name == 'seq' else ''}, got {value}")
        return value

    @traitlets.observe(*_INPUTS)
    def _recompute(self, change=None):
        readouts = block_readouts(self.seq, self.d, self.block_q, self.block_k)
        self.set_trait("footprint", readouts["footprint"])
        self.set_trait("traffic", readouts["traffic"])
        self.set_trait("naive", naive_traffic(self.seq, self.d))
