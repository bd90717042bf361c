"""The whole `verdryx drift` command against a 10-line numpy paired bootstrap and scipy's
`bootstrap(paired=True)`, on the same store, in the same run.

    .venv/bin/python benchmarks/drift.py            # 10,000 and 50,000 cases a side
    .venv/bin/python benchmarks/drift.py --quick    # 1,000 and 2,000 cases, 1 round

For each size the script writes one SQLite store holding a baseline run, the baseline saved
from it (`v1`), and a current run of the same cases with all-distinct float scores (the
worst case for a bootstrap: every resample draws n indices). Then three programs answer the
same question, each in its own process, 2,000 resamples, a 95% percentile interval:

- `verdryx drift --baseline v1` (the command a user runs: start-up, the store, the gate);
- the anchor, `NUMPY_SCRIPT` below: read the two sides' scores from the same store with
  sqlite3, pair them by case, and bootstrap the mean per-case difference with numpy;
- the same with `scipy.stats.bootstrap((current, baseline), paired=True)` (in batches of
  100 resamples: all 2,000 at once would hold 2.4 GB of resamples at 50,000 cases).

The figure is each process's CPU time (user + system, from `os.wait4`), the median of the
rounds, the three run interleaved round by round so a machine that gets busier shifts them
alike; the machine's load average is printed beside it. Each program runs once first,
unmeasured (not under --quick), to fill Python's bytecode cache, as an installed package
has its modules compiled (see `child_environment`). On a loaded machine every figure
grows, and the ratio moves by some tenths: CPU time, not wall time, is compared. The
intervals are printed too: the three agree within the Monte Carlo error of 2,000 resamples
(docs/statistics.md, "What is computed").

Target: the whole `verdryx drift` at 50,000 cases a side at most 3.0x the numpy script's CPU.
It gates the objects every face gates (one implementation of each matching rule); a second,
array copy of those rules once made it 1.0x, and was removed for that reason.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store

TARGET_RATIO = 3.0
TARGET_SIZE = 50_000

#: Both scripts read the scores of baseline `v1` and of the newest run, paired by case.
READ = """
import sqlite3, sys
import numpy as np
db = sqlite3.connect(sys.argv[1])
BASE = "SELECT eval_set_id, case_id, value FROM baseline_cases WHERE baseline_id = "
base = {(s, c): v for s, c, v in db.execute(BASE + "(SELECT id FROM baselines WHERE label = 'v1')")}
CUR = "SELECT eval_set_id, case_id, value FROM scores WHERE value IS NOT NULL AND run_id = "
cur = {(s, c): v for s, c, v in db.execute(CUR + "(SELECT id FROM runs ORDER BY started_at DESC)")}
keys = [key for key in cur if key in base]
current, baseline = np.array([cur[key] for key in keys]), np.array([base[key] for key in keys])
"""

#: The anchor: what a reader who knows numpy writes to answer "did the paired mean drop?".
NUMPY_SCRIPT = (
    READ
    + """
diffs = current - baseline
rng = np.random.default_rng(0)
means = np.array([diffs[rng.integers(0, diffs.size, diffs.size)].mean() for _ in range(2000)])
low, high = np.percentile(means, [2.5, 97.5])
print(f"{diffs.mean():+.5f} [{low:+.5f}, {high:+.5f}] {'regressed' if high < 0 else 'on-track'}")
"""
)

SCIPY_SCRIPT = (
    READ
    + """
from scipy import stats
result = stats.bootstrap(
    (current, baseline), lambda c, b, axis: np.mean(c - b, axis=axis), paired=True,
    vectorized=True, n_resamples=2000, batch=100, method="percentile", random_state=0,
)
low, high = result.confidence_interval
mean = np.mean(current - baseline)
print(f"{mean:+.5f} [{low:+.5f}, {high:+.5f}] {'regressed' if high < 0 else 'on-track'}")
"""
)


def write_store(path: Path, n: int) -> None:
    """A baseline run, baseline `v1` saved from it, and a later run of the same n cases
    whose scores dropped by 0.002 on average (noise 0.05 per case)."""
    rng = np.random.default_rng(2026)
    base = rng.beta(5, 2, n)
    current = np.clip(base + rng.normal(-0.002, 0.05, n), 0, 1)
    started = datetime(2026, 7, 12, tzinfo=UTC)

    def run(run_id: str, values: np.ndarray, at: datetime) -> EvalRun:
        return EvalRun(
            id=run_id,
            model="stub",
            started_at=at,
            finished_at=at,
            eval_set_ids=("support",),
            complete=True,
            scores=tuple(
                Score(
                    case_id=f"case-{index:06d}",
                    eval_set_id="support",
                    value=float(value),
                    grader="exact",
                    fingerprint=f"f{index}",
                )
                for index, value in enumerate(values)
            ),
        )

    with Store.open(path) as store:
        baseline_run = run("baseline-run", base, started)
        store.save_run(baseline_run)
        store.save_baseline(
            Baseline.from_run(baseline_run, id="b-1", label="v1", created_at=started)
        )
        store.save_run(run("current-run", current, started + timedelta(hours=1)))


def child_environment(root: Path) -> dict[str, str]:
    """The children's environment: Python's bytecode cache on (kept under `root`), as an
    installed package has its modules compiled; with PYTHONDONTWRITEBYTECODE every run of
    an editable install would compile verdryx's modules again (~0.05 s a run)."""
    environment = {
        name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"
    }
    environment["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return environment


def measured(command: list[str], cwd: Path) -> tuple[float, str]:
    """(CPU seconds of the child, its stdout); exit 1 (a regressed verdict) is an answer."""
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            command, cwd=cwd, stdout=output, stderr=subprocess.STDOUT, env=child_environment(cwd)
        )
        _, status, usage = os.wait4(process.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        output.seek(0)
        text = output.read().decode(errors="replace")
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({code}):\n{text}")
    return usage.ru_utime + usage.ru_stime, text


def verdryx_answer(text: str) -> str:
    document = json.loads(text)
    paired = document["paired"]
    return (
        f"{paired['mean_diff']:+.5f} [{paired['ci_low']:+.5f}, {paired['ci_high']:+.5f}] "
        f"{document['verdict']}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 2,000 cases, 1 round")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per program (3)")
    args = parser.parse_args()
    sizes = (1_000, 2_000) if args.quick else (10_000, TARGET_SIZE)
    rounds = args.rounds or (1 if args.quick else 3)

    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        numpy_script, scipy_script = root / "numpy_paired.py", root / "scipy_paired.py"
        numpy_script.write_text(NUMPY_SCRIPT)
        scipy_script.write_text(SCIPY_SCRIPT)
        for n in sizes:
            store = root / f"verdryx-{n}.db"
            write_store(store, n)
            programs = {
                "verdryx drift": [
                    *(sys.executable, "-m", "verdryx_core.cli", "drift"),
                    *("--baseline", "v1", "--db", str(store), "--json"),
                ],
                "numpy script": [sys.executable, str(numpy_script), str(store)],
                "scipy bootstrap": [sys.executable, str(scipy_script), str(store)],
            }
            cpu: dict[str, list[float]] = {name: [] for name in programs}
            answers: dict[str, str] = {}
            if n == sizes[0] and not args.quick:  # fills the bytecode cache; not measured
                for command in programs.values():
                    measured(command, root)
            for _ in range(rounds):
                for name, command in programs.items():
                    seconds, text = measured(command, root)
                    cpu[name].append(seconds)
                    answers[name] = (
                        verdryx_answer(text) if name == "verdryx drift" else text.strip()
                    )
            load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
            results[n] = {name: statistics.median(values) for name, values in cpu.items()}
            anchor = results[n]["numpy script"]
            print(
                f"{n:,} cases a side, 2000 resamples; CPU s (user + system), median of "
                f"{rounds}; load average {load} ({os.cpu_count()} cores)"
            )
            for name, seconds in results[n].items():
                print(
                    f"  {name:<16} {seconds:6.2f} s  {seconds / anchor:5.2f}x   "
                    f"mean diff [95% CI] verdict: {answers[name]}"
                )
            print(flush=True)

    size = max(results)
    ratio = results[size]["verdryx drift"] / results[size]["numpy script"]
    met = ratio <= TARGET_RATIO
    target = "" if size == TARGET_SIZE else f" (--quick: {size:,} cases, not the target's size)"
    print(
        f"{'PASS' if met else 'MISSED'}: `verdryx drift` at {size:,} cases a side takes "
        f"{ratio:.2f}x the numpy script's CPU (target <= {TARGET_RATIO:.1f}x; load average "
        f"{load}){target}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
