"""The error-budget arithmetic: Wilson intervals, budget left, burn rate, triggers."""

from __future__ import annotations

import math
from typing import Final

from verdryx_core.addons.errors import SloInputError
from verdryx_core.wilson import wilson_interval as core_wilson_interval

__all__ = [
    "FAST_BURN",
    "SLOW_BURN",
    "budget_remaining",
    "burn_rate",
    "trigger_for",
    "wilson_interval",
]

#: Google SRE workbook multiwindow thresholds: 6x burns a 28-day budget in under 5 days.
FAST_BURN: Final = 6.0
SLOW_BURN: Final = 2.0

#: Budget and rate are rounded to this many decimals: 1 - 0.95 is not 0.05 in binary, and
#: unrounded 70% against a 95% target burns at 5.999999999999996x, just short of fast.
_DECIMALS: Final = 9


def wilson_interval(good: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for good/total, clipped to [0, 1]; (0, 1) when total <= 0."""
    if not 0.0 < confidence < 1.0:
        raise SloInputError(
            f"confidence {confidence!r} is not strictly between 0 and 1; pass e.g. 0.95"
        )
    if total <= 0:
        return 0.0, 1.0
    return core_wilson_interval(good, total, confidence)


def budget_remaining(observed: float, target: float) -> float:
    """Fraction of the error budget left: 1 untouched, 0 spent, negative overspent. Not
    clamped, so how far over is visible."""
    allowance = 1 - target
    if allowance <= 0:
        return 1.0 if observed >= 1 else -math.inf
    return round(1 - (1 - observed) / allowance, _DECIMALS)


def burn_rate(observed: float, target: float) -> float:
    """How many times faster than sustainable the budget burns (1.0: exactly on budget)."""
    allowance = 1 - target
    if allowance <= 0:
        return 0.0 if observed >= 1 else math.inf
    return round((1 - observed) / allowance, _DECIMALS)


def trigger_for(remaining: float, rate: float) -> str | None:
    """`exhausted` outranks any rate; then `fast_burn`, `slow_burn`, or nothing."""
    if remaining <= 0:
        return "exhausted"
    if rate <= 0:
        return None
    if rate >= FAST_BURN:
        return "fast_burn"
    if rate >= SLOW_BURN:
        return "slow_burn"
    return None
