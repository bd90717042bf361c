"""A challenger run (docs/targets.md, "A challenger") against the two sessions it replaces.

Three figures:

- **calls and wall time**: one pytest session of 200 cases with `--verdryx-target` and
  `--verdryx-challenger` (two agents that sleep `--latency` a call), against the two
  sessions a user runs without it (the champion saving a baseline, then the challenger gated
  against it). Every call is counted in the agents' own log: the challenger session must
  make exactly 2 x 200, the same as the two sessions together. Target: its wall time within
  1.0x of the two sessions' (one session start-up instead of two, one pool for both agents);
- **detection at a 5-point drop**: how often the challenger's verdict says REGRESSED when the
  challenger is right on 5 points fewer cases than the champion, and (the false alarm) when
  it is as good. Each draw is 200 cases whose difficulty (the chance an agent is right) is
  drawn from Beta(2, 1); each agent is right on a case, independently, with that chance
  (the challenger's 0.05 lower at a drop). Judged by `gate_challenger`, the rule the session
  runs, at the default gate; a few draws also run as real sessions, which must agree with it;
- the false-alarm rate at no drop, beside it.

    python benchmarks/challenger.py [--cases 200] [--latency 0.05] [--concurrency 8]
                                    [--draws 400] [--sessions 3] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

from benchlib import load, verdict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verdryx_core.gating.challenger import gate_challenger  # noqa: E402
from verdryx_core.runs import EvalRun, Score  # noqa: E402

TIME_TARGET = 1.0
DROP = 0.05
_NOW = datetime(2026, 1, 1, tzinfo=UTC)

_AGENTS = textwrap.dedent(
    """\
    import json, os, pathlib, threading, time

    HERE = pathlib.Path(__file__).parent
    LATENCY = float(os.environ.get("BENCH_LATENCY", "0"))
    RIGHT = json.loads((HERE / "right.json").read_text())
    _lock = threading.Lock()

    def _answer(who, case):
        with _lock, (HERE / "calls.log").open("a") as log:
            log.write(who + "\\n")
        if LATENCY:
            time.sleep(LATENCY)
        return case.prompt if RIGHT[who][case.id] else "wrong"

    def champion(case):
        return _answer("champion", case)

    def challenger(case):
        return _answer("challenger", case)
    """
)

# As on a user's machine, bytecode is cached between runs (see plugin_overhead.py).
_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _draw(rng: random.Random, cases: int, drop: float) -> dict[str, dict[str, bool]]:
    """Which cases each agent gets right: a case's difficulty from Beta(2, 1), each agent
    right on it independently with that chance (the challenger `drop` lower)."""
    right: dict[str, dict[str, bool]] = {"champion": {}, "challenger": {}}
    for index in range(cases):
        chance = rng.betavariate(2, 1)
        right["champion"][f"c{index}"] = rng.random() < chance
        right["challenger"][f"c{index}"] = rng.random() < chance - drop
    return right


def _run_of(right: dict[str, bool], target: str) -> EvalRun:
    scores = tuple(
        Score(
            case_id=case_id,
            eval_set_id="bench",
            value=1.0 if ok else 0.0,
            grader="exact",
            passed=ok,
            fingerprint=case_id,
        )
        for case_id, ok in right.items()
    )
    run = EvalRun(id=target, model="stub", started_at=_NOW, scores=scores, complete=True)
    return dataclasses.replace(run, target=target, set_targets={"bench": target})


def _verdict(right: dict[str, dict[str, bool]], mdes: list[float] | None = None) -> str:
    champion = _run_of(right["champion"], "agents:champion")
    challenger = _run_of(right["challenger"], "agents:challenger")
    outcome = gate_challenger(champion, challenger)
    drift = outcome.drift
    if mdes is not None and drift is not None and drift.mde is not None:
        mdes.append(drift.mde)
    return outcome.verdict


def _write(folder: Path, cases: int, right: dict[str, dict[str, bool]]) -> None:
    (folder / "agents.py").write_text(_AGENTS)
    (folder / "right.json").write_text(json.dumps(right))
    items = [{"id": f"c{i}", "prompt": f"say {i}", "expected": f"say {i}"} for i in range(cases)]
    (folder / "bench.evalset.json").write_text(json.dumps({"id": "bench", "cases": items}))
    (folder / "calls.log").write_text("")


def _pytest(folder: Path, latency: float, *args: str) -> tuple[float, str, int]:
    """Wall seconds, output and exit status of one session."""
    env = {**_ENV, "BENCH_LATENCY": str(latency)}
    command = [sys.executable, "-m", "pytest", "-q", "--tb=no", "-p", "no:cacheprovider", *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done.stdout + done.stderr, done.returncode


def _calls(folder: Path) -> dict[str, int]:
    lines = (folder / "calls.log").read_text().split()
    return {who: lines.count(who) for who in ("champion", "challenger")}


def _timed(args: argparse.Namespace, right: dict[str, dict[str, bool]]) -> tuple[float, float]:
    """(the challenger session's wall, the two sessions' wall), best of `--repeats` each,
    interleaved; checks the calls each made."""
    concurrency = f"--verdryx-concurrency={args.concurrency}"
    one_best = two_best = float("inf")
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            _write(folder, args.cases, right)
            # A warm-up session of the same files: bytecode and the page cache, for both.
            _pytest(folder, 0.0, "--verdryx-target=agents:champion", "--no-verdryx-store")
            (folder / "calls.log").write_text("")
            wall, out, _ = _pytest(
                folder,
                args.latency,
                "--verdryx-target=agents:champion",
                "--verdryx-challenger=agents:challenger",
                "--verdryx-db=one.db",
                concurrency,
            )
            calls = _calls(folder)
            assert calls == {"champion": args.cases, "challenger": args.cases}, (calls, out)
            one_best = min(one_best, wall)
            (folder / "calls.log").write_text("")
            first, out, status = _pytest(
                folder,
                args.latency,
                "--verdryx-target=agents:champion",
                "--verdryx-db=two.db",
                "--verdryx-save-baseline=champion",
                concurrency,
            )
            assert status in (0, 1), out
            second, out, _ = _pytest(
                folder,
                args.latency,
                "--verdryx-target=agents:challenger",
                "--verdryx-db=two.db",
                "--verdryx-baseline=champion",
                "--verdryx-allow-model-change",
                concurrency,
            )
            calls = _calls(folder)
            assert calls == {"champion": args.cases, "challenger": args.cases}, (calls, out)
            two_best = min(two_best, first + second)
    return one_best, two_best


def _session_verdict(args: argparse.Namespace, right: dict[str, dict[str, bool]]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _write(folder, args.cases, right)
        _, out, _ = _pytest(
            folder,
            0.0,
            "--verdryx-target=agents:champion",
            "--verdryx-challenger=agents:challenger",
            "--no-verdryx-store",
        )
    found = re.search(r"verdryx challenger agents:challenger: ([A-Z-]+)", out)
    if found is None:
        raise AssertionError(f"no challenger verdict in the session's output:\n{out}")
    return found.group(1).lower()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="a smoke run: fewer draws")
    args = parser.parse_args()
    if args.quick:
        args.latency, args.draws, args.sessions, args.repeats = 0.01, 40, 1, 1
    rng = random.Random(20261202)

    right = _draw(rng, args.cases, DROP)
    one, two = _timed(args, right)
    ratio = one / two
    print(
        f"cases:            {args.cases} x {args.latency * 1000:.0f} ms a call, "
        f"concurrency {args.concurrency}"
    )
    print(
        f"calls:            {2 * args.cases} in one challenger session "
        f"({args.cases} per agent); {2 * args.cases} in the two sessions it replaces"
    )
    print(
        f"wall time:        {one:.2f} s one challenger session, {two:.2f} s two sessions: "
        f"{ratio:.2f}x"
    )

    detected = {DROP: 0, 0.0: 0}
    mdes: list[float] = []
    for drop in detected:
        for _ in range(args.draws):
            if _verdict(_draw(rng, args.cases, drop), mdes) == "regressed":
                detected[drop] += 1
    print(
        f"detection:        REGRESSED on {detected[DROP]} of {args.draws} draws at a "
        f"{DROP * 100:.0f}-point drop ({detected[DROP] / args.draws:.0%})"
    )
    if mdes:
        print(
            f"power:            the verdict could see drops >= {statistics.median(mdes):.3f} "
            f"(median over the draws) at {args.cases} cases, one sample each"
        )
    print(
        f"false alarm:      REGRESSED on {detected[0.0]} of {args.draws} draws at no drop "
        f"({detected[0.0] / args.draws:.0%})"
    )

    agree = 0
    for _ in range(args.sessions):
        draw = _draw(rng, args.cases, DROP)
        agree += _session_verdict(args, draw) == _verdict(draw)
    print(
        f"sessions:         {agree} of {args.sessions} real sessions reached the verdict the "
        "rule reaches on their draw"
    )
    print(f"({load()})")
    met = ratio <= TIME_TARGET and agree == args.sessions
    print(
        verdict(
            met,
            f"challenger session within {TIME_TARGET:.1f}x of two sessions' wall "
            "time, the same verdict as the rule",
        )
    )
    # A smoke run (one repeat on a shared machine) checks the calls and the verdicts; its
    # timing is printed, not judged.
    return 0 if met or (args.quick and agree == args.sessions) else 1


if __name__ == "__main__":
    raise SystemExit(main())
