"""The KV-cache calculator of chapter 9: what a model's cache costs, with presets.

``KVCacheCalculator`` is an anywidget: its JavaScript (kv_cache_explorer.js) multiplies the
six factors with exact integers (BigInt) in the browser, so it works on the static site with
no kernel. The reader picks a preset model or types layers, key/value heads, d_head,
tokens, batch and precision. In a live kernel the inputs sync back and Python recomputes the
read-only ``cache_bytes`` with ``attncourse.kv_cache.kv_cache_bytes`` on every change.

Two presets may share a shape (Llama-3-8B and Mistral-7B both have 32 layers of 8 key/value
heads of 128): ``preset`` keeps the one chosen, and the readout names it, for as long as the
shape is that preset's (``preset_for``); a shape changed to another preset's takes that
name, one that is no preset's is custom ("").
"""

from __future__ import annotations

import anywidget
import traitlets

from attncourse.explorers.common import InvalidExplorerInput, result_trait
from attncourse.explorers.esm import bundle, stylesheet
from attncourse.kv_cache import kv_cache_bytes

__all__ = ["PRESETS", "PRECISIONS", "KVCacheCalculator", "preset_for"]

# Layers, key/value heads, d_head: each model's published configuration (the chapter's table).
PRESETS = {
    "GPT-2 small": (12, 12, 64),
    "Llama-2-7B": (32, 32, 128),
    "Llama-3-8B (GQA)": (32, 8, 128),
    "Mistral-7B (GQA)": (32, 8, 128),
    "Falcon-7B (MQA)": (32, 1, 64),
}  # not Llama-3-70B: predicting its cache is the chapter's exercise, one click would answer it
PRECISIONS = {"fp32": 4, "fp16 / bf16": 2, "int8": 1}  # bytes per value
_INPUTS = ("n_layers", "n_kv_heads", "d_head", "seq_len", "batch", "bytes_per_value")
_SHAPE = ("n_layers", "n_kv_heads", "d_head")


def preset_for(chosen: str, shape: tuple[int, int, int]) -> str:
    """The preset to show for ``shape``: the one ``chosen`` while the shape is its own, else
    the first preset of that shape, else "" (custom). kv_cache_explorer.js's presetFor.

    >>> preset_for("Mistral-7B (GQA)", (32, 8, 128)), preset_for("", (32, 8, 128)), preset_for("", (1, 2, 3))
    ('Mistral-7B (GQA)', 'Llama-3-8B (GQA)', '')
    """
    if PRESETS.get(chosen) == tuple(shape):
        return chosen
    return next((name for name, preset_shape in PRESETS.items() if preset_shape == tuple(shape)), "")


class KVCacheCalculator(anywidget.AnyWidget):
    """``KVCacheCalculator(preset="Llama-2-7B", seq_len=4096, batch=1, bytes_per_value=2)``,
    or any of n_layers, n_kv_heads, d_head given instead of (or over) the preset.

    >>> c = KVCacheCalculator()
    >>> c.cache_bytes == 2 * 2**30
    True
    >>> c.n_kv_heads = 8
    >>> c.cache_bytes == 2**29
    True
    """

    _esm = bundle("kv_cache_explorer.js")
    _css = stylesheet("attention_explorer.css")  # controls of 24 px, the theme's ink in dark mode

    presets = traitlets.Dict().tag(sync=True)
    preset = traitlets.Unicode("Llama-2-7B").tag(sync=True)  # the preset shown; "" for custom
    precisions = traitlets.Dict().tag(sync=True)
    n_layers = traitlets.Int(32).tag(sync=True)
    n_kv_heads = traitlets.Int(32).tag(sync=True)
    d_head = traitlets.Int(128).tag(sync=True)
    seq_len = traitlets.Int(4096).tag(sync=True)
    batch = traitlets.Int(1).tag(sync=True)
    bytes_per_value = traitlets.Int(2).tag(sync=True)
    cache_bytes = result_trait()

    def __init__(self, preset="Llama-2-7B", seq_len=4096, batch=1, bytes_per_value=2, **shape):
        if preset not in PRESETS:
            raise InvalidExplorerInput(f"preset must be one of {list(PRESETS)}, got {preset!r}")
        unknown = sorted(set(shape) - {"n_layers", "n_kv_heads", "d_head"})
        if unknown:
            raise InvalidExplorerInput(f"unknown arguments {unknown}")
        chosen = dict(zip(_SHAPE, PRESETS[preset])) | shape
        super().__init__(presets={name: list(v) for name, v in PRESETS.items()}, precisions=PRECISIONS,
                         seq_len=seq_len, batch=batch, bytes_per_value=bytes_per_value,
                         preset=preset_for(preset, tuple(chosen[name] for name in _SHAPE)), **chosen)
        self._recompute()

    @traitlets.validate("preset")
    def _known(self, proposal):
        if proposal["value"] not in ("", *PRESETS):
            raise InvalidExplorerInput(f"preset must be one of {list(PRESETS)} or '' (custom), got {proposal['value']!r}")
        return proposal["value"]

    @traitlets.observe("preset")
    def _take_its_shape(self, change):
        if change["new"]:
            with self.hold_trait_notifications():
                for name, value in zip(_SHAPE, PRESETS[change["new"]]):
                    setattr(self, name, value)

    @traitlets.observe(*_SHAPE)
    def _name_the_shape(self, change):
        self.preset = preset_for(self.preset, tuple(getattr(self, name) for name in _SHAPE))

    @traitlets.validate(*_INPUTS)
    def _positive(self, proposal):
        if proposal["value"] < 1:
            raise InvalidExplorerInput(f"{proposal['trait'].name} must be a positive integer, got {proposal['value']}")
        return proposal["value"]

    @traitlets.observe(*_INPUTS)
    def _recompute(self, change=None):
        self.set_trait("cache_bytes", kv_cache_bytes(*(getattr(self, name) for name in _INPUTS)))
