"""attncourse.pretrained: the course's attention reproduces a real model's, to 1e-5."""

import json
from pathlib import Path

import numpy as np
import pytest

from attncourse import pretrained
from attncourse.pretrained import (
    D_HEAD,
    D_MODEL,
    N_HEADS,
    N_LAYERS,
    attention_maps,
    layer_attention,
    layer_parameters,
    recompute_attention,
    run_model,
    sentence_embedding,
)

SENTENCE = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def maps():
    return attention_maps(SENTENCE)


@pytest.mark.slow  # loads the real model
def test_shapes_are_the_real_ones(maps):
    tokens, weights = maps
    assert (N_LAYERS, N_HEADS, D_HEAD) == (6, 12, 32) and D_MODEL == 384 == N_HEADS * D_HEAD
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and "cat" in tokens
    assert weights.shape == (6, 12, len(tokens), len(tokens))
    assert np.allclose(weights.sum(axis=-1), 1.0, atol=1e-5)
    params = layer_parameters(0)
    assert params.W_q.shape == (384, 384) and params.b_q.shape == (384,)


@pytest.mark.slow  # loads the real model
def test_recomputation_equals_the_models_own_attention(maps):
    _, weights = maps
    ours = recompute_attention(SENTENCE)
    assert ours.shape == weights.shape
    assert np.abs(ours - weights).max() < 1e-5


@pytest.mark.slow  # loads the real model
def test_the_weights_come_from_transformers_own_model():
    """An independent path: the torch model's attentions read directly, in float32."""
    tokenizer, model = pretrained._model()
    import torch

    with torch.no_grad():
        out = model(**tokenizer("Dogs bark.", return_tensors="pt"), output_attentions=True)
    direct = np.stack([a[0].numpy() for a in out.attentions])
    assert np.abs(attention_maps("Dogs bark.")[1] - direct).max() < 1e-7
    assert np.abs(recompute_attention("Dogs bark.") - direct).max() < 1e-5


@pytest.mark.slow  # loads the real model
def test_recomputation_needs_the_biases_the_transpose_and_the_scale():
    X = run_model(SENTENCE).hidden[2]
    params = layer_parameters(2)
    _, expected = layer_attention(X, params)
    assert np.abs(expected - run_model(SENTENCE).weights[2]).max() < 1e-5
    zeros = np.zeros(D_MODEL)
    broken = {
        "no query bias": params.__class__(**{**vars(params), "b_q": zeros}),
        "transposed W_q": params.__class__(**{**vars(params), "W_q": params.W_q.T}),
    }
    for name, bad in broken.items():
        assert np.abs(layer_attention(X, bad)[1] - expected).max() > 0.05, name
    # The key bias adds q_i . b_k to a whole row of scores: the softmax cancels it.
    no_key_bias = params.__class__(**{**vars(params), "b_k": zeros})
    assert np.abs(layer_attention(X, no_key_bias)[1] - expected).max() < 1e-9


@pytest.mark.slow  # loads the real model
def test_the_sentence_embedding_matches_the_published_similarity():
    a = sentence_embedding("A man is eating food.")
    b = sentence_embedding("A man is eating a piece of bread.")
    assert np.isclose(np.linalg.norm(a), 1.0)
    assert abs(float(a @ b) - 0.755) < 0.01


@pytest.mark.slow  # loads the real model
def test_ablating_a_head_changes_only_what_follows_it():
    full = run_model(SENTENCE)
    ablated = run_model(SENTENCE, ablate=((3, 5),))
    assert np.array_equal(full.weights[:4], ablated.weights[:4])  # layers 0-3 see the same input
    assert np.abs(full.weights[4:] - ablated.weights[4:]).max() > 1e-4
    assert not np.allclose(sentence_embedding(SENTENCE), sentence_embedding(SENTENCE, ((3, 5),)))


@pytest.mark.parametrize(("bad", "error"), [("", ValueError), ("  ", ValueError), (3, TypeError),
                                            (None, TypeError)])
def test_bad_text_is_refused(bad, error):
    with pytest.raises(error, match="text must be a"):
        attention_maps(bad)


def test_bad_arguments_name_the_fault():
    with pytest.raises(ValueError, match="layer"):
        layer_parameters(6)
    with pytest.raises(ValueError, match=r"ablate\[0\]'s head must be an integer from 0 to 11, got 12"):
        run_model(SENTENCE, ablate=((0, 12),))
    with pytest.raises(TypeError, match=r"ablate\[0\]'s layer must be an integer from 0 to 5, got 1.5"):
        run_model(SENTENCE, ablate=((1.5, 2),))
    with pytest.raises(TypeError, match=r"ablate\[0\] \(a \(layer, head\) pair\) must be a sequence"):
        run_model(SENTENCE, ablate=(3,))
    with pytest.raises(ValueError, match="head must be an integer from 0 to 11, got 12"):
        pretrained.bilinear_form(0, 12)  # was a matrix of zeros: an empty slice of W_q
    with pytest.raises(ValueError, match="head must be an integer from 0 to 11, got -1"):
        pretrained.bilinear_form(0, -1)
    with pytest.raises(TypeError, match="layer must be an integer from 0 to 5, got"):
        layer_parameters([1])
    with pytest.raises(TypeError, match="params must be a LayerParameters"):
        layer_attention(np.zeros((3, 384)), {"W_q": None})
    with pytest.raises(TypeError, match="text_b must be a string"):
        pretrained.similarity(SENTENCE, None)
    with pytest.raises(ValueError, match="d_model=384"):
        layer_attention(np.zeros((3, 5)), layer_parameters(0))


TOO_LONG = "word " * 600  # 602 tokens with [CLS] and [SEP]


@pytest.mark.parametrize("call", [
    lambda: pretrained.run_model(TOO_LONG), lambda: pretrained.attention_maps(TOO_LONG),
    lambda: pretrained.recompute_attention(TOO_LONG), lambda: pretrained.value_weighted_norms(TOO_LONG),
    lambda: pretrained.sentence_embedding(TOO_LONG), lambda: pretrained.occlusion_changes(TOO_LONG),
    lambda: pretrained.similarity(SENTENCE, TOO_LONG), lambda: pretrained.head_ablation_changes(TOO_LONG, SENTENCE),
], ids=["run_model", "attention_maps", "recompute_attention", "value_weighted_norms", "sentence_embedding",
        "occlusion_changes", "similarity", "head_ablation_changes"])
def test_a_text_longer_than_the_position_table_is_refused_naming_its_length(call):
    """Sceptic ch7-8, finding 8: torch's RuntimeError about tensor sizes 602 and 512 was all
    a learner got (occlusion_changes after building a 603 x 602 batch)."""
    with pytest.raises(ValueError, match=r"is 602 tokens long .*reads at most 512"):
        call()


def test_the_limit_is_the_position_table_and_512_tokens_are_read():
    config = json.loads((Path(pretrained.model_path()) / "config.json").read_text())
    assert pretrained.MAX_TOKENS == config["max_position_embeddings"] == 512
    assert pretrained._text("word " * 510) == "word " * 510  # 512 tokens: the whole table
    with pytest.raises(ValueError, match="text is 513 tokens long"):
        pretrained._text("word " * 511)
    with pytest.raises(TypeError, match="text_b must be a string"):
        pretrained.similarity(TOO_LONG, None)  # every type is checked before any length


@pytest.mark.slow  # loads the real model
def test_the_batched_ablation_equals_one_head_at_a_time():
    a, b = "A man is eating food.", "A man is eating a piece of bread."
    changes = pretrained.head_ablation_changes(a, b)
    assert changes.shape == (N_LAYERS, N_HEADS)
    full = float(sentence_embedding(a) @ sentence_embedding(b))
    for layer, head in [(0, 2), (5, 11)]:
        one = float(sentence_embedding(a, ((layer, head),)) @ sentence_embedding(b, ((layer, head),)))
        assert abs(changes[layer, head] - (one - full)) < 1e-6
    assert np.abs(changes).max() > 0.01


def _random_layer(seed=0, tied=False):
    """Random parameters of the real layer's shapes (no model needed)."""
    rng = np.random.default_rng(seed)
    arrays = {f"{kind}_{name}": rng.standard_normal(shape) * scale
              for name in "qkvo" for kind, shape, scale in
              (("W", (D_MODEL, D_MODEL), 0.05), ("b", (D_MODEL,), 0.5))}
    if tied:
        arrays["W_k"], arrays["b_k"] = arrays["W_q"], arrays["b_q"]
    return pretrained.LayerParameters(**arrays)


def test_symmetric_form_attention_has_reversible_rows_and_equals_a_tied_head():
    """Symmetric scores: every 3-cycle has ratio 1 (Kolmogorov's criterion), the full
    head's do not; with W_k = W_q and b_k = b_q the form is already symmetric."""
    from attncourse.graph import largest_cycle_ratio

    X = np.random.default_rng(1).standard_normal((7, D_MODEL))  # (seq, d_model)
    symmetric = pretrained.symmetric_form_attention(X, _random_layer())
    full = layer_attention(X, _random_layer())[1]
    assert symmetric.shape == full.shape == (N_HEADS, 7, 7)
    assert np.allclose(symmetric.sum(axis=-1), 1.0)
    assert all(np.log(largest_cycle_ratio(head)[0]) < 1e-10 for head in symmetric)
    assert all(np.log(largest_cycle_ratio(head)[0]) > 0.1 for head in full)
    tied = _random_layer(tied=True)
    assert np.allclose(pretrained.symmetric_form_attention(X, tied), layer_attention(X, tied)[1], atol=1e-12)
    with pytest.raises(ValueError, match="d_model=384"):
        pretrained.symmetric_form_attention(np.zeros((3, 5)), tied)


def test_the_key_bias_cancels_exactly_in_float64():
    """b_K adds q_i . b_K to every score of row i: a per-row constant, which the softmax
    removes. Exact up to float64 rounding, whatever the other parameters."""
    X = np.random.default_rng(2).standard_normal((6, D_MODEL))
    params = _random_layer(3)
    without = params.__class__(**{**vars(params), "b_k": np.zeros(D_MODEL)})
    assert np.abs(layer_attention(X, params)[1] - layer_attention(X, without)[1]).max() < 1e-13


def test_rank_correlation():
    assert pretrained.rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert pretrained.rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert pretrained.rank_correlation([1, 2, 3], [1, 9, 4]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="same length"):
        pretrained.rank_correlation([1, 2], [1, 2, 3])


@pytest.mark.slow  # loads the real model
def test_occlusion_is_the_embedding_moved_by_masking_one_token():
    """An independent path: the sentence with [MASK] typed in its place, run on its own."""
    text = "A man is eating food."
    changes = pretrained.occlusion_changes(text)
    tokens = run_model(text).tokens
    assert changes.shape == (len(tokens),) and (changes > 0).all()
    man = tokens.index("man")
    masked = sentence_embedding("A [MASK] is eating food.")
    assert run_model("A [MASK] is eating food.").tokens[man] == "[MASK]"
    assert abs(changes[man] - (1 - float(masked @ sentence_embedding(text)))) < 1e-5
