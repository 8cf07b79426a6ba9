"""attncourse.explorers.kv_cache_explorer: Python recomputes the cache's size with
kv_cache_bytes on every change; the JavaScript's BigInt product is exact beyond 2**53."""

from __future__ import annotations

import pytest

from attncourse.explorers.common import InvalidExplorerInput
from attncourse.explorers.kv_cache_explorer import PRESETS, KVCacheCalculator
from attncourse.kv_cache import kv_cache_bytes
from tests.node_module import call_in_node


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_gives_the_formula(preset):
    calculator = KVCacheCalculator(preset, seq_len=8192, batch=3, bytes_per_value=4)
    assert calculator.cache_bytes == kv_cache_bytes(*PRESETS[preset], 8192, 3, 4)


def test_python_recomputes_on_every_change():
    calculator = KVCacheCalculator()
    for name, value in [("n_layers", 80), ("n_kv_heads", 8), ("d_head", 64), ("seq_len", 100_000),
                        ("batch", 16), ("bytes_per_value", 1)]:
        setattr(calculator, name, value)
        assert calculator.cache_bytes == kv_cache_bytes(calculator.n_layers, calculator.n_kv_heads, calculator.d_head,
                                                        calculator.seq_len, calculator.batch,
                                                        calculator.bytes_per_value), name


@pytest.mark.parametrize("arguments, message", [
    ({"preset": "GPT-5"}, r"preset must be one of"),
    ({"seq_len": 0}, r"seq_len must be a positive integer"),
    ({"n_layers": -2}, r"n_layers must be a positive integer"),
    ({"width": 3}, r"unknown arguments \['width'\]"),
])
def test_bad_input_names_the_fault(arguments, message):
    with pytest.raises(InvalidExplorerInput, match=message):
        KVCacheCalculator(**arguments)


def test_the_javascript_product_is_exact_and_described_in_binary_units():
    problems = [dict(zip(("n_layers", "n_kv_heads", "d_head"), shape), seq_len=4096, batch=1, bytes_per_value=2)
                for shape in PRESETS.values()]
    problems.append({"n_layers": 2**20, "n_kv_heads": 2**10, "d_head": 2**10 + 1, "seq_len": 2**20, "batch": 7,
                     "bytes_per_value": 3})  # far beyond 2**53
    results = call_in_node("kv_cache_explorer.js", "cacheBytesText", problems)
    for problem, text in zip(problems, results):
        assert text.split(" bytes")[0].replace(",", "") == str(kv_cache_bytes(**problem))
    assert results[1] == "2,147,483,648 bytes = 2 GiB"  # Llama-2-7B
