"""The power table's "mostly stable" cells replayed through the core, draw for draw, at many
more trials than real pytest sessions allow (docs/statistics.md, "The power table").

`benchmarks/power_table.py` seeds its agent's every answer by (session, case, repeat). This
script draws the same answers for the same seeds, allocates `--verdryx-repeat=auto` with the
same `allocate`, and runs the same paired test (`compute_drift`) on the case means. It does
two things:

- at the table's own trials (40), it gives the same red sessions as the pytest table: the
  face adds nothing to the statistics;
- at a few hundred trials, it measures the false-alarm rate of uniform x 3 and of auto with
  an interval narrow enough to hold against the 5% target, and how often each detects the
  table's 5-point drop.

    .venv/bin/python benchmarks/power_table_replay.py [--trials 400] [--quick]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence

from benchlib import load, verdict
from power_table import agent_cases

from verdryx_core.evaluation.allocation import allocate
from verdryx_core.gating.drift import compute_drift
from verdryx_core.runs import BaselineCase

CASES = 200
TARGET_FALSE_ALARMS = 0.05


def _answer(session: str, case_id: str, repeat: int, p: float) -> float:
    """The power table's agent (its `answer`, unclustered): 1.0 when the seeded draw is < p."""
    return 1.0 if random.Random(f"{session}:{case_id}:{repeat}").random() < p else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


DROP = 0.05


def red_sessions(trial: int, seed: int, condition: str) -> dict[str, bool]:
    """Whether the gated session of `trial` is red, uniform x 3 and auto: the unchanged agent
    (`same`) or the agent 5 points worse (`drop`), as the power table runs them."""
    agent_seed = f"{seed}:stable:{CASES}:{trial}"
    cases = agent_cases("stable", CASES, agent_seed, cluster=False)
    tag = f"{agent_seed}:3"
    keys = [f"s::{case['id']}" for case in cases]
    ps = {key: case["metadata"]["p"] for key, case in zip(keys, cases, strict=True)}
    base = {
        key: tuple(_answer(f"{tag}:baseline", key[3:], r, ps[key]) for r in range(3))
        for key in keys
    }
    stored = {
        key: BaselineCase(eval_set_id="s", case_id=key[3:], value=_mean(row), samples=row)
        for key, row in base.items()
    }
    allocation = allocate(keys, stored, 3 * CASES)
    baseline = [_mean(base[key]) for key in keys]
    out: dict[str, bool] = {}
    drop = DROP if condition == "drop" else 0.0
    for name in ("uniform x 3", "auto"):
        current = [
            _mean(
                [
                    _answer(f"{tag}:{condition}", key[3:], r, max(ps[key] - drop, 0.0))
                    for r in range(3 if name == "uniform x 3" else allocation(key))
                ]
            )
            for key in keys
        ]
        report = compute_drift(current, baseline, paired_current=current, paired_baseline=baseline)
        out[name] = report.verdict == "regressed"
    return out


def wilson(red: int, runs: int) -> tuple[float, float]:
    z = 1.959963984540054
    share = red / runs
    centre = (share + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z * ((share * (1 - share) / runs + z * z / (4 * runs * runs)) ** 0.5)
    return centre - half / (1 + z * z / runs), centre + half / (1 + z * z / runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 trials")
    args = parser.parse_args()
    trials = 3 if args.quick else args.trials
    started = time.perf_counter()
    print(f"mostly stable set, {CASES} cases, {trials} trials; {load()}")
    rates: dict[str, dict[str, float]] = {}
    for condition, words in (("same", "false alarms"), ("drop", "detection")):
        red = {"uniform x 3": 0, "auto": 0}
        first_40 = dict(red)
        for trial in range(trials):
            for name, is_red in red_sessions(trial, args.seed, condition).items():
                red[name] += is_red
                first_40[name] += is_red and trial < 40
        rates[condition] = {name: count / trials for name, count in red.items()}
        for name, count in red.items():
            low, high = wilson(count, trials)
            print(
                f"{name:<12} {words:<12} {count / trials:6.1%} [{low:5.1%}, {high:5.1%}]"
                f"  (first {min(trials, 40)} trials: {first_40[name]} red)"
            )
    print(f"elapsed {time.perf_counter() - started:.0f}s")
    alarms = all(rate <= TARGET_FALSE_ALARMS for rate in rates["same"].values())
    print(verdict(alarms, f"false alarms at most {TARGET_FALSE_ALARMS:.0%}, uniform and auto"))
    detects = rates["drop"]["auto"] >= rates["drop"]["uniform x 3"]
    print(verdict(detects, "auto detects at least as often as uniform x 3"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
