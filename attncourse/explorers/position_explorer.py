"""The position explorer of chapter 8: one content-free head with a positional encoding.

``PositionExplorer`` is an anywidget: its JavaScript (position_explorer.js) travels inside
the saved widget state and computes everything in the browser, so it works on the static
site with no kernel. The reader chooses

* the encoding: ``"sinusoidal"`` (the head compares sinusoidal position vectors through the
  rotation that moves a position by ``offset``: the linear map Vaswani et al. counted on),
  ``"rope"`` (every key the vector of ones, every query that key turned by ``offset``
  positions, both rotated by RoPE at their positions) or ``"alibi"`` (head ``alibi_head`` of 8
  with ALiBi's slopes, the bias ``-slope |j - i - offset|``; ``offset = 0`` is ALiBi itself);
* the base (sinusoidal, RoPE) and the width ``d``; the ALiBi head (its slope);
* a sentence (its words are the tokens; the head reads positions, not words);
* the offset the head favours, the scale of the scores (sinusoidal, RoPE) and a causal mask.

``key`` replaces RoPE's key of ones by another (its length is then the width, fixed), and
``goal`` (a tune exercise's ``attncourse.checks.tune.ReadoutGoal`` on the offset and the
scale) shows the exercise's goal with a checkmark evaluated in the browser on every edit;
its readout ``previous_weight`` is the least weight a token puts on the one before it.

It shows the score against the offset j - i and the attention map over the sentence. In a
live kernel every change syncs back and the outputs ``offsets``, ``curve``, ``scores`` and
``weights`` are recomputed in Python with ``attncourse.positions`` on every change.
"""

from __future__ import annotations

import anywidget
import numpy as np
import traitlets

from attncourse.attention import causal_mask, softmax
from attncourse.explorers.common import InvalidExplorerInput, goal_trait, result_trait
from attncourse.explorers.esm import bundle, stylesheet
from attncourse.positions import alibi_bias, alibi_slopes, rope, sinusoidal_dot_product

__all__ = ["PositionExplorer", "position_view"]

ENCODINGS = ("sinusoidal", "rope", "alibi")
WIDTHS = (4, 8, 16, 32, 64)
BASE_RANGE = (2.0, 1e6)
SCALE_RANGE = (0.0, 50.0)
ALIBI_HEADS = 8
MAX_TOKENS = 24
_INPUTS = ("encoding", "tokens", "d", "base", "alibi_head", "offset", "scale", "causal", "key")
GOAL_READOUTS = ("previous_weight",)  # what a goal on this explorer may read


def position_view(encoding: str, seq: int, d: int, base: float, alibi_head: int, offset: int,
                  scale: float, causal: bool, key=None):
    """``(offsets (2 seq - 1,), curve (2 seq - 1,), scores (seq, seq), weights (seq, seq))``:
    the head's score at each offset j - i from -(seq-1) to seq-1, and over the sentence its
    scores and weights (a row softmax, after the causal mask if ``causal``). RoPE's key is
    ``key`` (d,), the vector of ones if None or empty."""
    offsets = np.arange(-(seq - 1), seq)  # (2 seq - 1,): j - i
    delta = np.arange(seq)[None, :] - np.arange(seq)[:, None]  # (seq, seq): j - i
    if encoding == "sinusoidal":
        # P_i R(offset) . P_j = sum_l cos((j - i - offset) w_l): a function of j - i - offset
        curve = scale * sinusoidal_dot_product(offsets - offset, d, base)
        scores = scale * sinusoidal_dot_product(delta - offset, d, base)
    elif encoding == "rope":
        key = np.asarray(key, dtype=float) if key is not None and len(key) else np.ones(d)
        query = rope(key[None], [float(offset)], base)[0]  # the key turned by `offset`
        keys = rope(np.tile(key, (seq, 1)), base=base)  # (seq, d): positions 0 .. seq - 1
        scores = scale * rope(np.tile(query, (seq, 1)), base=base) @ keys.T  # (seq, seq)
        # the query at position seq - 1 on every key, then every key on the query at 0
        curve = np.concatenate([scores[-1, :], scores[0, 1:]])  # offsets -(seq-1) .. seq-1
    else:
        slope = alibi_slopes(ALIBI_HEADS)[alibi_head]
        curve = -slope * np.abs(offsets - offset)
        scores = -slope * np.abs(delta - offset) + 0.0  # (seq, seq); offset 0: alibi_bias
        if offset == 0:
            scores = alibi_bias(seq, ALIBI_HEADS)[alibi_head]
    masked = np.where(causal_mask(seq), scores, -np.inf) if causal else scores
    return offsets, curve, scores, softmax(masked, axis=-1)


def _check(inputs: dict) -> None:
    encoding, tokens, d = inputs["encoding"], inputs["tokens"], inputs["d"]
    if encoding not in ENCODINGS:
        raise InvalidExplorerInput(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
    if not 1 <= len(tokens) <= MAX_TOKENS:
        raise InvalidExplorerInput(f"the sentence needs 1 to {MAX_TOKENS} words, got {len(tokens)}")
    if d not in WIDTHS:
        raise InvalidExplorerInput(f"d must be one of {WIDTHS}, got {d!r}")
    low, high = BASE_RANGE
    if not low <= inputs["base"] <= high:
        raise InvalidExplorerInput(f"base must be in [{low:g}, {high:g}], got {inputs['base']!r}")
    if not 0 <= inputs["alibi_head"] < ALIBI_HEADS:
        raise InvalidExplorerInput(f"alibi_head must be 0 .. {ALIBI_HEADS - 1}, got {inputs['alibi_head']!r}")
    if not abs(inputs["offset"]) < len(tokens):
        raise InvalidExplorerInput(
            f"offset must be within ±{len(tokens) - 1} for a sentence of {len(tokens)} words, "
            f"got {inputs['offset']!r}")
    low, high = SCALE_RANGE
    if not low <= inputs["scale"] <= high:
        raise InvalidExplorerInput(f"scale must be in [{low:g}, {high:g}], got {inputs['scale']!r}")
    key = inputs["key"]
    if len(key) and (len(key) != d or not np.isfinite(np.asarray(key, dtype=float)).all()):
        raise InvalidExplorerInput(f"key must be {d} finite numbers (d = {d}), got {list(key)!r}")


def _check_goal(goal) -> None:
    """A goal must read this explorer's readouts and fix only its inputs."""
    if goal is None:
        return
    if not callable(getattr(goal, "as_json", None)) or goal.as_json().get("kind") != "readout":
        raise InvalidExplorerInput(f"goal must be a ReadoutGoal from attncourse.checks.tune, got {type(goal).__name__}")
    unknown = sorted({c.name for c in goal.conditions} - set(GOAL_READOUTS)) + sorted(set(goal.fixed) - set(_INPUTS))
    if unknown:
        raise InvalidExplorerInput(f"goal {goal.label}: names {unknown}; this explorer reads out "
                                   f"{list(GOAL_READOUTS)} and has the inputs {list(_INPUTS)}")


class PositionExplorer(anywidget.AnyWidget):
    """``PositionExplorer(sentence, encoding="rope", d=8, base=10000.0, alibi_head=0,
    offset=0, scale=5.0, causal=False, key=None, goal=None)``.

    >>> e = PositionExplorer("the dog bit the man", encoding="rope", offset=-1, scale=40.0)
    >>> bool(np.diagonal(e.weights, -1).min() > 0.99)  # every token reads the one before it
    True
    """

    _esm = bundle("position_explorer.js")
    _css = stylesheet("attention_explorer.css", "goal.css")

    encoding = traitlets.Unicode("rope").tag(sync=True)
    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    d = traitlets.Int(8).tag(sync=True)
    base = traitlets.Float(10000.0).tag(sync=True)
    alibi_head = traitlets.Int(0).tag(sync=True)
    offset = traitlets.Int(0).tag(sync=True)
    scale = traitlets.Float(5.0).tag(sync=True)
    causal = traitlets.Bool(False).tag(sync=True)
    key = traitlets.List(traitlets.Float()).tag(sync=True)  # RoPE's key; empty: the vector of ones
    goal = goal_trait()  # a tune exercise's ReadoutGoal, shown above the views
    offsets = result_trait()
    curve = result_trait()
    scores = result_trait()
    weights = result_trait()

    def __init__(self, sentence, encoding="rope", d=8, base=10000.0, alibi_head=0, offset=0,
                 scale=5.0, causal=False, key=None, goal=None):
        tokens = sentence.split() if isinstance(sentence, str) else list(sentence)
        key = [] if key is None else [float(v) for v in np.asarray(key, dtype=float).ravel()]
        inputs = {"encoding": encoding, "tokens": tokens, "d": d, "base": base,
                  "alibi_head": alibi_head, "offset": offset, "scale": scale, "causal": causal, "key": key}
        for name in ("d", "alibi_head", "offset"):
            value = inputs[name]
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InvalidExplorerInput(f"{name} must be an integer, got {value!r}")
        for name in ("base", "scale"):
            value = inputs[name]
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not np.isfinite(value):
                raise InvalidExplorerInput(f"{name} must be a finite number, got {value!r}")
        _check(inputs)
        _check_goal(goal)
        super().__init__(encoding=encoding, tokens=[str(t) for t in tokens], d=int(d), base=float(base),
                         alibi_head=int(alibi_head), offset=int(offset), scale=float(scale),
                         causal=bool(causal), key=key, goal=goal)
        self._recompute()

    @traitlets.validate(*_INPUTS)
    def _validate_input(self, proposal):
        name = proposal["trait"].name
        _check({n: getattr(self, n) for n in _INPUTS} | {name: proposal["value"]})
        return proposal["value"]

    @traitlets.observe(*_INPUTS)
    def _recompute(self, change=None):
        results = position_view(self.encoding, len(self.tokens), self.d, self.base, self.alibi_head,
                                self.offset, self.scale, self.causal, self.key)
        for name, value in zip(("offsets", "curve", "scores", "weights"), results):
            self.set_trait(name, value)
