"""Repeats where the noise is: `--verdryx-repeat=auto` spends a budget of samples on the
cases the baseline saw vary (docs/statistics.md, "Repeats where the noise is").

The gate's paired mean is the mean of the cases' means, so its variance is
sum_i s_i^2 / n_i / N^2, s_i^2 the variance of one sample of case i and n_i its samples.
Given a total of samples, that is smallest when n_i grows with s_i (Neyman allocation); here
every case gets one sample, and each further sample goes to the case whose variance it cuts
most, s_i^2 / (n_i (n_i + 1)), which for this separable convex sum is the optimum in whole
samples.

The s_i come from the baseline alone, never from the run being measured: allocating on the
run's own outcomes would spend samples on the cases that happened to fail and bias their
means. A baseline case's own few samples say little of its s_i: with 3 samples, a case that
passes 80% of the time never flips half the time. So each s_i^2 is shrunk toward the set's
(empirical Bayes). Of pass/fail samples, it is the posterior mean of p (1 - p) under a Beta
prior fitted to the baseline's cases by moments; in a set where most cases never flip the
prior piles up at 0 and 1 and a never-flipped case keeps about one sample, in a set of
middling cases it gets its share. Of scores, the sample variance is pooled with the set's
mean variance as if that were `_PRIOR_WEIGHT` more samples. A case the baseline does not
hold, or sampled once, gets the set's mean. A baseline with no case sampled twice says
nothing about where the noise is: the budget is then spread evenly, and the summary says so.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from verdryx_core.runs import BaselineCase

__all__ = ["MAX_REPEAT", "Allocation", "allocate"]

#: The most samples one case gets (as `--verdryx-repeat`).
MAX_REPEAT: Final = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class Allocation:
    """Samples per case key; `fallback` says why they are uniform, when they are."""

    repeats: Mapping[str, int]
    fallback: str | None = None

    def __call__(self, key: str) -> int:
        return self.repeats.get(key, 1)

    @property
    def total(self) -> int:
        return sum(self.repeats.values())

    def words(self) -> str:
        """`samples: 1 x 170 cases, 4 x 30 cases`, the most common count first."""
        counts = Counter(self.repeats.values())
        parts = [
            f"{samples} x {cases} case{'s' if cases != 1 else ''}"
            for samples, cases in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        ]
        return "samples: " + ", ".join(parts)


def allocate(
    keys: Sequence[str],
    baseline: Mapping[str, BaselineCase],
    budget: int,
    *,
    floors: Mapping[str, int] | None = None,
) -> Allocation:
    """Split `budget` samples over the cases `keys` by the baseline's per-case variance.

    `floors` are samples a case needs whatever its variance (a `pass@K` case needs K); they
    are given first, out of the budget, and the rest is allocated as usual."""
    if not keys:
        return Allocation(repeats={})
    floor = {key: max(1, min(MAX_REPEAT, (floors or {}).get(key, 1))) for key in keys}
    sampled = {
        key: case.samples
        for key in keys
        if (case := baseline.get(key)) is not None and len(case.samples) >= 2
    }
    if not sampled:
        each = max(1, min(MAX_REPEAT, budget // len(keys)))
        return Allocation(
            repeats={key: max(each, floor[key]) for key in keys},
            fallback=(
                "the baseline keeps no per-case variance (no case sampled twice, or saved "
                f"before verdryx kept samples): {each} sample{'s' if each != 1 else ''} each"
            ),
        )
    spreads = _shrunk_sd(sampled)
    typical = math.sqrt(math.fsum(value * value for value in spreads.values()) / len(spreads))
    sd = {key: spreads.get(key, typical) for key in keys}
    repeats = dict(floor)
    # Max-heap of the variance one more sample removes: s^2 / (n (n + 1)).
    heap = [
        (-(s * s) / (repeats[key] * (repeats[key] + 1)), index, key)
        for index, (key, s) in enumerate(sd.items())
        if s > 0 and repeats[key] < MAX_REPEAT
    ]
    heapq.heapify(heap)
    left = budget - sum(repeats.values())
    while left > 0 and heap:
        _, index, key = heapq.heappop(heap)
        repeats[key] += 1
        left -= 1
        n = repeats[key]
        if n < MAX_REPEAT:
            s = sd[key]
            heapq.heappush(heap, (-(s * s) / (n * (n + 1)), index, key))
    return Allocation(repeats=repeats)


#: Of scores: the set's mean variance counts as this many samples beside a case's own.
_PRIOR_WEIGHT: Final = 2.0


def _shrunk_sd(sampled: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each case's per-sample sd, shrunk toward the set's (see the module docstring)."""
    binary = {
        key: samples
        for key, samples in sampled.items()
        if all(value in (0.0, 1.0) for value in samples)
    }
    out: dict[str, float] = {}
    if binary:
        a, b = _beta_prior(binary.values())
        for key, samples in binary.items():
            k, x = len(samples), math.fsum(samples)
            out[key] = math.sqrt((a + x) * (b + k - x) / ((a + b + k) * (a + b + k + 1)))
    scores = {key: samples for key, samples in sampled.items() if key not in binary}
    if scores:
        variances = {key: _variance(samples) for key, samples in scores.items()}
        pooled = math.fsum(variances.values()) / len(variances)
        for key, samples in scores.items():
            own = len(samples) - 1
            out[key] = math.sqrt(
                (own * variances[key] + _PRIOR_WEIGHT * pooled) / (own + _PRIOR_WEIGHT)
            )
    return out


def _beta_prior(cases: Iterable[Sequence[float]]) -> tuple[float, float]:
    """A Beta(a, b) prior of the cases' pass rates, by moments of their observed rates:
    E[f] = mu, E[f^2 - f / k] / (1 - 1 / k) = E[p^2] for a case of k samples."""
    rates, squares = [], []
    for samples in cases:
        k = len(samples)
        f = math.fsum(samples) / k
        rates.append(f)
        squares.append((f * f - f / k) / (1 - 1 / k))
    mu = math.fsum(rates) / len(rates)
    spread = math.fsum(squares) / len(squares) - mu * mu
    if mu <= 0 or mu >= 1:  # every case always passed (or failed): nothing varies
        return (1e-3, 1e-9) if mu >= 1 else (1e-9, 1e-3)
    # Between-case variance at most mu (1 - mu); at 0 the cases are alike (a flat prior of
    # great weight): clamped to keep a + b finite and positive.
    spread = min(max(spread, 1e-9), mu * (1 - mu) * (1 - 1e-9))
    total = mu * (1 - mu) / spread - 1
    return mu * total, (1 - mu) * total


def _variance(samples: Sequence[float]) -> float:
    if min(samples) == max(samples):
        return 0.0
    mean = math.fsum(samples) / len(samples)
    return math.fsum((v - mean) ** 2 for v in samples) / (len(samples) - 1)
