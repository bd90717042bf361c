"""`--verdryx-repeat=auto` against uniform repeats at the same samples, through the core's
paired gate (`compute_drift`) on simulated runs (docs/statistics.md, "Repeats where the
noise is"). The pytest-session figures are `benchmarks/power_table.py`'s.

    .venv/bin/python benchmarks/auto_repeats.py              # 300 trials a cell
    .venv/bin/python benchmarks/auto_repeats.py --trials 50

A trial draws an agent of 200 cases, a baseline of 200 x 3 samples, then the current run at
600 samples, uniform (3 each) or as `allocate` splits them by the baseline; a dropped agent
passes with max(p_i - 0.05, 0). Sets: p_i ~ Beta(4, 1), and 85% of the cases always passing
with 15% at p ~ U(0.2, 0.8).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from verdryx_core.addons.slo.stats import wilson_interval
from verdryx_core.evaluation.allocation import allocate
from verdryx_core.gating.drift import compute_drift
from verdryx_core.runs import BaselineCase

CASES = 200
DROP = 0.05


def population(rng: np.random.Generator, kind: str) -> np.ndarray:
    if kind == "beta":
        return rng.beta(4, 1, CASES)
    p = np.ones(CASES)
    flaky = int(CASES * 0.15)
    p[:flaky] = rng.uniform(0.2, 0.8, flaky)
    return p


def cell(kind: str, drop: float, trials: int, seed: int) -> dict[str, int]:
    rng = np.random.default_rng([seed, int(drop * 100), kind == "beta"])
    keys = [f"s::c{i}" for i in range(CASES)]
    regressed = {"uniform": 0, "auto": 0}
    for trial in range(trials):
        p = population(rng, kind)
        q = np.clip(p - drop, 0, 1)
        base = (rng.random((CASES, 3)) < p[:, None]).astype(float)
        cases = {
            key: BaselineCase(
                eval_set_id="s", case_id=key[3:], value=sum(row) / 3, samples=tuple(row)
            )
            for key, row in zip(keys, base.tolist(), strict=True)
        }
        allocation = allocate(keys, cases, 3 * CASES)
        auto = np.array([allocation(key) for key in keys])
        for name, repeats in (("uniform", np.full(CASES, 3)), ("auto", auto)):
            current = rng.binomial(repeats, q) / repeats
            report = compute_drift(
                current,
                base.mean(axis=1),
                paired_current=current,
                paired_baseline=base.mean(axis=1),
                iterations=1000,
                seed=trial,
            )
            regressed[name] += report.verdict == "regressed"
    return regressed


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    started = time.perf_counter()
    ok = True
    print(f"{'set':<8} {'condition':<10} | {'uniform x 3 [95%]':<24} | auto [95%]")
    for kind in ("beta", "stable"):
        for condition, drop in (("same", 0.0), ("drop", DROP)):
            found = cell(kind, drop, args.trials, args.seed)
            shown = []
            for name in ("uniform", "auto"):
                low, high = wilson_interval(found[name], args.trials)
                shown.append(f"{found[name] / args.trials:6.1%} [{low:5.1%}, {high:5.1%}]")
            print(f"{kind:<8} {condition:<10} | {shown[0]:<24} | {shown[1]}")
            if condition == "same":
                ok &= found["auto"] / args.trials <= 0.05
            else:
                ok &= found["auto"] >= found["uniform"]
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"elapsed {time.perf_counter() - started:.0f}s; {os.cpu_count()} cores, load {load}")
    print(f"{'PASS' if ok else 'MISSED'}: auto detects at least as often, false alarms <= 5%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
