"""Chapter 2's claims about random quantities, over ten seeds (issue #21, item 12), and
issue 36's findings (items 1 and 5) on what its words claim.

The rest of the chapter is deterministic (hand-made embeddings, gradient descent from a
fixed start); its notebook pins those numbers."""

from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from attncourse.attention import dot_product_scores, softmax
from attncourse.examples import hot_cold_words, tennis_sentence
from attncourse.one_space import fit_similarity_attention
from attncourse.reciprocity import cosine_similarity, repeated_attention

pytestmark = pytest.mark.slow

SEEDS = np.arange(10)


@pytest.mark.parametrize("seed", SEEDS)
def test_in_8_dimensions_the_antonyms_still_merge_without_a_meaning_term(seed):
    words = hot_cold_words()
    the, temperature, is_, hot, cold = (words.index(w) for w in ("the", "temperature", "is", "hot", "cold"))
    sentences = [[the, temperature, is_, hot], [the, temperature, is_, cold]]
    start = 0.5 * np.random.default_rng(seed).standard_normal((5, 8))  # (vocab, d_model)
    start[cold] = -start[hot]
    history, losses = fit_similarity_attention(start, sentences, [3, 3], [1, 1], steps=100, learning_rate=0.05)
    assert cosine_similarity(history[-1, hot], history[-1, cold]) > 0.9
    assert losses[-1] < losses[0]


def test_the_link_one_round_makes_is_typical_of_random_queries_and_keys():
    sentence = tennis_sentence()
    X = sentence.X  # (seq, d_model)
    it, picked = sentence.index("it"), sentence.index("picked")
    states, _ = repeated_attention(X, steps=1)
    similarity_link = (states[1] @ states[1].T)[it, picked]
    d = X.shape[-1]
    draws = np.stack([np.random.default_rng(seed).standard_normal((2, 1000, d, d)) for seed in SEEDS])
    W_Q, W_K = draws[:, 0], draws[:, 1]  # (seeds, draws, d_model, d_k) each
    A = softmax((X @ W_Q) @ (X @ W_K).swapaxes(-1, -2) / np.sqrt(d))  # (seeds, draws, seq, seq)
    Y = A @ X  # (seeds, draws, seq, d_model)
    links = (Y[..., it, :] * Y[..., picked, :]).sum(axis=-1)  # (seeds, draws)
    q1, q3 = np.quantile(links, [0.25, 0.75], axis=-1)  # (seeds,) each
    assert (links > 0).all()
    assert ((q1 < similarity_link) & (similarity_link < q3)).all()
    assert dot_product_scores(X, X)[it, picked] == 0


# --- issue 36, items 1 and 5: what the chapter's words claim --------------------------------

CHAPTER = Path(__file__).resolve().parents[1] / "chapters" / "02_reciprocity_problem.ipynb"


def _prose() -> str:
    """The chapter's markdown, its lines joined (a phrase may wrap)."""
    cells = nbformat.read(CHAPTER, as_version=4).cells
    return " ".join(" ".join(cell.source.split()) for cell in cells if cell.cell_type == "markdown")


def test_a_softmax_ignores_a_constant_added_to_a_row_not_the_sign_of_a_score():
    row = np.array([1.0, 0.5, -0.5])
    assert np.allclose(softmax(row + 3.0), softmax(row))
    assert not np.allclose(softmax(row), softmax(np.abs(row)))
    prose = _prose()
    assert "ignores the sign of a score" not in prose
    assert "a softmax ignores a constant added to a whole row (not the sign of a score" in prose


def _it_row(x_it):
    """it's row of weights in the tennis sentence with its embedding replaced by ``x_it``."""
    sentence = tennis_sentence()
    X = sentence.X.copy()  # (seq, d_model)
    X[sentence.index("it")] = x_it
    return softmax(X @ x_it), X @ x_it


def test_turned_at_its_own_length_it_scores_ball_above_itself_and_a_cap_stays():
    sentence = tennis_sentence()
    X, it, ball = sentence.X, sentence.index("it"), sentence.index("ball")
    ball_direction = X[ball] / np.linalg.norm(X[ball])
    path_peak = max(_it_row(X[it] + t * ball_direction)[0][ball] for t in np.linspace(0, 3, 301))
    turned = np.linalg.norm(X[it]) * ball_direction  # it pointing at ball, its length kept
    weights, scores = _it_row(turned)
    assert scores[ball] > scores[it] and weights[ball] > path_peak
    assert X[ball] @ X[ball] > scores[ball]  # ball still prefers itself
    # The cap, by torch's gradient ascent from a few starts (log A[it, ball] is concave in x_it).
    Xt = torch.tensor(X)
    caps = []
    for start in (X[it], np.zeros(5), X[ball]):
        x = torch.tensor(start, requires_grad=True)
        optimiser = torch.optim.Adam([x], lr=0.02)
        for _ in range(3000):
            optimiser.zero_grad()
            row = torch.where(torch.arange(len(X))[:, None] == it, x, Xt) @ x  # (seq,)
            (torch.logsumexp(row, 0) - row[ball]).backward()
            optimiser.step()
        caps.append(_it_row(x.detach().numpy())[0][ball])
    assert np.ptp(caps) < 1e-4 and weights[ball] < caps[0] < 0.4
    prose = _prose()
    assert "ends up its own best match" not in prose
    assert "no embedding of *it*, of any direction or length, gives *ball* more than" in prose


@pytest.mark.parametrize("seed", SEEDS)
def test_in_128_dimensions_the_merge_depends_on_the_length_of_the_embeddings(seed):
    words = hot_cold_words()
    the, temperature, is_, hot, cold = (words.index(w) for w in ("the", "temperature", "is", "hot", "cold"))
    sentences = [[the, temperature, is_, hot], [the, temperature, is_, cold]]
    start = 0.5 * np.random.default_rng([int(seed), 128]).standard_normal((5, 128))  # (vocab, d_model)
    start[cold] = -start[hot]
    ends = []
    for scale in (1.0, np.sqrt(8 / 128)):
        history, _ = fit_similarity_attention(scale * start, sentences, [3, 3], [1, 1], steps=100, learning_rate=0.05)
        weights = [softmax(dot_product_scores(history[-1][s], history[-1][s]))[3, 1] for s in sentences]
        ends.append((cosine_similarity(history[-1, hot], history[-1, cold]), min(weights)))
    (cos_long, weight_long), (cos_short, weight_short) = ends
    assert cos_long < 0.3 < 0.9 < cos_short and min(weight_long, weight_short) > 0.9
    prose = _prose()
    assert "but the pull is the same" not in prose
    assert "depends on the length of the embeddings more than on their number of dimensions" in prose


def test_lambda_names_one_thing():
    prose = _prose()
    assert "$\\lambda\\,(1 + \\cos" in prose and "$c = -\\lambda h$" not in prose
    assert "$c = -\\mu h$ with $\\mu > 0$" in prose


# --- issue 36 review (sci6), findings 1, 2, 3 and 6 ---------------------------------------


def _cap(X, it, ball):
    """The largest A[it, ball] over every embedding of it, the other rows of X fixed, by
    torch's L-BFGS on the concave log A[it, ball] from three starts (the largest found)."""
    return max(_climb(X, it, ball, start) for start in (X[it], np.zeros(X.shape[1]), X[ball]))


def _climb(X, it, ball, start):
    Xt, x = torch.tensor(X), torch.tensor(start, requires_grad=True)
    optimiser = torch.optim.LBFGS([x], max_iter=500, line_search_fn="strong_wolfe")

    def loss():
        optimiser.zero_grad()
        row = torch.where(torch.arange(len(X))[:, None] == it, x, Xt) @ x  # (seq,)
        value = torch.logsumexp(row, 0) - row[ball]
        value.backward()
        return value

    optimiser.step(loss)
    return float(torch.exp(-loss().detach()))


def test_the_cap_on_it_to_ball_is_set_by_the_scale_of_the_sentence():
    sentence = tennis_sentence()
    X, it, ball = sentence.X, sentence.index("it"), sentence.index("ball")
    caps = [_cap(scale * X, it, ball) for scale in (0.5, 1.0, 2.0, 3.0)]
    assert np.all(np.diff(caps) > 0) and caps[0] < 0.2 and 0.37 < caps[1] < 0.39 and caps[-1] > 0.99
    half = X[ball] / 2  # it at half of ball: it scores ball |x_ball|^2 / 2 and itself |x_ball|^2 / 4
    assert np.isclose(half @ X[ball], 2 * (half @ half))
    prose = _prose()
    assert "as far as we like" not in prose and "That is the real failure" not in prose
    assert "That cap belongs to this sentence's scale" in prose


def test_both_words_can_keep_their_meaning_and_ball_still_give_tennis_far_more(capsys):
    from attncourse import checks
    from tests.checks_feedback import feedback

    sentence = tennis_sentence()
    X, it, ball, tennis = sentence.X, *(sentence.index(w) for w in ("it", "ball", "tennis"))
    kept = X.copy()
    kept[it], kept[ball] = [1.2, -0.03, 0.39, 0.28, -0.09], [1.63, 0.0, 0.14, 1.71, 0.0]
    longer = X.copy()
    longer[ball] = 1.5 * X[ball]  # the chapter's simplest answer
    A_kept, A_longer = softmax(kept @ kept.T), softmax(longer @ longer.T)
    assert min(cosine_similarity(kept[w], X[w]) for w in (it, ball)) > 0.95
    assert A_kept[ball, tennis] > 4 * A_longer[ball, tennis]
    assert "Passed." in feedback(capsys, checks.ball_ignores_it, kept)
    prose = _prose()
    assert "The cost has moved, not gone" not in prose and "paying in meaning for attention" not in prose
    assert "Both words keep a cosine of at least" in prose


def test_the_blog_post_is_not_credited_with_the_self_preference():
    intro = _prose().split("**You will be able to**")[0]
    credited = intro.split("describes well")[1]
    assert "favours the word itself" in credited  # the point is made, and
    assert credited.index("the post does not make") < credited.index("favours the word itself")


@pytest.mark.parametrize("seed", SEEDS)
def test_where_similaritys_link_falls_among_random_projections_depends_on_their_scale(seed):
    sentence = tennis_sentence()
    X = sentence.X  # (seq, d_model)
    it, picked = sentence.index("it"), sentence.index("picked")
    states, _ = repeated_attention(X, steps=1)
    similarity_link = (states[1] @ states[1].T)[it, picked]
    mean = X.mean(axis=0)  # uniform weights: every word becomes the mean
    assert mean @ mean > similarity_link
    d = X.shape[-1]
    W_Q, W_K = np.random.default_rng([int(seed), 9]).standard_normal((2, 1000, d, d))  # (draws, d, d) each
    ranks, medians = [], []
    for scale in (1 / np.sqrt(d), 1.0, 3.0):
        A = softmax((X @ (scale * W_Q)) @ (X @ (scale * W_K)).swapaxes(-1, -2) / np.sqrt(d))  # (draws, seq, seq)
        Y = A @ X  # (draws, seq, d_model)
        links = (Y[:, it] * Y[:, picked]).sum(axis=-1)  # (draws,)
        ranks.append((links < similarity_link).mean())
        medians.append(np.median(links))
    assert ranks[0] < 0.3 < 0.35 < ranks[1] < 0.55 and medians[2] < 0.15
    prose = _prose()
    assert "is a typical value, not a special one" not in prose
    assert "depends on the scale of the projections" in prose
