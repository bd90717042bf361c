"""Time one drift check against the original verdryx's plain-Python bootstrap loop.

    .venv/bin/python benchmarks/drift.py                    # 10,000 and 50,000 a side
    .venv/bin/python benchmarks/drift.py --condition loaded # only with one core taken
    .venv/bin/python benchmarks/drift.py --quick            # small smoke run

Each size is measured twice: as the machine is, and loaded, with a busy-loop subprocess
this script starts taking one core (as on a shared CI runner: the check's threads lose
their second core, the single-threaded Python loop does not). Targets: at 10,000 and
50,000 scores per side, at least 50x faster than the Python loop measured in the same
conditions, under 1 s, with peak memory under 200 MB. Scores are all-distinct floats, the
worst case (every resample draws n indices); pass/fail scores, the common case, take the
multinomial shortcut and are shown on their own line. The Python loop is the original
verdryx's (docs/statistics.md, "The original verdryx"): per iteration, n `randrange` draws
per side, then the difference of the two means.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from verdryx_core.gating.drift import DEFAULT_ITERATIONS, compute_drift

TARGET_SPEEDUP = 50.0
TARGET_SECONDS = 1.0
TARGET_PEAK_MB = 200.0


def python_loop_bootstrap(
    current: list[float], baseline: list[float], iterations: int, seed: int = 0
) -> tuple[float, float]:
    """The original verdryx's bootstrap: one `randrange` per draw, sorted differences, order
    statistics (docs/statistics.md, "The original verdryx")."""
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


class busy_core:
    """A busy-loop subprocess for the duration of a `with`: the machine as CI shares it,
    one core taken by something else. Our threads lose their second core; the plain
    Python loop, single-threaded, loses little."""

    def __enter__(self) -> busy_core:
        self.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.2)  # let it start spinning
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.kill()
        self.process.wait()


def measure_size(
    n: int, iterations: int, loop_iterations: int, repeats: int, rng: np.random.Generator
) -> list[tuple[str, float, float, float | None, float]]:
    """Per score kind: (label, two-sample s, with paired s, Python-loop s or None, peak MB)."""
    continuous = (rng.beta(5, 2, n), rng.beta(5, 2, n) - 0.01)
    pass_fail = ((rng.random(n) < 0.7) * 1.0, (rng.random(n) < 0.69) * 1.0)
    rows = []
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
        python_s = None
        if label == "distinct":
            cur_list, base_list = current.tolist(), baseline.tolist()
            start = time.perf_counter()
            python_loop_bootstrap(cur_list, base_list, loop_iterations)
            python_s = (time.perf_counter() - start) * iterations / loop_iterations
        rows.append((label, numpy_s, paired_s, python_s, peak))
    return rows


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
        "(default: all of them, which takes a few minutes at 50,000)",
    )
    parser.add_argument(
        "--condition",
        choices=["idle", "loaded", "both"],
        default="both",
        help="loaded: a busy-loop subprocess takes one core while measuring (default both)",
    )
    args = parser.parse_args()
    sizes = (1_000, 2_000) if args.quick else (10_000, 50_000)
    iterations = 200 if args.quick else DEFAULT_ITERATIONS
    loop_iterations = min(args.baseline_iterations or iterations, iterations)
    repeats = 3
    conditions = ("idle", "loaded") if args.condition == "both" else (args.condition,)

    print(f"drift check, {iterations} bootstrap resamples, 95% interval; median of {repeats}")
    if loop_iterations < iterations:
        print(f"(Python loop run for {loop_iterations} resamples and scaled to {iterations})")
    verdicts = []
    for condition in conditions:
        print()
        print(
            "no extra load:"
            if condition == "idle"
            else "loaded: a busy-loop process takes one of the cores:"
        )
        header = (
            f"{'scores/side':>11}  {'scores':<9} {'numpy s':>8} {'+paired s':>9} "
            f"{'python s':>9} {'speedup':>8} {'peak MB':>8}"
        )
        print(header)
        print("-" * len(header))
        rng = np.random.default_rng(2026)
        with busy_core() if condition == "loaded" else contextlib.nullcontext():
            for n in sizes:
                for label, numpy_s, paired_s, python_s, peak in measure_size(
                    n, iterations, loop_iterations, repeats, rng
                ):
                    line = f"{n:>11,}  {label:<9} {numpy_s:>8.3f} {paired_s:>9.3f}"
                    if python_s is not None:
                        speedup = python_s / numpy_s
                        line += f" {python_s:>9.1f} {speedup:>7.0f}x"
                        verdicts.append((condition, n, numpy_s, paired_s, speedup, peak))
                    else:
                        line += f" {'':>9} {'':>8}"
                    print(f"{line} {peak:>8.1f}", flush=True)

    print()
    print("distinct floats, two-sample check, against the Python loop in the same conditions:")
    for condition, n, _, _, speedup, _ in verdicts:
        print(
            f"  speedup {speedup:4.0f}x at {n:>6,} scores a side, {condition:<6} "
            f"(target >= {TARGET_SPEEDUP:.0f}x)  {_mark(speedup >= TARGET_SPEEDUP)}"
        )
    condition, n, numpy_s, paired_s, speedup, peak = max(
        verdicts, key=lambda verdict: (verdict[1], verdict[0] == "idle")
    )
    print(f"at {n:,} scores per side ({condition}):")
    print(f"  time    {numpy_s:.3f} s (target < {TARGET_SECONDS:.0f} s)   {_mark(numpy_s < 1)}")
    print(f"  with the paired comparison too: {paired_s:.3f} s")
    print(f"  peak    {peak:.1f} MB (target < {TARGET_PEAK_MB:.0f} MB) {_mark(peak < 200)}")
    return 0


def _mark(met: bool) -> str:
    return "met" if met else "MISSED"


if __name__ == "__main__":
    raise SystemExit(main())
