"""Which cases regressed: an exact test of each case's drop, then Benjamini-Hochberg across
them (docs/statistics.md, "Which cases regressed").

A regressed verdict is about the mean; a reader then asks which cases are real drops and
which are noise. Each case sampled at least twice on both sides gets a one-sided exact
test of "the current samples score lower than the baseline's": Fisher's exact test when
every sample is pass/fail (0 or 1), else a permutation test of the difference of the sample
means (every split enumerated when there are few, else a seeded Monte Carlo). With many
cases some would look significant by chance, so the p-values are adjusted by
Benjamini-Hochberg and a case is a `significant drop` when its adjusted value is at most
the false discovery rate asked for (`--verdryx-fdr`). A case with one sample on a side is
never tested: one sample cannot tell a drop from a flip of a flaky case.
"""

from __future__ import annotations

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
    "permutation_drop_p",
]

#: Splits enumerated exactly up to this many; beyond, a Monte Carlo of `_DRAWS` splits.
_EXACT_SPLITS: Final = 20_000
_DRAWS: Final = 10_000
#: Two means this close are equal (float sums of the same values in another order).
_TIE: Final = 1e-12


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseDrop:
    """One case's drop test: its one-sided p-value and the BH-adjusted one."""

    key: str
    p_value: float
    q_value: float
    significant: bool
    #: `fisher` (pass/fail samples) or `permutation` (scores).
    test: str


def fisher_drop_p(base_passes: int, base_n: int, cur_passes: int, cur_n: int) -> float:
    """One-sided Fisher's exact p of a lower pass rate now: with the passes of both sides
    fixed, the hypergeometric chance that the current side holds at most `cur_passes`."""
    total, passes = base_n + cur_n, base_passes + cur_passes
    low = max(0, passes - base_n)
    denominator = math.comb(total, cur_n)
    numerator = sum(
        math.comb(passes, k) * math.comb(total - passes, cur_n - k)
        for k in range(low, cur_passes + 1)
    )
    return min(1.0, numerator / denominator)


def permutation_drop_p(
    baseline: Sequence[float], current: Sequence[float], *, seed: int = 0
) -> float:
    """One-sided permutation p of a lower mean now: the share of splits of the pooled samples
    into groups of these sizes whose current mean is at most the observed one less the
    baseline's. Exact when there are at most `_EXACT_SPLITS` splits; else a Monte Carlo,
    (1 + hits) / (1 + draws), which never says 0."""
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
        return float(np.mean(diffs <= observed + _TIE))
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((_DRAWS, total)), axis=1)[:, :n_cur]
    cur_sums = pooled[order].sum(axis=1)
    diffs = cur_sums / n_cur - (pooled_sum - cur_sums) / (total - n_cur)
    hits = int(np.sum(diffs <= observed + _TIE))
    return (1 + hits) / (1 + _DRAWS)


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
    (baseline samples, current samples). Cases with fewer are left out (never significant)."""
    tested: list[tuple[str, float, str]] = []
    for index, (key, (base, cur)) in enumerate(samples.items()):
        if len(base) < 2 or len(cur) < 2:
            continue
        if all(value in (0.0, 1.0) for value in (*base, *cur)):
            passes = (sum(1 for v in base if v == 1.0), sum(1 for v in cur if v == 1.0))
            p = fisher_drop_p(passes[0], len(base), passes[1], len(cur))
            tested.append((key, p, "fisher"))
        else:
            tested.append((key, permutation_drop_p(base, cur, seed=seed + index), "permutation"))
    adjusted = bh_adjust([p for _, p, _ in tested])
    return {
        key: CaseDrop(
            key=key,
            p_value=p,
            q_value=float(q),
            significant=bool(q <= fdr + 1e-12),
            test=kind,
        )
        for (key, p, kind), q in zip(tested, adjusted, strict=True)
    }
