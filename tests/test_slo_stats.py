"""Error-budget arithmetic: the worked numbers of docs/slo.md ("The numbers") and more like
them, scipy's Wilson interval, and the trigger ladder."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from verdryx_core.addons.slo import (
    SloInputError,
    budget_remaining,
    burn_rate,
    trigger_for,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("good", "total", "low", "high"),
    [
        (56, 60, 0.8407, 0.9738),
        (20, 40, 0.3520, 0.6480),
        (3, 4, 0.3006, 0.9544),
        (300, 400, 0.7053, 0.7899),
        (20, 20, 0.8389, 1.0),
        (0, 20, 0.0, 0.1611),
    ],
)
def test_wilson_worked_numbers(good: int, total: int, low: float, high: float) -> None:
    got = wilson_interval(good, total, 0.95)
    assert (round(got[0], 4), round(got[1], 4)) == (low, high)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.floats(0.5, 0.999),
)
def test_wilson_agrees_with_scipy(sample: tuple[int, int], confidence: float) -> None:
    good, total = sample
    expected = binomtest(good, total).proportion_ci(confidence, method="wilson")
    low, high = wilson_interval(good, total, confidence)
    assert low == pytest.approx(expected.low, abs=1e-9)
    assert high == pytest.approx(expected.high, abs=1e-9)


def test_wilson_edges() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    for bad in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(SloInputError, match="strictly between 0 and 1"):
            wilson_interval(1, 2, bad)


def test_budget_worked_numbers() -> None:
    assert budget_remaining(0.95, 0.95) == 0.0
    assert budget_remaining(0.90, 0.95) == -1.0
    assert budget_remaining(1.0, 0.95) == 1.0
    assert budget_remaining(0.5, 0.95) == -9.0  # not clamped: how far over shows
    assert budget_remaining(1.0, 1.0) == 1.0
    assert budget_remaining(0.99, 1.0) == -math.inf


def test_burn_worked_numbers() -> None:
    assert burn_rate(0.95, 0.95) == 1.0
    assert burn_rate(1.0, 0.95) == 0.0
    assert burn_rate(0.70, 0.95) == 6.0
    assert trigger_for(0.5, burn_rate(0.70, 0.95)) == "fast_burn"
    assert burn_rate(1.0, 1.0) == 0.0
    assert burn_rate(0.99, 1.0) == math.inf


@pytest.mark.parametrize(
    ("remaining", "rate", "trigger"),
    [
        (0.0, 0.0, "exhausted"),
        (-1.0, 10.0, "exhausted"),
        (0.5, 0.0, None),
        (0.5, 1.99, None),
        (0.5, 2.0, "slow_burn"),
        (0.5, 5.99, "slow_burn"),
        (0.5, 6.0, "fast_burn"),
        (0.5, math.inf, "fast_burn"),
    ],
)
def test_trigger_ladder(remaining: float, rate: float, trigger: str | None) -> None:
    assert trigger_for(remaining, rate) == trigger


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 1), st.floats(0, 0.999))
def test_budget_and_burn_are_two_views_of_one_ratio(observed: float, target: float) -> None:
    """Over the same runs the rate is 1 - remaining: why the rate needs its own slice."""
    assert burn_rate(observed, target) == pytest.approx(
        1 - budget_remaining(observed, target), abs=1e-6
    )
