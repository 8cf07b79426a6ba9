"""Goals on an explorer's readouts (attncourse.checks.tune.ReadoutGoal): chapter 8's
previous-token head on the position explorer and chapter 9's block sizes on the block
explorer. The checkmark (explorers/goal.js with each explorer's readouts, run in Node as
the page gets them) agrees with the Python goal and with the exercise's check, at settings
either side of every condition; an edited fixed input takes it away; an explorer refuses
a goal it cannot show."""

from __future__ import annotations

import dataclasses

import pytest

from attncourse import checks
from attncourse.checks import ch8, ch9, tune
from attncourse.checks.tune import Readout
from attncourse.explorers.block_explorer import BlockExplorer, block_readouts
from attncourse.explorers.common import InvalidExplorerInput
from attncourse.explorers.position_explorer import PositionExplorer
from attncourse.positions import rope
from tests.checks_feedback import feedback, learner_mode  # noqa: F401 (an autouse fixture)
from tests.node_module import call_in_node

CH8, CH9 = ch8.goal_previous_token, ch9.goal_blocks
# The tune explorer of chapter 8 as the exercise sets it: its inputs, as the page holds them.
CH8_INPUTS = {"encoding": "rope", "tokens": list(ch8.TUNE_TOKENS), "d": 4, "base": ch8.TUNE_BASE,
              "alibi_head": 0, "causal": True, "key": ch8.TUNE_KEY.tolist()}
# Offsets and scales either side of the 0.9 boundary (between 5.5 and 6 at offset -1).
CH8_SETTINGS = [(offset, scale) for offset in (-1, 0, 1, -2) for scale in (0.0, 1.0, 2.5, 5.5, 6.0, 6.5, 50.0)]


def ch8_status_in_node(settings, **edits):
    """The position explorer's goal status (with its readouts) for each (offset, scale)."""
    return call_in_node("position_explorer.js", "positionGoalStatus", [
        {"goal": CH8.as_json(), "state": {**CH8_INPUTS, **edits, "seq": len(edits.get("tokens", CH8_INPUTS["tokens"])),
                                          "offset": offset, "scale": scale}} for offset, scale in settings])


def test_the_previous_token_checkmark_agrees_with_the_goal_and_the_check(capsys):
    found = ch8_status_in_node(CH8_SETTINGS)
    met = []
    for (offset, scale), node in zip(CH8_SETTINGS, found):
        python = ch8.readouts_at(offset, scale)["previous_weight"]
        assert node["readouts"]["previous_weight"] == pytest.approx(python, abs=1e-12), (offset, scale)
        holds = CH8.holds(ch8.readouts_at(offset, scale))
        assert node["met"] == holds, (offset, scale)
        query = rope(ch8.TUNE_KEY[None], [float(offset)], ch8.TUNE_BASE)[0]  # what the reader hands back
        if scale > 0:
            assert ("Passed." in feedback(capsys, checks.tune_previous_token, query, scale)) == holds, (offset, scale)
        met.append(holds)
    assert True in met and False in met


def test_an_edited_position_explorer_loses_the_previous_token_checkmark():
    (sharp,) = ch8_status_in_node([(-1, 6.5)])
    assert sharp["met"]
    for edit in ({"encoding": "sinusoidal"}, {"base": 100.0}, {"causal": False},
                 {"tokens": CH8_INPUTS["tokens"][:7]}, {"key": [1.0, 1.0, 1.0, 1.0]}):
        (edited,) = ch8_status_in_node([(-1, 6.5)], **edit)
        assert not edited["met"], edit
        broken = [r["now"] for r in edited["requirements"] if r["constraint"] and not r["holds"]]
        assert broken == [f"changed: {next(iter(edit))}"], edit


# Blocks either side of the budget, of the least key block and of the least traffic.
CH9_BLOCKS = [(32, 32), (32, 16), (104, 16), (105, 16), (104, 15), (103, 16), (100, 20), (1, 16), (128, 16),
              (64, 64), (4096, 16)]


def ch9_status_in_node(blocks, **edits):
    """The block explorer's goal status (with its readouts) for each (block_q, block_k)."""
    values = {"seq": ch9.TUNE_SEQ, "d": ch9.TUNE_D, "budget": ch9.TUNE_BUDGET, **edits}
    return call_in_node("block_explorer.js", "blockGoalStatus", [
        {"goal": CH9.as_json(), "values": {**values, "block_q": q, "block_k": k}} for q, k in blocks])


def test_the_blocks_checkmark_agrees_with_the_goal_and_the_check(capsys):
    met = []
    for (block_q, block_k), node in zip(CH9_BLOCKS, ch9_status_in_node(CH9_BLOCKS)):
        python = ch9.readouts_at(block_q, block_k)
        assert python == block_readouts(ch9.TUNE_SEQ, ch9.TUNE_D, block_q, block_k)
        assert node["readouts"] == python, (block_q, block_k)
        holds = CH9.holds(python)
        assert node["met"] == holds, (block_q, block_k)
        conditions = [r["holds"] for r in node["requirements"] if not r["constraint"]]
        assert conditions == [c.holds(python) for c in CH9.conditions]
        if (block_q, block_k) != ch9.TUNE_START:
            assert ("Passed." in feedback(capsys, checks.tune_blocks, block_q, block_k)) == holds, (block_q, block_k)
        met.append(holds)
    assert True in met and False in met


def test_an_edited_block_explorer_loses_the_blocks_checkmark():
    (edited,) = ch9_status_in_node([(104, 16)], budget=65536)
    assert not edited["met"]
    assert [r["now"] for r in edited["requirements"] if r["constraint"]] == ["changed: budget"]


def test_the_explorers_refuse_a_goal_they_cannot_show():
    with pytest.raises(InvalidExplorerInput, match="ReadoutGoal"):
        BlockExplorer(goal=checks.ch6.goal_sharp_enough)
    with pytest.raises(InvalidExplorerInput, match=r"names \['previous_weight'"):
        BlockExplorer(goal=CH8)
    with pytest.raises(InvalidExplorerInput, match=r"names \['block_k', 'footprint', 'traffic', 'budget'"):
        PositionExplorer("a b", goal=CH9)
    with pytest.raises(InvalidExplorerInput, match="key must be 8 finite numbers"):
        PositionExplorer("a b", d=8, key=[1.0, 0.0])
    explorer = PositionExplorer(list(ch8.TUNE_TOKENS), d=4, base=10.0, causal=True, key=ch8.TUNE_KEY, goal=CH8)
    with pytest.raises(InvalidExplorerInput, match="key must be 8"):
        explorer.d = 8  # a given key fixes the width
    assert explorer.get_state()["goal"] == CH8.as_json()


def test_a_readout_goal_is_declared_once_with_a_known_comparison(monkeypatch):
    monkeypatch.setattr(tune, "GOALS", {})
    declare = dict(settings=("x",), conditions=(Readout("y", "y", ">", 1.0),), fixed={"z": 2},
                   readouts_at=lambda x: {"y": x})
    goal = tune.tune_readout_goal("ch9-test", "Goal.", **declare)
    assert list(tune.GOALS) == ["ch9-test"] and goal.holds({"y": 2.0}) and not goal.holds({"y": 1.0})
    assert not goal.holds({"y": 2.0}, {"z": 3}) and goal.holds({"y": 2.0}, {"z": 2})
    with pytest.raises(ValueError, match="'ch9-test' already has a goal"):
        tune.tune_readout_goal("ch9-test", "again", **declare)
    bad = dataclasses.replace(declare["conditions"][0], comparison="==")
    with pytest.raises(ValueError, match="unknown comparison '=='"):
        tune.tune_readout_goal("ch9-eq", "Goal.", **{**declare, "conditions": (bad,)})
