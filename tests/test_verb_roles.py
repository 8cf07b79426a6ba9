"""attncourse.verb_roles: the subject/object task, training, the one-head lower bound, ablation.

The lower bound is a theorem about every one-head model; the tests check it against trained
models and against random matrices, and check the numpy evaluation against the torch
loss the training reports.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attncourse.multihead import attention_heads
from attncourse.verb_roles import (
    OBJECT,
    ROLES,
    SUBJECT,
    VERB,
    TrainedHeads,
    ablation_losses,
    make_role_task,
    mean_weight_on,
    one_head_lower_bound,
    train_heads,
    verb_loss,
    verb_predictions,
)

TASK = make_role_task(128, seed=0)


def test_every_sentence_has_one_subject_verb_and_object_and_every_word_its_properties():
    task = make_role_task(50, seed=3, seq=5, d_property=3)
    for role in (SUBJECT, VERB, OBJECT):
        assert np.all((task.roles == role).sum(axis=-1) == 1)
    assert np.all(task.properties != 0)  # fillers carry properties too: noise to ignore
    X = task.embeddings()
    assert X.shape == (50, 5, len(ROLES) + 3)
    np.testing.assert_array_equal(X[..., : len(ROLES)].argmax(-1), task.roles)
    rows = np.arange(50)
    np.testing.assert_array_equal(task.wanted_output()[:, :3], task.properties[rows, task.position(SUBJECT)])
    np.testing.assert_array_equal(task.wanted_output()[:, 3:], task.properties[rows, task.position(OBJECT)])


def test_the_task_is_seeded():
    a, b, c = make_role_task(20, seed=1), make_role_task(20, seed=1), make_role_task(20, seed=2)
    assert np.array_equal(a.roles, b.roles) and np.array_equal(a.properties, b.properties)
    assert not np.array_equal(a.properties, c.properties)


@pytest.mark.parametrize(("arguments", "message"), [
    ({"n_sentences": 0, "seed": 0}, "n_sentences must be a positive integer, got 0"),
    ({"n_sentences": 3, "seed": 0, "seq": 2}, r"seq \(room for a subject, a verb and an object\) must be an integer >= 3, got 2"),
    ({"n_sentences": 3, "seed": 0, "d_property": 0}, "d_property must be a positive integer, got 0"),
])
def test_bad_task_sizes_are_named(arguments, message):
    with pytest.raises(ValueError, match=message):
        make_role_task(**arguments)


def test_training_is_seeded_and_the_numpy_loss_is_the_torch_loss():
    first = train_heads(TASK, n_heads=2, d_head=2, steps=20, seed=4)
    again = train_heads(TASK, n_heads=2, d_head=2, steps=20, seed=4)
    np.testing.assert_array_equal(first.W_q, again.W_q)
    np.testing.assert_array_equal(first.losses, again.losses)
    one_more = train_heads(TASK, n_heads=2, d_head=2, steps=21, seed=4)
    # losses[k] is the loss before step k: the 21st entry is the 20-step model's loss
    assert np.isclose(verb_loss(TASK, first), one_more.losses[20], rtol=1e-12)


def test_queries_and_keys_read_only_the_role_and_values_only_the_properties():
    model = train_heads(TASK, n_heads=2, d_head=2, steps=5)
    n_roles = len(ROLES)
    assert np.all(model.W_q[n_roles:] == 0) and np.all(model.W_k[n_roles:] == 0)
    assert np.all(model.W_v[:n_roles] == 0)
    assert model.W_q.shape == (n_roles + 2, 4) and model.W_o.shape == (4, 4)


def test_one_head_stays_above_the_lower_bound_and_two_heads_fall_far_below_it():
    bound = one_head_lower_bound(TASK)
    one = train_heads(TASK, n_heads=1, d_head=4, steps=100)
    two = train_heads(TASK, n_heads=2, d_head=2, steps=100)
    assert one.losses.min() >= bound - 1e-12
    assert two.losses[-1] < bound / 100


def test_identical_heads_stay_identical_and_summed_heads_share_one_map():
    twins = train_heads(TASK, n_heads=2, d_head=2, steps=30, identical_heads=True)
    for W in (twins.W_q, twins.W_k, twins.W_v):
        np.testing.assert_array_equal(W[:, :2], W[:, 2:])
    np.testing.assert_array_equal(twins.W_o[:2], twins.W_o[2:])
    summed = train_heads(TASK, n_heads=2, d_head=2, steps=30, sum_heads=True)
    np.testing.assert_array_equal(summed.W_o[:2], summed.W_o[2:])
    assert not np.array_equal(summed.W_q[:, :2], summed.W_q[:, 2:])
    assert summed.losses.min() >= one_head_lower_bound(TASK) - 1e-12


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d_head=st.integers(1, 6))
def test_no_one_head_model_beats_the_lower_bound(seed, d_head):
    """Any one head whose values read only the properties, even with queries and keys that
    read everything, and the best possible read-out of its output (least squares)."""
    rng = np.random.default_rng(seed)
    d_model, n_roles = len(ROLES) + 2, len(ROLES)
    W_q, W_k, W_v = (rng.standard_normal((d_model, d_head)) * 3 for _ in range(3))
    W_v[:n_roles] = 0.0
    heads, _ = attention_heads(TASK.embeddings(), W_q, W_k, W_v, n_heads=1)
    at_verb = heads[np.arange(len(TASK.roles)), 0, TASK.position(VERB)]  # (batch, d_head)
    best = at_verb @ np.linalg.lstsq(at_verb, TASK.wanted_output(), rcond=None)[0]
    assert np.mean((best - TASK.wanted_output()) ** 2) >= one_head_lower_bound(TASK) - 1e-9


def test_the_lower_bound_is_near_one_half_for_many_sentences():
    assert abs(one_head_lower_bound(make_role_task(20000, seed=0)) - 0.5) < 0.02


def test_ablating_a_head_that_carries_a_role_costs_that_role():
    two = train_heads(TASK, n_heads=2, d_head=2, steps=150)
    zero, mean = ablation_losses(TASK, two), ablation_losses(TASK, two, how="mean")
    assert zero.shape == mean.shape == (2,)
    assert np.all(zero > 0.4) and np.all(mean > 0.4)
    assert verb_loss(TASK, two, ablate=0) == zero[0]
    predictions = verb_predictions(TASK, two, ablate=1, how="mean")
    assert predictions.shape == (128, 4)


def test_mean_weight_on_reads_each_heads_weight_at_the_verb_on_a_role():
    """Head 0's key reads the subject's role, head 1's the object's, both from the verb."""
    d_model = len(ROLES) + 2
    W_q, W_k = np.zeros((d_model, 2)), np.zeros((d_model, 2))
    W_q[VERB] = 1.0
    W_k[SUBJECT, 0] = W_k[OBJECT, 1] = 40.0
    model = TrainedHeads(W_q, W_k, np.zeros((d_model, 2)), np.zeros((2, 4)), 2, np.zeros(0))
    on_subject, on_object = (mean_weight_on(TASK, model, role) for role in (SUBJECT, OBJECT))
    assert on_subject.shape == (2,)
    assert on_subject[0] > 0.999 and on_object[1] > 0.999
    assert on_subject[1] < 1e-6 and on_object[0] < 1e-6
    _, weights = attention_heads(TASK.embeddings(), W_q, W_k, W_q, 2)  # (batch, 2, seq, seq)
    by_sentence = [weights[n, :, verb, subject] for n, (verb, subject)
                   in enumerate(zip(TASK.position(VERB), TASK.position(SUBJECT)))]
    assert np.allclose(np.mean(by_sentence, axis=0), on_subject, rtol=0, atol=1e-15)


@pytest.mark.parametrize(("arguments", "message", "error"), [
    ({"ablate": 2}, r"ablate \(a head\) must be an integer from 0 to 1, got 2", ValueError),
    ({"ablate": 0, "how": "half"}, r"how must be one of \['zero', 'mean'\], got 'half'", ValueError),
    ({"ablate": 1.0}, r"ablate \(a head\) must be an integer from 0 to 1, got 1.0 of type float", TypeError),
    ({"how": None}, r"how must be one of \['zero', 'mean'\], got None", TypeError),
])
def test_bad_ablations_are_named(arguments, message, error):
    model = train_heads(TASK, n_heads=2, d_head=2, steps=1)
    with pytest.raises(error, match=message):
        verb_loss(TASK, model, **arguments)


def test_bad_training_sizes_are_named():
    with pytest.raises(ValueError, match="n_heads must be a positive integer, got 0"):
        train_heads(TASK, n_heads=0, d_head=2)
    with pytest.raises(TypeError, match="task must be a RoleTask"):
        train_heads(TASK.embeddings(), n_heads=1, d_head=2)
    with pytest.raises(TypeError, match="sum_heads must be True or False"):
        train_heads(TASK, n_heads=1, d_head=2, sum_heads="yes")
