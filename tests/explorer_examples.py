"""An example of every widget the explorers' registry lists (``_HOMES`` in
attncourse/explorers/__init__.py), for the tests that hold them all to one pattern:
tests/test_explorer_sync.py (Python) and tests/browser/test_afm_conventions.py (the front
end). Both are parametrised from the registry, not from this table: a widget added to the
registry with no example here fails them, naming what to add."""

from __future__ import annotations

import anywidget
import numpy as np
import pytest

from attncourse import explorers
from attncourse.explorers.answer_box import answer_box

TOKENS = ["a", "b", "c", "d"]
SENTENCE = "the dog bit the man"
PAIRS = [("A cat sat.", "A dog ran."), ("Birds fly south.", "It rains.")]


def registry_widgets() -> dict[str, type]:
    """The widget classes (AnyWidget subclasses) the explorers' registry lists, by name."""
    return {name: value for name in explorers._HOMES
            if isinstance(value := getattr(explorers, name), type) and issubclass(value, anywidget.AnyWidget)}


def _normal(seed):
    rng = np.random.default_rng(seed)
    return lambda *shape: rng.standard_normal(shape)


def _attention():
    normal = _normal(24)
    return explorers.AttentionExplorer(
        TOKENS, normal(4, 4), W_q=normal(4, 4), W_k=normal(4, 4), W_v=normal(4, 4), W_o=normal(4, 3),
        mask=np.tril(np.ones((4, 4), bool)), n_heads=2, heads_on=[True, True], scale=0.7,
        editable=("X", "W_q", "W_o", "mask", "heads_on", "combine"), scale_slider=(0.0, 3.0, 0.1),
        views=("scores", "weights", "output", "graph"))


def _graph():
    normal = _normal(25)
    return explorers.GraphExplorer(TOKENS, normal(4, 3), normal(2, 3, 2), normal(2, 3, 2),
                                   normal(2, 3, 3) / 2, scale=0.8)


def _convolution():
    normal = _normal(26)
    return explorers.ConvolutionExplorer(normal(9).round(2), normal(3).round(2), alpha=2.0)


# Each widget class of the registry -> a function that builds an example of it.
EXAMPLES = {
    "AttentionExplorer": _attention,
    "GraphExplorer": _graph,
    "ConvolutionExplorer": _convolution,
    "ModelExplorer": lambda: explorers.ModelExplorer(PAIRS),
    "PositionExplorer": lambda: explorers.PositionExplorer(SENTENCE, encoding="rope", offset=-1, causal=True),
    "AnswerBox": lambda: answer_box("ch1-predict-doubling"),
    "FlashExplorer": lambda: explorers.FlashExplorer(block_q=4, block_k=3, causal=True, row=5),
    "KVCacheCalculator": lambda: explorers.KVCacheCalculator("Llama-3-8B (GQA)", seq_len=8192, batch=2),
    "BlockExplorer": lambda: explorers.BlockExplorer(seq=2048, d=64, budget=20_000, block_q=48, block_k=20),
}
SLOW = {"ModelExplorer"}  # building one runs the real model


def widget_params():
    """One pytest parameter per widget class of the registry, by name; slow where building
    its example is."""
    return [pytest.param(name, id=name, marks=[pytest.mark.slow] if name in SLOW else [])
            for name in registry_widgets()]


def missing(name: str, table: dict, where: str):
    """Fail the test: the registry's ``name`` has no entry in ``table`` (``where``)."""
    if name not in table:
        pytest.fail(f"{name} is in the explorers' registry (attncourse/explorers/__init__.py) "
                    f"but has no entry in {where}: add one")


def example(name: str):
    """A new example of the registry's widget ``name``."""
    missing(name, EXAMPLES, "EXAMPLES of tests/explorer_examples.py")
    return EXAMPLES[name]()
