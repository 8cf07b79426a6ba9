"""The explorers: widgets a reader drives in the browser, with or without a kernel.

Each explorer is ``<name>_explorer.py`` (its Python: inputs checked, outputs recomputed
with the chapter's numpy module) beside ``<name>_explorer.js`` (+ ``.css``), its front
end. ``common.py`` holds what they share in Python; ``dom.js``, ``heatmap.js``,
``linalg.js``, ``goal.js`` and ``sync.js`` what they share in the browser, inlined into
each front end by ``esm.py``.

Names are imported on first use, so that a chapter importing one explorer loads (and its
execution cache depends on) that explorer alone::

    from attncourse.explorers import AttentionExplorer

(The answer box's ``answer_box(label)`` is imported from its module,
``attncourse.explorers.answer_box``: the package attribute of that name is the module.)
"""

from __future__ import annotations

import importlib

# Public name -> the module of this package that defines it.
_HOMES = {
    "AttentionExplorer": "attention_explorer",
    "explorer_view": "attention_explorer",
    "GraphExplorer": "graph_explorer",
    "graph_explorer_view": "graph_explorer",
    "ConvolutionExplorer": "conv_explorer",
    "ModelExplorer": "model_explorer",
    "PositionExplorer": "position_explorer",
    "AnswerBox": "answer_box",
    "FlashExplorer": "flash_explorer",
    "KVCacheCalculator": "kv_cache_explorer",
    "BlockExplorer": "block_explorer",
    "InvalidExplorerInput": "common",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
