"""W_Q, W_K and W_V learned by backpropagation on a task whose right attention is known.

The task (chapter 3): generated sentences hold a few nouns of different kinds, some
filler words and, last, a pronoun that agrees with exactly one of the nouns ("he" with
man/boy/king, "it" with ball/cup/box, ...). Every noun carries properties of its own,
random numbers drawn afresh for each sentence (this ball is wet, that cup is red). The
model must output, at the pronoun, the properties of the noun it refers to. Since the
properties are new in every sentence, the only way to get them is to attend to that
noun: the intended attention pattern is known exactly.

The model is one attention head, Q = X W_Q, K = X W_K, V = X W_V: three matrices in the
row convention whose starting values are drawn as ``torch.nn.Linear`` layers without bias
draw theirs (each W is such a layer's weight, transposed), trained by gradient descent. Everything is
seeded and pure: the same arguments give the same numbers. Bad input is refused through
``attncourse.validation``, naming the argument at fault.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from jaxtyping import Float, Int

from attncourse import validation as check

__all__ = [
    "minimise_with_adam",
    "one_thread",
    "PRONOUN_REFERENTS",
    "VOCABULARY",
    "PronounTask",
    "TrainedAttention",
    "make_pronoun_task",
    "referent_accuracy",
    "train_pronoun_attention",
    "train_pronoun_attention_seeds",
    "tied_pronoun_head",
]

PRONOUN_REFERENTS = {
    "he": ("man", "boy", "king"),
    "she": ("woman", "girl", "queen"),
    "it": ("ball", "cup", "box"),
    "they": ("dogs", "kids", "friends"),
}
FILLERS = ("the", "a", "saw", "found", "and", "with", "near", "was")
PRONOUNS = tuple(PRONOUN_REFERENTS)
NOUNS = tuple(noun for nouns in PRONOUN_REFERENTS.values() for noun in nouns)
VOCABULARY = FILLERS + NOUNS + PRONOUNS


@dataclass(frozen=True, eq=False)
class PronounTask:
    """A batch of generated sentences; the pronoun is always the last token.

    tokens (batch, seq): indices into VOCABULARY.
    properties (batch, seq, d_property): each noun's own random properties, 0 elsewhere.
    referent (batch,): position of the noun the pronoun refers to.
    """

    tokens: Int[np.ndarray, "batch seq"]
    properties: Float[np.ndarray, "batch seq d_property"]
    referent: Int[np.ndarray, " batch"]

    @property
    def words(self) -> list[list[str]]:
        return [[VOCABULARY[t] for t in sentence] for sentence in self.tokens]

    def embeddings(self) -> Float[np.ndarray, "batch seq d_model"]:
        """X = [one-hot word | properties], d_model = len(VOCABULARY) + d_property."""
        one_hot = np.eye(len(VOCABULARY))[self.tokens]  # (batch, seq, len(VOCABULARY))
        return np.concatenate([one_hot, self.properties], axis=-1)  # (batch, seq, d_model)

    def wanted_output(self) -> Float[np.ndarray, "batch d_property"]:
        """The referent's properties: what the pronoun should fetch."""
        return self.properties[np.arange(len(self.referent)), self.referent]


def make_pronoun_task(
    n_sentences: int, seed: int, seq: int = 8, n_nouns: int = 3, d_property: int = 4
) -> PronounTask:
    """``n_sentences`` sentences of ``seq`` tokens: ``n_nouns`` nouns of different kinds
    at random places among the first seq - 1, fillers elsewhere, the pronoun last.

    >>> task = make_pronoun_task(2, seed=0, seq=5, n_nouns=2)
    >>> task.tokens.shape, task.properties.shape, task.referent.shape
    ((2, 5), (2, 5, 4), (2,))
    """
    n_sentences = check.integer(n_sentences, "n_sentences", minimum=1)
    d_property = check.integer(d_property, "d_property", minimum=1)
    n_nouns = check.integer(n_nouns, "n_nouns", minimum=2, maximum=len(PRONOUNS))
    seq = check.integer(seq, "seq", minimum=1)
    if seq < n_nouns + 1:
        raise ValueError(f"seq={seq} has no room for {n_nouns} nouns and a pronoun")
    seed = check.integer(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)
    tokens = np.empty((n_sentences, seq), dtype=int)
    properties = np.zeros((n_sentences, seq, d_property))
    referent = np.empty(n_sentences, dtype=int)
    for s in range(n_sentences):
        kinds = rng.choice(len(PRONOUNS), size=n_nouns, replace=False)  # kinds[0]: the referent's
        places = rng.permutation(seq - 1)[:n_nouns]
        tokens[s, :-1] = rng.choice([VOCABULARY.index(w) for w in FILLERS], size=seq - 1)
        for kind, place in zip(kinds, places):
            noun = rng.choice(PRONOUN_REFERENTS[PRONOUNS[kind]])
            tokens[s, place] = VOCABULARY.index(noun)
            properties[s, place] = rng.standard_normal(d_property)
        tokens[s, -1] = VOCABULARY.index(PRONOUNS[kinds[0]])
        referent[s] = places[0]
    return PronounTask(tokens=tokens, properties=properties, referent=referent)


@dataclass(frozen=True, eq=False)
class TrainedAttention:
    """Learned projections in the course's row convention (Q = X W_q), and the losses.

    W_q, W_k (d_model, d_k); W_v (d_model, d_property); losses (steps,).
    """

    W_q: Float[np.ndarray, "d_model d_k"]
    W_k: Float[np.ndarray, "d_model d_k"]
    W_v: Float[np.ndarray, "d_model d_v"]
    losses: Float[np.ndarray, " steps"]


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch on one CPU thread inside the block: tiny matrices gain nothing from more, and
    one thread adds up the numbers in the same order on every machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def minimise_with_adam(
    loss: Callable[[], torch.Tensor],
    parameters: Sequence[torch.Tensor],
    steps: int,
    learning_rate: float,
    progress: Callable[[Iterable[int]], Iterable[int]] | None = None,
) -> Float[np.ndarray, " steps"]:
    """Take ``steps`` Adam steps on ``parameters`` against ``loss()``; return the loss
    before each step. ``progress`` wraps the loop, e.g. ``progress=tqdm``."""
    loss = check.function(loss, "loss")
    parameters = [check.instance(p, f"parameters[{k}]", torch.Tensor)
                  for k, p in enumerate(check.sequence(parameters, "parameters"))]
    steps = check.integer(steps, "steps", minimum=1)
    learning_rate = check.number(learning_rate, "learning_rate", above=0)
    progress = None if progress is None else check.function(progress, "progress")
    optimiser = torch.optim.Adam(parameters, lr=learning_rate)
    losses = []
    for _ in (progress or iter)(range(steps)):
        value = loss()
        optimiser.zero_grad()
        value.backward()
        optimiser.step()
        losses.append(value.item())
    return np.array(losses)


def train_pronoun_attention(
    task: PronounTask,
    d_k: int = 8,
    steps: int = 200,
    learning_rate: float = 0.05,
    seed: int = 0,
    progress: Callable[[Iterable[int]], Iterable[int]] | None = None,
    tied: bool = False,
) -> TrainedAttention:
    """Train W_Q, W_K, W_V (random start, Adam, mean squared error) on ``task``.

    ``tied=True`` trains one matrix for queries and keys (W_K = W_Q, so the scores are
    X W_Q W_Q^T X^T: symmetric and positive semidefinite), the baseline an untied head
    is compared with; the result then holds the same matrix as W_q and W_k.

    The prediction is the attention output at the pronoun (the last row),
    softmax(Q K^T / sqrt(d_k)) V, compared with the referent's properties.
    ``progress`` wraps the loop of steps, e.g. ``progress=tqdm`` for a progress bar.

    The layers start from torch's default initialisation for ``nn.Linear`` drawn under
    ``seed``; the global random state is restored afterwards. Training runs on one CPU
    thread: the matrices are tiny, and one thread adds up the numbers in the same order on
    every machine.
    """
    task = check.instance(task, "task", PronounTask, "make_pronoun_task")
    (model,) = train_pronoun_attention_seeds([task], [check.integer(seed, "seed", minimum=0)], d_k, steps,
                                             learning_rate, progress, tied)
    return model


def train_pronoun_attention_seeds(
    tasks: Sequence[PronounTask],
    seeds: Sequence[int],
    d_k: int = 8,
    steps: int = 200,
    learning_rate: float = 0.05,
    progress: Callable[[Iterable[int]], Iterable[int]] | None = None,
    tied: bool = False,
) -> list[TrainedAttention]:
    """``train_pronoun_attention(tasks[m], seed=seeds[m])`` for every m, all at once.

    The models are trained side by side as one batch: the loss minimised is the sum of
    the models' losses, so each model's gradient is its own, and Adam works entry by
    entry, so every model takes the steps it would take alone. The tasks must have the
    same shapes. Returns one TrainedAttention per model, in order.
    """
    tasks = [check.instance(task, f"tasks[{m}]", PronounTask, "make_pronoun_task")
             for m, task in enumerate(check.sequence(tasks, "tasks"))]
    seeds = [check.integer(seed, f"seeds[{m}]", minimum=0)
             for m, seed in enumerate(check.sequence(seeds, "seeds"))]
    d_k, steps = check.integer(d_k, "d_k", minimum=1), check.integer(steps, "steps", minimum=1)
    learning_rate = check.number(learning_rate, "learning_rate", above=0)
    progress = None if progress is None else check.function(progress, "progress")
    tied = check.flag(tied, "tied")
    if len(tasks) != len(seeds) or not tasks:
        raise ValueError(f"need one seed per task, got {len(tasks)} tasks and {len(seeds)} seeds")
    shapes = {task.properties.shape for task in tasks}
    if len(shapes) != 1:
        raise ValueError(f"the tasks must share one shape (batch, seq, d_property), got {sorted(shapes)}")
    X = torch.tensor(np.stack([task.embeddings() for task in tasks]))  # (models, batch, seq, d_model)
    wanted = torch.tensor(np.stack([task.wanted_output() for task in tasks]))  # (models, batch, d_v)
    d_model, d_v = X.shape[-1], wanted.shape[-1]

    with one_thread():
        starts = []
        for seed in seeds:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                layers = [torch.nn.Linear(d_model, d_out, bias=False, dtype=torch.float64)
                          for d_out in (d_k, d_k, d_v)]
            # nn.Linear computes x W^T with weight (d_out, d_model): the row-convention W is its transpose.
            starts.append([layer.weight.detach().T for layer in layers])
        W_q, W_k, W_v = (torch.stack([start[k] for start in starts]).requires_grad_()
                         for k in range(3))  # (models, d_model, d_k), ..., (models, d_model, d_v)
        if tied:
            W_k = W_q

        def model_losses() -> torch.Tensor:
            Q, K, V = (X @ W[:, None] for W in (W_q, W_k, W_v))  # (models, batch, seq, d_k) ...
            weights = torch.softmax(Q @ K.transpose(-1, -2) / d_k**0.5, dim=-1)  # (models, batch, seq, seq)
            prediction = (weights @ V)[:, :, -1, :]  # (models, batch, d_v): the pronoun's output row
            return torch.mean((prediction - wanted) ** 2, dim=(1, 2))  # (models,)

        parameters = list(dict.fromkeys([W_q, W_k, W_v]))
        optimiser = torch.optim.Adam(parameters, lr=learning_rate)
        losses = []
        for _ in (progress or iter)(range(steps)):
            values = model_losses()
            optimiser.zero_grad()
            values.sum().backward()
            optimiser.step()
            losses.append(values.detach().numpy().copy())
    losses_by_model = np.stack(losses, axis=1)  # (models, steps)
    return [
        TrainedAttention(W_q=W_q[m].detach().numpy().copy(), W_k=W_k[m].detach().numpy().copy(),
                         W_v=W_v[m].detach().numpy().copy(), losses=losses_by_model[m])
        for m in range(len(tasks))
    ]


def tied_pronoun_head(
    noun_length: float = 20.0, pronoun_length: float = 1.0, d_property: int = 4
) -> tuple[Float[np.ndarray, "d_model d_k"], Float[np.ndarray, "d_model d_property"]]:
    """A head with W_Q = W_K, built by hand, that solves the pronoun task: ``(W, W_v)``.

    One query/key dimension per kind of pronoun (d_k = 4): a pronoun's key (and query) is
    ``pronoun_length`` along its kind, a noun's is ``noun_length`` along its kind, every
    other word's is 0. With the scale 1/sqrt(d_k), the pronoun scores its referent
    pronoun_length * noun_length / 2, itself pronoun_length**2 / 2 and every other word 0:
    long keys for nouns and a short one for the pronoun make the referent win, although
    the scores X W Wᵀ Xᵀ are symmetric and positive semidefinite. W_v copies the
    properties.

    >>> W, W_v = tied_pronoun_head()
    >>> W.shape, W_v.shape
    ((28, 4), (28, 4))
    """
    noun_length = check.number(noun_length, "noun_length", above=0)
    pronoun_length = check.number(pronoun_length, "pronoun_length", above=0)
    d_property = check.integer(d_property, "d_property", minimum=1)
    d_model = len(VOCABULARY) + d_property
    W = np.zeros((d_model, len(PRONOUNS)))  # (d_model, d_k): one dimension per kind
    for kind, (pronoun, nouns) in enumerate(PRONOUN_REFERENTS.items()):
        W[VOCABULARY.index(pronoun), kind] = pronoun_length
        for noun in nouns:
            W[VOCABULARY.index(noun), kind] = noun_length
    W_v = np.zeros((d_model, d_property))  # (d_model, d_property): the properties, copied
    W_v[len(VOCABULARY):] = np.eye(d_property)
    return W, W_v


def referent_accuracy(
    pronoun_weights: Float[np.ndarray, "batch seq"], referent: Int[np.ndarray, " batch"]
) -> float:
    """Fraction of sentences whose pronoun puts its largest weight on the referent alone.

    A tie for the largest weight is not counted as found, wherever the referent stands
    among the tied positions (argmax would break it for the first: an even spread would
    "find" every referent at position 0).

    >>> referent_accuracy([[0.5, 0.5, 0.0], [0.2, 0.7, 0.1]], [0, 1])
    0.5
    """
    pronoun_weights = check.real_array(pronoun_weights, "pronoun_weights", ndim=2, non_empty=(1,),
                                       layout="(batch, seq)")
    referent = check.index_array(referent, "referent", size=pronoun_weights.shape[1], layout="(batch,)")
    if referent.shape != pronoun_weights.shape[:1]:
        raise ValueError(
            f"need pronoun weights (batch, seq) and referents (batch,), got "
            f"{pronoun_weights.shape} and {referent.shape}"
        )
    on_referent = np.take_along_axis(pronoun_weights, referent[:, None], axis=-1)  # (batch, 1)
    others = np.where(np.arange(pronoun_weights.shape[1]) == referent[:, None], -np.inf, pronoun_weights)
    return float(np.mean(on_referent[:, 0] > others.max(axis=-1)))
