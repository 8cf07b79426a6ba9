"""Chapter 7's explorer: the twelve heads of a real model's layer, sentence by sentence.

``ModelExplorer`` is an anywidget (model_explorer.js, carried in the saved widget
state): on the static site it works with no kernel. It shows, for the chosen sentence and
layer of all-MiniLM-L6-v2, the weight map of each of the 12 heads as a small map, one of
them large with its tokens (the pointer or the arrow keys read a cell), and a switch per
head that zero-ablates it. The sentences come in pairs; under the maps a line gives the
cosine similarity of the pair's sentence embeddings (``attncourse.pretrained.similarity``)
with every head on and with the heads switched off.

Where ablation makes sense, and how far it goes:

* On the static page (no kernel) one head at a time: the similarity of the pair without
  each of the n_layers x n_heads heads is computed at build time (72 numbers per pair), so
  switching one head off changes the readout at once. Switching off a head leaves the maps
  of its own and earlier layers as they are (its weights are still computed; only its
  output is zeroed) but changes later layers' maps, which the page cannot recompute: there
  a note says the maps shown are the intact model's.
* In a live kernel, any set of heads: Python runs the model with them zeroed
  (``run_model(text, ablate)``) and sends the chosen sentence's maps and the pair's
  similarity back to the page, later layers' changes included. Any sentences: build a new
  explorer, ``ModelExplorer([("a sentence", "another")])``.

What syncs, and when:

* Python -> browser, once, at construction: ``texts`` (the pairs' sentences, flattened:
  sentences 2k and 2k + 1 are pair k), ``tokens``, ``maps`` (each sentence's weights
  with every head on), ``pair_similarity`` and ``pair_similarity_without`` (per pair,
  with every head on and without each single head).
* Both ways (the reader's choices; in a live kernel Python checks each one as it checks an
  assignment): ``sentence``, ``layer``, ``head`` (the head drawn large) and ``ablated``
  (the heads switched off, sorted [layer, head] pairs).
* Python -> browser in a live kernel, whenever ``sentence`` or ``ablated`` changes:
  ``ablated_maps`` and ``ablated_similarity``, the chosen sentence's maps and its pair's
  similarity with the ``ablated`` heads off, and ``ablated_for``, the (sentence, ablated)
  they were computed for (the page draws them only while that is still the choice).
* ``weights`` and ``cosine`` are Python-side results, never synced: the chosen sentence's
  weights in the chosen layer (n_heads, seq, seq) and its pair's similarity, with the
  ``ablated`` heads off, recomputed at full precision whenever an input changes.

The saved state is small: weights at the precision the page shows (hundredths, one byte
each, base64), similarities to 3 decimals; at most ``MAX_TOKENS`` tokens per sentence.
"""

from __future__ import annotations

import base64

import anywidget
import numpy as np
import traitlets

from attncourse.explorers.common import InvalidExplorerInput
from attncourse.explorers.esm import bundle, stylesheet
from attncourse.pretrained import (
    N_HEADS,
    N_LAYERS,
    attention_maps,
    head_ablation_changes,
    run_model,
    similarity,
)

__all__ = ["DEFAULT_PAIRS", "MAX_TOKENS", "ModelExplorer", "decode_maps", "encode_maps"]

# With [CLS] and [SEP]. A 16-token map has 256 cells per head, 18,432 per sentence: past
# that the large map is colour only and a sentence's maps weigh more than its page's text.
MAX_TOKENS = 16
WEIGHT_DECIMALS = 2  # the large map prints hundredths; the saved maps keep no more
SIMILARITY_DECIMALS = 3

# Not the pairs of the chapter's text or of its ablation exercise (which asks for the head
# a pair's similarity is most sensitive to): the explorer must leave that search to do.
DEFAULT_PAIRS = (
    ("The quick brown fox jumps over the lazy dog because it is happy.",
     "A happy dog sleeps in the sun."),
    ("The bank raised its interest rates again.", "She sat on the bank of the river."),
    ("The trophy did not fit in the suitcase because it was too big.",
     "The suitcase was too small for the trophy."),
)


def encode_maps(weights) -> str:
    """(n_layers, n_heads, seq, seq) weights in [0, 1] -> base64 of their hundredths, one
    byte each, in C order: 1.3 characters per weight where JSON lists take about 3.

    >>> encode_maps(np.array([[[[0.254, 0.746]]]]))
    'GUs='
    """
    hundredths = np.rint(np.asarray(weights, dtype=float) * 10**WEIGHT_DECIMALS)
    if hundredths.min(initial=0) < 0 or hundredths.max(initial=0) > 10**WEIGHT_DECIMALS:
        raise ValueError(f"weights must lie in [0, 1], got {np.min(weights)} to {np.max(weights)}")
    return base64.b64encode(hundredths.astype(np.uint8).tobytes()).decode("ascii")


def decode_maps(encoded: str, seq: int) -> np.ndarray:
    """The inverse of ``encode_maps``: (n_layers, n_heads, seq, seq) floats, hundredths.

    >>> weights = np.full((1, N_HEADS, 2, 2), 0.5)
    >>> weights[0, 0, 0] = [0.254, 0.746]
    >>> decode_maps(encode_maps(weights), seq=2)[0, 0].tolist()
    [[0.25, 0.75], [0.5, 0.5]]
    """
    values = np.frombuffer(base64.b64decode(encoded), dtype=np.uint8) / 10**WEIGHT_DECIMALS
    return values.reshape(-1, N_HEADS, seq, seq)  # (n_layers, n_heads, seq, seq)


def _as_index(name: str, value, count: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < count:
        raise InvalidExplorerInput(f"{name} must be a whole number from 0 to {count - 1}, got {value!r}")
    return int(value)


def _as_heads(value) -> list[list[int]]:
    """``ablated`` as sorted, distinct [layer, head] pairs."""
    heads = set()
    for pair in value:  # a list of lists: traitlets has checked that much
        if len(pair) != 2:
            raise InvalidExplorerInput(f"ablated must hold (layer, head) pairs, got {pair!r}")
        heads.add((_as_index("an ablated layer", pair[0], N_LAYERS),
                   _as_index("an ablated head", pair[1], N_HEADS)))
    return [list(pair) for pair in sorted(heads)]


def _checked_pairs(pairs) -> list[tuple[str, str]]:
    """Each pair as two sentences the model tokenizes into at most MAX_TOKENS tokens."""
    if isinstance(pairs, str) or not len(pairs):
        raise InvalidExplorerInput(f"pairs must be a list of (sentence, sentence) pairs, got {pairs!r}")
    checked = []
    for pair in pairs:
        if isinstance(pair, str) or len(pair) != 2 or not all(isinstance(t, str) and t.strip() for t in pair):
            raise InvalidExplorerInput(f"each pair must be two non-empty sentences, got {pair!r}")
        for text in pair:
            seq = len(run_model(text).tokens)
            if seq > MAX_TOKENS:
                raise InvalidExplorerInput(
                    f"{text!r} makes {seq} tokens with [CLS] and [SEP]: the explorer shows at "
                    f"most MAX_TOKENS={MAX_TOKENS}")
        checked.append((pair[0], pair[1]))
    return checked


class ModelExplorer(anywidget.AnyWidget):
    """The heads of all-MiniLM-L6-v2, layer by layer, for pairs of sentences.

    ``ModelExplorer(pairs=DEFAULT_PAIRS, sentence=0, layer=0, head=0, ablated=())``:
    ``pairs`` of sentences (at most ``MAX_TOKENS`` tokens each, [CLS] and [SEP]
    included), the sentence shown (an index into the flattened pairs), the layer, the head
    drawn large, and the (layer, head) pairs switched off. See the module docstring for
    what syncs when and where ablation works.

    >>> e = ModelExplorer([("A cat sat.", "A dog ran.")], layer=1)
    >>> e.weights.shape  # (n_heads, seq, seq) of "[CLS] a cat sat . [SEP]"
    (12, 6, 6)
    >>> e.ablated = [(5, 3)]
    >>> round(e.cosine - similarity("A cat sat.", "A dog ran.", ablate=((5, 3),)), 12)
    0.0
    """

    _esm = bundle("model_explorer.js")
    # The heatmaps and the dark-mode rules of the attention explorer, then this one's own.
    _css = stylesheet("attention_explorer.css", "model_explorer.css")

    texts = traitlets.List(traitlets.Unicode()).tag(sync=True)
    tokens = traitlets.List(traitlets.List(traitlets.Unicode())).tag(sync=True)
    maps = traitlets.List(traitlets.Unicode()).tag(sync=True)  # encode_maps, per sentence
    pair_similarity = traitlets.List(traitlets.Float()).tag(sync=True)
    pair_similarity_without = traitlets.List(traitlets.List(traitlets.List(traitlets.Float()))).tag(
        sync=True)  # per pair, (n_layers, n_heads)
    sentence = traitlets.Int(0).tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    ablated = traitlets.List(traitlets.List(traitlets.Int())).tag(sync=True)
    ablated_maps = traitlets.Unicode("").tag(sync=True)
    ablated_similarity = traitlets.Float(0.0).tag(sync=True)
    ablated_for = traitlets.Dict().tag(sync=True)  # {"sentence": k, "ablated": [[l, h], ...]}
    weights = traitlets.Any(None, read_only=True)
    cosine = traitlets.Float(0.0, read_only=True)

    def __init__(self, pairs=DEFAULT_PAIRS, sentence=0, layer=0, head=0, ablated=()):
        pairs = _checked_pairs(pairs)
        texts = [text for pair in pairs for text in pair]
        runs = [attention_maps(text) for text in texts]  # (tokens, weights) per sentence
        full = [similarity(*pair) for pair in pairs]
        without = [np.asarray(full_k) + head_ablation_changes(*pair)  # (n_layers, n_heads)
                   for full_k, pair in zip(full, pairs)]
        super().__init__(
            texts=texts, tokens=[tokens for tokens, _ in runs],
            maps=[encode_maps(weights) for _, weights in runs],
            pair_similarity=[round(s, SIMILARITY_DECIMALS) for s in full],
            pair_similarity_without=[w.round(SIMILARITY_DECIMALS).tolist() for w in without],
            sentence=sentence, layer=layer, head=head, ablated=list(ablated),
        )
        self._recompute()
        self.on_msg(self._answer)

    def _answer(self, _widget, content, _buffers):
        """The page asks whether a kernel is there (to allow more than one head off)."""
        if content == {"ask": "kernel"}:
            self.send({"kernel": True})

    @traitlets.validate("sentence")
    def _valid_sentence(self, proposal):
        return _as_index("sentence", proposal["value"], len(self.texts))

    @traitlets.validate("layer")
    def _valid_layer(self, proposal):
        return _as_index("layer", proposal["value"], N_LAYERS)

    @traitlets.validate("head")
    def _valid_head(self, proposal):
        return _as_index("head", proposal["value"], N_HEADS)

    @traitlets.validate("ablated")
    def _valid_ablated(self, proposal):
        return _as_heads(proposal["value"])

    @traitlets.observe("sentence", "layer", "ablated")
    def _recompute(self, change=None):
        first = 2 * (self.sentence // 2)  # of the chosen sentence's pair
        ablate = tuple((layer, head) for layer, head in self.ablated)
        forward = run_model(self.texts[self.sentence], ablate)
        cosine = similarity(self.texts[first], self.texts[first + 1], ablate=ablate)
        self.set_trait("weights", forward.weights[self.layer].copy())
        self.set_trait("cosine", cosine)
        if change is not None and change["name"] == "layer":
            return  # the page has every layer's maps already
        with self.hold_sync():
            self.ablated_maps = encode_maps(forward.weights) if ablate else ""
            self.ablated_similarity = round(cosine, SIMILARITY_DECIMALS)
            self.ablated_for = {"sentence": self.sentence, "ablated": self.ablated}
