"""Target calls: N cases through an async target with a fixed latency, at a concurrency.

The ideal is N x latency / concurrency. Two measurements, in the same run:
- runner: the cases through `verdryx_core.targets.TargetRunner` in this process; the ratio
  is wall time over the ideal;
- session: a real pytest session in a subprocess
  over an eval set of the N cases; its fixed cost (start-up, collection, grading, summary)
  is measured by the same session over the same cases with their outputs recorded (no
  call at all), and the ratio is wall time over (ideal + that fixed cost). The same session
  with a zero-latency target is printed too: what the calls cost beyond their latency.

Target: ratio <= 1.5x.

    python benchmarks/targets.py [--cases 1000] [--latency 0.05] [--concurrency 32] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import load, verdict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verdryx_core.targets import Target, TargetCase, TargetRunner  # noqa: E402

TARGET = 1.5

_TARGET_MODULE = """\
import asyncio, os

LATENCY = float(os.environ.get("BENCH_TARGET_LATENCY", "0"))

async def answer(case):
    await asyncio.sleep(LATENCY)
    return "answer " + case.id
"""

# As on a user's machine, bytecode is cached between runs (see plugin_overhead.py).
_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _runner_wall(cases: int, latency: float, concurrency: int) -> float:
    async def answer(case: TargetCase) -> str:
        await asyncio.sleep(latency)
        return "answer " + case.id

    target = Target.of(answer, spec="bench:answer")
    batch = [TargetCase(id=f"c{i}", eval_set_id="bench", prompt=f"q{i}") for i in range(cases)]
    started = time.perf_counter()
    with TargetRunner(concurrency=concurrency) as runner:
        outcomes = runner.run(target, batch)
    wall = time.perf_counter() - started
    bad = [o for o in outcomes if not o.ok]
    if bad:
        raise SystemExit(f"{len(bad)} target calls failed, e.g. {bad[0].error}")
    return wall


def _write_session(root: Path, cases: int) -> None:
    (root / "bench_target.py").write_text(_TARGET_MODULE)
    for folder, recorded in (("live", False), ("recorded", True)):
        (root / folder).mkdir()
        evalset = {
            "id": "bench-targets",
            "cases": [
                {
                    "id": f"c{i}",
                    "prompt": f"q{i}",
                    "expected": f"answer c{i}",
                    **({"output": f"answer c{i}"} if recorded else {}),
                }
                for i in range(cases)
            ],
        }
        (root / folder / "bench.evalset.json").write_text(json.dumps(evalset))
    (root / "pytest.ini").write_text("[pytest]\n")


def _session_wall(
    root: Path, latency: float | None, concurrency: int, extra: tuple[str, ...] = ()
) -> float:
    """One session: None runs the recorded cases (no target), else the live ones."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--verdryx-concurrency={concurrency}",
        "--no-verdryx-store",
        *extra,
    ]
    if latency is None:
        command.append("recorded/bench.evalset.json")
        latency = 0.0
    else:
        command += ["live/bench.evalset.json", "--verdryx-target=bench_target:answer"]
    env = {**_ENV, "BENCH_TARGET_LATENCY": str(latency), "PYTHONPATH": str(root)}
    started = time.perf_counter()
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}{result.stderr}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per target call")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many")
    parser.add_argument("--quick", action="store_true", help="200 cases, one repeat")
    parser.add_argument("--runner-only", action="store_true", help="skip the pytest session")
    args = parser.parse_args()
    cases, repeats = (200, 1) if args.quick else (args.cases, args.repeats)
    ideal = cases * args.latency / args.concurrency
    print(f"cases:            {cases} x {args.latency * 1000:g} ms, concurrency {args.concurrency}")
    print(f"ideal:            {ideal:.2f} s (N x latency / concurrency)")

    runner = min(_runner_wall(cases, args.latency, args.concurrency) for _ in range(repeats))
    print(
        f"runner:           {runner:.2f} s, {runner / ideal:.2f}x the ideal (target <= "
        f"{TARGET}x; {load()})"
    )

    if args.runner_only:
        print(
            verdict(
                runner / ideal <= TARGET,
                f"runner at {runner / ideal:.2f}x the ideal, "
                f"target <= {TARGET}x (wall time: it holds on an idle machine)",
            )
        )
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write_session(root, cases)
        _session_wall(root, None, args.concurrency)  # warm bytecode caches
        fixed = min(_session_wall(root, None, args.concurrency) for _ in range(repeats))
        zero = min(_session_wall(root, 0.0, args.concurrency) for _ in range(repeats))
        wall = min(_session_wall(root, args.latency, args.concurrency) for _ in range(repeats))
        # -x: items run as their calls end (so a stop can leave later calls unmade).
        streamed = min(
            _session_wall(root, args.latency, args.concurrency, ("-x",)) for _ in range(repeats)
        )
    ratio = wall / (ideal + fixed)
    print(f"session fixed:    {fixed:.2f} s (the same cases with recorded outputs: no call)")
    print(f"session, 0 ms:    {zero:.2f} s (a zero-latency target: the calls' own cost)")
    print(f"session:          {wall:.2f} s, {ratio:.2f}x (ideal + fixed) (target <= 1.50x)")
    print(
        f"session with -x:  {streamed:.2f} s, {streamed / (ideal + fixed):.2f}x (ideal + fixed), "
        f"{streamed / wall:.2f}x the session without ({load()})"
    )
    worst = max(runner / ideal, ratio)
    print(
        verdict(
            worst <= TARGET,
            f"runner {runner / ideal:.2f}x, session {ratio:.2f}x their ideals, target <= "
            f"{TARGET}x (wall time: it holds on an idle machine)",
        )
    )


if __name__ == "__main__":
    main()
