"""A gated run against plain pytest doing the same work, measured in the same run.

The CI job of docs/ci.md: a baseline is named, 10% of the cases were already below the bar in
the baseline (excused: xfailed), 1% fail for the first time, the rest pass. Both sides run as
real pytest sessions in subprocesses, interleaved, best of N each (wall time and CPU time: on a
shared machine the CPU ratio is the steadier figure):

- plain: one test function parametrized over the N cases, `-p no:verdryx`; `pytest.xfail()`
  for the excused ones, a failing `assert` for the new failures;
- verdryx: one eval set file with the N cases, `--verdryx-baseline=b` (collection, grading,
  the excused/new/passed outcomes, the store write, drift against the baseline, the summary).

Both sessions exit 1 (there are new failures). Target: verdryx at most 1.3 times plain.

    python benchmarks/gated_run.py [--cases 5000 20000] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import load, verdict

EXCUSED_EVERY = 10  # 10% below the bar in the baseline and now
NEW_EVERY = 100  # 1% below the bar now only (offset so the two never coincide)

# As on a user's machine, bytecode is cached between runs (see plugin_overhead.py).
_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _kind(index: int) -> str:
    if index % EXCUSED_EVERY == 0:
        return "excused"
    if index % NEW_EVERY == 5:
        return "new"
    return "pass"


def _evalset(cases: int, *, baseline: bool) -> dict[str, object]:
    rows = []
    for i in range(cases):
        kind = _kind(i)
        wrong = kind == "excused" or (kind == "new" and not baseline)
        rows.append(
            {
                "id": f"c{i}",
                "prompt": f"q{i}",
                "expected": f"answer {i}",
                "output": f"wrong {i}" if wrong else f"answer {i}",
            }
        )
    return {"id": "bench", "cases": rows}


def _write_plain(root: Path, cases: int) -> None:
    rows = [(f"answer {i}", _kind(i)) for i in range(cases)]
    (root / "plain").mkdir()
    (root / "plain" / "rows.json").write_text(json.dumps(rows))
    (root / "plain" / "test_plain.py").write_text(
        "import json, pathlib, pytest\n"
        "ROWS = json.loads((pathlib.Path(__file__).parent / 'rows.json').read_text())\n"
        "@pytest.mark.parametrize(('expected', 'kind'), ROWS)\n"
        "def test_case(expected, kind):\n"
        "    output = expected if kind == 'pass' else 'wrong'\n"
        "    if kind == 'excused' and output != expected:\n"
        "        pytest.xfail(f'below the bar, as in the baseline')\n"
        "    assert output == expected\n"
    )


def _pytest(root: Path, *args: str, expect: int) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one pytest session."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(
        command, cwd=root, capture_output=True, text=True, check=False, env=_ENV
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != expect:
        raise SystemExit(
            f"{' '.join(command)} exited {result.returncode}, expected {expect}:\n"
            f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    return elapsed, cpu


def _best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return min(wall for wall, _ in runs), min(cpu for _, cpu in runs)


def measure(cases: int, repeats: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Best-of-`repeats` (wall, CPU) seconds of plain pytest and of verdryx, for one size."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        _write_plain(root, cases)
        (root / "evals").mkdir()
        evalset = root / "evals" / "bench.evalset.json"
        db = root / "bench.db"
        # The baseline: the excused cases already below the bar (exit 1: they fail there).
        # Untimed, and `--tb=no`: pytest's failure summary scans every report once per
        # failure, quadratic in a run with thousands of failures.
        evalset.write_text(json.dumps(_evalset(cases, baseline=True)))
        _pytest(
            root, "evals", f"--verdryx-db={db}", "--verdryx-save-baseline=b", "--tb=no", expect=1
        )
        evalset.write_text(json.dumps(_evalset(cases, baseline=False)))
        # One untimed plain run, so both sides start with warm bytecode caches.
        _pytest(root, "plain", "-p", "no:verdryx", expect=1)
        # Interleaved, so a busy neighbour on the machine slows both sides alike.
        plain, gated = [], []
        for _ in range(repeats):
            plain.append(_pytest(root, "plain", "-p", "no:verdryx", expect=1))
            gated.append(
                _pytest(root, "evals", f"--verdryx-db={db}", "--verdryx-baseline=b", expect=1)
            )
    return _best(plain), _best(gated)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="500 cases, one repeat")
    parser.add_argument("--target", type=float, default=1.3)
    args = parser.parse_args()
    sizes, repeats = ([500], 1) if args.quick else (args.cases, args.repeats)
    print(f"{'cases':>7}  {'plain pytest':>19}  {'verdryx gated':>19}  ratio (wall, CPU)")
    worst = worst_cpu = 0.0
    for cases in sizes:
        (plain, plain_cpu), (gated, gated_cpu) = measure(cases, repeats)
        ratio, cpu_ratio = gated / plain, gated_cpu / plain_cpu
        worst, worst_cpu = max(worst, ratio), max(worst_cpu, cpu_ratio)
        print(
            f"{cases:>7}  {plain:>6.2f} s ({plain_cpu:>5.2f} CPU)  "
            f"{gated:>6.2f} s ({gated_cpu:>5.2f} CPU)  {ratio:.2f}x, {cpu_ratio:.2f}x  ({load()})",
            flush=True,
        )
    print(f"10% excused (xfailed), 1% new failures; best of {repeats}; target <= {args.target}x")
    print(f"worst wall-time ratio: {worst:.2f}x, worst CPU ratio: {worst_cpu:.2f}x ({load()})")
    print(
        verdict(
            worst_cpu <= args.target,
            f"worst CPU ratio {worst_cpu:.2f}x plain pytest, target <= {args.target}x "
            "(the wall-time ratio holds on an idle machine)",
        )
    )


if __name__ == "__main__":
    main()
