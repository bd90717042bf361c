"""Repeats where the noise is: `--verdryx-repeat=auto` spends a budget of samples on the
cases the baseline saw vary (docs/statistics.md, "Repeats where the noise is").

The gate's paired mean is the mean of the cases' means, so its variance is
sum_i s_i^2 / n_i / N^2, s_i^2 the variance of one sample of case i and n_i its samples.
Given a total of samples, that is smallest when n_i grows with s_i (Neyman allocation); here
every case gets one sample, and each further sample goes to the case whose variance it cuts
most, s_i^2 / (n_i (n_i + 1)), which for this separable convex sum is the optimum in whole
samples. A case that never varied in the baseline keeps its one sample.

The s_i come from the baseline alone, never from the run being measured: allocating on the
run's own outcomes would spend samples on the cases that happened to fail and bias their
means. A case with fewer than two baseline samples (new, or sampled once) is given the
mean s_i of the cases that have them. A baseline with no repeated case at all says nothing
about where the noise is: the budget is then spread evenly, and the summary says so.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence
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


def allocate(keys: Sequence[str], baseline: Mapping[str, BaselineCase], budget: int) -> Allocation:
    """Split `budget` samples over the cases `keys` by the baseline's per-case variance."""
    if not keys:
        return Allocation(repeats={})
    spreads = {
        key: _sd(case.samples)
        for key in keys
        if (case := baseline.get(key)) is not None and len(case.samples) >= 2
    }
    if not spreads:
        each = max(1, min(MAX_REPEAT, budget // len(keys)))
        return Allocation(
            repeats=dict.fromkeys(keys, each),
            fallback=(
                "the baseline keeps no per-case variance (no case sampled twice, or saved "
                f"before verdryx kept samples): {each} sample{'s' if each != 1 else ''} each"
            ),
        )
    typical = math.fsum(spreads.values()) / len(spreads)
    sd = {key: spreads.get(key, typical) for key in keys}
    repeats = dict.fromkeys(keys, 1)
    # Max-heap of the variance one more sample removes: s^2 / (n (n + 1)).
    heap = [(-(s * s) / 2, index, key) for index, (key, s) in enumerate(sd.items()) if s > 0]
    heapq.heapify(heap)
    left = budget - len(keys)
    while left > 0 and heap:
        _, index, key = heapq.heappop(heap)
        repeats[key] += 1
        left -= 1
        n = repeats[key]
        if n < MAX_REPEAT:
            s = sd[key]
            heapq.heappush(heap, (-(s * s) / (n * (n + 1)), index, key))
    return Allocation(repeats=repeats)


def _sd(samples: Sequence[float]) -> float:
    if min(samples) == max(samples):
        return 0.0
    mean = math.fsum(samples) / len(samples)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in samples) / (len(samples) - 1))
