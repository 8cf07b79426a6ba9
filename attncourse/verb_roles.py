"""A verb that must read two words at once: a task one softmax cannot solve and two can.

The task (chapter 4): each generated sentence holds a subject, a verb, an object and
filler words at random places. Every word carries ``d_property`` random numbers, its
properties, drawn afresh for every sentence. At the verb the model must output the
subject's properties followed by the object's, ``2 * d_property`` numbers; what the
other words carry is noise that attention must leave out.

A token's embedding is its role, one-hot (filler, subject, verb, object), followed by
its properties: d_model = 4 + d_property. As if earlier layers had already worked out
the grammar, queries and keys read only the role and values only the properties (the
other rows of W_q, W_k and W_v are held at 0). That makes the limit of one head exact:
its output at the verb is m W_v W_o with m = sum_j w_j p_j, a vector of d_property
numbers, so whatever the weights, the prediction lies in a subspace of dimension at
most d_property of the 2 * d_property outputs (see ``one_head_lower_bound``).

Training is torch (Adam, mean squared error, float64, one CPU thread, seeded and pure);
evaluation and ablation are numpy, through ``attncourse.multihead``. Bad input is refused
through ``attncourse.validation``, naming the argument at fault.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from jaxtyping import Float, Int

from attncourse.multihead import attention_heads
from attncourse.validation import choice, flag, instance, integer, number

__all__ = [
    "ROLES",
    "RoleTask",
    "TrainedHeads",
    "ablation_losses",
    "chapter_tasks",
    "make_role_task",
    "mean_weight_on",
    "one_head_lower_bound",
    "train_heads",
    "verb_loss",
    "verb_predictions",
]

ROLES = ("filler", "subject", "verb", "object")
FILLER, SUBJECT, VERB, OBJECT = range(len(ROLES))


@dataclass(frozen=True, eq=False)
class RoleTask:
    """A batch of generated sentences.

    roles (batch, seq): indices into ROLES; properties (batch, seq, d_property), random
    for every word.
    """

    roles: Int[np.ndarray, "batch seq"]
    properties: Float[np.ndarray, "batch seq d_property"]

    def position(self, role: int) -> Int[np.ndarray, " batch"]:
        """Where the word of ``role`` (SUBJECT, VERB or OBJECT) sits in each sentence."""
        return np.argmax(self.roles == role, axis=-1)

    def embeddings(self) -> Float[np.ndarray, "batch seq d_model"]:
        """X = [one-hot role | properties], d_model = 4 + d_property."""
        one_hot = np.eye(len(ROLES))[self.roles]  # (batch, seq, 4)
        return np.concatenate([one_hot, self.properties], axis=-1)  # (batch, seq, d_model)

    def wanted_output(self) -> Float[np.ndarray, "batch two_d_property"]:
        """The subject's properties, then the object's: (batch, 2 * d_property)."""
        rows = np.arange(len(self.roles))
        return np.concatenate(
            [self.properties[rows, self.position(SUBJECT)], self.properties[rows, self.position(OBJECT)]],
            axis=-1,
        )


def make_role_task(n_sentences: int, seed: int, seq: int = 6, d_property: int = 2) -> RoleTask:
    """``n_sentences`` sentences of ``seq`` tokens: subject, verb and object at random
    places, fillers elsewhere; standard normal properties for every word.

    >>> task = make_role_task(3, seed=0, seq=4)
    >>> task.embeddings().shape, task.wanted_output().shape
    ((3, 4, 6), (3, 4))
    """
    n_sentences = integer(n_sentences, "n_sentences", minimum=1)
    d_property = integer(d_property, "d_property", minimum=1)
    seq = integer(seq, "seq (room for a subject, a verb and an object)", minimum=3)
    seed = integer(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)
    roles = np.full((n_sentences, seq), FILLER)
    places = rng.permuted(np.tile(np.arange(seq), (n_sentences, 1)), axis=-1)[:, :3]  # (batch, 3)
    rows = np.arange(n_sentences)[:, None]
    roles[rows, places] = [SUBJECT, VERB, OBJECT]
    properties = rng.standard_normal((n_sentences, seq, d_property))
    return RoleTask(roles=roles, properties=properties)


def chapter_tasks() -> tuple[RoleTask, RoleTask]:
    """Chapter 4's sentences, shared by the chapter, its exercises' checks and the tests:
    256 to train on (seed 0) and 1,000 held out (seed 1)."""
    return make_role_task(256, seed=0), make_role_task(1000, seed=1)


@dataclass(frozen=True, eq=False)
class TrainedHeads:
    """Learned matrices in the row convention of ``multi_head_attention``, and the losses.

    W_q, W_k, W_v (d_model, n_heads * d_head); W_o (n_heads * d_head, 2 * d_property);
    losses (steps,), the training loss before each step.
    """

    W_q: Float[np.ndarray, "d_model width"]
    W_k: Float[np.ndarray, "d_model width"]
    W_v: Float[np.ndarray, "d_model width"]
    W_o: Float[np.ndarray, "width d_out"]
    n_heads: int
    losses: Float[np.ndarray, " steps"]


def train_heads(
    task: RoleTask,
    n_heads: int,
    d_head: int,
    steps: int = 100,
    learning_rate: float = 0.05,
    seed: int = 0,
    identical_heads: bool = False,
    sum_heads: bool = False,
) -> TrainedHeads:
    """Train multi-head attention (Adam, mean squared error at the verb) on ``task``.

    The matrices start from torch's default initialisation of ``nn.Linear`` drawn under
    ``seed``. With ``identical_heads`` every head starts as a copy of head 0 (its columns
    of W_q, W_k, W_v and its rows of W_o). With ``sum_heads`` the raw heads are added and
    one shared (d_head, d_out) matrix maps the sum: that is concatenation followed by a
    W_o whose blocks are all equal, and ``W_o`` is returned in that form. The global
    random state is restored; training runs on one CPU thread, so the numbers are the
    same on every run.
    """
    import torch

    from attncourse.training import minimise_with_adam, one_thread

    task = _task(task)
    n_heads, d_head, steps, seed = (integer(value, name, minimum=minimum) for value, name, minimum in (
        (n_heads, "n_heads", 1), (d_head, "d_head", 1), (steps, "steps", 1), (seed, "seed", 0)))
    learning_rate = number(learning_rate, "learning_rate", above=0)
    identical_heads, sum_heads = flag(identical_heads, "identical_heads"), flag(sum_heads, "sum_heads")
    X = torch.tensor(task.embeddings())  # (batch, seq, d_model)
    wanted = torch.tensor(task.wanted_output())  # (batch, d_out)
    verb = torch.tensor(task.position(VERB))  # (batch,)
    n_roles, d_property = len(ROLES), task.properties.shape[-1]
    width, d_out = n_heads * d_head, wanted.shape[-1]

    with one_thread():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            # nn.Linear's weight is (d_out, d_in): its transpose is the row-convention W.
            start = [torch.nn.Linear(d_in, d, bias=False, dtype=torch.float64).weight.detach().T
                     for d_in, d in ((n_roles, width), (n_roles, width), (d_property, width),
                                     (d_head if sum_heads else width, d_out))]
        if identical_heads:
            start[:3] = [_copy_head_zero(W, n_heads, d_head, axis=1) for W in start[:3]]
            if not sum_heads:
                start[3] = _copy_head_zero(start[3], n_heads, d_head, axis=0)
        W_q, W_k, W_v, W_out = (W.clone().requires_grad_() for W in start)
        rows = torch.arange(len(X))
        roles, properties = X[..., :n_roles], X[..., n_roles:]
        batch, seq = X.shape[:2]

        def loss() -> torch.Tensor:
            Q, K, V = roles @ W_q, roles @ W_k, properties @ W_v  # (batch, seq, width) each
            Q, K, V = (M.view(batch, seq, n_heads, d_head).transpose(1, 2) for M in (Q, K, V))  # (batch, n_heads, seq, d_head)
            heads = torch.nn.functional.scaled_dot_product_attention(Q, K, V)  # (batch, n_heads, seq, d_head)
            W_o = W_out.repeat(n_heads, 1) if sum_heads else W_out  # (n_heads * d_head, d_out)
            at_verb = heads[rows, :, verb].reshape(batch, width)  # (batch, n_heads * d_head)
            return torch.mean((at_verb @ W_o - wanted) ** 2)

        losses = minimise_with_adam(loss, [W_q, W_k, W_v, W_out], steps, learning_rate)
    zeros = np.zeros((d_property, width)), np.zeros((n_roles, width))
    as_numpy = lambda W: W.detach().numpy().copy()
    return TrainedHeads(
        W_q=np.vstack([as_numpy(W_q), zeros[0]]),
        W_k=np.vstack([as_numpy(W_k), zeros[0]]),
        W_v=np.vstack([zeros[1], as_numpy(W_v)]),
        W_o=as_numpy(W_out.repeat(n_heads, 1) if sum_heads else W_out),
        n_heads=n_heads,
        losses=losses,
    )


def _task(task) -> RoleTask:
    return instance(task, "task", RoleTask, "make_role_task")


def _model(model) -> TrainedHeads:
    return instance(model, "model", TrainedHeads, "train_heads")


def _copy_head_zero(W, n_heads, d_head, axis):
    block = W.narrow(axis, 0, d_head)
    return block.repeat(*((n_heads, 1) if axis == 0 else (1, n_heads)))


def verb_predictions(
    task: RoleTask,
    model: TrainedHeads,
    ablate: int | None = None,
    how: str = "zero",
) -> Float[np.ndarray, "batch d_out"]:
    """The model's output at the verb of every sentence, computed with the numpy reference.

    ``ablate`` names a head to knock out: ``how="zero"`` replaces its output at the verb
    by 0, ``how="mean"`` by its mean over the task's sentences.
    """
    task, model = _task(task), _model(model)
    how = choice(how, "how", ("zero", "mean"))
    if ablate is not None:
        ablate = integer(ablate, "ablate (a head)", minimum=0, maximum=model.n_heads - 1)
    heads, _ = attention_heads(task.embeddings(), model.W_q, model.W_k, model.W_v, model.n_heads)
    at_verb = heads[np.arange(len(task.roles)), :, task.position(VERB)]  # (batch, n_heads, d_head)
    if ablate is not None:
        at_verb = at_verb.copy()
        at_verb[:, ablate] = 0.0 if how == "zero" else at_verb[:, ablate].mean(axis=0)
    return at_verb.reshape(len(at_verb), -1) @ model.W_o  # (batch, d_out)


def mean_weight_on(task: RoleTask, model: TrainedHeads, role: int) -> Float[np.ndarray, " n_heads"]:
    """How much each head, at the verb, attends to the word of ``role`` (SUBJECT or
    OBJECT), averaged over the task's sentences: (n_heads,), each in [0, 1]."""
    task, model = _task(task), _model(model)
    role = integer(role, "role", minimum=SUBJECT, maximum=OBJECT)
    if role == VERB:
        raise ValueError(f"role must be SUBJECT ({SUBJECT}) or OBJECT ({OBJECT}), got VERB ({VERB})")
    _, weights = attention_heads(task.embeddings(), model.W_q, model.W_k, model.W_v,
                                 model.n_heads)  # (batch, n_heads, seq, seq)
    rows = np.arange(len(task.roles))
    return weights[rows, :, task.position(VERB), task.position(role)].mean(axis=0)  # (n_heads,)


def verb_loss(task: RoleTask, model: TrainedHeads, ablate: int | None = None, how: str = "zero") -> float:
    """Mean squared error of ``verb_predictions`` (same arguments) against the targets."""
    return float(np.mean((verb_predictions(task, model, ablate, how) - task.wanted_output()) ** 2))


def ablation_losses(task: RoleTask, model: TrainedHeads, how: str = "zero") -> Float[np.ndarray, " n_heads"]:
    """``verb_loss`` with each head ablated in turn: (n_heads,)."""
    model = _model(model)
    return np.array([verb_loss(task, model, ablate=h, how=how) for h in range(model.n_heads)])


def one_head_lower_bound(task: RoleTask) -> float:
    """A lower bound on the mean squared error of every one-head model on ``task``.

    For this setting: one layer, values that read only the properties, no biases. One
    head's prediction then lies in a subspace of dimension d_property of the 2 * d_property
    outputs. The best such subspace for the targets t_n is spanned by the leading
    eigenvectors of their second-moment matrix (1/N) sum_n t_n t_n^T, and what it misses
    is the sum of the d_property smallest eigenvalues, spread over 2 * d_property outputs.
    For independent standard normal properties that is 1/2. It is a bound, not a loss
    any head reaches: a head can produce only some of the subspaces.
    """
    wanted = _task(task).wanted_output()  # (batch, 2 * d_property)
    second_moment = wanted.T @ wanted / len(wanted)  # (2 * d_property, 2 * d_property)
    d_property = task.properties.shape[-1]
    return float(np.linalg.eigvalsh(second_moment)[:d_property].sum() / wanted.shape[-1])
