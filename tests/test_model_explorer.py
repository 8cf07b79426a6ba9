"""attncourse.explorers.model_explorer: what chapter 7's explorer shows is the model's own attention
and similarity, its inputs are checked, its saved state is small, and its JavaScript
decodes and reads out what Python saved."""

import base64
import json

import numpy as np
import pytest
import traitlets

from attncourse.checks.ch7 import ABLATION_PAIR
from attncourse.explorers.attention_explorer import InvalidExplorerInput
from attncourse.explorers.model_explorer import (
    DEFAULT_PAIRS,
    MAX_TOKENS,
    ModelExplorer,
    decode_maps,
    encode_maps,
)
from attncourse.pretrained import attention_maps, head_ablation_changes, run_model, similarity
from tests.node_module import call_in_node

PAIRS = [("A cat sat on the mat.", "A dog slept on the rug."), ("The sun is hot.", "Ice is cold.")]
TEXTS = [text for pair in PAIRS for text in pair]
HUNDREDTH = 0.005  # the saved maps are rounded to hundredths
THOUSANDTH = 1.5e-3  # similarities saved to 3 decimals, and batched runs differ in float32


@pytest.fixture(scope="module")
def explorer():
    return ModelExplorer(PAIRS)


@pytest.mark.slow  # loads the real model
def test_the_saved_maps_are_the_models_to_the_hundredth(explorer):
    assert explorer.texts == TEXTS
    for k, text in enumerate(TEXTS):
        tokens, weights = attention_maps(text)
        assert explorer.tokens[k] == tokens
        saved = decode_maps(explorer.maps[k], len(tokens))  # (n_layers, n_heads, seq, seq)
        assert saved.shape == weights.shape
        assert np.abs(saved - weights).max() <= HUNDREDTH
        assert len(base64.b64decode(explorer.maps[k])) == weights.size  # a byte a weight
        assert np.array_equal(saved, saved.round(2))  # hundredths, no more


@pytest.mark.slow  # loads the real model
def test_the_saved_similarities_are_the_models(explorer):
    for k, pair in enumerate(PAIRS):
        assert explorer.pair_similarity[k] == pytest.approx(similarity(*pair), abs=THOUSANDTH)
        without = np.array(explorer.pair_similarity_without[k])  # (n_layers, n_heads)
        assert without.shape == (6, 12)
        changes = head_ablation_changes(*pair)
        np.testing.assert_allclose(without, similarity(*pair) + changes, atol=THOUSANDTH)
        # One head checked against a run with only that head zeroed, not the batched one.
        layer, head = np.unravel_index(np.abs(changes).argmax(), changes.shape)
        alone = similarity(*pair, ablate=((int(layer), int(head)),))
        assert without[layer, head] == pytest.approx(alone, abs=THOUSANDTH)


@pytest.mark.slow  # loads the real model
def test_python_results_follow_every_choice(explorer):
    e = ModelExplorer(PAIRS, sentence=3, layer=2)
    assert np.array_equal(e.weights, attention_maps(TEXTS[3])[1][2])
    assert e.cosine == pytest.approx(similarity(*PAIRS[1]), abs=1e-12)
    e.layer = 5
    assert np.array_equal(e.weights, attention_maps(TEXTS[3])[1][5])
    e.ablated = [(4, 1), (1, 7)]
    ablate = ((1, 7), (4, 1))
    assert e.ablated == [[1, 7], [4, 1]]  # sorted pairs
    assert np.array_equal(e.weights, run_model(TEXTS[3], ablate).weights[5])
    assert not np.allclose(e.weights, attention_maps(TEXTS[3])[1][5])  # layer 5 follows 1 and 4
    assert e.cosine == pytest.approx(similarity(*PAIRS[1], ablate=ablate), abs=1e-12)
    # What the page gets back: the sentence's maps with those heads off, and the pair's similarity.
    assert e.ablated_for == {"sentence": 3, "ablated": [[1, 7], [4, 1]]}
    seq = len(e.tokens[3])
    recomputed = decode_maps(e.ablated_maps, seq)
    assert np.abs(recomputed - run_model(TEXTS[3], ablate).weights).max() <= HUNDREDTH
    assert e.ablated_similarity == pytest.approx(e.cosine, abs=5e-4)
    e.sentence = 0
    assert e.ablated_for["sentence"] == 0
    assert np.array_equal(e.weights, run_model(TEXTS[0], ablate).weights[5])
    e.ablated = []
    assert e.ablated_maps == ""  # the page draws the saved maps again


@pytest.mark.slow  # loads the real model
def test_a_choice_from_the_page_is_checked_and_answered():
    e = ModelExplorer(PAIRS)
    e.set_state({"ablated": [[2, 1], [0, 4]]})  # what a message from the page does
    assert e.ablated_for == {"sentence": 0, "ablated": [[0, 4], [2, 1]]}
    assert e.ablated_maps == encode_maps(run_model(TEXTS[0], ((0, 4), (2, 1))).weights)
    with pytest.raises(InvalidExplorerInput, match="layer must be a whole number from 0 to 5, got 9"):
        e.set_state({"layer": 9})
    assert e.layer == 0


@pytest.mark.slow  # loads the real model
def test_the_page_learns_from_python_that_a_kernel_is_there(explorer):
    sent = []
    explorer.send = sent.append
    try:
        explorer._answer(explorer, {"ask": "kernel"}, [])
        explorer._answer(explorer, {"something": "else"}, [])
    finally:
        del explorer.send
    assert sent == [{"kernel": True}]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("sentence", 4, "sentence must be a whole number from 0 to 3, got 4"),
        ("sentence", True, "sentence must be a whole number from 0 to 3, got True"),
        ("layer", -1, "layer must be a whole number from 0 to 5, got -1"),
        ("head", 12, "head must be a whole number from 0 to 11, got 12"),
        ("ablated", [(6, 0)], "an ablated layer must be a whole number from 0 to 5, got 6"),
        ("ablated", [(2, 0, 1)], r"ablated must hold \(layer, head\) pairs, got \[2, 0, 1\]"),
        # traitlets' own check of the type comes first: a TraitError, as explicit.
        ("ablated", 5, "'ablated' trait of a ModelExplorer instance expected a list, not the int 5"),
    ],
)
@pytest.mark.slow  # loads the real model
def test_a_refused_choice_names_the_value_and_changes_nothing(explorer, name, value, message):
    before = explorer.get_state()
    with pytest.raises(traitlets.TraitError, match=message):
        setattr(explorer, name, value)
    assert explorer.get_state() == before


LONG = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        pytest.param([(LONG, "short")], f"makes 17 tokens with \\[CLS\\] and \\[SEP\\]: .* MAX_TOKENS={MAX_TOKENS}",
                     marks=pytest.mark.slow),  # the model's tokenizer counts the tokens
        ([("only one",)], r"each pair must be two non-empty sentences, got \('only one',\)"),
        ([("a", "  ")], "each pair must be two non-empty sentences"),
        ("a sentence", r"pairs must be a list of \(sentence, sentence\) pairs, got 'a sentence'"),
        ([], r"pairs must be a list of \(sentence, sentence\) pairs, got \[\]"),
    ],
)
def test_bad_pairs_are_refused_by_name(pairs, message):
    with pytest.raises(InvalidExplorerInput, match=message):
        ModelExplorer(pairs)


def test_weights_outside_zero_one_cannot_be_saved():
    with pytest.raises(ValueError, match="weights must lie in \\[0, 1\\], got -0.5 to 1.0"):
        encode_maps(np.array([[[[-0.5, 1.0]]]]))


# Bytes of JSON, the JavaScript and CSS aside. The default pairs (six sentences of 10 to 16
# tokens) took 94.7 kB when this was written, 91.6 kB of it the maps; as JSON lists of
# hundredths the maps alone took about 230 kB.
STATE_BUDGET = 100_000


@pytest.mark.slow  # loads the real model
def test_the_default_explorer_leaves_the_exercise_to_do_and_saves_little():
    explorer = ModelExplorer()
    assert all(len(tokens) <= MAX_TOKENS for tokens in explorer.tokens)
    sentences = set(explorer.texts)
    assert not sentences & set(ABLATION_PAIR)
    # The head the exercise asks for is not the one that matters most for any pair here.
    exercise = np.abs(head_ablation_changes(*ABLATION_PAIR)).argmax()
    for pair in DEFAULT_PAIRS:
        assert np.abs(head_ablation_changes(*pair)).argmax() != exercise, pair
    state = {k: v for k, v in explorer.get_state().items() if k not in ("_esm", "_css")}
    size = len(json.dumps(state))
    assert size < STATE_BUDGET, f"the saved state takes {size:,} bytes"


@pytest.mark.slow  # loads the real model
def test_javascript_decodes_what_python_encodes(explorer):
    problems = [{"encoded": explorer.maps[k], "seq": len(explorer.tokens[k]), "nHeads": 12}
                for k in (0, 3)]
    for problem, decoded in zip(problems, call_in_node("model_explorer.js", "decodeMaps", problems)):
        np.testing.assert_array_equal(decoded, decode_maps(problem["encoded"], problem["seq"]))


def test_javascript_readout_uses_the_kernels_numbers_or_the_saved_ones():
    without = np.round(np.linspace(0.5, 0.9, 72).reshape(6, 12), 3).tolist()
    problems = [
        {"full": 0.75, "without": without, "ablated": []},
        {"full": 0.75, "without": without, "ablated": [[2, 5]]},
        {"full": 0.75, "without": without, "ablated": [[2, 5], [3, 0]]},
        {"full": 0.75, "without": without, "ablated": [[2, 5], [3, 0]], "live": 0.7},
    ]
    intact, single, waiting, live = call_in_node("model_explorer.js", "similarityReadout", problems)
    assert intact == {"value": 0.75, "text": "0.750 with every head on"}
    assert single["value"] == without[2][5]
    assert single["text"].endswith(f"without layer 2, head 5: {without[2][5]:.3f} "
                                   f"(−{0.75 - without[2][5]:.3f})")
    assert waiting == {"value": None, "text": "0.750 with every head on; without 2 heads: computing…"}
    assert live["value"] == 0.7 and live["text"].endswith("without 2 heads: 0.700 (−0.050)")
