"""Checks of chapter 8's exercises: positions (sinusoidal tables, RoPE)."""

from __future__ import annotations

import numpy as np

from attncourse.attention import causal_mask, scaled_dot_product_attention
from attncourse.checks.core import (
    Failed,
    NotImplementedYet,
    as_float,
    close,
    difference,
    exercise,
    expect_array,
    expect_function,
    inputs,
    is_real_number,
    precision_problem,
    show,
    type_name,
)
from attncourse.checks.predict import predict_exercise
from attncourse.checks.tune import Readout, tune_readout_goal
from attncourse.positions import rope as _rope
from attncourse.positions import sinusoidal_positions

# ---------------------------------------------------------------------------------------
# ch8-predict-sinusoidal-dot

PREDICT_D_MODEL, PREDICT_BASE, PREDICT_POSITIONS = 4, 100.0, (10, 13)
_table = sinusoidal_positions(max(PREDICT_POSITIONS) + 1, PREDICT_D_MODEL, PREDICT_BASE)

predict_sinusoidal_dot = predict_exercise(
    "ch8-predict-sinusoidal-dot",
    answer=float(_table[PREDICT_POSITIONS[0]] @ _table[PREDICT_POSITIONS[1]]),
    tolerance=0.01,
    hint="Each pair of columns (2i, 2i+1) of the table is a point on the unit circle at the angle "
    "p w_i, and the dot product of two points on the unit circle is the cosine of the angle between "
    "them. Here the frequencies w_i are 1 and 0.1 radian per position.",
    explanation="PE(10) . PE(13) = cos(3 × 1) + cos(3 × 0.1) = -0.990 + 0.955: only the offset 3 "
    "matters, not the positions 10 and 13. The fast pair has turned almost half a circle; the slow "
    "pair has hardly moved.",
)

# ---------------------------------------------------------------------------------------
# ch8-rope


def _rope_cases() -> list[tuple[str, np.ndarray, dict]]:
    """(description, X, keyword arguments): default positions, given ones, batches, bases."""
    rng = np.random.default_rng(808)
    return [
        ("X of shape (6, 8), default positions", rng.standard_normal((6, 8)), {}),
        ("X of shape (5, 2), base 10", rng.standard_normal((5, 2)), {"base": 10.0}),
        ("X of shape (4, 6), positions [3, -1, 2.5, 40]", rng.standard_normal((4, 6)),
         {"positions": np.array([3.0, -1.0, 2.5, 40.0])}),
        ("X of shape (2, 3, 7, 4) (batch, n_heads, seq, d_head), base 100",
         rng.standard_normal((2, 3, 7, 4)), {"base": 100.0}),
    ]


def _rotate_half(X, positions=None, base=10000.0):
    """The other convention (GPT-NeoX, Hugging Face's Llama): pair i with i + d/2."""
    d = X.shape[-1]
    pairs = np.concatenate([X[..., 0:d // 2, None], X[..., d // 2:, None]], axis=-1)  # (..., seq, d/2, 2)
    rotated = _rope(pairs.reshape(X.shape), positions, base)  # interleaved layout
    return np.concatenate([rotated[..., 0::2], rotated[..., 1::2]], axis=-1)


def _rope_mistakes(X, kwargs) -> list[tuple[np.ndarray, str]]:
    seq, d = X.shape[-2:]
    positions = kwargs.get("positions", np.arange(seq, dtype=float))
    base = kwargs.get("base", 10000.0)
    return [
        (_rope(X, -positions, base),
         "every pair turns the wrong way: multiply x[2i] + j x[2i+1] by exp(+j p theta_i), "
         "that is x[2i] cos - x[2i+1] sin and x[2i] sin + x[2i+1] cos."),
        (_rotate_half(X, positions, base),
         "you paired dimension i with i + d/2 (the 'rotate half' layout of some libraries); this "
         "exercise uses RoFormer's interleaved pairs (2i, 2i + 1)."),
        (_rope(X, positions, base ** 0.5) if d > 2 else None,
         "the angles are those of theta_i = base**(-i/d): the exponent is -2i/d, with i the pair's "
         "index (0 .. d/2 - 1)."),
        (X, "the output is X unchanged: row p must be turned by positions[p] times theta_i."),
    ]


def _worst_row(output: np.ndarray, expected: np.ndarray) -> tuple[int, ...]:
    """The index of the row (a token's vector, the last axis) where ``output`` differs from
    ``expected`` most, NaN counting as most: the row a message should show."""
    with np.errstate(invalid="ignore"):
        gap = np.nan_to_num(np.abs(output.astype(np.float64) - expected), nan=np.inf).max(axis=-1)  # (..., seq)
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(gap)), gap.shape))


@exercise("ch8-rope", points=3)
def rope(run, candidate) -> str:
    """Exercise ch8-rope: ``rope(X, positions=None, base=10000.0)`` rotates each interleaved
    pair (2i, 2i+1) of row p by positions[p] * base**(-2i/d); positions default to 0..seq-1;
    X (..., seq, d) is never changed. Compared with attncourse.positions.rope."""
    fn = expect_function(candidate, "rope")
    cases = inputs(_rope_cases())  # one at a time when the grader counts the inputs right
    for description, X, kwargs in cases:
        given = X.copy()
        arguments = {name: np.copy(value) if name == "positions" else value for name, value in kwargs.items()}
        result = run(lambda given=given, arguments=arguments: fn(given, **arguments), name="rope")
        if not np.array_equal(given, X):
            raise Failed(f"rope changed its input X ({description}): work on a new array "
                         "(np.empty_like(X) or X.copy()), never on X itself.")
        output = expect_array(result, X.shape, f"rope on {description}")
        expected = _rope(X, **kwargs)
        if close(output, expected):
            continue
        for mistake, message in _rope_mistakes(X, kwargs):
            if mistake is not None and close(output, mistake):
                raise Failed(f"rope on {description}: {message}")
        if precision_problem(output, expected):
            raise Failed(f"rope on {description}: {precision_problem(output, expected)}")
        row = _worst_row(output, expected)
        where = f"row {row[-1]}" + (f" of X{list(row[:-1])}" if len(row) > 1 else "")
        raise Failed(f"rope on {description}: {where} is {show(output[row][:6])}..., "
                     f"expected {show(expected[row][:6])}... "
                     f"({difference(output, expected)}). Hint: theta_i = "
                     "base**(-2i/d); pair (2i, 2i+1) of row p turns by positions[p] * theta_i.")
    return (f"your rope agrees with the course's on {len(cases)} problems (default and given "
            "positions, a batch of heads, several bases) and leaves X as it was.")


# ---------------------------------------------------------------------------------------
# ch8-tune-previous-token

TUNE_SEQ, TUNE_BASE = 8, 10.0
TUNE_KEY = np.array([1.0, 0.0, 1.0, 0.0])  # every token's key: the same word repeated
TUNE_TARGET = 0.9


def tuning_weights(query, scale: float) -> np.ndarray:
    """The causal RoPE head of exercise ch8-tune-previous-token, (seq, seq): every token the
    same query and key, rotated by its position (base 10), scores times ``scale``."""
    Q = _rope(np.tile(np.asarray(query, dtype=float), (TUNE_SEQ, 1)), base=TUNE_BASE)  # (seq, d)
    K = _rope(np.tile(TUNE_KEY, (TUNE_SEQ, 1)), base=TUNE_BASE)  # (seq, d)
    return scaled_dot_product_attention(Q, K, np.eye(TUNE_SEQ), mask=causal_mask(TUNE_SEQ), scale=scale)[1]


def previous_token_weight(weights: np.ndarray) -> np.ndarray:
    """(seq - 1,): how much each token 1..seq-1 attends to the token just before it."""
    return np.diagonal(weights, offset=-1)


def readouts_at(offset: int, scale: float) -> dict[str, float]:
    """The tune explorer's readout at a setting: its query is the key turned by ``offset``
    positions (PositionExplorer's RoPE head), the least weight on the previous token."""
    query = _rope(TUNE_KEY[None], [float(offset)], TUNE_BASE)[0]  # (4,)
    return {"previous_weight": float(previous_token_weight(tuning_weights(query, scale)).min())}


TUNE_TOKENS = ("word",) * TUNE_SEQ  # the same word eight times: only positions differ

goal_previous_token = tune_readout_goal(
    "ch8-tune-previous-token",
    "Make every token after the first put at least 0.9 of its attention on the token before it.",
    settings=("offset", "scale"),
    conditions=(Readout("previous_weight", "least weight on the previous token", ">=", TUNE_TARGET),),
    fixed={"encoding": "rope", "tokens": list(TUNE_TOKENS), "d": 4, "base": TUNE_BASE, "causal": True,
           "key": TUNE_KEY.tolist()},
    readouts_at=readouts_at,
)


@exercise("ch8-tune-previous-token", points=2)
def tune_previous_token(run, query, scale) -> str:
    """Exercise ch8-tune-previous-token: a query (4,) and a scale at which every token after
    the first puts at least 0.9 of its attention on the token before it."""
    if query is None or scale is None:
        raise NotImplementedYet("set query (4 numbers) and scale.")
    if not is_real_number(scale):
        raise Failed(f"scale should be one number, got {type_name(scale)}.")
    scale = as_float(scale)
    q = expect_array(query, (4,), "query")
    if np.array_equal(q, TUNE_KEY) and float(scale) == 1.0:
        raise NotImplementedYet("query and scale are still the stub's: change them.")
    if not (np.isfinite(q).all() and np.isfinite(scale) and scale > 0):
        raise Failed(f"query must be finite and scale a finite number > 0; got {show(q)} and {scale}.")
    if not 0 < float(scale) <= 1e3 or np.abs(q).max() > 1e3:
        raise Failed("keep the scale and the query's entries within 1000: a head that sharp could "
                     "never be trained (chapter 6's tune exercise says why).")
    weights = tuning_weights(q, float(scale))
    on_previous = previous_token_weight(weights)
    if goal_previous_token.holds({"previous_weight": on_previous.min()}):
        return (f"every token puts at least {on_previous.min():.3f} of its attention on the token "
                "before it. RoPE scores depend on the offset only, so a query whose score peaks at "
                "the offset -1 (the key turned back by one position is one) does so at every position.")
    favourite = weights.argmax(axis=-1)[1:] - np.arange(1, TUNE_SEQ)  # (seq - 1,): offsets j - i
    if (favourite == -1).all():
        raise Failed(f"every token prefers the token before it, but only by {on_previous.min():.3f} "
                     f"at the least (the goal is {TUNE_TARGET}). Hint: sharpen the head: a larger scale.")
    raise Failed(f"the tokens' favourite offsets j - i are {favourite.tolist()}, not all -1. Hint: the "
                 "score of a query at i and a key at j is q^T R(j - i) k with R a rotation; which q "
                 "makes it largest at j - i = -1? Try turning the key by one position with RoPE.")
