"""The maths modules, and one valid call of each of their public functions: what
tests/test_validation.py's sweep perturbs, one argument at a time, to check that bad input
is refused by name.

A new maths module (chapter 11's, say) is registered by adding its name to
``MATHS_MODULES`` and a valid call of each of its public functions to ``CALLS``; the sweep
then covers it, and a test fails until both are done (``test_every_module_is_registered``,
``test_every_public_function_has_a_valid_call``).

Each entry of ``CALLS`` is a ``Call``: a function returning the keyword arguments of one
valid call (built on demand, so importing this file costs nothing), the names of the bad
cases a parameter legitimately accepts (``accepts``, each with its reason), further bad
values for one parameter (``bad``), and whether the valid call runs the real model
(``heavy``: only the slow test makes it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

MATHS_MODULES = ("attention", "multihead", "block", "graph", "convolution", "positions", "flash", "kv_cache",
                 "one_space", "reciprocity", "training", "verb_roles", "pretrained", "examples")
# attncourse's other top-level modules: figures, the validation itself, the package's front door,
# the reader edition's converter (Markdown, not maths).
NOT_MATHS_MODULES = ("__init__", "validation", "plotting", "bounds", "convolution_figures", "flash_figures",
                     "graph_figures", "multihead_figures", "positions_figures", "pretrained_figures",
                     "reader_edition")

SENTENCE = "A man is eating food."


@dataclass(frozen=True)
class Call:
    arguments: Callable[[], dict]
    accepts: dict[str, dict[str, str]] = field(default_factory=dict)  # parameter -> {case: why}
    bad: dict[str, list[tuple[str, object, type]]] = field(default_factory=dict)  # parameter -> cases
    heavy: bool = False


def _rng():
    return np.random.default_rng(0)


def _weights(seq=3):
    """A row-stochastic (seq, seq) matrix with every entry positive."""
    scores = _rng().standard_normal((seq, seq))
    return np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)


def _multihead():
    rng = _rng()
    return {"X": rng.standard_normal((3, 4)), "W_q": rng.standard_normal((4, 4)),
            "W_k": rng.standard_normal((4, 2)), "W_v": rng.standard_normal((4, 2)),
            "W_o": rng.standard_normal((4, 3)), "n_heads": 2, "n_kv_heads": 1}


def _block_parameters(d_model=4, d_ff=6):
    """A TransformerEncoderLayer's state_dict names, holding (out, in) numpy arrays."""
    from attncourse.block import PARAMETER_NAMES

    rng = _rng()
    shapes = {"self_attn.in_proj_weight": (3 * d_model, d_model), "self_attn.in_proj_bias": (3 * d_model,),
              "self_attn.out_proj.weight": (d_model, d_model), "self_attn.out_proj.bias": (d_model,),
              "linear1.weight": (d_ff, d_model), "linear1.bias": (d_ff,), "linear2.weight": (d_model, d_ff),
              "linear2.bias": (d_model,), "norm1.weight": (d_model,), "norm1.bias": (d_model,),
              "norm2.weight": (d_model,), "norm2.bias": (d_model,)}
    return {name: rng.standard_normal(shapes[name]) / 2 for name in PARAMETER_NAMES}


def _biases():
    """Biases fitting ``_multihead``'s projections: b_q (4,), b_k and b_v (2,)."""
    rng = _rng()
    return {"b_q": rng.standard_normal(4), "b_k": rng.standard_normal(2), "b_v": rng.standard_normal(2)}


def _pronoun_task():
    from attncourse.training import make_pronoun_task

    return make_pronoun_task(4, seed=0, seq=5)


def _role_task_and_model():
    from attncourse.verb_roles import TrainedHeads, make_role_task

    task = make_role_task(4, seed=0, seq=4)
    rng = _rng()
    d_model, width = 4 + 2, 2 * 2  # roles + properties; 2 heads of 2
    model = TrainedHeads(W_q=rng.standard_normal((d_model, width)), W_k=rng.standard_normal((d_model, width)),
                         W_v=rng.standard_normal((d_model, width)), W_o=rng.standard_normal((width, 4)),
                         n_heads=2, losses=np.zeros(1))
    return {"task": task, "model": model}


def _layer_parameters():
    from attncourse.pretrained import D_MODEL, LayerParameters

    rng = _rng()
    shapes = {"W_q": (D_MODEL, D_MODEL), "b_q": (D_MODEL,), "W_k": (D_MODEL, D_MODEL), "b_k": (D_MODEL,),
              "W_v": (D_MODEL, D_MODEL), "b_v": (D_MODEL,), "W_o": (D_MODEL, D_MODEL), "b_o": (D_MODEL,)}
    params = LayerParameters(**{name: rng.standard_normal(shape) / 20 for name, shape in shapes.items()})
    return {"X": rng.standard_normal((3, D_MODEL)), "params": params}


def _a100():
    from attncourse.flash import A100

    return A100


def _adam():
    import torch

    weight = torch.zeros(2, requires_grad=True)
    return {"loss": lambda: ((weight - 1.0) ** 2).sum(), "parameters": [weight], "steps": 2,
            "learning_rate": 0.1, "progress": None}


EMPTY_IS_NOTHING_TO_DO = "an empty array of offsets has an empty array of answers"
SCORES_MAY_BE_MASKED = "-inf is the score of a masked key: weight 0"
NEGATIVE_AXIS = "axis -1 is the last axis, as in numpy"
ZERO_IS_A_START = "0 is a valid value of this argument"
ANY_LEADING_AXES = "a norm or an MLP acts on each token's last axis, one token alone or a batch of them"
RESHAPING_NOTHING = "a reshape of an empty array is an empty array, as numpy's and torch's are"

CALLS: dict[str, Call] = {
    # attention
    "attention.softmax": Call(lambda: {"x": _rng().standard_normal((2, 3)), "axis": 1},
                              accepts={"x": {"-inf": SCORES_MAY_BE_MASKED},
                                       "axis": {"-1": NEGATIVE_AXIS, "0": ZERO_IS_A_START}}),
    "attention.dot_product_scores": Call(lambda: {"Q": _rng().standard_normal((2, 3)),
                                                  "K": _rng().standard_normal((4, 3))}),
    "attention.scaled_dot_product_attention": Call(
        lambda: {"Q": _rng().standard_normal((2, 3)), "K": _rng().standard_normal((4, 3)),
                 "V": _rng().standard_normal((4, 5)), "mask": np.ones((2, 4), dtype=bool), "scale": 0.5,
                 "bias": np.zeros((2, 4))},
        accepts={"bias": {"-inf": SCORES_MAY_BE_MASKED, "0-d": "a scalar bias broadcasts to every score"}}),
    "attention.causal_mask": Call(lambda: {"n": 3}),
    # multihead
    "multihead.split_heads": Call(lambda: {"M": _rng().standard_normal((3, 4)), "n_heads": 2},
                                  accepts={"M": {"empty": RESHAPING_NOTHING}}),
    "multihead.merge_heads": Call(lambda: {"H": _rng().standard_normal((2, 3, 2))},
                                  accepts={"H": {"empty": RESHAPING_NOTHING}}),
    "multihead.projection_shapes": Call(lambda: {"d_model": 4, "n_heads": 2, "d_head": 2, "n_kv_heads": 1,
                                                 "d_out": 3}),
    "multihead.multi_head_attention": Call(lambda: _multihead() | {"mask": np.ones((3, 5), dtype=bool),
                                                                   "scale": 0.5, "X_kv": _rng().standard_normal((5, 4))}
                                           | _biases() | {"b_o": _rng().standard_normal(3)}),
    "multihead.attention_heads": Call(lambda: {k: v for k, v in _multihead().items() if k != "W_o"}
                                      | {"mask": np.ones((3, 5), dtype=bool), "scale": 0.5,
                                         "X_kv": _rng().standard_normal((5, 4))} | _biases()),
    # block
    "block.layer_norm": Call(lambda: {"X": _rng().standard_normal(4), "weight": _rng().standard_normal(4),
                                      "bias": _rng().standard_normal(4), "eps": 1e-5},
                             accepts={"X": {"wrong rank": ANY_LEADING_AXES}}),
    "block.rms_norm": Call(lambda: {"X": _rng().standard_normal(4), "weight": _rng().standard_normal(4), "eps": 1e-6},
                           accepts={"X": {"wrong rank": ANY_LEADING_AXES}}),
    "block.feed_forward": Call(lambda: {"X": _rng().standard_normal(4), "params": _block_parameters(),
                                        "activation": "gelu"},
                               accepts={"X": {"wrong rank": ANY_LEADING_AXES}}),
    "block.encoder_block": Call(lambda: {"X": _rng().standard_normal((3, 4)), "params": _block_parameters(),
                                         "n_heads": 2, "norm_first": True, "activation": "relu",
                                         "mask": np.ones((3, 3), dtype=bool), "eps": 1e-5}),
    "multihead.head_contributions": Call(lambda: {"heads": _rng().standard_normal((2, 3, 2)),
                                                  "W_o": _rng().standard_normal((4, 3))}),
    # graph
    "graph.edge_list": Call(lambda: {"weights": _weights(), "threshold": 0.1}),
    "graph.message_passing": Call(lambda: {"weights": _weights(), "V": _rng().standard_normal((3, 2))}),
    "graph.edge_softmax": Call(lambda: {"targets": np.array([0, 0, 1]), "edge_scores": np.array([0.5, 1.0, 2.0]),
                                        "n_nodes": 2}),
    "graph.stationary_distribution": Call(lambda: {"weights": _weights()}),
    "graph.cycle_ratio": Call(lambda: {"weights": _weights(), "cycle": np.array([0, 1, 2])}),
    "graph.largest_cycle_ratio": Call(lambda: {"weights": _weights()}),
    "graph.attention_rollout": Call(lambda: {"layer_weights": np.stack([_weights(), _weights()]), "residual": 0.5}),
    "graph.window_mask": Call(lambda: {"n": 4, "radius": 1}, accepts={"radius": {"0": ZERO_IS_A_START}}),
    "graph.additive_scores": Call(lambda: {"H": _rng().standard_normal((3, 2)), "W": _rng().standard_normal((2, 2)),
                                           "a": _rng().standard_normal(4), "negative_slope": 0.2}),
    "graph.stacked_attention": Call(lambda: {"X": _rng().standard_normal((3, 2)),
                                             "W_q": _rng().standard_normal((2, 2, 2)),
                                             "W_k": _rng().standard_normal((2, 2, 2)),
                                             "W_v": _rng().standard_normal((2, 2, 2)), "skip": True,
                                             "mask": np.ones((3, 3), dtype=bool), "scale": 0.5}),
    "graph.token_residual": Call(lambda: {"X": _rng().standard_normal((3, 2))}),
    # convolution
    "convolution.shifts": Call(lambda: {"kernel_size": 3}),
    "convolution.shift_weights": Call(lambda: {"seq": 4, "kernel_size": 3, "alpha": 2.0, "padding": True}),
    "convolution.conv1d_reference": Call(lambda: {"x": _rng().standard_normal((4, 2)),
                                                  "kernel": _rng().standard_normal((3, 2, 3))}),
    "convolution.conv2d_reference": Call(lambda: {"image": _rng().standard_normal((3, 3, 2)),
                                                  "kernel": _rng().standard_normal((1, 2, 3, 3))}),
    "convolution.conv1d_as_attention": Call(lambda: {"x": _rng().standard_normal((4, 2)),
                                                     "kernel": _rng().standard_normal((3, 2, 3)), "alpha": 5.0,
                                                     "padding": True}),
    "convolution.largest_error": Call(lambda: {"x": _rng().standard_normal((4, 2)),
                                               "kernel": _rng().standard_normal((3, 2, 3)), "alpha": 5.0}),
    "convolution.conv2d_as_attention": Call(lambda: {"image": _rng().standard_normal((3, 3, 2)),
                                                     "kernel": _rng().standard_normal((1, 2, 3, 3)), "alpha": 5.0,
                                                     "dilation": 1}),
    # positions
    "positions.sinusoidal_frequencies": Call(lambda: {"d_model": 4, "base": 100.0}),
    "positions.sinusoidal_positions": Call(lambda: {"n_positions": 3, "d_model": 4, "base": 100.0}),
    "positions.sinusoidal_dot_product": Call(
        lambda: {"offset": np.array([0.0, -2.0, 5.0]), "d_model": 4, "base": 100.0},
        accepts={"offset": {"0-d": "one offset is a number", "empty": EMPTY_IS_NOTHING_TO_DO,
                            "wrong rank": "offsets may come in an array of any shape"}}),
    "positions.rope_frequencies": Call(lambda: {"d": 4, "base": 100.0}),
    "positions.rope": Call(lambda: {"X": _rng().standard_normal((3, 4)), "positions": np.array([0.0, 1.0, 5.0]),
                                    "base": 100.0}),
    "positions.rope_decay_bound": Call(
        lambda: {"offset": np.array([0.0, -2.0, 5.0]), "d": 4, "base": 100.0},
        accepts={"offset": {"0-d": "one offset is a number", "empty": EMPTY_IS_NOTHING_TO_DO,
                            "wrong rank": "offsets may come in an array of any shape"}}),
    "positions.alibi_slopes": Call(lambda: {"n_heads": 4}),
    "positions.offsets": Call(lambda: {"n": 3}),
    "positions.alibi_bias": Call(lambda: {"n": 3, "n_heads": 2}),
    # flash
    "flash.online_softmax": Call(lambda: {"x": _rng().standard_normal((2, 5)), "block": 2},
                                 accepts={"x": {"-inf": SCORES_MAY_BE_MASKED,
                                                "wrong rank": "any rank >= 1: the softmax runs along the last axis"}}),
    "flash.tile_order": Call(lambda: {"seq_q": 3, "seq_k": 5, "block_q": 2, "block_k": 2, "causal": True}),
    "flash.tiled_attention": Call(lambda: {"Q": _rng().standard_normal((3, 2)), "K": _rng().standard_normal((5, 2)),
                                           "V": _rng().standard_normal((5, 4)), "block_q": 2, "block_k": 2,
                                           "causal": True, "scale": 0.5, "return_lse": True}),
    "flash.tiled_trace": Call(lambda: {"Q": _rng().standard_normal((3, 2)), "K": _rng().standard_normal((5, 2)),
                                       "V": _rng().standard_normal((5, 4)), "block_q": 2, "block_k": 2,
                                       "causal": True, "scale": 0.5}),
    "flash.naive_traffic": Call(lambda: {"seq": 8, "d": 4}),
    "flash.tiled_traffic": Call(lambda: {"seq": 8, "d": 4, "block_q": 2, "block_k": 4, "causal": True}),
    "flash.fast_memory_values": Call(lambda: {"block_q": 2, "block_k": 4, "d": 4}),
    "flash.multiply_adds_per_value_read": Call(lambda: {"chip": _a100(), "memory_gb": 40}),
    # kv_cache
    "kv_cache.kv_cache_bytes": Call(lambda: {"n_layers": 2, "n_kv_heads": 2, "d_head": 4, "seq_len": 8, "batch": 2,
                                             "bytes_per_value": 2}),
    "kv_cache.decode_with_cache": Call(lambda: _multihead() | {
        "scale": 0.5, "return_cache": True, "cache": (_rng().standard_normal((1, 2, 2)), _rng().standard_normal((1, 2, 2))),
        "padding": np.array([True, False, False, False, False]), "window": 3}),
    "kv_cache.prefill": Call(lambda: _multihead() | {"scale": 0.5, "padding": np.array([True, False, False]),
                                                     "window": 2}),
    "kv_cache.decoding_mask": Call(lambda: {"seq": 3, "padding": np.array([True, False, False]), "window": 2}),
    "kv_cache.step_multiply_adds": Call(lambda: {"t": 3, "d_model": 8, "n_heads": 4, "d_head": 2, "n_kv_heads": 2,
                                                 "d_out": 8, "cached": True},
                                        accepts={"t": {"0": ZERO_IS_A_START}}),
    # one_space
    "one_space.fit_similarity_attention": Call(
        lambda: {"embeddings": _rng().standard_normal((4, 2)), "sentences": [[0, 1, 2], [3, 1]], "queries": [0, 1],
                 "targets": [2, 0], "steps": 2, "learning_rate": 0.05, "opposites": [(0, 3)], "meaning_weight": 0.5},
        bad={"sentences": [("a word outside the vocabulary", [[0, 9, 2], [3, 1]], ValueError),
                           ("a float index", [[0, 1.0, 2], [3, 1]], TypeError)],
             "queries": [("a position past its sentence", [0, 2], ValueError), ("a float position", [0.0, 1], TypeError)],
             "targets": [("a negative position", [2, -1], ValueError)],
             "opposites": [("a word outside the vocabulary", [(0, 4)], ValueError), ("a triple", [(0, 1, 2)], ValueError)]}),
    # reciprocity
    "reciprocity.log_normalisers": Call(lambda: {"scores": _rng().standard_normal((2, 3))}),
    "reciprocity.repeated_attention": Call(lambda: {"X": _rng().standard_normal((3, 2)), "steps": 2, "scale": 0.5},
                                           accepts={"steps": {"0": ZERO_IS_A_START}}),
    "reciprocity.cosine_similarity": Call(lambda: {"a": np.array([1.0, 2.0]), "b": np.array([0.5, -1.0])}),
    # training
    "training.make_pronoun_task": Call(lambda: {"n_sentences": 3, "seed": 1, "seq": 5, "n_nouns": 2, "d_property": 2},
                                       accepts={"seed": {"0": ZERO_IS_A_START}}),
    "training.minimise_with_adam": Call(_adam, bad={"parameters": [("a numpy array among them", [np.zeros(2)], TypeError)]}),
    "training.train_pronoun_attention": Call(lambda: {"task": _pronoun_task(), "d_k": 2, "steps": 2,
                                                      "learning_rate": 0.05, "seed": 1, "progress": None, "tied": False},
                                             accepts={"seed": {"0": ZERO_IS_A_START}}),
    "training.train_pronoun_attention_seeds": Call(
        lambda: {"tasks": [_pronoun_task(), _pronoun_task()], "seeds": [0, 1], "d_k": 2, "steps": 2,
                 "learning_rate": 0.05, "progress": None, "tied": False},
        bad={"tasks": [("a task that is not a PronounTask", ["not a task", "neither"], TypeError)],
             "seeds": [("a float seed", [0, 1.0], TypeError), ("a negative seed", [0, -1], ValueError)]}),
    "training.tied_pronoun_head": Call(lambda: {"noun_length": 20.0, "pronoun_length": 1.0, "d_property": 2}),
    "training.referent_accuracy": Call(lambda: {"pronoun_weights": _weights(), "referent": np.array([0, 2, 1])}),
    # verb_roles
    "verb_roles.make_role_task": Call(lambda: {"n_sentences": 3, "seed": 1, "seq": 4, "d_property": 2},
                                      accepts={"seed": {"0": ZERO_IS_A_START}}),
    "verb_roles.train_heads": Call(lambda: {"task": _role_task_and_model()["task"], "n_heads": 2, "d_head": 2,
                                            "steps": 2, "learning_rate": 0.05, "seed": 1, "identical_heads": False,
                                            "sum_heads": False},
                                   accepts={"seed": {"0": ZERO_IS_A_START}}),
    "verb_roles.verb_predictions": Call(lambda: _role_task_and_model() | {"ablate": 1, "how": "mean"},
                                        accepts={"ablate": {"0": ZERO_IS_A_START}}),
    "verb_roles.mean_weight_on": Call(lambda: _role_task_and_model() | {"role": 3},
                                      bad={"role": [("the verb's own role", 2, ValueError)]}),
    "verb_roles.verb_loss": Call(lambda: _role_task_and_model() | {"ablate": 1, "how": "mean"},
                                 accepts={"ablate": {"0": ZERO_IS_A_START}}),
    "verb_roles.ablation_losses": Call(lambda: _role_task_and_model() | {"how": "mean"}),
    "verb_roles.one_head_lower_bound": Call(lambda: {"task": _role_task_and_model()["task"]}),
    # pretrained
    "pretrained.run_model": Call(lambda: {"text": SENTENCE, "ablate": ((1, 2),)}, heavy=True,
                                 bad={"ablate": [("a head out of range", ((0, 12),), ValueError),
                                                 ("a float layer", ((1.0, 2),), TypeError),
                                                 ("a triple", ((1, 2, 3),), ValueError)]}),
    "pretrained.attention_maps": Call(lambda: {"text": SENTENCE}, heavy=True),
    "pretrained.layer_parameters": Call(lambda: {"layer": 1}, heavy=True, accepts={"layer": {"0": "layer 0 is the first"}},
                                        bad={"layer": [("past the last layer", 6, ValueError)]}),
    "pretrained.layer_attention": Call(_layer_parameters),
    "pretrained.symmetric_form_attention": Call(_layer_parameters),
    "pretrained.recompute_attention": Call(lambda: {"text": SENTENCE}, heavy=True),
    "pretrained.bilinear_form": Call(lambda: {"layer": 1, "head": 2}, heavy=True,
                                     accepts={"layer": {"0": "layer 0 is the first"}, "head": {"0": "head 0 is the first"}},
                                     bad={"head": [("past the last head", 12, ValueError)]}),
    "pretrained.value_weighted_norms": Call(lambda: {"text": SENTENCE}, heavy=True),
    "pretrained.sentence_embedding": Call(lambda: {"text": SENTENCE, "ablate": ((1, 2),)}, heavy=True),
    "pretrained.similarity": Call(lambda: {"text_a": SENTENCE, "text_b": "A man eats.", "ablate": ((1, 2),)},
                                  heavy=True),
    "pretrained.head_ablation_changes": Call(lambda: {"text_a": SENTENCE, "text_b": "A man eats."}, heavy=True),
    "pretrained.occlusion_changes": Call(lambda: {"text": SENTENCE}, heavy=True),
    "pretrained.rank_correlation": Call(lambda: {"a": np.array([0.1, 0.5, 0.3]), "b": np.array([1.0, 9.0, 2.0])}),
}
