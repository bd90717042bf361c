"""How often a pytest session of an unchanged, noisy agent exits red, and how often a real drop
does, under each exit policy (docs/outcomes.md, "Who decides the exit status").

    .venv/bin/python benchmarks/gate_false_red.py              # 20, 50, 200 cases, 40 trials
    .venv/bin/python benchmarks/gate_false_red.py --quick      # a smoke run: 1 trial, small
    .venv/bin/python benchmarks/gate_false_red.py --trials 100

The agent is a seeded stochastic target (`--verdryx-target`): case i passes with its own
probability p_i ~ Beta(4, 1) (mean 0.8), the draw seeded by (session, case, repeat). A trial
draws a fresh agent (fresh p_i), saves a baseline from one session of it, then runs four gated
sessions (`--verdryx-baseline`, `--no-verdryx-store`): the unchanged agent and the agent with
every p_i lowered by 5 points (clipped at 0), each under `--verdryx-fail-on=verdict` (the
default) and `--verdryx-fail-on=cases`. The two policies' sessions of a trial share their seed,
so they grade the very same outputs and differ only in the policy. With `--verdryx-repeat 5`
the baseline and the gated sessions sample every case 5 times (the score is the mean).

A rate is the share of sessions that exited non-zero: on the unchanged agent the false-red
rate, on the dropped one the detection rate; each with its Wilson 95% interval (trials are
independent: every trial has its own agent and baseline). A second table keeps one saved
baseline for many sessions, as a CI job does, and shows how far its false-red rate depends
on that one baseline's own luck.

Sessions are real pytest sessions (`pytest.main`), run in this process one after another, so
that the hundreds of sessions cost their work and not each a Python start-up.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from bench_sessions import run_pytest, write_project_files
from benchlib import verdict

from verdryx_core.addons.slo.stats import wilson_interval

SIZES = (20, 50, 200)
REPEATS = (1, 5)
DROP = 0.05
#: The default policy may turn an unchanged agent red about as often as the gate's 5% test.
TARGET_RED = 0.05
POLICIES = ("verdict", "cases")
SEED_VAR = "VERDRYX_BENCH_SESSION"
DROP_VAR = "VERDRYX_BENCH_DROP"

# The target, written beside each eval set. The session seed and the drop are read from the
# environment at call time: every session of this process sets its own.
AGENT = f'''"""A noisy agent: case i answers right with probability max(p_i - drop, 0)."""

import os
import random


def answer(case):
    session = os.environ[{SEED_VAR!r}]
    p = max(case.metadata["p"] - float(os.environ[{DROP_VAR!r}]), 0.0)
    draw = random.Random(f"{{session}}:{{case.id}}:{{case.repeat}}").random()
    return "yes" if draw < p else "no"
'''


def agent_probabilities(cases: int, seed: str) -> list[float]:
    """The agent's per-case pass probabilities, p_i ~ Beta(4, 1), from one seeded stream."""
    draws = random.Random(seed)
    return [round(draws.betavariate(4, 1), 6) for _ in range(cases)]


def write_project(directory: Path, probabilities: Sequence[float]) -> None:
    """A pytest rootdir with the target module and one eval set of exact cases: the answer
    "yes" passes, p_i in each case's metadata for the target to read."""
    cases = [
        {"id": f"c{i}", "prompt": f"q{i}", "expected": "yes", "metadata": {"p": p}}
        for i, p in enumerate(probabilities)
    ]
    write_project_files(directory, "bench_agent", AGENT, cases)


def run_session(directory: Path, session_seed: str, drop: float, *args: str) -> int:
    """One pytest session in `directory`; its exit status (0 or 1, else the benchmark stops)."""
    os.environ[SEED_VAR] = session_seed
    os.environ[DROP_VAR] = repr(drop)
    return run_pytest(directory, "bench_agent:answer", *args)


@dataclass
class Counts:
    """Red sessions out of sessions run, per (condition, policy)."""

    red: dict[tuple[str, str], int] = field(default_factory=dict)
    runs: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, condition: str, policy: str, status: int) -> None:
        key = condition, policy
        self.red[key] = self.red.get(key, 0) + (status != 0)
        self.runs[key] = self.runs.get(key, 0) + 1

    def rate(self, condition: str, policy: str) -> str:
        """`12.5% [ 5.5, 26.1]`: the share of red sessions and its Wilson 95% interval."""
        red, runs = self.red[condition, policy], self.runs[condition, policy]
        low, high = wilson_interval(red, runs)
        return f"{red / runs:6.1%} [{low:5.1%},{high:6.1%}]"


def measure_cell(root: Path, cases: int, repeat: int, trials: int, seed: int) -> Counts:
    """`trials` independent trials at this size and repeat count (see the module docstring)."""
    counts = Counts()
    repeat_args = [f"--verdryx-repeat={repeat}"] if repeat > 1 else []
    for trial in range(trials):
        # The same agents at repeat 1 and 5: the two rows differ only in the repeats.
        directory = root / f"{cases}-{repeat}-{trial}"
        write_project(directory, agent_probabilities(cases, f"{seed}:{cases}:{trial}"))
        tag = f"{seed}:{cases}:{repeat}:{trial}"
        run_session(directory, f"{tag}:baseline", 0.0, "--verdryx-save-baseline=b", *repeat_args)
        for condition, drop in (("same", 0.0), ("drop", DROP)):
            for policy in POLICIES:
                status = run_session(
                    directory,
                    f"{tag}:{condition}",  # both policies grade the same outputs
                    drop,
                    "--verdryx-baseline=b",
                    "--no-verdryx-store",
                    f"--verdryx-fail-on={policy}",
                    *repeat_args,
                )
                counts.add(condition, policy, status)
    return counts


def one_baseline(
    root: Path, cases: int, repeat: int, baselines: int, sessions: int, seed: int
) -> list[tuple[float, int]]:
    """For each of `baselines` saved baselines of one agent: (that baseline's mean minus the
    agent's mean p, red sessions of `sessions` unchanged ones gated on it, default policy)."""
    probabilities = agent_probabilities(cases, f"{seed}:one-baseline:{cases}")
    true_mean = statistics.fmean(probabilities)
    repeat_args = [f"--verdryx-repeat={repeat}"] if repeat > 1 else []
    results = []
    for index in range(baselines):
        directory = root / f"one-{cases}-{repeat}-{index}"
        write_project(directory, probabilities)
        tag = f"{seed}:one:{repeat}:{index}"
        run_session(directory, f"{tag}:baseline", 0.0, "--verdryx-save-baseline=b", *repeat_args)
        # The committed baseline file carries its run's mean score.
        saved = json.loads((directory / ".verdryx" / "baselines" / "b.json").read_text())
        baseline_mean = float(saved["mean"])
        red = sum(
            run_session(
                directory,
                f"{tag}:{n}",
                0.0,
                "--verdryx-baseline=b",
                "--no-verdryx-store",
                *repeat_args,
            )
            != 0
            for n in range(sessions)
        )
        results.append((baseline_mean - true_mean, red))
    return results


def _machine() -> str:
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return f"{os.cpu_count()} cores, load average {load}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 trial, 20 cases")
    parser.add_argument("--trials", type=int, help="trials per cell (default 40; quick 1)")
    parser.add_argument("--sizes", help="comma-separated case counts (default 20,50,200; quick 20)")
    parser.add_argument(
        "--baselines",
        type=int,
        help="saved baselines in the one-baseline table (default 10; quick 1; 0 skips it)",
    )
    parser.add_argument(
        "--sessions", type=int, help="sessions gated on each of them (default 20; quick 2)"
    )
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    trials = args.trials or (1 if args.quick else 40)
    sizes = [int(n) for n in (args.sizes or ("20" if args.quick else "20,50,200")).split(",")]
    baselines = args.baselines if args.baselines is not None else (1 if args.quick else 10)
    sessions = args.sessions or (2 if args.quick else 20)
    one_size = 20 if args.quick else 50

    start = time.perf_counter()
    print(f"machine: {_machine()}; Python {sys.version.split()[0]}, pytest {pytest.__version__}")
    print(
        f"{trials} trials per row; a trial: a fresh agent (p_i ~ Beta(4, 1)), its baseline "
        f"session, then the unchanged and the {DROP * 100:.0f}-point-dropped agent under "
        "each policy"
    )
    print("share of sessions that exit non-zero, Wilson 95% interval")
    header = (
        f"{'cases':>5} {'repeat':>6} | {'unchanged: verdict':^21} {'unchanged: cases':^21} | "
        f"{'5-pt drop: verdict':^21} {'5-pt drop: cases':^21}"
    )
    print(header)
    print("-" * len(header))
    worst_red: list[float] = []
    with tempfile.TemporaryDirectory(prefix="verdryx-false-red-") as tmp:
        root = Path(tmp)
        for cases in sizes:
            for repeat in REPEATS:
                counts = measure_cell(root, cases, repeat, trials, args.seed)
                same = counts.runs["same", "verdict"]
                worst_red.append(counts.red["same", "verdict"] / same if same else 0.0)
                print(
                    f"{cases:>5} {repeat:>6} | {counts.rate('same', 'verdict')} "
                    f"{counts.rate('same', 'cases')} | {counts.rate('drop', 'verdict')} "
                    f"{counts.rate('drop', 'cases')}",
                    flush=True,
                )
        if baselines:
            print(
                f"\none agent at {one_size} cases, {baselines} baselines saved from one session "
                f"each, {sessions} unchanged sessions gated on each (default policy)"
            )
            print(f"{'repeat':>6} | {'red sessions per baseline':<40} | baseline luck vs red")
            for repeat in REPEATS:
                results = one_baseline(root, one_size, repeat, baselines, sessions, args.seed)
                reds = [red for _, red in results]
                # Which baselines turn sessions red: those that drew above the agent's mean.
                luck = sorted(results, reverse=True)
                lucky = ", ".join(f"{off:+.3f}: {red}" for off, red in luck[:3])
                print(
                    f"{repeat:>6} | {' '.join(str(red) for red in reds):<40} | "
                    f"highest 3 (baseline mean - agent mean: red): {lucky}"
                )
                total = sum(reds)
                low, high = wilson_interval(total, baselines * sessions)
                print(
                    f"{'':>6} | pooled {total}/{baselines * sessions} = "
                    f"{total / (baselines * sessions):.1%} [{low:.1%}, {high:.1%}] "
                    f"(sessions share a baseline: the interval is too narrow); "
                    f"worst baseline {max(reds)}/{sessions}",
                    flush=True,
                )
    print(f"\nmachine at the end: {_machine()}; elapsed {time.perf_counter() - start:.0f} s")
    worst = max(worst_red, default=0.0)
    print(
        verdict(
            worst <= TARGET_RED,
            f"an unchanged agent turns CI red in at most {worst:.1%} of trials under the default "
            f"policy, target <= {TARGET_RED:.0%} (an error rate: the load does not change it)",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
