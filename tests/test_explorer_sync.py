"""One synchronisation pattern for every widget the explorers' registry lists: change any
input trait from Python and what the widget shows equals the chapter module's function on
the new inputs; nothing Python computes is synced (the browser computes its own copy, and
never sends one up). Parametrised from the registry (tests/explorer_examples.py): a
widget added there without its entry in SYNC below fails these tests."""

from __future__ import annotations

import copy
import sys
import types
from dataclasses import dataclass, field

import anywidget
import numpy as np
import pytest

from attncourse import convolution, explorers, graph, pretrained
from attncourse.attention import dot_product_scores
from attncourse.explorers import InvalidExplorerInput
from attncourse.explorers.position_explorer import position_view
from attncourse.flash import (
    fast_memory_values,
    naive_traffic,
    tiled_attention,
    tiled_trace,
    tiled_traffic,
)
from attncourse.kv_cache import kv_cache_bytes
from attncourse.multihead import attention_heads, merge_heads, split_heads
from tests.explorer_examples import example, missing, widget_params

RNG = np.random.default_rng(2024)  # not the examples' seeds: a change must change something


def normal(*shape):
    return RNG.standard_normal(shape)


@dataclass
class Sync:
    """What a widget shows for its inputs (``expected(widget)``: each result trait as the
    chapter's module computes it), the input changes to try (name -> {trait: value}), those
    that change only what is drawn (not what is computed), and assignments it refuses."""

    expected: object
    changes: dict = field(default_factory=dict)
    drawn_only: frozenset = frozenset()
    refused: list = field(default_factory=list)


def one_at_a_time(**values):
    """Changes of one trait each, named by it."""
    return {name: {name: value} for name, value in values.items()}


# --- the attention explorer: attncourse.attention and attncourse.multihead ---------------


def attention_expected(e):
    """Scores, weights and output from the chapter modules, on the explorer's inputs."""
    Q, K = (split_heads(e.X @ W, e.n_heads) for W in (e.W_q, e.W_k))  # (n_heads, seq, d_head)
    heads, weights = attention_heads(e.X, e.W_q, e.W_k, e.W_v, e.n_heads, mask=e.mask,
                                     scale=e.scale)  # (n_heads, seq, d_head), (n_heads, seq, seq)
    heads = heads * np.asarray(e.heads_on or [True] * e.n_heads, float)[:, None, None]
    output = heads.sum(axis=0) if e.combine == "sum" else merge_heads(heads) @ e.W_o
    scores = dot_product_scores(Q, K)
    if e.n_heads == 1:
        scores, weights = scores[0], weights[0]
    return {"scores": scores, "weights": weights, "output": output}


ATTENTION = Sync(attention_expected, {
    "X": {"X": normal(4, 4)},
    "W_q": {"W_q": normal(4, 4)},
    "W_k": {"W_k": normal(4, 4)},
    "W_v": {"W_v": normal(4, 4)},
    "W_o": {"W_o": normal(4, 2)},
    "mask": {"mask": np.eye(4, dtype=bool) | np.eye(4, k=1, dtype=bool)},
    "scale": {"scale": 2.5},
    "n_heads": {"n_heads": 1, "heads_on": [True]},
    "heads_on": {"heads_on": [False, True]},
    "combine": {"combine": "sum"},
}, refused=[{"W_q": np.ones((3, 4))}])

# --- the graph explorer: attncourse.graph -------------------------------------------------


def graph_expected(e):
    mask = np.ones((4, 4), bool)
    if e.causal:
        mask &= np.tril(mask)
    if e.window:
        mask &= graph.window_mask(4, e.window_radius)
    _, weights = graph.stacked_attention(e.X, e.W_q, e.W_q if e.tied else e.W_k, e.W_v,
                                         skip=e.skip, mask=mask, scale=e.scale)
    return {"weights": weights, "rollout": graph.attention_rollout(weights[: e.layer + 1])}


GRAPH = Sync(graph_expected, {
    "X": {"X": normal(4, 3)},
    "W_q": {"W_q": normal(2, 3, 2)},
    "W_k": {"W_k": normal(2, 3, 2)},
    "W_v": {"W_v": normal(2, 3, 3)},
    "scale": {"scale": 1.9},
    "skip": {"skip": False},
    "causal": {"causal": True},  # the bug of issue 24: the weights stayed as they were
    "window": {"window": True},
    "window_radius": {"window": True, "window_radius": 1},
    "tied": {"tied": True},
    "layer": {"layer": 1},
    "fewer layers": {"W_q": normal(1, 3, 2), "W_k": normal(1, 3, 2), "W_v": normal(1, 3, 3)},
}, refused=[{"layer": 5}, {"window_radius": -1}, {"X": np.ones((5, 3))}])

# --- the convolution explorer: attncourse.convolution -------------------------------------


def conv_expected(e):
    x, kernel = np.array(e.x)[:, None], np.array(e.kernel)[None, None]  # (seq, 1), (1, 1, K)
    output = convolution.conv1d_as_attention(x, kernel, e.alpha)[:, 0]
    reference = convolution.conv1d_reference(x, kernel)[:, 0]
    return {"weights": convolution.shift_weights(len(e.x), len(e.kernel), e.alpha),
            "output": output, "convolution": reference,
            "max_error": np.abs(output - reference).max()}


CONVOLUTION = Sync(conv_expected, {
    "x": {"x": normal(9).tolist()},
    "kernel": {"kernel": normal(5).tolist()},
    "alpha": {"alpha": 17.5},
    "query": {"query": 0},
    "fewer tokens": {"x": normal(3).tolist(), "query": 1},
}, drawn_only=frozenset({"query"}),  # the query token changes what is drawn
   refused=[{"kernel": [1.0, 2.0]}, {"alpha": 99.0}])

# --- the model explorer: attncourse.pretrained --------------------------------------------


def model_expected(e):
    ablate = tuple(tuple(pair) for pair in e.ablated)
    first = 2 * (e.sentence // 2)  # of the chosen sentence's pair
    return {"weights": pretrained.run_model(e.texts[e.sentence], ablate).weights[e.layer],
            "cosine": pretrained.similarity(e.texts[first], e.texts[first + 1], ablate=ablate)}


MODEL = Sync(model_expected, {
    "sentence": {"sentence": 1},
    "layer": {"layer": 4},
    "ablated": {"ablated": [[0, 1], [5, 3]]},
    "sentence and ablated": {"sentence": 2, "ablated": [[1, 1]]},
    "head": {"head": 7},
}, drawn_only=frozenset({"head"}),  # the head drawn large
   refused=[{"layer": 6}])

# --- the position explorer: attncourse.positions (through position_view) ------------------


def position_expected(e):
    offsets, curve, scores, weights = position_view(e.encoding, len(e.tokens), e.d, e.base, e.alibi_head,
                                                    e.offset, e.scale, e.causal, e.key)
    return {"offsets": offsets, "curve": curve, "scores": scores, "weights": weights}


POSITION = Sync(position_expected, {
    "encoding": {"encoding": "sinusoidal"},
    "tokens": {"tokens": ["one", "two", "three"]},
    "d": {"d": 16},
    "base": {"base": 500.0},
    "alibi_head": {"encoding": "alibi", "alibi_head": 3},
    "offset": {"offset": 2},
    "scale": {"scale": 12.5},
    "causal": {"causal": False},
    "key": {"key": normal(8).tolist()},
}, refused=[{"d": 5}, {"offset": 7}, {"base": 1.0}, {"encoding": "learned"}])

# --- chapter 9's explorers: attncourse.flash and attncourse.kv_cache ----------------------


def flash_expected(e):
    Q, K, V = (np.asarray(M, dtype=float) for M in (e.Q, e.K, e.V))
    d = Q.shape[1] if Q.shape[1] == V.shape[1] else None  # the traffic model takes d_k = d_v
    return {"steps": tiled_trace(Q, K, V, e.block_q, e.block_k, causal=e.causal),
            "output": tiled_attention(Q, K, V, e.block_q, e.block_k, causal=e.causal),
            "traffic": None if d is None else tiled_traffic(len(Q), d, e.block_q, e.block_k, e.causal),
            "naive": None if d is None else naive_traffic(len(Q), d)}


FLASH = Sync(flash_expected, {
    "Q": {"Q": normal(12, 2)},
    "K": {"K": normal(12, 2)},
    "V": {"V": normal(12, 2)},
    "a wider V": {"V": normal(12, 3)},
    "block_q": {"block_q": 6},
    "block_k": {"block_k": 12},
    "causal": {"causal": False},
    "fewer tokens": {"Q": normal(5, 2), "K": normal(5, 2), "V": normal(5, 2), "row": 2},
    "row": {"row": 3},
    "step": {"step": 4},
}, drawn_only=frozenset({"row", "step"}), refused=[{"block_q": 0}, {"row": 12}])


def kv_cache_expected(e):
    return {"cache_bytes": kv_cache_bytes(e.n_layers, e.n_kv_heads, e.d_head, e.seq_len, e.batch,
                                          e.bytes_per_value)}


KV_CACHE = Sync(kv_cache_expected, one_at_a_time(n_layers=80, n_kv_heads=4, d_head=64, seq_len=100_000,
                                                 batch=7, bytes_per_value=1, preset="Falcon-7B (MQA)"),
                refused=[{"batch": 0}, {"preset": "GPT-5"}])


def block_expected(e):
    return {"footprint": fast_memory_values(e.block_q, e.block_k, e.d),
            "traffic": tiled_traffic(e.seq, e.d, e.block_q, e.block_k),
            "naive": naive_traffic(e.seq, e.d)}


BLOCK = Sync(block_expected, one_at_a_time(seq=4096, d=128, budget=50_000, block_q=64, block_k=10),
             drawn_only=frozenset({"budget"}),  # the fast memory the footprint is shown against
             refused=[{"block_q": 0}, {"seq": (1 << 20) + 1}])

# Each widget class of the registry -> its entry. The answer box computes nothing.
SYNC = {
    "AttentionExplorer": ATTENTION,
    "GraphExplorer": GRAPH,
    "ConvolutionExplorer": CONVOLUTION,
    "ModelExplorer": MODEL,
    "PositionExplorer": POSITION,
    "AnswerBox": Sync(lambda e: {}),
    "FlashExplorer": FLASH,
    "KVCacheCalculator": KV_CACHE,
    "BlockExplorer": BLOCK,
}


def sync_of(name):
    missing(name, SYNC, "SYNC of tests/test_explorer_sync.py")
    return SYNC[name]


def cases(kind):
    """(widget, case) parameters for each widget of the registry: its SYNC entry's ``kind``
    ("changes" or "refused"); a widget with no entry gets one case, which fails."""
    params = []
    for param in widget_params():
        (name,) = param.values
        entries = getattr(SYNC[name], kind) if name in SYNC else [None]
        keys = list(entries) if isinstance(entries, dict) else range(len(entries))
        params += [pytest.param(name, key, id=f"{name}-{key}", marks=param.marks) for key in keys]
    return params


def assign(explorer, values):
    with explorer.hold_trait_notifications():
        for name, value in values.items():
            setattr(explorer, name, value)


def assert_close(actual, expected, name):
    """Equal to 1e-12: numbers and arrays, and the dicts and lists of them a result holds."""
    if expected is None or isinstance(expected, (str, int)):
        assert actual == expected, name
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), name
        for key, value in expected.items():
            assert_close(actual[key], value, f"{name}[{key!r}]")
    elif isinstance(expected, list) and any(isinstance(item, dict) for item in expected):
        assert isinstance(actual, list) and len(actual) == len(expected), name
        for k, (got, wanted) in enumerate(zip(actual, expected)):
            assert_close(got, wanted, f"{name}[{k}]")
    else:
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12, err_msg=name)


def assert_shows(explorer, expected):
    for name, value in expected.items():
        assert_close(getattr(explorer, name), value, name)


def differs(a, b):
    try:
        assert_close(a, b, "")
    except AssertionError:
        return True
    return False


@pytest.mark.parametrize(("name", "change"), cases("changes"))
def test_an_input_changed_from_python_is_shown_as_the_chapter_module_computes_it(name, change):
    sync = sync_of(name)
    explorer = example(name)
    assert_shows(explorer, sync.expected(explorer))
    before = {result: copy.deepcopy(getattr(explorer, result)) for result in sync.expected(explorer)}
    assign(explorer, sync.changes[change])
    for trait, value in sync.changes[change].items():
        np.testing.assert_array_equal(np.asarray(getattr(explorer, trait)), np.asarray(value))
    assert_shows(explorer, sync.expected(explorer))
    if change not in sync.drawn_only:
        assert any(differs(getattr(explorer, result), value) for result, value in before.items()), \
            "the change should show"


@pytest.mark.parametrize("name", widget_params())
def test_nothing_computed_is_synced_and_every_result_is_checked(name):
    sync = sync_of(name)
    explorer = example(name)
    results = {trait for trait, kind in explorer.traits().items() if kind.read_only}
    assert set(sync.expected(explorer)) == results, "every result is compared with the chapter's module"
    assert not results & set(explorer.get_state()), "a result is in the synced state"
    for result in results:
        assert not explorer.trait_metadata(result, "sync")


@pytest.mark.parametrize(("name", "refused"), cases("refused"))
def test_a_refused_assignment_changes_nothing(name, refused):
    sync = sync_of(name)
    explorer = example(name)
    shown = sync.expected(explorer)
    with pytest.raises(InvalidExplorerInput):
        assign(explorer, sync.refused[refused])
    assert_shows(explorer, shown)


def test_a_widget_added_to_the_registry_without_its_entries_fails_these_tests(monkeypatch):
    home = types.ModuleType("attncourse.explorers.lonely_explorer")
    home.LonelyExplorer = type("LonelyExplorer", (anywidget.AnyWidget,), {})
    monkeypatch.setitem(sys.modules, home.__name__, home)
    monkeypatch.setitem(explorers._HOMES, "LonelyExplorer", "lonely_explorer")
    assert [p.id for p in cases("changes") if p.values[0] == "LonelyExplorer"] == ["LonelyExplorer-0"]
    with pytest.raises(pytest.fail.Exception, match="LonelyExplorer is in the explorers' registry"):
        example("LonelyExplorer")
    with pytest.raises(pytest.fail.Exception, match="no entry in SYNC of tests/test_explorer_sync.py"):
        sync_of("LonelyExplorer")
