"""Tune exercises' goals (attncourse.checks.tune): the explorer's checkmark (explorers/goal.js,
run in Node as the page gets it) agrees with the Python goal and with the exercise's check,
on random inputs and on inputs a hair either side of every condition's boundary; an
explorer refuses a goal that names tokens, views or inputs it does not have."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

from attncourse import checks
from attncourse.checks import ch1, ch2, ch3, ch5, ch6, tune
from attncourse.checks.tune import Cell, Condition, CycleRatio
from attncourse.examples import pool_beats_badminton, tennis_sentence
from attncourse.explorers.attention_explorer import (
    AttentionExplorer,
    InvalidExplorerInput,
    explorer_view,
)
from attncourse.explorers.conv_explorer import ConvolutionExplorer, largest_error
from tests.checks_feedback import feedback, learner_mode  # noqa: F401 (an autouse fixture)
from tests.node_module import call_in_node

CH1, TENNIS = pool_beats_badminton(), tennis_sentence()


def _index(sentence, *words):
    return [sentence.index(word) for word in words]


POOL, BEATS, BADMINTON = _index(CH1, "pool", "beats", "badminton")
IT, BALL, PRONOUN, THING, SPORT = (*_index(TENNIS, "it", "ball"),
                                   *(TENNIS.dims.index(d) for d in ("pronoun", "thing", "sport")))


def ch1_inputs(badminton, X=None):
    """Chapter 1's explorer with badminton's row set (the exercise's only free row)."""
    X = CH1.X.copy() if X is None else X
    X[BADMINTON] = badminton
    return {"X": X}


def ch2_inputs(it=1.0, ball=1.0, X=None):
    """Chapter 2's explorer with the rows of it and ball scaled (or set, given X)."""
    X = TENNIS.X.copy() if X is None else X
    X[IT] *= it
    X[BALL] *= ball
    return {"X": X}


def ch3_inputs(pronoun_thing=0.0, thing_thing=1.0, sport_sport=1.0, W_k=None):
    """Chapter 3's explorer: W_q from the identity, three entries set (the solution's)."""
    W_q = np.eye(5)
    W_q[PRONOUN, THING], W_q[THING, THING], W_q[SPORT, SPORT] = pronoun_thing, thing_thing, sport_sport
    return {"X": TENNIS.X, "W_q": W_q, "W_k": np.eye(5) if W_k is None else W_k}


def ch5_inputs(pronoun_thing=0.0, W_k=None, corner=1.0):
    """Chapter 5's explorer: W_q from the identity with a pronoun asking for things (the
    solution's entry, 2) and its last diagonal entry ``corner`` (the bounds' edge: 10)."""
    W_q = np.eye(5)
    W_q[PRONOUN, THING], W_q[4, 4] = pronoun_thing, corner
    return {"X": TENNIS.X, "W_q": W_q, "W_k": np.eye(5) if W_k is None else W_k}


# Each tune exercise: its goal, its explorer's tokens, and its check's answers from the inputs.
EXERCISES = {
    "ch1": (ch1.goal_pool_prefers_badminton, CH1.tokens, checks.pool_prefers_badminton,
            lambda inputs: [inputs["X"]]),
    "ch2": (ch2.goal_ball_ignores_it, TENNIS.tokens, checks.ball_ignores_it,
            lambda inputs: [inputs["X"]]),
    "ch3": (ch3.goal_it_attends_to_ball, TENNIS.tokens, checks.it_attends_to_ball,
            lambda inputs: [inputs["W_q"], inputs["W_k"]]),
    "ch5": (ch5.goal_cycle_above_two, TENNIS.tokens, checks.cycle_above_two,
            lambda inputs: [inputs["W_q"], inputs["W_k"]]),
}


def straddle(family, value, low, high):
    """Parameters t a hair below and above where value(family(t)) changes sign on
    [low, high] (bisection, to 1e-12): the inputs just either side of a boundary."""
    sign = np.sign(value(family(low)))
    assert sign != np.sign(value(family(high))), "no boundary between low and high"
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if np.sign(value(family(middle))) == sign else (low, middle)
    return [family(low), family(high)]


def weights_of(inputs):
    return explorer_view(**inputs, scale=1.0)[1]


def random_inputs(chapter, rng):
    """Inputs near the goal's boundary as often as far from it."""
    if chapter == "ch1":
        badminton = rng.uniform(0.4, 1.1) * np.array([0.8, 0.0, 0.0, 0.0]) + rng.normal(0, 0.1, 4)
        X = CH1.X.copy()
        if rng.random() < 0.1:  # a row the exercise does not free
            X[rng.choice([POOL, BEATS])] += rng.choice([1e-9, 1e-3])
        return ch1_inputs(badminton, X)
    if chapter == "ch2":
        X = TENNIS.X.copy()
        X[[IT, BALL]] += rng.normal(0, 0.3, (2, X.shape[1])) * (rng.random() < 0.5)
        if rng.random() < 0.1:
            X[rng.integers(len(X))] += 1e-3
        return ch2_inputs(rng.uniform(0.5, 1.5), rng.uniform(1.0, 2.0), X)
    W_k = np.eye(5) + rng.normal(0, 0.3, (5, 5)) * (rng.random() < 0.3)
    if chapter == "ch5":
        return ch5_inputs(rng.uniform(-1, 4), W_k, rng.choice([1.0, rng.uniform(9.5, 10.5)]))
    return ch3_inputs(rng.uniform(0, 10), rng.choice([0.0, rng.uniform(-1, 1)]),
                      rng.uniform(0.5, 3), W_k)


def nudged_fixed_row(inputs, row, outside):
    """A fixed row's first entry b moved just inside or just outside its tolerance
    |a - b| <= atol + rtol |b|, outside by less than rtol times the move: only a tolerance
    measured from the goal's entry b, as numpy's is, tells the two apart."""
    X = inputs["X"].copy()
    allowed = tune.ROW_ATOL + tune.ROW_RTOL * abs(X[row, 0])
    X[row, 0] += allowed * (1 + tune.ROW_RTOL / 2 if outside else 1 - 1e-6)
    return {**inputs, "X": X}


def margin(row, col, minus=None, factor=1.0, threshold=0.0):
    """How far W[row, col] of the explorer's weights is above factor W[minus] (a cell) or
    the threshold: its sign says on which side of a condition's boundary the inputs lie."""
    def of(inputs):
        weights = weights_of(inputs)
        return weights[row, col] - (threshold if minus is None else factor * weights[minus])
    return of


def cycle_margin(inputs):
    """How far the ratio of the cycle He ⇝ it ⇝ ball is above 2."""
    scores = explorer_view(**inputs, scale=1.0)[0]
    return CycleRatio(("He", "it", "ball")).value(TENNIS.tokens, {"scores": scores}) - 2.0


def borderline_inputs(chapter):
    """Inputs a hair either side of each condition's boundary, and exact ties."""
    if chapter == "ch1":
        solved = ch1_inputs(np.array([0.8, 0.0, 0.0, 0.0]))
        return [*straddle(lambda t: ch1_inputs(np.array([t, 0.0, 0.0, 0.0])),
                          margin(POOL, BADMINTON, minus=(POOL, POOL)), 0.5, 1.0),
                ch1_inputs(CH1.X[POOL].copy()),  # badminton = pool: an exact tie
                ch1_inputs(np.array([0.8, 0.0, 0.0, 1.0])),  # an entry exactly at the bound
                ch1_inputs(np.array([0.8, 0.0, 0.0, np.nextafter(1.0, 2.0)])),
                nudged_fixed_row(solved, POOL, False), nudged_fixed_row(solved, POOL, True)]
    if chapter == "ch2":
        return [ch2_inputs(ball=1.5),  # the solution's
                *straddle(lambda t: ch2_inputs(ball=t), margin(IT, BALL, threshold=0.4), 1.0, 1.5),
                *straddle(lambda t: ch2_inputs(ball=t), margin(BALL, IT, (IT, BALL), 0.1), 1.0, 1.5)]
    if chapter == "ch5":
        return [*straddle(ch5_inputs, cycle_margin, 1.0, 2.0),
                ch5_inputs(2.0, corner=10.0), ch5_inputs(2.0, corner=np.nextafter(10.0, 11.0))]
    return [*straddle(lambda t: ch3_inputs(8.0, 0.0, t), margin(BALL, IT, threshold=0.05), 1.0, 2.0),
            ch3_inputs(8.0, 0.0, 2.0),  # ball scores it exactly 0: "at most 0" holds
            ch3_inputs(8.0, 1e-12, 2.0), ch3_inputs(8.0, -1e-12, 2.0)]


def python_verdicts(goal, tokens, inputs, scale, views):
    return {"met": goal.holds(tokens, inputs, scale, views),
            "conditions": [c.holds(tokens, views) for c in goal.conditions]}


def js_verdicts(problems):
    statuses = call_in_node("attention_explorer.js", "goalStatus", problems)
    return [{"met": s["met"], "conditions": [r["holds"] for r in s["requirements"] if not r["constraint"]]}
            for s in statuses]


def nudged_views(goal, tokens, views):
    """The views with each condition's left cell set exactly on, and one float either
    side of, its right-hand side: the comparisons' own boundaries."""
    out = []
    for condition in goal.conditions:
        if not isinstance(condition.left, Cell):
            continue  # a cycle's ratio is no one cell: its boundary is straddled by its inputs
        bound = condition.right.value(tokens, views) if isinstance(condition.right, Cell) else condition.right
        for target in (np.nextafter(bound, -np.inf), bound, np.nextafter(bound, np.inf)):
            nudged = {name: view.copy() for name, view in views.items()}
            cell = condition.left
            nudged[cell.view][tokens.index(cell.row), tokens.index(cell.col)] = target / cell.factor
            if cell.factor * (target / cell.factor) == target:  # representable exactly
                out.append(nudged)
    return out


# The inputs either side of every boundary, alone (`make unit`) or with random ones around
# them (`make test`): how many random inputs a sweep adds.
SWEEPS = [0, pytest.param(150, marks=pytest.mark.slow, id="random")]


@pytest.mark.parametrize("n_random", SWEEPS)
@pytest.mark.parametrize("chapter", EXERCISES)
def test_the_checkmark_agrees_with_the_python_goal(chapter, n_random):
    goal, tokens, _, _ = EXERCISES[chapter]
    rng = np.random.default_rng(16)
    cases = []  # (inputs, scale, views)
    for inputs in [random_inputs(chapter, rng) for _ in range(n_random)] + borderline_inputs(chapter):
        for scale in (1.0, 1.0 + 1e-12, 1.1):
            scores, weights, _ = explorer_view(**inputs, scale=scale)
            views = {"scores": scores, "weights": weights}
            cases += [(inputs, scale, v) for v in [views, *nudged_views(goal, tokens, views)]]
    expected = [python_verdicts(goal, tokens, i, s, v) for i, s, v in cases]
    found = js_verdicts([{"goal": goal.as_json(), "tokens": list(tokens), "scale": s,
                          "inputs": {k: np.asarray(m).tolist() for k, m in i.items()}, **v}
                         for i, s, v in cases])
    assert found == expected
    # Both outcomes were tried, for the goal and for every condition.
    assert {e["met"] for e in expected} == {True, False}
    for k in range(len(goal.conditions)):
        assert {e["conditions"][k] for e in expected} == {True, False}, k


@pytest.mark.parametrize("n_random", SWEEPS)
@pytest.mark.parametrize("chapter", EXERCISES)
def test_the_check_passes_exactly_when_the_checkmark_shows(chapter, n_random, capsys):
    """The explorer's own maths (attend, in Node) and goal at scale 1, against the check."""
    goal, tokens, check, answers = EXERCISES[chapter]
    rng = np.random.default_rng(61)
    start = {"ch1": ch1_inputs(CH1.X[BADMINTON].copy()), "ch2": ch2_inputs(),
             "ch3": ch3_inputs(0.0, 1.0, 1.0), "ch5": ch5_inputs()}[chapter]
    cases = [start, *borderline_inputs(chapter), *(random_inputs(chapter, rng) for _ in range(n_random))]
    results = call_in_node("attention_explorer.js", "attend", [{**c, "scale": goal.scale} for c in cases])
    met = [s["met"] for s in call_in_node("attention_explorer.js", "goalStatus", [
        {"goal": goal.as_json(), "tokens": list(tokens), "scale": goal.scale,
         "inputs": {k: np.asarray(m).tolist() for k, m in c.items()},
         "scores": r["scores"][0], "weights": r["weights"][0]} for c, r in zip(cases, results)])]
    passed = ["Passed." in feedback(capsys, check, *answers(c)) for c in cases]
    assert met == passed
    assert not met[0] and True in met and False in met[1:]


def test_a_goal_on_an_explorer_is_sent_to_the_page_as_json():
    goal = ch2.goal_ball_ignores_it
    explorer = AttentionExplorer(TENNIS.tokens, TENNIS.X, scale=1.0, goal=goal)
    sent = explorer.get_state()["goal"]
    assert sent == goal.as_json() and sent["label"] == "ch2-ball-ignores-it"
    assert AttentionExplorer(TENNIS.tokens, TENNIS.X).get_state()["goal"] is None


def _goal(label="ch9-test", row="it", col="ball", view="weights", **options):
    return tune.Goal(label, "Goal: a test.", (Condition(Cell(view, row, col), ">", 0.4),), **options)


@pytest.mark.parametrize("goal, options, message", [
    (_goal(row="she", col="wet"), {}, "unknown tokens ['she']"),
    (_goal(fixed_rows={"robot": (0.0,) * 5}), {}, "unknown tokens ['robot']"),
    (_goal(view="output"), {}, "unknown views ['output']"),
    (tune.Goal("ch9-test", "Goal.", (Condition(CycleRatio(("He", "she")), ">", 2.0),)), {},
     "unknown tokens ['she']"),
    (_goal(fixed_rows={"He": (0.0, 1.0)}), {}, "the fixed row of 'He' has 2 entries, X has d_model=5"),
    (_goal(bounds={"W_q": (-1.0, 1.0)}), {}, "bounds on 'W_q'"),
    (_goal(), {"n_heads": 5, "W_q": np.eye(5), "W_k": np.eye(5)}, "n_heads=5"),
    ({"label": "ch9-test"}, {}, "goal must be a Goal from attncourse.checks.tune, got dict"),
])
def test_an_explorer_refuses_a_goal_it_cannot_show(goal, options, message):
    with pytest.raises(InvalidExplorerInput, match=message.replace("[", r"\[").replace("(", r"\(")):
        AttentionExplorer(TENNIS.tokens, TENNIS.X, goal=goal, **options)
    explorer = AttentionExplorer(TENNIS.tokens, TENNIS.X, **options)
    with pytest.raises(InvalidExplorerInput, match="goal"):
        explorer.goal = goal
    assert explorer.goal is None


def test_a_goal_is_declared_once_with_known_comparisons_and_views(monkeypatch):
    monkeypatch.setattr(tune, "GOALS", {})
    condition = Condition(Cell("weights", "it", "ball"), ">", 0.4)
    goal = tune.tune_goal("ch9-test", "Goal: a test.", [condition], fixed_rows={"He": [1, 2]})
    assert list(tune.GOALS.items()) == [("ch9-test", goal)]
    assert goal.fixed_rows == {"He": (1.0, 2.0)}
    with pytest.raises(ValueError, match="'ch9-test' already has a goal"):
        tune.tune_goal("ch9-test", "again", [condition])
    with pytest.raises(ValueError, match="unknown comparison '=='"):
        tune.tune_goal("ch9-eq", "Goal.", [Condition(Cell("weights", "it", "ball"), "==", 0.4)])
    with pytest.raises(ValueError, match=r"unknown views \['output'\]"):
        tune.tune_goal("ch9-view", "Goal.", [Condition(Cell("output", "it", "ball"), ">", 0.4)])


def test_every_tune_exercise_of_these_chapters_declares_its_goal():
    assert set(tune.GOALS) >= {goal.label for goal, *_ in EXERCISES.values()} | {"ch6-tune-alpha"}


# --- A goal on one setting: chapter 6's alpha -------------------------------------------
# The explorer's error and Python's are the same maths rounded differently (outputs of
# size 1 minus the convolution: ~1e-15 apart), so their smallest alphas agree to ~1e-12;
# the boundaries are straddled at 1e-9, which no reader types.
CH6 = ch6.goal_sharp_enough
CH6_X, CH6_KERNEL = (np.array(CH6.fixed[name]) for name in ("x", "kernel"))
HAIR = 1e-9


def ch6_error_at(x, kernel):
    """The explorer's readout in Python on the problem (x, kernel), remembered: the goal
    bisects the same alphas for every alpha it is asked about."""
    return functools.cache(lambda alpha: largest_error(x, kernel, alpha))


def ch6_alphas(rng, n_random):
    """A hair either side of both boundaries (where the error meets the target, and 1
    above it), each end of the slider and, given n_random, alphas over its whole range
    every 0.25 and n_random random ones, half of them near the boundaries."""
    best = ch6.smallest_alpha()
    edges = [edge + side * HAIR for edge in (best, best + CH6.margin) for side in (-1, 1)]
    many = [*np.arange(0.0, 30.0, 0.25), *rng.uniform(0, 30, n_random // 2),
            *rng.uniform(best - 1, best + 2, n_random // 2)] if n_random else []
    return [0.0, 30.0, *edges, *many]


def ch6_problems(rng):
    """The exercise's problem, and edits of it: a tap or a token nudged just inside and just
    outside np.allclose's tolerance, and a tap changed outright (the reader's edit)."""
    def nudged(values, k, outside):
        edited = values.copy()
        edited[k] += (tune.ROW_ATOL + tune.ROW_RTOL * abs(values[k])) * (1 + tune.ROW_RTOL / 2 if outside else 1 - 1e-6)
        return edited
    kernel_edited = CH6_KERNEL.copy()
    kernel_edited[2] += 0.5
    return [(CH6_X, CH6_KERNEL), (CH6_X, nudged(CH6_KERNEL, 1, False)), (CH6_X, nudged(CH6_KERNEL, 1, True)),
            (nudged(CH6_X, 3, True), CH6_KERNEL), (CH6_X, kernel_edited)]


@pytest.mark.parametrize("n_random", SWEEPS)
def test_the_alpha_checkmark_agrees_with_the_python_goal(n_random):
    rng = np.random.default_rng(6)
    cases = [(x, kernel, alpha) for x, kernel in ch6_problems(rng) for alpha in ch6_alphas(rng, n_random)]
    expected = []
    error_at_by_problem = {}
    for x, kernel, alpha in cases:
        error_at = error_at_by_problem.setdefault((x.tobytes(), kernel.tobytes()), ch6_error_at(x, kernel))
        expected.append({"met": CH6.holds(alpha, {"x": x, "kernel": kernel}, error_at),
                         "conditions": [CH6.meets(error_at(alpha)),
                                        alpha <= CH6.smallest(error_at) + CH6.margin]})
    statuses = call_in_node("conv_explorer.js", "alphaGoalStatus",
                            [{"goal": CH6.as_json(), "x": x, "kernel": kernel, "alpha": a} for x, kernel, a in cases])
    found = [{"met": s["met"], "conditions": [r["holds"] for r in s["requirements"] if not r["constraint"]]}
             for s in statuses]
    assert found == expected
    assert {e["met"] for e in expected} == {True, False}
    for k in range(2):
        assert {e["conditions"][k] for e in expected} == {True, False}, k
    # An edited problem never gets the checkmark, and the line says what changed.
    edited = [s for s, (x, kernel, _) in zip(statuses, cases) if CH6.changed({"x": x, "kernel": kernel})]
    assert edited and not any(s["met"] for s in edited)
    assert {r["now"] for s in edited for r in s["requirements"] if r["constraint"]} == {"changed: x", "changed: kernel"}


def test_the_explorer_bisects_the_smallest_alpha_as_the_check_does():
    (smallest,) = call_in_node("conv_explorer.js", "smallestAlpha",
                               [{"goal": CH6.as_json(), "x": CH6_X, "kernel": CH6_KERNEL}])
    best = ch6.smallest_alpha()
    assert abs(smallest - best) < 1e-11, (smallest, best)
    assert ch6.construction_error(best) < ch6.ERROR_TARGET <= ch6.construction_error(best - HAIR)


@pytest.mark.parametrize("n_random", SWEEPS)
def test_the_check_passes_exactly_when_the_alpha_checkmark_shows(n_random, capsys):
    rng = np.random.default_rng(66)
    alphas = [ch6.STARTING_ALPHA, *ch6_alphas(rng, n_random)]
    statuses = call_in_node("conv_explorer.js", "alphaGoalStatus",
                            [{"goal": CH6.as_json(), "x": CH6_X, "kernel": CH6_KERNEL, "alpha": a} for a in alphas])
    met = [s["met"] for s in statuses]
    passed = ["Passed." in feedback(capsys, checks.tune_alpha, alpha) for alpha in alphas]
    assert met == passed
    assert not met[0] and True in met and False in met[1:]


def test_the_page_never_carries_the_smallest_alpha():
    """The goal's JSON is the page's: the answer is bisected in the browser, never saved."""
    sent = ConvolutionExplorer(CH6_X, CH6_KERNEL, goal=CH6).get_state()["goal"]
    assert sent == CH6.as_json() and sent["label"] == "ch6-tune-alpha"
    best = ch6.smallest_alpha()
    numbers = [v for v in sent.values() if isinstance(v, float)] + sent["search"]
    assert all(abs(v - best) > 0.5 and abs(v - best - 1) > 0.5 for v in numbers), numbers


@pytest.mark.parametrize("options, message", [
    ({"setting": "query"}, "sets 'alpha' and reads out 'max_error', not 'query'"),
    ({"fixed": {"W_q": (1.0,)}}, r"fixes \['W_q'\]"),
    ({"fixed": {"x": (1.0, 2.0)}}, "its x has 2 entries, the explorer's 16"),
    ({"search": (0.0, 50.0)}, r"outside the slider's \[0, 30\]"),
])
def test_the_convolution_explorer_refuses_a_goal_it_cannot_show(options, message):
    goal = dataclasses.replace(CH6, **options)
    with pytest.raises(ValueError, match=message):
        ConvolutionExplorer(CH6_X, CH6_KERNEL, goal=goal)
    with pytest.raises(ValueError, match="SettingGoal"):
        ConvolutionExplorer(CH6_X, CH6_KERNEL, goal=ch2.goal_ball_ignores_it)


def test_a_setting_goal_is_declared_once_with_a_known_comparison(monkeypatch):
    monkeypatch.setattr(tune, "GOALS", {})
    declare = dict(setting="alpha", readout=("max_error", "largest error"), comparison="<", target=1e-3,
                   margin=1.0, search=(0.0, 30.0), fixed={"x": [1, 2]})
    goal = tune.tune_setting_goal("ch9-test", "Goal.", **declare)
    assert list(tune.GOALS.items()) == [("ch9-test", goal)] and goal.fixed == {"x": (1.0, 2.0)}
    with pytest.raises(ValueError, match="'ch9-test' already has a goal"):
        tune.tune_setting_goal("ch9-test", "again", **declare)
    with pytest.raises(ValueError, match="unknown comparison '=='"):
        tune.tune_setting_goal("ch9-eq", "Goal.", **{**declare, "comparison": "=="})
    with pytest.raises(ValueError, match="low < high"):
        tune.tune_setting_goal("ch9-search", "Goal.", **{**declare, "search": (3.0, 3.0)})
    with pytest.raises(ValueError, match="margin must be positive"):
        tune.tune_setting_goal("ch9-margin", "Goal.", **{**declare, "margin": 0.0})


def test_a_broken_bound_names_the_matrix_as_the_chapter_does():
    """Chapter 1 calls its embeddings A (the explorer's input_name): so does its goal line."""
    goal = ch1.goal_pool_prefers_badminton
    inputs = ch1_inputs(np.array([1.2, 0.0, 0.0, 0.0]))
    _, weights, _ = explorer_view(inputs["X"], scale=goal.scale)
    problem = {"goal": goal.as_json(), "tokens": list(CH1.tokens), "inputs": {"X": inputs["X"].tolist()},
               "scale": goal.scale, "scores": inputs["X"] @ inputs["X"].T, "weights": weights}
    named = call_in_node("attention_explorer.js", "goalStatus", [problem, {**problem, "inputName": "A"}])
    broken = [[r["text"] for r in status["requirements"] if not r["holds"]] for status in named]
    assert broken == [["every entry of X between -1 and 1"], ["every entry of A between -1 and 1"]]
