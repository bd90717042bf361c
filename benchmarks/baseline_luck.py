"""How much of CI's false red is the committed baseline's own luck, for baselines of 1, 3 and 5
runs (`--verdryx-baseline-runs`; docs/statistics.md, "Baselines from several runs").

    .venv/bin/python benchmarks/baseline_luck.py            # 10 baselines x 20 gated runs
    .venv/bin/python benchmarks/baseline_luck.py --quick    # a smoke run: 2 x 2, 10 cases
    .venv/bin/python benchmarks/baseline_luck.py --baselines 20 --gated 40

The agent is the seeded stochastic target of benchmarks/gate_false_red.py (offline): case i
answers right with its own probability p_i ~ Beta(4, 1), the draw seeded by (session, case,
repeat); it never changes. Everything it is measured by is a real pytest session
(`pytest.main`, in this process) storing its run in one SQLite store.

A baseline set is five sessions in a row: the first saves baseline `k1` (one run), the third
`k3` (`--verdryx-baseline-runs=3`: it and the two before it), the fifth `k5` (all five). So
the three designs of one set share runs, and differ only in how many they pool. Each set then
gets its own gated runs: sessions of the same agent, stored in a store of their own (so no
later set pools them), each concluded against the set's three baselines by
`verdryx_core.conclude` (the session end's own call: the stored run, the baseline, the
default policy, `keep="read"`): one session serves the three designs instead of three. A run
is red when its conclusion's exit is not `ok`, as the session's exit status would be.

Per design: the worst baseline's false red (red runs out of the gated ones, its Wilson 95%
interval), and the pooled rate over every baseline and gated run (Wilson, too narrow: runs
share a baseline). Goal: worst <= 10% and pooled <= 5%.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from benchlib import load, verdict
from gate_false_red import agent_probabilities, run_session, write_project

from verdryx_core.addons.slo.stats import wilson_interval
from verdryx_core.conclusion import conclude
from verdryx_core.runs import Baseline
from verdryx_core.store import Store

DESIGNS = (1, 3, 5)
WORST_GOAL = 0.10
POOLED_GOAL = 0.05


@dataclass(frozen=True, slots=True)
class Saved:
    """One saved baseline: its design (runs pooled), its set, its luck, and its red runs."""

    runs: int
    index: int
    luck: float
    baseline: Baseline


def save_set(directory: Path, index: int, truth: float, seed: int) -> list[Saved]:
    """Baseline set `index`: five sessions in a row, saving k1, k3 and k5 as they go."""
    for session in range(1, 6):
        args = [f"--verdryx-save-baseline=k{session}-{index}"] if session in DESIGNS else []
        if session > 1 and session in DESIGNS:
            args.append(f"--verdryx-baseline-runs={session}")
        run_session(directory, f"{seed}:set{index}:{session}", 0.0, *args)
    saved = []
    with Store.open(directory / "store.db") as store:
        for runs in DESIGNS:
            baseline = store.get_baseline(f"k{runs}-{index}")
            assert baseline is not None
            if runs > 1:  # every case pooled from the runs asked for
                assert all(len(case.samples) == runs for case in baseline.cases)
            saved.append(Saved(runs, index, baseline.mean - truth, baseline))
    return saved


def gated_reds(
    directory: Path, saved: list[Saved], gated: int, seed: int, why: Counter[str]
) -> dict[str, int]:
    """`gated` sessions of the unchanged agent, stored apart (never pooled into a later
    set's baselines), each concluded against the set's baselines; red runs by baseline label
    (and in `why`, red runs by their exit reason)."""
    index = saved[0].index
    apart = directory / "gated.db"
    for number in range(gated):
        # The later --verdryx-db wins: the gated runs go to their own store.
        run_session(
            directory,
            f"{seed}:gated{index}:{number}",
            0.0,
            f"--verdryx-db={apart}",
            f"--verdryx-label=gated-{index}",
        )
    with Store.open(apart) as store:
        runs = [
            run
            for summary in store.list_runs()
            if (run := store.load_run(summary.id)) is not None and run.label == f"gated-{index}"
        ]
    assert len(runs) == gated
    reds = {item.baseline.label: 0 for item in saved}
    for run in runs:
        for item in saved:
            concluded = conclude(run, baseline=item.baseline, keep="read")
            if concluded.exit != "ok":
                reds[item.baseline.label] += 1
                reason = (concluded.exit_reason or "").split(":")[0]
                why[f"k{item.runs}: {reason.replace(item.baseline.label, 'its baseline')}"] += 1
    return reds


def rate(red: int, runs: int) -> str:
    low, high = wilson_interval(red, runs)
    return f"{red:>3}/{runs:<4} {red / runs:6.1%} [{low:5.1%}, {high:5.1%}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 x 2, 10 cases")
    parser.add_argument("--baselines", type=int, help="baseline sets (default 10; quick 2)")
    parser.add_argument("--gated", type=int, help="gated runs per set (default 20; quick 2)")
    parser.add_argument("--cases", type=int, help="cases (default 50; quick 10)")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    baselines = args.baselines or (2 if args.quick else 10)
    gated = args.gated or (2 if args.quick else 20)
    cases = args.cases or (10 if args.quick else 50)

    start = time.perf_counter()
    print(f"{load()}; Python {sys.version.split()[0]}, pytest {pytest.__version__}")
    print(
        f"{cases} cases, p_i ~ Beta(4, 1); {baselines} baseline sets (5 sessions each, saving "
        f"k1, k3, k5), then {gated} gated sessions of the unchanged agent per set, each "
        "concluded against the set's baselines (verdryx_core.conclude, default policy)"
    )
    with tempfile.TemporaryDirectory(prefix="verdryx-baseline-luck-") as tmp:
        directory = Path(tmp)
        probabilities = agent_probabilities(cases, f"{args.seed}:baseline-luck")
        write_project(directory, probabilities)
        (directory / "p.json").write_text(json.dumps(probabilities))
        truth = statistics.fmean(probabilities)
        why: Counter[str] = Counter()
        saved: list[Saved] = []
        reds: dict[str, int] = {}
        for index in range(baselines):
            mine = save_set(directory, index, truth, args.seed)
            reds |= gated_reds(directory, mine, gated, args.seed, why)
            saved.extend(mine)
        sessions = baselines * (5 + gated)

    print()
    header = (
        f"{'runs':>4} | {'worst baseline: red runs':<34} | {'pooled false red':<34} | "
        f"{'baseline luck (sd)':<18} | red runs per baseline"
    )
    print(header)
    print("-" * len(header))
    met: dict[int, bool] = {}
    for runs in DESIGNS:
        mine = [item for item in saved if item.runs == runs]
        counts = [reds[item.baseline.label] for item in mine]
        worst = max(counts)
        total = sum(counts)
        luck = statistics.pstdev(item.luck for item in mine) if len(mine) > 1 else 0.0
        print(
            f"{runs:>4} | {rate(worst, gated):<34} | {rate(total, gated * len(mine)):<34} | "
            f"{luck:<18.4f} | {' '.join(str(count) for count in counts)}"
        )
        met[runs] = worst / gated <= WORST_GOAL and total / (gated * len(mine)) <= POOLED_GOAL
    for reason, count in why.most_common():
        print(f"red: {reason} ({count} conclusions)")
    elapsed = time.perf_counter() - start
    print(
        f"\n{sessions} pytest sessions, {len(saved) * gated} conclusions; elapsed {elapsed:.0f} s "
        f"({load()})"
    )
    # What each design's luck predicts for the worst of these baselines: a baseline whose
    # mean drew z standard errors high is red Phi(z / sqrt(K) - 1.96 sqrt(1 + 1/K)) of the
    # time, whatever the cases and repeats (docs/statistics.md).
    z = float(np.mean(np.sort(np.random.default_rng(0).normal(size=(20_000, baselines)))[:, -1]))
    predicted = ", ".join(
        f"{runs} run{'s' if runs > 1 else ''} {_red_at(z, runs):.1%}" for runs in DESIGNS
    )
    print(f"predicted false red of the luckiest of {baselines} baselines: {predicted}")
    meets = [runs for runs in DESIGNS if met[runs]]
    largest = DESIGNS[-1]
    print(
        verdict(
            met[largest],
            f"worst baseline's false red <= {WORST_GOAL:.0%} and pooled <= {POOLED_GOAL:.0%} "
            f"with a {largest}-run baseline (met by: "
            f"{', '.join(f'{runs}-run' for runs in meets) or 'none'}; an error rate: the load "
            "does not change it)",
        )
    )
    return 0


def _red_at(z: float, runs: int) -> float:
    return NormalDist().cdf(z / math.sqrt(runs) - 1.959964 * math.sqrt(1 + 1 / runs))


if __name__ == "__main__":
    raise SystemExit(main())
