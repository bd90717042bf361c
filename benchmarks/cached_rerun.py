"""A rerun answered wholly from the response cache, against the same rerun importing the
model's SDK (what every run paid before the cache was read first), measured in the same run.

A real pytest session in a subprocess, on N model cases (real Anthropic SDK, the fake server
in a child process): one run records the answers in a store, then the rerun (every answer a
cache hit, no request made) and the same rerun with a plugin that imports `anthropic` run
interleaved, best of N. Bytecode is cached between runs, as on a user's machine.

Target: the rerun imports no SDK (a plugin in the session reports `sys.modules`), and its CPU
is printed as a ratio to the anchor's (docs/models-and-judges.md, "Concurrency and progress").

    python benchmarks/cached_rerun.py [--cases 30] [--repeats 5]
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

_MODEL = "claude-haiku-4-5"
#: Loaded with -p: says whether the session imported the SDK, in the file the env names.
_REPORTS = """\
import os, sys

def pytest_unconfigure(config):
    with open(os.environ["BENCH_SDK_FILE"], "w") as out:
        out.write(str("anthropic" in sys.modules))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    report: dict[str, object] = {}
    with served(0.0, False, report) as url, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        rows = [
            {"id": f"c{i}", "prompt": f"q{i}", "expected": f"echo: q{i}"} for i in range(args.cases)
        ]
        (root / "a.evalset.json").write_text(json.dumps({"id": "a", "cases": rows}))
        (root / "bench_reports.py").write_text(_REPORTS)
        (root / "bench_imports.py").write_text("import anthropic  # noqa: F401\n")
        sdk_file = root / "sdk"
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        env.update(
            ANTHROPIC_BASE_URL=url,
            ANTHROPIC_API_KEY=DEFAULT_KEY,
            PYTHONPATH=tmp,
            BENCH_SDK_FILE=str(sdk_file),
        )
        command = [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
            "bench_reports", "a.evalset.json", f"--verdryx-model={_MODEL}",
            f"--verdryx-db={root / 's.db'}",
        ]  # fmt: skip
        subprocess.run(command, cwd=root, env=env, capture_output=True, check=True)
        kinds = {"rerun": [], "rerun importing the SDK": ["-p", "bench_imports"]}
        best: dict[str, tuple[float, float]] = {}
        imported: dict[str, str] = {}
        for _ in range(args.repeats):
            for kind, extra in kinds.items():
                before, started = children_cpu(), time.perf_counter()
                done = subprocess.run(
                    command + extra, cwd=root, env=env, capture_output=True, text=True
                )
                wall, cpu = time.perf_counter() - started, children_cpu() - before
                hits = f"model cache: {args.cases} hits, 0 misses"
                if done.returncode != 0 or hits not in done.stdout:
                    raise SystemExit(f"{kind} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
                imported[kind] = sdk_file.read_text()
                old = best.get(kind, (wall, cpu))
                best[kind] = (min(old[0], wall), min(old[1], cpu))
    (wall, cpu), (anchor_wall, anchor_cpu) = best["rerun"], best["rerun importing the SDK"]
    print(
        f"rerun of {args.cases} cached model cases: {wall:.2f} s ({cpu:.2f} CPU); importing the "
        f"SDK: {anchor_wall:.2f} s ({anchor_cpu:.2f} CPU); {cpu / anchor_cpu:.2f}x the CPU, "
        f"best of {args.repeats} ({load()}); requests made: {report.get('requests')}"
    )
    print(verdict(imported["rerun"] == "False", "the rerun imports no SDK"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
