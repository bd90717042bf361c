"""How often the gate's cluster bootstrap interval covers the true mean paired difference, at
50 clusters of 10 cases (docs/statistics.md, "Clustered cases").

    .venv/bin/python benchmarks/cluster_coverage.py            # 4,000 data sets
    .venv/bin/python benchmarks/cluster_coverage.py --sets 500

A data set is one baseline run and one current run of an unchanged agent: in each run a
cluster draws one shock shared by its cases, and case i passes when
sqrt(rho) z_cluster + sqrt(1 - rho) e < Phi^-1(0.8) (latent ICC rho = 0.7). The paired
differences' true mean is 0; the interval is the gate's (`cluster_bootstrap_means`, 2,000
draws, the 2.5th and 97.5th percentiles), beside the interval that treats the cases as
independent (mean +- 1.96 sd / sqrt(n)). Target: cluster coverage within 2 points of 95%.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from verdryx_core.addons.slo.stats import wilson_interval
from verdryx_core.gating.clusters import Clusters, cluster_bootstrap_means

NOMINAL = 0.95
TOLERANCE = 0.02


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sets", type=int, default=4000)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--rho", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    g, m, rho = args.clusters, args.size, args.rho
    clusters = Clusters.of([f"g{i // m}" for i in range(g * m)])
    bar = 0.8416212335729143  # Phi^-1(0.8)
    started = time.perf_counter()
    covered = independent = 0
    for _ in range(args.sets):
        runs = [
            (
                (rng.normal(0, math.sqrt(rho), (g, 1)) + rng.normal(0, math.sqrt(1 - rho), (g, m)))
                < bar
            )
            .astype(float)
            .ravel()
            for _ in range(2)
        ]
        diffs = runs[1] - runs[0]
        low, high = np.quantile(cluster_bootstrap_means(diffs, clusters, 2000, rng), [0.025, 0.975])
        covered += low <= 0 <= high
        independent += abs(diffs.mean()) <= 1.96 * diffs.std(ddof=1) / math.sqrt(diffs.size)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    for name, hits in (("cluster bootstrap", covered), ("independent cases", independent)):
        low, high = wilson_interval(hits, args.sets)
        print(f"{name:<18} coverage {hits / args.sets:6.1%} [{low:5.1%}, {high:5.1%}]")
    print(
        f"{args.sets} data sets of {g} clusters x {m}, rho {rho}; "
        f"{time.perf_counter() - started:.0f}s; {os.cpu_count()} cores, load average {load}"
    )
    ok = abs(covered / args.sets - NOMINAL) <= TOLERANCE
    print(f"{'PASS' if ok else 'MISSED'}: cluster coverage within {TOLERANCE:.0%} of {NOMINAL:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
