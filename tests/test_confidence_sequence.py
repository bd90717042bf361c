"""The sequential gate's confidence sequence (docs/statistics.md, "The sequential gate"):
anytime-valid by simulation, across bounded distributions, and shrinking with the cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from verdryx_core.gating.confidence_sequence import BettingCS, betting_cs

# Paired differences in [-1, 1], each with a known mean: pass/fail on both sides (the gate's
# usual case), mostly-equal cases, skewed continuous scores, a point mass and a uniform.
DISTRIBUTIONS = {
    "pass-fail, unchanged": (
        lambda rng, n: rng.choice([-1.0, 0.0, 1.0], p=[0.2, 0.6, 0.2], size=n),
        0.0,
    ),
    "pass-fail, 10-point drop": (
        lambda rng, n: rng.choice([-1.0, 0.0, 1.0], p=[0.25, 0.6, 0.15], size=n),
        -0.1,
    ),
    "mostly equal": (
        lambda rng, n: rng.choice([-1.0, 0.0, 1.0], p=[0.03, 0.95, 0.02], size=n),
        -0.01,
    ),
    "skewed scores": (
        lambda rng, n: rng.beta(5, 1, size=n) - rng.beta(4, 1, size=n),
        5 / 6 - 4 / 5,
    ),
    "uniform": (lambda rng, n: rng.uniform(-1.0, 0.6, size=n), -0.2),
    "point mass": (lambda rng, n: np.full(n, 0.3), 0.3),
}


def _wilson_low(hits: int, trials: int, confidence: float = 0.99) -> float:
    """The Wilson score interval's lower end for a proportion (two-sided `confidence`)."""
    z = float(norm.ppf(0.5 + confidence / 2))
    share = hits / trials
    centre = share + z * z / (2 * trials)
    spread = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials))
    return (centre - spread) / (1 + z * z / trials)


def _miscovered(draw, mean: float, *, runs: int, n: int, alpha: float, seed: int) -> int:
    """In how many of `runs` sequences of `n` observations the confidence sequence leaves out
    the true mean at some time (a chunk of runs at a time, to bound the memory)."""
    rng = np.random.default_rng(seed)
    missed = 0
    for start in range(0, runs, 50):
        values = np.stack([draw(rng, n) for _ in range(min(50, runs - start))])
        lower, upper = betting_cs(values, alpha=alpha, grid=201)
        missed += int(np.any((lower > mean) | (upper < mean), axis=1).sum())
    return missed


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_leaves_out_the_true_mean_at_any_time_in_at_most_alpha_of_runs(name: str) -> None:
    # alpha = 0.2 makes a miscovering sequence common enough to be seen in 200 runs; the
    # check is that the rate is not significantly above alpha: the 99% Wilson interval of
    # the miscovered share reaches down to alpha (seeded: it always passes or always fails).
    draw, mean = DISTRIBUTIONS[name]
    runs, alpha = 200, 0.2
    missed = _miscovered(draw, mean, runs=runs, n=150, alpha=alpha, seed=7)
    assert _wilson_low(missed, runs) <= alpha, (name, missed)


def test_a_shifted_mean_is_left_out_often():
    # The check above can fail: a sequence centred on the wrong mean misses nearly always.
    draw, mean = DISTRIBUTIONS["pass-fail, 10-point drop"]
    missed = _miscovered(draw, mean + 0.25, runs=50, n=300, alpha=0.05, seed=3)
    assert _wilson_low(missed, 50) > 0.2


def test_it_shrinks_and_never_widens():
    draw, _ = DISTRIBUTIONS["pass-fail, unchanged"]
    lower, upper = betting_cs(draw(np.random.default_rng(0), 2000))
    width = upper - lower
    assert np.all(np.diff(width) <= 1e-12)  # nested: the running intersection
    assert width[99] < 0.6 and width[999] < 0.2 and width[1999] < 0.15
    # Within a small factor of the fixed-sample normal interval it pays for being anytime.
    fixed = 2 * 1.96 * math.sqrt(0.4 / 2000)
    assert width[1999] < 2.5 * fixed


def test_one_at_a_time_agrees_with_the_whole_sequence():
    values = DISTRIBUTIONS["skewed scores"][0](np.random.default_rng(5), 300)
    lower, upper = betting_cs(values, alpha=0.05)
    sequence = BettingCS(alpha=0.05)
    for t, value in enumerate(values):
        bounds = sequence.update(float(value))
        assert bounds.n == t + 1
        assert bounds.lower == pytest.approx(lower[t], abs=1e-12)
        assert bounds.upper == pytest.approx(upper[t], abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=60))
def test_bounds_are_ordered_and_within_the_range(values: list[float]) -> None:
    sequence = BettingCS()
    for value in values:
        bounds = sequence.update(value)
        assert -1.0 <= bounds.lower <= bounds.upper <= 1.0


@pytest.mark.parametrize("value", [1.5, -1.01, math.nan, math.inf])
def test_an_observation_out_of_range_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="outside"):
        BettingCS().update(value)
    with pytest.raises(ValueError):
        betting_cs([0.0, value])
