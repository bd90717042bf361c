"""How often each drift gate fails an unchanged agent, and how often it catches a real drop.

    .venv/bin/python benchmarks/gate_error_rates.py           # 20, 50, 200, 1,000 cases
    .venv/bin/python benchmarks/gate_error_rates.py --quick   # fewer repetitions

The simulation: each case has its own difficulty, the chance p_i ~ Beta(2, 1)
that the agent gets it right (mean 2/3; some cases nearly always pass, some rarely do). A
run scores every case once (or the mean of k samples with --samples), as Bernoulli(p_i).
The baseline run and the current run each sample every case; the plugin pairs matched
cases, so both gates see the paired arrays. "Unchanged" reuses the same p_i; "5-point drop"
uses max(p_i - 0.05, 0). A gate's false-alarm rate is its share of `regressed` verdicts on
unchanged agents; its detection rate is that share on dropped ones.

Target for the default rule (`significant`): false alarms at most 5% at every size.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import benchlib
import numpy as np

from verdryx_core.gating.drift import DEFAULT_ITERATIONS, DEFAULT_THRESHOLD, GATES, compute_drift

SIZES = (20, 50, 200, 1_000)
DROP = 0.05
TARGET_FALSE_ALARMS = 0.05


def simulate(
    cases: int, samples: int, reps: int, iterations: int, seed: int
) -> dict[str, dict[str, float]]:
    """Share of `regressed` verdicts per (condition, gate), and the median MDE."""
    rng = np.random.default_rng([seed, cases, samples])
    regressed = {(condition, gate): 0 for condition in ("same", "drop") for gate in GATES}
    mdes = []
    for rep in range(reps):
        p = rng.beta(2, 1, cases)
        baseline = rng.binomial(samples, p) / samples
        runs = {
            "same": rng.binomial(samples, p) / samples,
            "drop": rng.binomial(samples, np.clip(p - DROP, 0, 1)) / samples,
        }
        for condition, current in runs.items():
            for gate in GATES:
                report = compute_drift(
                    current,
                    baseline,
                    paired_current=current,
                    paired_baseline=baseline,
                    gate=gate,
                    threshold=DEFAULT_THRESHOLD,
                    iterations=iterations,
                    seed=rep,
                )
                regressed[condition, gate] += report.verdict == "regressed"
                if condition == "same" and gate == "significant" and report.mde is not None:
                    mdes.append(report.mde)
    rates = {f"{condition}/{gate}": count / reps for (condition, gate), count in regressed.items()}
    return {"rates": rates, "mde": {"median": statistics.median(mdes)}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 repetitions, one sample per case")
    parser.add_argument("--reps", type=int, help="repetitions per cell (default 400; quick 30)")
    parser.add_argument(
        "--samples",
        default=None,
        help="comma-separated samples per case to simulate (default 1,3; quick 1)",
    )
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    reps = args.reps or (30 if args.quick else 400)
    samples_list = [int(k) for k in (args.samples or ("1" if args.quick else "1,3")).split(",")]
    iterations = DEFAULT_ITERATIONS

    start = time.perf_counter()
    worst_false_alarm = 0.0
    for samples in samples_list:
        # 95% margin of a rate near 5% (the target) from this many repetitions.
        margin = 1.96 * math.sqrt(TARGET_FALSE_ALARMS * (1 - TARGET_FALSE_ALARMS) / reps)
        print(
            f"\nsamples per case: {samples}; {reps} unchanged and {reps} dropped agents per size; "
            f"{iterations} resamples; rates near 5% are +-{margin:.1%}"
        )
        header = (
            f"{'cases':>6} | {'false alarms (unchanged)':^25} | {'detects a 5-point drop':^25} "
            f"| {'median MDE':>10}"
        )
        print(header)
        print(f"{'':>6} | {'significant':>12} {'threshold':>12} | {'significant':>12} "
              f"{'threshold':>12} | {'(80% power)':>10}")  # fmt: skip
        print("-" * len(header))
        for cases in SIZES:
            result = simulate(cases, samples, reps, iterations, args.seed)
            rates = result["rates"]
            worst_false_alarm = max(worst_false_alarm, rates["same/significant"])
            print(
                f"{cases:>6,} | {rates['same/significant']:>12.1%} {rates['same/threshold']:>12.1%}"
                f" | {rates['drop/significant']:>12.1%} {rates['drop/threshold']:>12.1%}"
                f" | {result['mde']['median']:>10.3f}",
                flush=True,
            )
    met = worst_false_alarm <= TARGET_FALSE_ALARMS
    print(
        f"\ndefault rule, worst false-alarm rate: {worst_false_alarm:.1%} "
        f"(target <= {TARGET_FALSE_ALARMS:.0%}): {'met' if met else 'MISSED'}"
    )
    print(f"elapsed {time.perf_counter() - start:.1f} s")
    print(
        benchlib.verdict(
            met,
            f"worst false-alarm rate {worst_false_alarm:.1%}, target <= "
            f"{TARGET_FALSE_ALARMS:.0%} (an error rate: the load does not change it)",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
