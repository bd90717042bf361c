"""pytest-xdist (`-n 2`) against the same run without it, measured in the same run.

Two figures, each session a real pytest run in a subprocess (interleaved, best of N):

- an agent eval: 30 cases whose output comes from a target that calls the real Anthropic
  SDK (`AsyncAnthropic`, one client per process) against the fake server in a child process
  at 1 s a call (a short agent turn; `--latency` to change it): the serial run against
  `-n 2`, wall and CPU time (the sessions' whole process trees). Under `-n 2` the controller
  calls every case and the workers grade (docs/targets.md, "Under pytest-xdist"); the same
  run with `--maxfail` (each worker calls for its own items) is measured beside it, as is
  plain pytest's own `-n 2` against its serial run on as many trivial tests: what xdist's
  start-up of two workers costs any suite. Target: `-n 2` within 1.2x of the serial run;
- the controller's peak memory at 20,000 exact cases with recorded outputs under `-n 2`,
  against plain pytest's controller (`-p no:verdryx`, one test parametrized over the same
  20,000 cases) under `-n 2`. Target: within 1.2x.

    python benchmarks/xdist_runs.py [--cases 30] [--latency 1.0] [--memory-cases 20000]
                                    [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import children_cpu, load, verdict
from concurrency import served

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.anthropic_server import DEFAULT_KEY  # noqa: E402

TIME_TARGET = 1.2
MEMORY_TARGET = 1.2

_TARGET_MODULE = """\
import json
import anthropic

_client = None

async def answer(case):
    global _client
    if _client is None:
        _client = anthropic.AsyncAnthropic()  # ANTHROPIC_BASE_URL / _API_KEY from the env
    raw = await _client.messages.with_raw_response.create(
        model="claude-haiku-4-5", max_tokens=256,
        messages=[{"role": "user", "content": case.prompt}],
    )
    message = json.loads(await raw.read())
    return "".join(block.get("text", "") for block in message["content"])
"""

_MODEL = "claude-haiku-4-5"

# The controller's peak RSS, written by the controller alone (workers have `workerinput`).
_PEAK_PLUGIN = """\
import os, resource

def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        with open(os.environ["BENCH_PEAK_FILE"], "w") as out:
            out.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""

# As on a user's machine, bytecode is cached between runs (see plugin_overhead.py).
_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _pytest(root: Path, env: dict[str, str], *args: str) -> tuple[float, float, str]:
    """Wall and CPU seconds (the process tree) and the output of one passing session."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    before, started = children_cpu(), time.perf_counter()
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, env=env)
    wall, cpu = time.perf_counter() - started, children_cpu() - before
    if result.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} exited {result.returncode}:\n"
            f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    return wall, cpu, result.stdout


#: Best (wall, CPU) seconds of one kind of session.
Timing = tuple[float, float]


def _best(runs: list[Timing]) -> Timing:
    return min(wall for wall, _ in runs), min(cpu for _, cpu in runs)


def agent_eval(
    cases: int, latency: float, repeats: int, *, anchors: bool
) -> tuple[dict[str, Timing], dict[str, str]]:
    """Best (wall, CPU) by session kind (serial, -n 2, and with `anchors` -n 2 calling per
    worker and plain pytest serial and -n 2), and each -n 2 kind's output."""
    report: dict[str, object] = {}
    with served(latency, False, report) as url, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        (root / "bench_agent.py").write_text(_TARGET_MODULE)
        (root / "evals").mkdir()
        rows = [{"id": f"c{i}", "prompt": f"q{i}", "expected": f"echo: q{i}"} for i in range(cases)]
        (root / "evals" / "agent.evalset.json").write_text(json.dumps({"id": "a", "cases": rows}))
        (root / "plain").mkdir()
        (root / "plain" / "test_plain.py").write_text(
            f"import pytest\n@pytest.mark.parametrize('i', range({cases}))\n"
            "def test_case(i):\n    assert i == i\n"
        )
        env = dict(_ENV, ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY=DEFAULT_KEY, PYTHONPATH=tmp)
        verdryx = ("evals", "--verdryx-target=bench_agent:answer", f"--verdryx-db={root / 'b.db'}")
        kinds: dict[str, tuple[str, ...]] = {
            "serial": verdryx,
            "-n 2": (*verdryx, "-n", "2"),
        }
        if anchors:
            kinds["-n 2 per worker"] = (*verdryx, "-n", "2", f"--maxfail={cases + 1}")
            # The same cases answered by verdryx's own model client: cache on, the controller
            # prefetches into the store; cache off, each worker calls for its own items.
            model = ("evals", f"--verdryx-model={_MODEL}", f"--verdryx-db={root / 'm.db'}")
            kinds["model serial"] = (*model, "--verdryx-cache=off")
            # A new store each time (removed below): the calls are made, not replayed.
            fresh = f"--verdryx-db={root / 'fresh.db'}"
            kinds["model -n 2"] = ("evals", f"--verdryx-model={_MODEL}", fresh, "-n", "2")
            kinds["model -n 2 cache off"] = (*model, "-n", "2", "--verdryx-cache=off")
            kinds["plain serial"] = ("plain", "-p", "no:verdryx")
            kinds["plain -n 2"] = ("plain", "-p", "no:verdryx", "-n", "2")
        if repeats > 1:
            _pytest(root, env, *verdryx)  # warm bytecode caches, untimed
        timings: dict[str, list[Timing]] = {kind: [] for kind in kinds}
        outputs: dict[str, str] = {}
        for _ in range(repeats):
            for kind, args in kinds.items():
                for stale in root.glob("fresh.db*"):
                    stale.unlink()
                wall, cpu, output = _pytest(root, env, *args)
                timings[kind].append((wall, cpu))
                outputs[kind] = output
    return {kind: _best(runs) for kind, runs in timings.items()}, outputs


def controller_memory(cases: int) -> tuple[int, int]:
    """Peak RSS (KiB) of plain pytest's `-n 2` controller and of verdryx's."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        (root / "bench_peak.py").write_text(_PEAK_PLUGIN)
        peak_file = root / "peak"
        env = dict(_ENV, PYTHONPATH=tmp, BENCH_PEAK_FILE=str(peak_file))
        (root / "plain").mkdir()
        (root / "plain" / "rows.json").write_text(json.dumps([f"a{i}" for i in range(cases)]))
        (root / "plain" / "test_plain.py").write_text(
            "import json, pathlib, pytest\n"
            "ROWS = json.loads((pathlib.Path(__file__).parent / 'rows.json').read_text())\n"
            "@pytest.mark.parametrize('expected', ROWS)\n"
            "def test_case(expected):\n"
            "    assert expected == expected\n"
        )
        (root / "evals").mkdir()
        rows = [
            {"id": f"c{i}", "prompt": f"q{i}", "expected": f"a{i}", "output": f"a{i}"}
            for i in range(cases)
        ]
        (root / "evals" / "big.evalset.json").write_text(json.dumps({"id": "m", "cases": rows}))
        peaks = []
        for args in (("plain", "-p", "no:verdryx"), ("evals", f"--verdryx-db={root / 'b.db'}")):
            _pytest(root, env, *args, "-n", "2", "-p", "bench_peak")
            peaks.append(int(peak_file.read_text()))
    return peaks[0], peaks[1]


def _note(output: str) -> str:
    line = next((line for line in output.splitlines() if "--verdryx-concurrency" in line), None)
    return line or "(none)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds a target call takes")
    parser.add_argument("--memory-cases", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="4 target cases at 50 ms, one repeat, no anchors and no memory figure",
    )
    args = parser.parse_args()
    cases, latency, memory_cases, repeats = (
        (4, 0.05, 0, 1)
        if args.quick
        else (args.cases, args.latency, args.memory_cases, args.repeats)
    )
    best, outputs = agent_eval(cases, latency, repeats, anchors=not args.quick)
    (serial, serial_cpu), (parallel, parallel_cpu) = best["serial"], best["-n 2"]
    ratio = parallel / serial
    print(
        f"agent eval, {cases} target cases x {latency * 1000:.0f} ms (real SDK): serial "
        f"{serial:.2f} s ({serial_cpu:.2f} CPU), -n 2 {parallel:.2f} s ({parallel_cpu:.2f} CPU): "
        f"{ratio:.2f}x wall, {parallel_cpu / serial_cpu:.2f}x CPU, best of {repeats} ({load()})"
    )
    print(f"the session's note under -n: {_note(outputs['-n 2'])}")
    if "-n 2 per worker" in best:
        wall, cpu = best["-n 2 per worker"]
        print(
            f"  -n 2 with --maxfail (each worker calls its own cases): {wall:.2f} s "
            f"({cpu:.2f} CPU): {wall / serial:.2f}x wall, {cpu / serial_cpu:.2f}x CPU; "
            f"its note: {_note(outputs['-n 2 per worker'])}"
        )
        model_serial, _ = best["model serial"]
        print(
            f"  the same cases from verdryx's model client, serial (cache off) {model_serial:.2f} "
            "s; -n 2 with the controller prefetching "
            + ", -n 2 with each worker calling (cache off) ".join(
                f"{best[kind][0]:.2f} s ({best[kind][0] / model_serial:.2f}x)"
                for kind in ("model -n 2", "model -n 2 cache off")
            )
            + f"; its note: {_note(outputs['model -n 2 cache off'])}"
        )
        (plain, plain_cpu), (plain_n2, plain_n2_cpu) = best["plain serial"], best["plain -n 2"]
        print(
            f"  anchor, plain pytest on {cases} trivial tests: serial {plain:.2f} s "
            f"({plain_cpu:.2f} CPU), -n 2 {plain_n2:.2f} s ({plain_n2_cpu:.2f} CPU): "
            f"{plain_n2 / plain:.2f}x wall, {plain_n2_cpu / plain_cpu:.2f}x CPU; xdist's own "
            f"start-up of two workers: {plain_n2 - plain:+.2f} s, the rest of verdryx's -n 2 "
            f"over its serial run: {parallel - serial - (plain_n2 - plain):+.2f} s"
        )
    else:
        print("  anchors (per-worker calls, plain pytest): not measured (--quick)")
    print(
        verdict(
            ratio <= TIME_TARGET,
            f"-n 2 at {ratio:.2f}x the serial run at {latency * 1000:.0f} ms a call, "
            f"target <= {TIME_TARGET}x",
        )
    )
    if "model -n 2" in best:
        model_ratio = best["model -n 2"][0] / best["model serial"][0]
        print(
            verdict(
                model_ratio <= TIME_TARGET,
                f"-n 2 on model calls (the controller prefetching) at {model_ratio:.2f}x the "
                f"serial run, target <= {TIME_TARGET}x",
            )
        )
    if not memory_cases:
        print("-n 2 controller peak RSS: not measured (--quick keeps the smoke run cheap)")
        return 0
    plain_kib, verdryx_kib = controller_memory(memory_cases)
    memory = verdryx_kib / plain_kib
    print(
        f"-n 2 controller peak RSS, {memory_cases} cases: plain pytest {plain_kib / 1024:.0f} MiB, "
        f"verdryx {verdryx_kib / 1024:.0f} MiB: {memory:.2f}x ({load()})"
    )
    print(
        verdict(
            memory <= MEMORY_TARGET,
            f"controller memory {memory:.2f}x plain pytest's, target <= {MEMORY_TARGET}x",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
