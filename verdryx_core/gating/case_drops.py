"""Which cases regressed: an exact test of each case's drop, then Benjamini-Hochberg across
the cases that can show one (docs/statistics.md, "Which cases regressed").

A regressed verdict is about the mean; a reader then asks which cases are real drops and
which are noise. Each case sampled at least twice on both sides gets a one-sided exact
test of "the current samples score lower than the baseline's": Fisher's exact test when
every sample is pass/fail (0 or 1), else a permutation test of the difference of the sample
means (every split enumerated when there are few, else a seeded Monte Carlo). With many
cases some would look significant by chance, so the p-values are adjusted by
Benjamini-Hochberg and a case is a `significant drop` when its adjusted value is at most
the false discovery rate asked for (`--verdryx-fdr`). A case with one sample on a side is
never tested: one sample cannot tell a drop from a flip of a flaky case.

Both tests are discrete: given what they condition on (the passes of both sides together,
or the pooled scores), a case's p-value cannot go below a smallest value, 1 for a case
whose samples are all alike, 1/20 for 3/3 then 0/3. A case whose smallest p-value is above
the false discovery rate can never be flagged, whatever its split, and counting it in
Benjamini-Hochberg's m only hides the cases that can: such cases are left out of the count
(`CaseDrop.counted` false: "cannot show a drop with N samples"). Which cases are left out
depends only on what the tests condition on, never on the split, so the p-values of the
counted cases stay exact and the false discovery rate holds (Tarone's idea for discrete
tests; the rule used here never leaves out a case plain Benjamini-Hochberg could flag).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from verdryx_core.defaults import DEFAULT_FDR

__all__ = [
    "DEFAULT_FDR",
    "CaseDrop",
    "bh_adjust",
    "case_drop_tests",
    "fisher_drop_p",
    "fisher_min_p",
    "permutation_drop_p",
    "permutation_min_p",
]

#: Splits enumerated exactly up to this many; beyond, a Monte Carlo of `_DRAWS` splits.
_EXACT_SPLITS: Final = 20_000
_DRAWS: Final = 10_000
#: Two means this close are equal (float sums of the same values in another order).
_TIE: Final = 1e-12


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseDrop:
    """One case's drop test: its one-sided p-value, the smallest its samples could give, and
    the BH-adjusted value among the cases that can show a drop (None when it cannot)."""

    key: str
    p_value: float
    #: Benjamini-Hochberg adjusted over the counted cases; None: left out of the count.
    q_value: float | None
    significant: bool
    #: `fisher` (pass/fail samples) or `permutation` (scores).
    test: str
    #: The smallest p-value any split of these samples gives (what the test conditions on
    #: fixed): above the false discovery rate, the case cannot show a drop.
    min_p: float = 0.0
    baseline_n: int = 0
    current_n: int = 0

    @property
    def counted(self) -> bool:
        """Whether the case is in the multiple-testing count (it could show a drop)."""
        return self.q_value is not None

    def samples_words(self) -> str:
        """`3 samples a side`, or `3 baseline and 5 current samples`."""
        if self.baseline_n == self.current_n:
            return f"{self.current_n} samples a side"
        return f"{self.baseline_n} baseline and {self.current_n} current samples"


@functools.lru_cache(maxsize=4096)
def fisher_drop_p(base_passes: int, base_n: int, cur_passes: int, cur_n: int) -> float:
    """One-sided Fisher's exact p of a lower pass rate now: with the passes of both sides
    fixed, the hypergeometric chance that the current side holds at most `cur_passes`.
    (Cached: a large set repeats the same few tables, 3/3 against 3/3 most of all.)"""
    total, passes = base_n + cur_n, base_passes + cur_passes
    low = max(0, passes - base_n)
    denominator = math.comb(total, cur_n)
    numerator = sum(
        math.comb(passes, k) * math.comb(total - passes, cur_n - k)
        for k in range(low, cur_passes + 1)
    )
    return min(1.0, numerator / denominator)


def fisher_min_p(passes: int, base_n: int, cur_n: int) -> float:
    """The smallest one-sided Fisher p of `passes` passes in all, `base_n` and `cur_n`
    samples: the current side holding as few of them as it can."""
    low = max(0, passes - base_n)
    return fisher_drop_p(passes - low, base_n, low, cur_n)


def permutation_drop_p(
    baseline: Sequence[float], current: Sequence[float], *, seed: int = 0
) -> float:
    """One-sided permutation p of a lower mean now: the share of splits of the pooled samples
    into groups of these sizes whose current mean is at most the observed one less the
    baseline's. Exact when there are at most `_EXACT_SPLITS` splits; else a Monte Carlo,
    (1 + hits) / (1 + draws), which never says 0."""
    return _permutation(baseline, current, seed=seed)[0]


def permutation_min_p(baseline: Sequence[float], current: Sequence[float]) -> float:
    """The smallest p `permutation_drop_p` can give for these pooled samples and sizes,
    whatever the split: exact, the share of splits as low as the lowest; by Monte Carlo,
    1 / (1 + draws) unless every sample is alike (then every split ties: 1)."""
    return _permutation(baseline, current, seed=0)[1]


def _permutation(
    baseline: Sequence[float], current: Sequence[float], *, seed: int
) -> tuple[float, float]:
    """(p, smallest possible p) of the permutation test, from one enumeration."""
    pooled = np.asarray([*baseline, *current], dtype=np.float64)
    n_cur, total = len(current), pooled.size
    observed = float(np.mean(current)) - float(np.mean(baseline))
    pooled_sum = float(pooled.sum())
    if math.comb(total, n_cur) <= _EXACT_SPLITS:
        picks = np.fromiter(
            itertools.chain.from_iterable(itertools.combinations(range(total), n_cur)),
            dtype=np.int64,
        ).reshape(-1, n_cur)
        cur_sums = pooled[picks].sum(axis=1)
        diffs = cur_sums / n_cur - (pooled_sum - cur_sums) / (total - n_cur)
        p = float(np.mean(diffs <= observed + _TIE))
        return p, float(np.mean(diffs <= float(diffs.min()) + _TIE))
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((_DRAWS, total)), axis=1)[:, :n_cur]
    cur_sums = pooled[order].sum(axis=1)
    diffs = cur_sums / n_cur - (pooled_sum - cur_sums) / (total - n_cur)
    hits = int(np.sum(diffs <= observed + _TIE))
    alike = float(pooled.max() - pooled.min()) <= _TIE
    return (1 + hits) / (1 + _DRAWS), 1.0 if alike else 1 / (1 + _DRAWS)


def bh_adjust(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values: p_(i) m / i, made monotone from the largest
    down and capped at 1 (what `scipy.stats.false_discovery_control` returns)."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p)
    scaled = p[order] * m / np.arange(1, m + 1)
    monotone = np.minimum.accumulate(scaled[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(monotone, 1.0)
    return adjusted


def case_drop_tests(
    samples: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    fdr: float = DEFAULT_FDR,
    seed: int = 0,
) -> dict[str, CaseDrop]:
    """The drop test of every case with at least 2 samples on both sides: `samples[key]` is
    (baseline samples, current samples). Cases with fewer are left out (never significant).
    A tested case whose smallest possible p-value is above `fdr` is left out of the
    Benjamini-Hochberg count (`q_value` None, never significant): it cannot show a drop."""
    tested: list[tuple[str, float, float, str, int, int]] = []
    for index, (key, (base, cur)) in enumerate(samples.items()):
        if len(base) < 2 or len(cur) < 2:
            continue
        if all(value in (0.0, 1.0) for value in (*base, *cur)):
            passes = (sum(1 for v in base if v == 1.0), sum(1 for v in cur if v == 1.0))
            p = fisher_drop_p(passes[0], len(base), passes[1], len(cur))
            smallest = fisher_min_p(sum(passes), len(base), len(cur))
            tested.append((key, p, smallest, "fisher", len(base), len(cur)))
        else:
            p, smallest = _permutation(base, cur, seed=seed + index)
            tested.append((key, p, smallest, "permutation", len(base), len(cur)))
    # Left out on what the tests condition on alone, never on the split: exact p-values stay
    # exact among the counted (the tolerance: a float p of exactly the rate counts).
    counted = [row for row in tested if row[2] <= fdr + 1e-12]
    adjusted = dict(
        zip((row[0] for row in counted), bh_adjust([row[1] for row in counted]), strict=True)
    )
    drops = {}
    for key, p, smallest, kind, base_n, cur_n in tested:
        q = adjusted.get(key)
        drops[key] = CaseDrop(
            key=key,
            p_value=p,
            q_value=None if q is None else float(q),
            significant=q is not None and bool(q <= fdr + 1e-12),
            test=kind,
            min_p=smallest,
            baseline_n=base_n,
            current_n=cur_n,
        )
    return drops
