"""The power table through the real face: how often a gated pytest session of an unchanged
agent says regressed (false alarms), and of an agent 5 points worse (detection), per design
(docs/statistics.md, "The power table").

    .venv/bin/python benchmarks/power_table.py              # 40 trials a cell
    .venv/bin/python benchmarks/power_table.py --quick      # a smoke run: 1 trial, small
    .venv/bin/python benchmarks/power_table.py --trials 100

The agent is a seeded stochastic target (`--verdryx-target`), its draws seeded by (session,
case, repeat). A trial draws a fresh agent, saves a baseline from one session of it, then
runs two gated sessions (`--verdryx-baseline`, `--no-verdryx-store`): the unchanged agent and
the agent 5 points worse. A rate is the share of gated sessions that exited 1 (regressed),
with its Wilson 95% interval. The designs, all of 200 cases (clustered: 50 x 10):

- `200 x 1`, `200 x 3`, `200 x 5`: uniform repeats, Beta(4, 1) pass rates, every p_i
  lowered by 5 points (clipped at 0).
- `200 x auto`: `--verdryx-repeat=auto --verdryx-max-samples=600` (the samples of `200 x 3`)
  against a baseline of 200 x 3, the same agents as `200 x 3`.
- `stable x 3`, `stable x auto`: as the two above, on a set where 85% of the cases always
  pass and 15% pass with p ~ U(0.2, 0.8).
- `clustered`, `clustered, no cluster`: 50 clusters of 10 cases, one sample each; in each
  session a cluster draws one shock shared by its cases (a passage read well or badly):
  case i passes when sqrt(rho) z_cluster + sqrt(1 - rho) e < Phi^-1(p), rho = 0.7, p = 0.8
  (0.75 when dropped). The same agents, with and without `cluster` on the cases.

`plan` is `verdryx plan`'s predicted power at the cell's size, from the cell's baseline
(the mean over trials of `power_at` on the baseline's stored run; for `auto` the cases at
the mean samples per case).

Sessions are real pytest sessions (`pytest.main`), run in this process one after another.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_sessions import run_pytest, write_project_files

from verdryx_core.addons.slo.stats import wilson_interval
from verdryx_core.gating.baselines import find_baseline
from verdryx_core.gating.planning import noise_of_baseline, power_at
from verdryx_core.store import Store

DROP = 0.05
RHO = 0.7
SEED_VAR = "VERDRYX_BENCH_SESSION"
DROP_VAR = "VERDRYX_BENCH_DROP"
TARGET_FALSE_ALARMS = 0.05
TARGET_CLUSTERED_FALSE_ALARMS = 0.06

AGENT = f'''"""A noisy agent (benchmarks/power_table.py)."""

import os
import random
from statistics import NormalDist


def answer(case):
    session = os.environ[{SEED_VAR!r}]
    drop = float(os.environ[{DROP_VAR!r}])
    meta = case.metadata
    if "shock_of" in meta:  # clustered: a shock per (session, cluster), shared by its cases
        shock = random.Random(f"{{session}}:{{meta['shock_of']}}").gauss(0, 1)
        own = random.Random(f"{{session}}:{{case.id}}:{{case.repeat}}").gauss(0, 1)
        bar = NormalDist().inv_cdf(meta["p"] - drop)
        latent = {RHO!r} ** 0.5 * shock + (1 - {RHO!r}) ** 0.5 * own
        return "yes" if latent < bar else "no"
    p = max(meta["p"] - drop, 0.0)
    draw = random.Random(f"{{session}}:{{case.id}}:{{case.repeat}}").random()
    return "yes" if draw < p else "no"
'''


@dataclass(frozen=True)
class Design:
    name: str
    population: str  # beta | stable | clustered
    baseline_repeat: int
    repeat: str  # a number, or auto
    max_samples: int | None = None
    cluster: bool = False


def designs(cases: int) -> list[Design]:
    budget = 3 * cases
    return [
        Design(f"{cases} x 1", "beta", 1, "1"),
        Design(f"{cases} x 3", "beta", 3, "3"),
        Design(f"{cases} x 5", "beta", 5, "5"),
        Design(f"{cases} x auto", "beta", 3, "auto", budget),
        Design("stable x 3", "stable", 3, "3"),
        Design("stable x auto", "stable", 3, "auto", budget),
        Design("clustered", "clustered", 1, "1", cluster=True),
        Design("clustered, no cluster", "clustered", 1, "1"),
    ]


def agent_cases(population: str, cases: int, seed: str, *, cluster: bool) -> list[dict[str, Any]]:
    """The eval set's cases: p_i in each case's metadata for the target to read."""
    draws = random.Random(seed)
    if population == "beta":
        ps = [round(draws.betavariate(4, 1), 6) for _ in range(cases)]
    elif population == "stable":
        flaky = round(cases * 0.15)
        ps = [round(draws.uniform(0.2, 0.8), 6) if i < flaky else 1.0 for i in range(cases)]
    else:
        # Clusters of 10; fewer cases (the smoke run's 20) get smaller ones, so a comparison
        # still has the 10 clusters the gate needs (docs/statistics.md, "Clustered cases").
        size = min(10, max(1, cases // 10))
        out = []
        for i in range(cases):
            case: dict[str, Any] = {
                "id": f"c{i}",
                "prompt": f"q{i}",
                "expected": "yes",
                "metadata": {"p": 0.8, "shock_of": f"{seed}:g{i // size}"},
            }
            if cluster:
                case["cluster"] = f"g{i // size}"
            out.append(case)
        return out
    return [
        {"id": f"c{i}", "prompt": f"q{i}", "expected": "yes", "metadata": {"p": p}}
        for i, p in enumerate(ps)
    ]


def write_project(directory: Path, cases: list[dict[str, Any]]) -> None:
    write_project_files(directory, "bench_power_agent", AGENT, cases)


def run_session(directory: Path, session_seed: str, drop: float, *args: str) -> int:
    """One pytest session in `directory`; its exit status (0 or 1, else the benchmark stops)."""
    os.environ[SEED_VAR] = session_seed
    os.environ[DROP_VAR] = repr(drop)
    # The verdict alone decides: a case below its bar does not fail the run.
    return run_pytest(directory, "bench_power_agent:answer", "--verdryx-fail-on=verdict", *args)


@dataclass
class Cell:
    red: dict[str, int] = field(default_factory=lambda: {"same": 0, "drop": 0})
    runs: int = 0
    predicted: list[float] = field(default_factory=list)

    def rate(self, condition: str) -> str:
        low, high = wilson_interval(self.red[condition], self.runs)
        return f"{self.red[condition] / self.runs:6.1%} [{low:5.1%},{high:6.1%}]"

    def share(self, condition: str) -> float:
        return self.red[condition] / self.runs


def predicted_power(directory: Path, design: Design, cases: int) -> float:
    """What `verdryx plan` predicts for this design, from the cell's baseline."""
    with Store.open(directory / "store.db") as store:
        baseline = find_baseline("b", store=store, root=directory)
        run = store.load_run(baseline.run_id)
    noise = noise_of_baseline(baseline, run)
    samples = (design.max_samples or cases) / cases if design.repeat == "auto" else noise.samples
    return power_at(noise, noise.cases, samples, DROP)


def measure(root: Path, design: Design, cases: int, trials: int, seed: int) -> Cell:
    cell = Cell()
    repeat = [] if design.repeat == "1" else [f"--verdryx-repeat={design.repeat}"]
    if design.max_samples:
        repeat.append(f"--verdryx-max-samples={design.max_samples}")
    base_repeat = (
        [f"--verdryx-repeat={design.baseline_repeat}"] if design.baseline_repeat > 1 else []
    )
    for trial in range(trials):
        directory = root / f"{design.name.replace(' ', '_').replace(',', '')}-{trial}"
        # The same agents across the designs of one population (uniform vs auto, clustered
        # with and without `cluster`): the designs differ only in what they were asked.
        agent_seed = f"{seed}:{design.population}:{cases}:{trial}"
        write_project(
            directory,
            agent_cases(design.population, cases, agent_seed, cluster=design.cluster),
        )
        tag = f"{agent_seed}:{design.baseline_repeat}"
        run_session(directory, f"{tag}:baseline", 0.0, "--verdryx-save-baseline=b", *base_repeat)
        cell.predicted.append(predicted_power(directory, design, cases))
        for condition, drop in (("same", 0.0), ("drop", DROP)):
            status = run_session(
                directory,
                f"{tag}:{condition}",
                drop,
                "--verdryx-baseline=b",
                "--no-verdryx-store",
                *repeat,
            )
            cell.red[condition] += status != 0
        cell.runs += 1
    return cell


def _machine() -> str:
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return f"{os.cpu_count()} cores, load average {load}"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 trial, 20 cases")
    parser.add_argument("--trials", type=int, help="trials per cell (default 40; quick 1)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--designs", help="comma-separated words; only the designs whose name holds one"
    )
    args = parser.parse_args()
    words = [word.strip() for word in (args.designs or "").split(",") if word.strip()]
    trials = args.trials or (1 if args.quick else 40)
    cases = 20 if args.quick else 200
    print(f"power table: {trials} trial(s) a cell, drop {DROP:.2f}; {_machine()}")
    started = time.perf_counter()
    cells: dict[str, Cell] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for design in designs(cases):
            if words and not any(word in design.name for word in words):
                continue
            cells[design.name] = measure(Path(tmp), design, cases, trials, args.seed)
    print(f"{'design':<22} | {'false alarms [95%]':<22} | {'detection [95%]':<22} | plan")
    for name, cell in cells.items():
        plan = statistics.fmean(cell.predicted)
        print(f"{name:<22} | {cell.rate('same')} | {cell.rate('drop')} | {plan:5.1%}")
    elapsed = time.perf_counter() - started
    print(f"elapsed {elapsed:.0f}s; {_machine()}")
    checks: list[tuple[str, bool]] = []
    pairs = [(f"{cases} x auto", f"{cases} x 3"), ("stable x auto", "stable x 3")]
    if all(a in cells and b in cells for a, b in pairs):
        checks.append(
            (
                "auto detects at least as often as uniform at the same samples",
                all(cells[a].share("drop") >= cells[b].share("drop") for a, b in pairs),
            )
        )
    checks.append(
        (
            f"false alarms at most {TARGET_FALSE_ALARMS:.0%} (unclustered designs)",
            all(
                cell.share("same") <= TARGET_FALSE_ALARMS
                for name, cell in cells.items()
                if not name.startswith("clustered")
            ),
        )
    )
    if "clustered" in cells:
        checks.append(
            (
                "clustered false alarms with `cluster` at most "
                f"{TARGET_CLUSTERED_FALSE_ALARMS:.0%}",
                cells["clustered"].share("same") <= TARGET_CLUSTERED_FALSE_ALARMS,
            )
        )
    for claim, passed in checks:
        print(f"{'PASS' if passed else 'MISSED'}: {claim}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
