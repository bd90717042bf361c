"""Whether `verdryx plan`'s recommended design reaches its stated power when cases cluster
and a cluster's shock is shared by all its cases and samples in a session
(docs/statistics.md, "Clustered cases in a plan").

    .venv/bin/python benchmarks/plan_clusters.py              # 1,000 gates a design
    .venv/bin/python benchmarks/plan_clusters.py --quick      # a smoke run: 50 gates

The agent is the power table's clustered one: 50 clusters of 10 cases, pass rate 0.8; in
each session a cluster draws one shock z, and a sample passes when sqrt(rho) z +
sqrt(1 - rho) e < Phi^-1(0.8 - drop), e its own. A plan is made to see a 5-point drop at 80%
power from one pilot session of 50 x 10 x 3 (`noise_of_scores`, as `verdryx plan --run`),
and, for comparison, from the model's true parts. Each design is then simulated: baseline
and current sessions, the gate decided by the normal form of its cluster interval (the mean
paired difference plus 1.96 cluster-robust standard errors below zero). `before` is what
the plan offered before it knew session shocks: repeats at the current 500 cases, the
design effect applied to every sample.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from benchlib import verdict
from scipy import stats

from verdryx_core.addons.slo.stats import wilson_interval
from verdryx_core.gating.planning import Noise, noise_of_scores, plan, power_at
from verdryx_core.runs import Score

SIZE, CLUSTERS, PILOT_SAMPLES, DROP, POWER = 10, 50, 3, 0.05, 0.8
RHOS = (0.7, 0.3, 0.05)


def sessions(
    p: np.ndarray, rho: float, r: int, drop: float, trials: int, rng: np.random.Generator
) -> np.ndarray:
    shock = rng.standard_normal((trials, p.shape[0], 1, 1))
    own = rng.standard_normal((trials, *p.shape, r))
    bar = stats.norm.ppf(np.clip(p - drop, 1e-9, 1 - 1e-9))[None, :, :, None]
    return (math.sqrt(rho) * shock + math.sqrt(1 - rho) * own < bar).mean(axis=3)


def power(clusters: int, rho: float, r: int, trials: int, rng: np.random.Generator) -> int:
    p = np.full((clusters, SIZE), 0.8)
    hits = 0
    for start in range(0, trials, 100):
        count = min(100, trials - start)
        diffs = sessions(p, rho, r, DROP, count, rng) - sessions(p, rho, r, 0.0, count, rng)
        mean = diffs.mean(axis=(1, 2))
        residuals = diffs.sum(axis=2) - SIZE * mean[:, None]
        se = np.sqrt(clusters / (clusters - 1) * (residuals**2).sum(axis=1)) / (clusters * SIZE)
        hits += int((mean + 1.96 * se < 0).sum())
    return hits


def pilot(rho: float, rng: np.random.Generator) -> Noise:
    """`verdryx plan --run` of one pilot session: every case sampled 3 times."""
    shock = rng.standard_normal((CLUSTERS, 1, 1))
    own = rng.standard_normal((CLUSTERS, SIZE, PILOT_SAMPLES))
    draws = (math.sqrt(rho) * shock + math.sqrt(1 - rho) * own < stats.norm.ppf(0.8)).astype(float)
    return noise_of_scores(
        [
            Score(
                case_id=f"c{g}-{i}",
                eval_set_id="s",
                value=float(draws[g, i].mean()),
                grader="exact",
                samples=tuple(draws[g, i].tolist()),
                cluster=f"g{g}",
            )
            for g in range(CLUSTERS)
            for i in range(SIZE)
        ]
    )


def true_noise(rho: float) -> Noise:
    nodes, weights = np.polynomial.hermite_e.hermegauss(120)
    weights = weights / weights.sum()
    q = stats.norm.cdf((stats.norm.ppf(0.8) - math.sqrt(rho) * nodes) / math.sqrt(1 - rho))
    mean = float(weights @ q)
    return Noise(
        variance=float(weights @ (q * (1 - q))),
        cases=CLUSTERS * SIZE,
        samples=PILOT_SAMPLES,
        source="repeats",
        mean=mean,
        cluster_shock=float(weights @ (q - mean) ** 2),
        cluster_size=SIZE,
        shocks="paired",
    )


def before(noise: Noise) -> int:
    """The repeats the plan offered before it knew session shocks: the design effect at
    the pilot's size applied to every sample's variance."""
    z_sum = stats.norm.ppf(0.975) + stats.norm.ppf(POWER)
    deff = noise.design_effect
    flat = Noise(variance=noise.variance, cases=noise.cases, samples=1, source="repeats", mean=0.8)
    return max(1, math.ceil(z_sum**2 * deff * flat.pair_variance(DROP) / DROP**2 / noise.cases))


def cell(hits: int, trials: int) -> str:
    low, high = wilson_interval(hits, trials)
    return f"{hits / trials:6.1%} [{low:5.1%}, {high:5.1%}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--pilots", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 50 gates, 1 pilot")
    args = parser.parse_args()
    trials, pilots = (50, 1) if args.quick else (args.trials, args.pilots)
    rng = np.random.default_rng(2026)
    began = time.monotonic()
    print(f"drop {DROP}, power {POWER:.0%}, clusters of {SIZE}, {trials} gates a design")
    print(f"{'latent rho':>10} | {'planned from':<16} | {'design':<26} | predicted | simulated")
    held = True
    for rho in RHOS:
        sources = [("true parts", true_noise(rho))]
        sources += [(f"pilot {k + 1}", pilot(rho, rng)) for k in range(pilots)]
        for name, noise in sources:
            result = plan(noise, detect=DROP, power=POWER)
            clusters = result.clusters_needed or 2
            hits = power(clusters, rho, 1, trials, rng)
            predicted = power_at(noise, clusters * SIZE, 1, DROP)
            print(
                f"{rho:>10} | {name:<16} | {clusters * SIZE:>5} cases x 1 ({clusters} cl.)"
                f"{'':<3} | {predicted:8.1%}  | {cell(hits, trials)}"
            )
            if name == "true parts":
                held &= wilson_interval(hits, trials)[1] >= POWER
            if result.repeats_needed is not None:
                r = result.repeats_needed
                hits = power(CLUSTERS, rho, r, trials, rng)
                print(
                    f"{rho:>10} | {name:<16} | {CLUSTERS * SIZE:>5} cases x {r:<3} (repeats)   "
                    f"| {power_at(noise, CLUSTERS * SIZE, r, DROP):8.1%}  | {cell(hits, trials)}"
                )
                if name == "true parts":
                    held &= wilson_interval(hits, trials)[1] >= POWER
            else:
                print(
                    f"{rho:>10} | {name:<16} | repeats: not offered (MDE floor "
                    f"{result.mde_floor:.3f} at 500 cases)"
                )
        r = min(before(sources[0][1]), 30)
        hits = power(CLUSTERS, rho, r, trials, rng)
        print(
            f"{rho:>10} | {'before (deff)':<16} | {CLUSTERS * SIZE:>5} cases x {r:<3} (repeats)   "
            f"| {POWER:8.1%}  | {cell(hits, trials)}"
        )
    print(f"elapsed {time.monotonic() - began:.1f} s")
    print(verdict(held, "a plan from the model's true parts reaches 80% (Wilson 95%)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
