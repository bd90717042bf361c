"""The judge correction's interval covers the true pass rate at the nominal 95%.

    .venv/bin/python benchmarks/judge_correction.py [--simulations 2000]

Each simulation draws a run of 200 cases of true pass rate 0.6 judged by a judge with TPR
0.9 / TNR 0.8, and 40 labels of each human class judged by the same judge; the product's
`corrected_rate` (docs/calibrating-the-judge.md, "The corrected pass rate") gives the
corrected rate and its bootstrap interval. Prints the mean corrected rate (unbiased: within
1 point of the truth), the coverage (within 2 points of 95%), the machine's load average,
and a PASS/MISSED line. Not a speed claim: the figures are statistical.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from verdryx_core.judge.calibration.correction import Calibration, corrected_rate

TRUTH, TPR, TNR, CASES, PER_CLASS = 0.6, 0.9, 0.8, 200, 40


def coverage(*, simulations: int, seed: int = 0, iterations: int = 1000) -> tuple[float, float]:
    """(share of intervals covering the truth, mean corrected rate) over `simulations`."""
    rng = np.random.default_rng(seed)
    covered, estimates = 0, []
    for index in range(simulations):
        true_pass = rng.random(CASES) < TRUTH
        judged = np.where(true_pass, rng.random(CASES) < TPR, rng.random(CASES) < 1 - TNR)
        hits = rng.random(PER_CLASS) < TPR
        false_passes = rng.random(PER_CLASS) < 1 - TNR
        calibration = Calibration(
            human=(True,) * PER_CLASS + (False,) * PER_CLASS,
            judge=tuple(bool(x) for x in hits) + tuple(bool(x) for x in false_passes),
        )
        rate = corrected_rate(
            [bool(x) for x in judged], calibration, iterations=iterations, seed=index
        )
        estimates.append(rate.corrected)
        if rate.ci is not None and rate.ci[0] <= TRUTH <= rate.ci[1]:
            covered += 1
    return covered / simulations, float(np.mean(estimates))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulations", type=int, default=2000)
    args = parser.parse_args()
    start = time.perf_counter()
    share, mean = coverage(simulations=args.simulations)
    elapsed = time.perf_counter() - start
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"simulations {args.simulations}, {elapsed:.1f} s, load average {load:.2f}")
    print(f"mean corrected rate {mean:.4f} (truth {TRUTH}), bias {mean - TRUTH:+.4f}")
    print(f"95% interval coverage {share:.3f}")
    ok = abs(mean - TRUTH) <= 0.01 and abs(share - 0.95) <= 0.02
    print("PASS" if ok else "MISSED", "(bias within 1 point, coverage within 2 points of 95%)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
