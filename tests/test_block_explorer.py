"""The block sizes explorer of chapter 9 (attncourse.explorers.block_explorer): its counts
in Python are attncourse.flash's, the browser's (block_explorer.js, run in Node) equal them
exactly, and it refuses inputs it cannot count."""

from __future__ import annotations

import numpy as np
import pytest

from attncourse.explorers.block_explorer import BlockExplorer, block_readouts
from attncourse.explorers.common import InvalidExplorerInput
from attncourse.flash import fast_memory_values, naive_traffic, tiled_traffic
from tests.node_module import call_in_node


def test_the_counts_are_the_flash_modules():
    explorer = BlockExplorer(seq=1000, d=64, budget=10_000, block_q=48, block_k=20)
    assert explorer.footprint == fast_memory_values(48, 20, 64)
    assert explorer.traffic == tiled_traffic(1000, 64, 48, 20)
    assert explorer.naive == naive_traffic(1000, 64)
    explorer.block_q = 1000  # one query block: K and V read once
    assert explorer.traffic == tiled_traffic(1000, 64, 1000, 20) == 2 * 1000 * 64 + 1000 + 2 * 1000 * 64


def test_the_browser_counts_as_python_does():
    rng = np.random.default_rng(9)
    cases = [{"seq": int(s), "d": int(d), "budget": 1, "block_q": int(q), "block_k": int(k)}
             for s, d, q, k in zip(rng.integers(1, 1 << 20, 40), rng.integers(1, 512, 40),
                                   rng.integers(1, 5000, 40), rng.integers(1, 5000, 40))]
    cases.append({"seq": 1 << 20, "d": 256, "budget": 1, "block_q": 1, "block_k": 1})  # the largest counts
    found = call_in_node("block_explorer.js", "readouts", cases)
    assert found == [block_readouts(c["seq"], c["d"], c["block_q"], c["block_k"]) for c in cases]


@pytest.mark.parametrize("inputs, message", [
    ({"block_q": 0}, "block_q must be a positive integer"),
    ({"seq": (1 << 20) + 1}, "seq must be a positive integer up to 1048576"),
    ({"d": 2.5}, "d must be a positive integer"),
    ({"budget": True}, "budget must be a positive integer"),
])
def test_inputs_it_cannot_count_are_refused(inputs, message):
    with pytest.raises(InvalidExplorerInput, match=message):
        BlockExplorer(**inputs)


@pytest.mark.parametrize("name, value", [("block_k", 0), ("seq", (1 << 20) + 1), ("budget", -3)])
def test_an_assignment_it_cannot_count_leaves_it_unchanged(name, value):
    explorer = BlockExplorer()
    with pytest.raises(InvalidExplorerInput, match=f"{name} must be a positive integer"):
        setattr(explorer, name, value)
    assert (explorer.footprint, explorer.traffic) == (BlockExplorer().footprint, BlockExplorer().traffic)
