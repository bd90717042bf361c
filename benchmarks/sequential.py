"""The sequential gate through pytest (docs/statistics.md, "The sequential gate"): how often it
calls an unchanged agent regressed, how often it catches a 10-point drop, and what share of
the calls it makes before its verdict settles.

    .venv/bin/python benchmarks/sequential.py            # 1,000 cases, 10 agents x 5 runs each
    .venv/bin/python benchmarks/sequential.py --quick    # a smoke run: 200 cases, small

The agent is a seeded stochastic target: case i answers right with probability p_i, from a
mostly-stable mix (60% of cases at 0.97, the rest uniform on [0.35, 0.90]), the draw seeded
by (session, case), so an outcome does not depend on the order or the timing of the calls.
A call takes 40 ms (a real agent's take seconds; what matters is that the prefetched calls
run at most the concurrency before the items, as they do then). A trial draws a fresh agent,
saves a baseline from one plain session of it, then runs `--runs` sessions of the unchanged
agent and `--runs` of the agent with every p_i lowered by 10 points, each with
`--verdryx-sequential --verdryx-detect=0.1 --verdryx-concurrency=8` and its own order seed.

A rate is the share of sessions whose verdict was REGRESSED (JUnit's `verdryx.verdict`), with
its Wilson 95% interval; on the unchanged agent that is the false alarm, on the dropped one the
detection. The share of calls is the target's own call count over the cases, per session:
its mean, with a normal 95% interval over sessions. Targets (at 1,000 cases): false alarms
<= 5%, detection >= 80%, the mean share of calls <= 50% on each agent.

Sessions are real pytest sessions (`pytest.main`), run in this process one after another.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from bench_sessions import run_pytest, write_project_files
from benchlib import load, verdict

from verdryx_core.addons.slo.stats import wilson_interval

DROP = 0.10
DETECT = 0.10
LATENCY = 0.04
CONCURRENCY = 8
TARGET_FALSE_ALARM = 0.05
TARGET_DETECTION = 0.80
TARGET_SHARE = 0.50
SEED_VAR = "VERDRYX_BENCH_SESSION"
DROP_VAR = "VERDRYX_BENCH_DROP"
LATENCY_VAR = "VERDRYX_BENCH_LATENCY"
LOG_VAR = "VERDRYX_BENCH_CALLS"

# Read from the environment at call time: every session of this process sets its own (the
# module is imported once per process, whichever folder the session runs in).
AGENT = f'''"""A noisy agent: case i answers right with probability p_i - drop."""

import os
import random
import threading
import time

_lock = threading.Lock()


def answer(case):
    with _lock, open(os.environ[{LOG_VAR!r}], "a") as log:
        log.write(case.id + "\\n")
    time.sleep(float(os.environ[{LATENCY_VAR!r}]))
    session = os.environ[{SEED_VAR!r}]
    p = case.metadata["p"] - float(os.environ[{DROP_VAR!r}])
    draw = random.Random(f"{{session}}:{{case.id}}:{{case.repeat}}").random()
    return "yes" if draw < p else "no"
'''


def agent_probabilities(cases: int, seed: str) -> list[float]:
    """Mostly stable: 60% of cases at 0.97, the rest uniform on [0.35, 0.90] (every p_i is
    above the drop, so lowering each by 10 points lowers the mean by exactly that)."""
    draws = random.Random(seed)
    return [
        0.97 if draws.random() < 0.6 else round(draws.uniform(0.35, 0.90), 6) for _ in range(cases)
    ]


def write_project(directory: Path, probabilities: list[float]) -> None:
    cases = [
        {"id": f"c{i}", "prompt": f"q{i}", "expected": "yes", "metadata": {"p": p}}
        for i, p in enumerate(probabilities)
    ]
    write_project_files(directory, "seq_bench_agent", AGENT, cases)


@dataclass(frozen=True)
class Session:
    status: int
    verdict: str
    sequential: str
    calls: int


def run_session(directory: Path, seed: str, drop: float, latency: float, *args: str) -> Session:
    """One pytest session in `directory`: its exit status, the gate's verdict and the
    sequential gate's (JUnit), and the calls the target took."""
    calls_log = directory / "calls.log"
    calls_log.unlink(missing_ok=True)
    junit = directory / "out.xml"
    os.environ.update(
        {
            SEED_VAR: seed,
            DROP_VAR: repr(drop),
            LATENCY_VAR: repr(latency),
            LOG_VAR: str(calls_log),
        }
    )
    status = run_pytest(directory, "seq_bench_agent:answer", f"--junitxml={junit}", *args)
    properties = {
        prop.get("name"): prop.get("value") or ""
        for prop in ET.parse(junit).getroot().iter("property")
    }
    calls = len(calls_log.read_text().split()) if calls_log.exists() else 0
    return Session(
        status=status,
        verdict=properties.get("verdryx.verdict", ""),
        sequential=properties.get("verdryx.sequential_verdict", ""),
        calls=calls,
    )


@dataclass
class Condition:
    sessions: list[Session] = field(default_factory=list)

    def rate(self) -> tuple[int, int, str]:
        red = sum(session.verdict == "regressed" for session in self.sessions)
        total = len(self.sessions)
        low, high = wilson_interval(red, total)
        return red, total, f"{red / total:6.1%} [{low:5.1%},{high:6.1%}]"

    def share(self, cases: int) -> tuple[float, str]:
        shares = [session.calls / cases for session in self.sessions]
        mean = statistics.fmean(shares)
        spread = 1.96 * statistics.stdev(shares) / math.sqrt(len(shares)) if len(shares) > 1 else 0
        return mean, f"{mean:6.1%} [{max(mean - spread, 0):5.1%},{min(mean + spread, 1):6.1%}]"

    def settled(self) -> str:
        counts = {"regressed": 0, "on-track": 0, "": 0}
        for session in self.sessions:
            counts[session.sequential] = counts.get(session.sequential, 0) + 1
        return f"{counts['regressed']:>4} / {counts['on-track']:>4} / {counts['']:>4}"


def measure(root: Path, cases: int, trials: int, runs: int, seed: int) -> dict[str, Condition]:
    conditions = {"unchanged": Condition(), "10-pt drop": Condition()}
    for trial in range(trials):
        directory = root / f"trial-{trial}"
        write_project(directory, agent_probabilities(cases, f"{seed}:{cases}:{trial}"))
        tag = f"{seed}:{cases}:{trial}"
        run_session(directory, f"{tag}:baseline", 0.0, 0.0, "--verdryx-save-baseline=b")
        for run in range(runs):
            for name, drop in (("unchanged", 0.0), ("10-pt drop", DROP)):
                session = run_session(
                    directory,
                    f"{tag}:{name}:{run}",
                    drop,
                    LATENCY,
                    "--verdryx-baseline=b",
                    "--no-verdryx-store",
                    "--verdryx-sequential",
                    f"--verdryx-sequential-seed={trial * runs + run}",
                    f"--verdryx-detect={DETECT}",
                    f"--verdryx-concurrency={CONCURRENCY}",
                )
                conditions[name].sessions.append(session)
    return conditions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 200 cases, small")
    parser.add_argument("--cases", type=int, default=None)
    parser.add_argument("--trials", type=int, default=None, help="agents (each a baseline)")
    parser.add_argument("--runs", type=int, default=None, help="gated runs per agent and drop")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    cases = args.cases or (200 if args.quick else 1000)
    trials = args.trials or (2 if args.quick else 10)
    runs = args.runs or (2 if args.quick else 5)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="verdryx-sequential-") as tmp:
        conditions = measure(Path(tmp), cases, trials, runs, args.seed)
    elapsed = time.perf_counter() - started
    print(
        f"sequential gate, {cases} cases, {trials} agents x {runs} runs per condition, "
        f"detect {DETECT}, concurrency {CONCURRENCY}, {LATENCY * 1000:.0f} ms a call"
    )
    print(
        f"{'condition':<12} | {'regressed [Wilson 95%]':<24} | {'settled reg/on/not':<18} | "
        "mean share of calls [95%]"
    )
    shares = {}
    for name, condition in conditions.items():
        _, _, rate = condition.rate()
        shares[name], share = condition.share(cases)
        print(f"{name:<12} | {rate:<24} | {condition.settled():<18} | {share}")
    print(f"elapsed {elapsed:.1f}s ({load()})")
    false_red, total, _ = conditions["unchanged"].rate()
    detected, drops, _ = conditions["10-pt drop"].rate()
    met = (
        false_red / total <= TARGET_FALSE_ALARM
        and detected / drops >= TARGET_DETECTION
        and all(share <= TARGET_SHARE for share in shares.values())
    )
    target = (
        f"false alarms <= {TARGET_FALSE_ALARM:.0%}, detection of a 10-point drop >= "
        f"{TARGET_DETECTION:.0%}, mean share of calls <= {TARGET_SHARE:.0%} on each agent"
    )
    if cases < 1000:
        print(f"smoke run: the targets ({target}) are judged at 1,000 cases")
        return 0
    print(verdict(met, target))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
