"""Time one drift check against the seed's plain-Python bootstrap loop.

    .venv/bin/python benchmarks/drift.py            # 10,000 and 50,000 scores per side
    .venv/bin/python benchmarks/drift.py --quick    # small smoke run

Targets: at 50,000 scores per side, at least 50x faster than the Python loop measured in
the same run, under 1 s, with peak memory under 200 MB. Scores are all-distinct floats, the
worst case (every resample draws n indices); pass/fail scores, the common case, take the
multinomial shortcut and are shown on their own line. The Python loop is the seed's: per
iteration, n `randrange` draws per side, then the difference of the two means.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from verdryx_core.drift import DEFAULT_ITERATIONS, compute_drift

TARGET_SPEEDUP = 50.0
TARGET_SECONDS = 1.0
TARGET_PEAK_MB = 200.0


def python_loop_bootstrap(
    current: list[float], baseline: list[float], iterations: int, seed: int = 0
) -> tuple[float, float]:
    """The seed's bootstrap: one `randrange` per draw, sorted differences, order statistics."""
    rng = random.Random(seed)
    n_c, n_b = len(current), len(baseline)
    diffs = []
    for _ in range(iterations):
        resample_c = [current[rng.randrange(n_c)] for _ in range(n_c)]
        resample_b = [baseline[rng.randrange(n_b)] for _ in range(n_b)]
        diffs.append(sum(resample_c) / n_c - sum(resample_b) / n_b)
    diffs.sort()
    tail = 0.025
    return diffs[int(tail * iterations)], diffs[min(int((1 - tail) * iterations), iterations - 1)]


def timed(action: Callable[[], object], repeats: int) -> float:
    """Median wall time of `repeats` runs (the machine is shared; one run can be unlucky)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_mb(action: Callable[[], object]) -> float:
    tracemalloc.start()  # numpy reports its buffers to tracemalloc
    try:
        action()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="1,000 and 2,000 scores, 200 resamples"
    )
    parser.add_argument(
        "--baseline-iterations",
        type=int,
        default=None,
        help="run the Python loop for this many resamples and scale to the full count "
        "(default: all of them, which takes a minute or two at 50,000)",
    )
    args = parser.parse_args()
    sizes = (1_000, 2_000) if args.quick else (10_000, 50_000)
    iterations = 200 if args.quick else DEFAULT_ITERATIONS
    loop_iterations = min(args.baseline_iterations or iterations, iterations)
    repeats = 3

    print(f"drift check, {iterations} bootstrap resamples, 95% interval; median of {repeats}")
    if loop_iterations < iterations:
        print(f"(Python loop run for {loop_iterations} resamples and scaled to {iterations})")
    header = (
        f"{'scores/side':>11}  {'scores':<9} {'numpy s':>8} {'+paired s':>9} "
        f"{'python s':>9} {'speedup':>8} {'peak MB':>8}"
    )
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(2026)
    verdicts = []
    for n in sizes:
        continuous = (rng.beta(5, 2, n), rng.beta(5, 2, n) - 0.01)
        pass_fail = ((rng.random(n) < 0.7) * 1.0, (rng.random(n) < 0.69) * 1.0)
        for label, (current, baseline) in (("distinct", continuous), ("pass/fail", pass_fail)):

            def check(current=current, baseline=baseline) -> object:
                return compute_drift(current, baseline, iterations=iterations)

            def check_paired(current=current, baseline=baseline) -> object:
                return compute_drift(
                    current,
                    baseline,
                    paired_current=current,
                    paired_baseline=baseline,
                    iterations=iterations,
                )

            numpy_s = timed(check, repeats)
            paired_s = timed(check_paired, repeats)
            peak = peak_mb(check_paired)
            line = f"{n:>11,}  {label:<9} {numpy_s:>8.3f} {paired_s:>9.3f}"
            if label == "distinct":
                cur_list, base_list = current.tolist(), baseline.tolist()
                start = time.perf_counter()
                python_loop_bootstrap(cur_list, base_list, loop_iterations)
                python_s = (time.perf_counter() - start) * iterations / loop_iterations
                speedup = python_s / numpy_s
                line += f" {python_s:>9.1f} {speedup:>7.0f}x"
                verdicts.append((n, numpy_s, paired_s, speedup, peak))
            else:
                line += f" {'':>9} {'':>8}"
            print(f"{line} {peak:>8.1f}", flush=True)

    n, numpy_s, paired_s, speedup, peak = verdicts[-1]
    print()
    print(f"at {n:,} scores per side (distinct floats, two-sample check):")
    ok = (
        speedup >= TARGET_SPEEDUP,
        numpy_s < TARGET_SECONDS,
        peak < TARGET_PEAK_MB,
    )
    print(f"  speedup {speedup:.0f}x   (target >= {TARGET_SPEEDUP:.0f}x)  {_mark(ok[0])}")
    print(f"  time    {numpy_s:.3f} s (target < {TARGET_SECONDS:.0f} s)   {_mark(ok[1])}")
    print(f"  with the paired comparison too: {paired_s:.3f} s")
    print(f"  peak    {peak:.1f} MB (target < {TARGET_PEAK_MB:.0f} MB) {_mark(ok[2])}")
    return 0


def _mark(met: bool) -> str:
    return "met" if met else "MISSED"


if __name__ == "__main__":
    raise SystemExit(main())
