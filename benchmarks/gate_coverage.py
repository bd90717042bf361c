"""Does the gate use its alpha budget? Its one-sided false alarm across designs, the intervals
it could have used instead, and its detection against simpler rules at equal false red.

    .venv/bin/python benchmarks/gate_coverage.py           # 6 designs x 4 sizes, 400 reps
    .venv/bin/python benchmarks/gate_coverage.py --quick   # one design, 2 sizes (a smoke run)

A design is how the cases' pass rates are spread and how many samples a case has (1 or 3,
its score the mean of its samples): `skewed` draws p_i ~ Beta(2, 1); `stable` has 85% of the
cases passing 97-100% of the time and the rest between 30% and 90% (most cases cannot
move: a typical agent eval); `U-shaped` draws p_i ~ Beta(0.5, 0.5). Each repetition draws
the pass rates, a baseline run and a current run of the same agent ("unchanged") and of one
whose every p_i fell by 5 points ("dropped"), and asks `compute_drift` (the function every
face gates through) for the verdict of the default `significant` gate: `regressed` when the
95% paired interval lies below zero, so its nominal one-sided false alarm is 2.5%.

Beside it, on the same runs: the paired t interval (scipy's `ttest_rel`, one-sided 2.5%), a
z-test (mean difference over its standard error below -1.96), BCa (scipy's `bootstrap`,
up to 200 cases), and the flat rule `mean < baseline - 0.05`. "At equal false red" the flat
rule's cut is moved to the gate's own false-alarm rate in that design (the matching
quantile of the unchanged runs' mean differences), and its detection read at that cut.
Rates carry Wilson 95% intervals (docs/statistics.md, "The alpha budget").
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections.abc import Callable

import benchlib
import numpy as np
from scipy import stats

from verdryx_core.addons.slo.stats import wilson_interval
from verdryx_core.gating.drift import compute_drift

NOMINAL = 0.025
DROP = 0.05
FLAT = 0.05
SIZES = (20, 50, 200, 1_000)
BCA_UP_TO = 200


def _skewed(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.beta(2, 1, n)


def _stable(rng: np.random.Generator, n: int) -> np.ndarray:
    steady = rng.random(n) < 0.85
    return np.where(steady, rng.uniform(0.97, 1.0, n), rng.uniform(0.3, 0.9, n))


def _u_shaped(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.beta(0.5, 0.5, n)


DESIGNS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "skewed": _skewed,
    "stable": _stable,
    "U-shaped": _u_shaped,
}


def rate(hits: int, n: int) -> str:
    """In percent, with its Wilson interval: ` 3.3 [0.6,16.7]`."""
    low, high = wilson_interval(hits, n)
    return f"{100 * hits / n:4.1f} [{100 * low:.1f},{100 * high:.1f}]"


def _t_says_drop(diffs: np.ndarray) -> bool:
    if np.all(diffs == diffs[0]):
        return False
    result = stats.ttest_rel(diffs, np.zeros_like(diffs), alternative="less")
    return bool(result.pvalue < NOMINAL)


def _z(diffs: np.ndarray) -> float:
    sd = float(diffs.std(ddof=1))
    return float(diffs.mean()) / (sd / math.sqrt(diffs.size)) if sd > 0 else 0.0


def _bca_says_drop(diffs: np.ndarray, seed: int) -> bool:
    if np.all(diffs == diffs[0]):
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate resamples of a mostly constant design
        result = stats.bootstrap(
            (diffs,),
            np.mean,
            n_resamples=2_000,
            confidence_level=0.95,
            method="BCa",
            vectorized=True,
            random_state=seed,
        )
    return bool(result.confidence_interval.high < 0)


def simulate(design: str, samples: int, cases: int, reps: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng([seed, samples, cases, len(design)])
    draw = DESIGNS[design]
    counts = {"gate": [0, 0], "t": [0, 0], "z": [0, 0], "bca": [0, 0], "flat": [0, 0]}
    null_means: list[float] = []
    drop_means: list[float] = []
    for rep in range(reps):
        p = draw(rng, cases)
        baseline = rng.binomial(samples, p) / samples
        runs = {
            0: rng.binomial(samples, p) / samples,
            1: rng.binomial(samples, np.clip(p - DROP, 0.0, 1.0)) / samples,
        }
        for condition, current in runs.items():
            report = compute_drift(
                current, baseline, paired_current=current, paired_baseline=baseline, seed=rep
            )
            diffs = current - baseline
            (null_means if condition == 0 else drop_means).append(float(diffs.mean()))
            counts["gate"][condition] += report.verdict == "regressed"
            counts["t"][condition] += _t_says_drop(diffs)
            counts["z"][condition] += _z(diffs) < -1.959963984540054
            counts["flat"][condition] += float(diffs.mean()) < -FLAT
            if cases <= BCA_UP_TO:
                counts["bca"][condition] += _bca_says_drop(diffs, rep)
    # The flat rule with its cut moved to the gate's own false-alarm rate in this design.
    gate_false = counts["gate"][0] / reps
    cut = float(np.quantile(null_means, gate_false)) if gate_false > 0 else min(null_means)
    calibrated = sum(mean < cut for mean in drop_means)
    return {"counts": counts, "flat_at_gate": calibrated}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one design, 20 and 50 cases")
    parser.add_argument("--reps", type=int, help="repetitions per cell (default 400; quick 30)")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    reps = args.reps or (30 if args.quick else 400)
    designs = [("skewed", 1)] if args.quick else [(d, k) for d in DESIGNS for k in (1, 3)]
    sizes = SIZES[:2] if args.quick else SIZES

    started = time.perf_counter()
    print(
        f"one-sided false alarm of an unchanged agent (nominal {NOMINAL:.1%}) and detection of a "
        f"{DROP * 100:.0f}-point drop; {reps} repetitions per cell; rates in % [Wilson 95%]"
    )
    gate_hits = gate_reps = 0
    worst_gap = 0.0
    for design, samples in designs:
        print(f"\n{design}, {samples} sample{'s' if samples > 1 else ''} per case")
        print(
            f"{'cases':>6} | {'false red: gate':>16} {'paired t':>16} {'BCa':>16} "
            f"{'flat':>16} | {'detects: gate':>16} {'z-test':>16} {'flat':>16} "
            f"{'flat at gate FR':>16}"
        )
        for cases in sizes:
            result = simulate(design, samples, cases, reps, args.seed)
            c = result["counts"]
            assert isinstance(c, dict)
            gate_hits += c["gate"][0]
            gate_reps += reps
            bca = rate(c["bca"][0], reps) if cases <= BCA_UP_TO else f"{'-':>16}"
            flat_at = int(result["flat_at_gate"])  # type: ignore[call-overload]
            worst_gap = max(worst_gap, (flat_at - c["gate"][1]) / reps)
            print(
                f"{cases:>6,} | {rate(c['gate'][0], reps):>16} {rate(c['t'][0], reps):>16} "
                f"{bca:>16} {rate(c['flat'][0], reps):>16} | {rate(c['gate'][1], reps):>16} "
                f"{rate(c['z'][1], reps):>16} {rate(c['flat'][1], reps):>16} "
                f"{rate(flat_at, reps):>16}",
                flush=True,
            )
    low, high = wilson_interval(gate_hits, gate_reps)
    pooled = gate_hits / gate_reps
    print(
        f"\ngate's false red over every cell: {pooled:.2%} [{low:.2%}, {high:.2%}] "
        f"(nominal {NOMINAL:.1%}); the flat rule at the gate's false red detects at most "
        f"{worst_gap:+.1%} more than the gate in any cell"
    )
    print(f"elapsed {time.perf_counter() - started:.0f} s")
    met = low <= NOMINAL <= high or (0.015 <= pooled <= 0.035)
    print(
        benchlib.verdict(
            met,
            f"pooled one-sided false red {pooled:.2%}, target near {NOMINAL:.1%} "
            "(1.5-3.5%; an error rate: the load does not change it)",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
