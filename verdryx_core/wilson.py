"""The Wilson score interval of a proportion, the one formula every figure of a rate uses: a
pairwise judge's win rate, an SLO's good fraction (the SLO add-on words its own refusals
around it), the benchmarks' error rates."""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["wilson_interval"]


def wilson_interval(successes: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of successes / total, clipped to [0, 1]; ValueError for no
    trial."""
    if total <= 0:
        raise ValueError("a Wilson interval needs at least one trial")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / total
    z2 = z * z
    denominator = 1 + z2 / total
    centre = (p + z2 / (2 * total)) / denominator
    margin = (z / denominator) * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total))
    return max(0.0, centre - margin), min(1.0, centre + margin)
