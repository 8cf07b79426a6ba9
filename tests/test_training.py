"""Tests for ``attncourse.training``: the generated task has the structure the chapter
claims, the training reaches the accuracy target on held-out sentences with a small
budget, is deterministic, and leaves torch's global state as it found it. The learned
matrices are checked with the numpy reference attention, not with the training code."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attncourse.attention import scaled_dot_product_attention
from attncourse.training import (
    PRONOUN_REFERENTS,
    VOCABULARY,
    make_pronoun_task,
    minimise_with_adam,
    one_thread,
    referent_accuracy,
    tied_pronoun_head,
    train_pronoun_attention,
    train_pronoun_attention_seeds,
)

SMALL_BUDGET = dict(d_k=8, steps=100, learning_rate=0.1)


@pytest.fixture(scope="module")
def trained_small():
    task = make_pronoun_task(300, seed=0)
    return task, train_pronoun_attention(task, seed=0, **SMALL_BUDGET)


def _pronoun_weights(task, trained):
    X = task.embeddings()
    output, weights = scaled_dot_product_attention(X @ trained.W_q, X @ trained.W_k, X @ trained.W_v)
    return output[:, -1, :], weights[:, -1, :]


def test_every_pronoun_agrees_with_exactly_one_noun_its_referent():
    task = make_pronoun_task(200, seed=3)
    for words, referent in zip(task.words, task.referent):
        pronoun = words[-1]
        assert pronoun in PRONOUN_REFERENTS
        agreeing = [j for j, w in enumerate(words[:-1]) if w in PRONOUN_REFERENTS[pronoun]]
        assert agreeing == [referent]


def test_properties_sit_on_the_nouns_only():
    task = make_pronoun_task(50, seed=4, seq=6, n_nouns=2, d_property=3)
    nouns = {n for ns in PRONOUN_REFERENTS.values() for n in ns}
    is_noun = np.array([[w in nouns for w in words] for words in task.words])
    assert is_noun.sum(axis=1).tolist() == [2] * 50
    assert np.all(task.properties[~is_noun] == 0) and np.all(task.properties[is_noun] != 0)
    assert np.array_equal(task.wanted_output(), task.properties[np.arange(50), task.referent])


def test_embeddings_are_one_hot_words_then_properties():
    task = make_pronoun_task(5, seed=0)
    X = task.embeddings()
    n_words = len(VOCABULARY)
    assert X.shape == (5, 8, n_words + 4)
    assert np.array_equal(X[..., :n_words].argmax(-1), task.tokens)
    assert np.array_equal(X[..., :n_words].sum(-1), np.ones((5, 8)))
    assert np.array_equal(X[..., n_words:], task.properties)


def test_task_is_deterministic_for_a_seed_and_varies_across_seeds():
    a, b, c = (make_pronoun_task(20, seed=s) for s in (7, 7, 8))
    assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.properties, b.properties)
    assert not np.array_equal(a.tokens, c.tokens)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_nouns=1), "n_nouns must be an integer from 2 to 4, got 1"),
        (dict(n_nouns=5), "n_nouns must be an integer from 2 to 4, got 5"),
        (dict(seq=3, n_nouns=3), "seq=3 has no room for 3 nouns"),
        (dict(d_property=0), "d_property must be a positive integer, got 0"),
    ],
)
def test_bad_task_sizes_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_pronoun_task(10, seed=0, **kwargs)


def test_small_budget_reaches_the_target_on_held_out_sentences(trained_small):
    _, trained = trained_small
    held_out = make_pronoun_task(500, seed=99)
    _, pronoun_weights = _pronoun_weights(held_out, trained)
    assert referent_accuracy(pronoun_weights, held_out.referent) > 0.95


def test_learned_matrices_are_in_the_row_convention(trained_small):
    task, trained = trained_small
    d_model = task.embeddings().shape[-1]
    assert trained.W_q.shape == trained.W_k.shape == (d_model, 8)
    assert trained.W_v.shape == (d_model, 4) and trained.losses.shape == (100,)
    prediction, _ = _pronoun_weights(task, trained)
    numpy_loss = np.mean((prediction - task.wanted_output()) ** 2)
    assert trained.losses[-1] < 0.01 * trained.losses[0]
    assert numpy_loss < 2 * trained.losses[-1]


def test_training_is_deterministic_for_a_seed(trained_small):
    task, first = trained_small
    second = train_pronoun_attention(task, seed=0, **SMALL_BUDGET)
    for name in ("W_q", "W_k", "W_v", "losses"):
        assert np.array_equal(getattr(first, name), getattr(second, name))
    other = train_pronoun_attention(task, seed=1, d_k=8, steps=2)
    assert not np.array_equal(first.W_q, other.W_q)


def test_training_leaves_torch_global_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    threads = torch.get_num_threads()
    train_pronoun_attention(make_pronoun_task(20, seed=0), steps=2, seed=5)
    assert torch.equal(torch.rand(3), expected)
    assert torch.get_num_threads() == threads


def test_progress_wraps_the_loop_of_steps():
    seen = []

    def progress(steps):
        seen.append(len(steps))
        return steps

    train_pronoun_attention(make_pronoun_task(10, seed=0), steps=3, progress=progress)
    assert seen == [3]


def test_bad_training_settings_are_named():
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        train_pronoun_attention(make_pronoun_task(10, seed=0), steps=0)
    with pytest.raises(TypeError, match="task must be a PronounTask"):
        train_pronoun_attention(make_pronoun_task(10, seed=0).tokens)
    with pytest.raises(TypeError, match="tied must be True or False, got 1"):
        train_pronoun_attention(make_pronoun_task(10, seed=0), steps=1, tied=1)
    with pytest.raises(TypeError, match="n_sentences must be a positive integer, got '10'"):
        make_pronoun_task("10", seed=0)


def test_referent_accuracy_counts_argmax_hits():
    weights = np.array([[0.1, 0.9, 0.0], [0.5, 0.2, 0.3], [0.0, 0.0, 1.0]])
    assert referent_accuracy(weights, np.array([1, 1, 2])) == pytest.approx(2 / 3)


def test_referent_accuracy_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"\(batch, seq\)"):
        referent_accuracy(np.zeros((3, 4)), np.zeros(2, dtype=int))
    with pytest.raises(ValueError, match=r"referent\[0\] = 4 is outside 0..3"):
        referent_accuracy(np.zeros((1, 4)), [4])
    with pytest.raises(ValueError, match=r"pronoun_weights of shape \(1, 4\) contains NaN"):
        referent_accuracy([[np.nan, 0, 0, 0]], [1])


def test_tied_training_shares_one_matrix_and_keeps_attention_on_the_pronoun():
    task = make_pronoun_task(300, seed=0)
    tied = train_pronoun_attention(task, seed=0, tied=True, **SMALL_BUDGET)
    assert np.array_equal(tied.W_q, tied.W_k)
    X = task.embeddings()
    _, weights = scaled_dot_product_attention(X @ tied.W_q, X @ tied.W_k, X @ tied.W_v)
    scores = (X @ tied.W_q) @ (X @ tied.W_k).transpose(0, 2, 1)  # (batch, seq, seq)
    assert np.allclose(scores, scores.transpose(0, 2, 1))  # W_Q = W_K: symmetric scores
    assert weights[:, -1, -1].mean() > 0.1  # the pronoun keeps a share for itself


def test_untied_training_never_moves_the_queries_of_words_the_loss_does_not_see():
    task = make_pronoun_task(100, seed=0)
    start = train_pronoun_attention(task, seed=0, **{**SMALL_BUDGET, "steps": 1})
    later = train_pronoun_attention(task, seed=0, **{**SMALL_BUDGET, "steps": 5})
    nouns = [VOCABULARY.index(noun) for nouns in PRONOUN_REFERENTS.values() for noun in nouns]
    assert np.array_equal(start.W_q[nouns], later.W_q[nouns])


def test_adam_reports_the_loss_before_each_step_and_descends():
    w = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    losses = minimise_with_adam(lambda: (w**2).sum(), [w], steps=50, learning_rate=0.1)
    assert losses.shape == (50,)
    assert losses[0] == 9.0  # before the first step: w still 3
    assert losses[-1] < 0.1 * losses[0]


def test_one_thread_restores_the_thread_count_even_after_an_error():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError), one_thread():
        assert torch.get_num_threads() == 1
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before


def test_models_trained_side_by_side_take_the_steps_each_takes_alone():
    tasks = [make_pronoun_task(40, seed=seed) for seed in (0, 1)]
    together = train_pronoun_attention_seeds(tasks, [3, 4], d_k=4, steps=5, learning_rate=0.1, tied=True)
    for task, seed, model in zip(tasks, (3, 4), together):
        alone = train_pronoun_attention(task, seed=seed, d_k=4, steps=5, learning_rate=0.1, tied=True)
        assert np.allclose(model.W_q, alone.W_q, atol=1e-12) and np.allclose(model.W_v, alone.W_v, atol=1e-12)
        assert np.allclose(model.losses, alone.losses, atol=1e-12) and model.W_q is not model.W_k
        assert np.array_equal(model.W_q, model.W_k)


def test_side_by_side_training_names_mismatched_inputs():
    with pytest.raises(ValueError, match="one seed per task"):
        train_pronoun_attention_seeds([make_pronoun_task(5, seed=0)], [0, 1])
    with pytest.raises(ValueError, match="share one shape"):
        train_pronoun_attention_seeds([make_pronoun_task(5, seed=0), make_pronoun_task(6, seed=1)], [0, 1])


def test_the_hand_built_tied_head_attends_to_the_referent_with_symmetric_psd_scores():
    W, W_v = tied_pronoun_head(noun_length=20.0, pronoun_length=1.0)
    task = make_pronoun_task(200, seed=5)
    X = task.embeddings()  # (batch, seq, d_model)
    output, weights = scaled_dot_product_attention(X @ W, X @ W, X @ W_v)
    assert weights[np.arange(200), -1, task.referent].min() > 0.999
    assert np.mean((output[:, -1] - task.wanted_output()) ** 2) < 1e-6
    assert np.linalg.eigvalsh(W @ W.T).min() > -1e-12  # M = W Wᵀ is positive semidefinite
    with pytest.raises(ValueError, match="noun_length must be a finite number > 0, got 0.0"):
        tied_pronoun_head(noun_length=0.0)
