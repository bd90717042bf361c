"""Plugin overhead: N exact cases through verdryx against plain pytest over the same checks.

Both run as real pytest sessions in subprocesses, in the same run, best of three each:
- plain: one test function parametrized over the N (expected, output) pairs, `-p no:verdryx`;
- verdryx: one eval set file with the N cases (collection, grading, the store write in one
  transaction, drift against a baseline, the summary).

Target: verdryx at most 1.3 times the plain test's wall time.

    python benchmarks/plugin_overhead.py [--cases 5000] [--quick]
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

from benchlib import load, verdict

TARGET = 1.3


def _write(root: Path, cases: int) -> None:
    pairs = [(f"answer {i}", f"answer {i}") for i in range(cases)]
    (root / "plain").mkdir()
    (root / "plain" / "pairs.json").write_text(json.dumps(pairs))
    (root / "plain" / "test_plain.py").write_text(
        "import json, pathlib, pytest\n"
        "PAIRS = json.loads((pathlib.Path(__file__).parent / 'pairs.json').read_text())\n"
        "@pytest.mark.parametrize(('expected', 'output'), PAIRS)\n"
        "def test_exact(expected, output):\n"
        "    assert output == expected\n"
    )
    (root / "evals").mkdir()
    evalset = {
        "id": "bench",
        "cases": [
            {"id": f"c{i}", "prompt": f"q{i}", "expected": expected, "output": output}
            for i, (expected, output) in enumerate(pairs)
        ],
    }
    (root / "evals" / "bench.evalset.json").write_text(json.dumps(evalset))


# As on a user's machine, bytecode is cached between runs: with PYTHONDONTWRITEBYTECODE set
# (as in some sandboxes) every session re-parses and re-rewrites every plugin module, a cost
# that says nothing about either side's per-case work.
_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _pytest(root: Path, *args: str) -> float:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    started = time.perf_counter()
    result = subprocess.run(
        command, cwd=root, capture_output=True, text=True, check=False, env=_ENV
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}{result.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="500 cases, one repeat")
    args = parser.parse_args()
    cases, repeats = (500, 1) if args.quick else (args.cases, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, cases)
        (root / "pytest.ini").write_text("[pytest]\n")
        db = root / "bench.db"
        # A baseline first, so the timed runs include the drift computation; one plain run
        # too, so both sides start with warm bytecode caches.
        _pytest(root, "evals", f"--verdryx-db={db}", "--verdryx-save-baseline=b")
        _pytest(root, "plain", "-p", "no:verdryx")
        plain = min(_pytest(root, "plain", "-p", "no:verdryx") for _ in range(repeats))
        plugin = min(
            _pytest(root, "evals", f"--verdryx-db={db}", "--verdryx-baseline=b")
            for _ in range(repeats)
        )
    ratio = plugin / plain
    print(f"cases:            {cases}")
    print(f"plain pytest:     {plain:.2f} s (parametrized test, best of {repeats})")
    print(f"verdryx plugin:   {plugin:.2f} s (eval set + store + drift, best of {repeats})")
    print(f"ratio:            {ratio:.2f}x  (target <= {TARGET}x; {load()})")
    print(verdict(ratio <= TARGET, f"{ratio:.2f}x plain pytest's wall time, target <= {TARGET}x"))


if __name__ == "__main__":
    main()
