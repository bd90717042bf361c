"""A large gated run finishes: the same gated session with and without pytest's failure
summary (`--tb=no`), measured in the same run, interleaved, CPU time as the fair figure.

The run of benchmarks/gated_run.py (10% of the cases excused by the baseline, 1% new
failures, the rest pass), at 200,000 cases. pytest's failure summary looks up every report
of the session once per failed report, so a run with thousands of pytest failures pays
(failures x reports) however short each report is (plain pytest pays it too). Two policies:

- `--verdryx-fail-on=verdict` (the default when a baseline is named): a dropped case is an
  xfail and the gate is the one failed item, so the summary is paid once. Target: the
  session within 1.2x of the same session with `--tb=no`.
- `--verdryx-fail-on=cases`: every dropped case is a pytest failure; verdryx keeps each
  failure report it renders short (measured: lines and characters per report), and an eval
  case's passed setup and teardown reports are not in the list pytest's terminal scans once
  per failure (docs/ci.md, "Large runs"), so the scan costs (failures x other tests' reports)
  only. Run at 20,000 cases by default (each size a session pair). Target: within 1.2x too.

    python benchmarks/large_gated_run.py [--cases 200000] [--cases-policy-cases 20000]
                                         [--repeats 1] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import children_cpu, load, verdict
from gated_run import _ENV, _evalset

TARGET = 1.2


def _session(root: Path, db: Path, *extra: str) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds and output of one gated pytest session."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "evals",
        f"--verdryx-db={db}",
        "--verdryx-baseline=b",
        *extra,
    ]
    before = children_cpu()
    started = time.perf_counter()
    result = subprocess.run(
        command, cwd=root, capture_output=True, text=True, check=False, env=_ENV
    )
    wall = time.perf_counter() - started
    cpu = children_cpu() - before
    # 1: new failures; 0 when a small run's drop is not yet significant (the smoke run).
    if result.returncode not in (0, 1):
        raise SystemExit(
            f"{' '.join(command)} exited {result.returncode}, expected 0 or 1:\n"
            f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    return wall, cpu, result.stdout


def _prepare(root: Path, cases: int) -> Path:
    """An eval set of `cases` and its baseline `b` saved in a store (untimed)."""
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "evals").mkdir()
    evalset = root / "evals" / "bench.evalset.json"
    db = root / "bench.db"
    evalset.write_text(json.dumps(_evalset(cases, baseline=True)))
    subprocess.run(
        [
            sys.executable,
            *("-m", "pytest", "-q", "-p", "no:cacheprovider", "evals"),
            f"--verdryx-db={db}",
            "--verdryx-save-baseline=b",
            "--tb=no",
        ],
        cwd=root,
        capture_output=True,
        check=False,
        env=_ENV,
    )
    evalset.write_text(json.dumps(_evalset(cases, baseline=False)))
    return db


def _failure_reports(output: str) -> tuple[int, float, float]:
    """How many failure reports the FAILURES section holds, and their mean lines and
    characters."""
    section = output.split(" FAILURES ", 1)[1] if " FAILURES " in output else ""
    section = section.split(" short test summary info ", 1)[0]
    reports = re.split(r"^_{3,} .* _{3,}$", section, flags=re.M)[1:]
    if not reports:
        return 0, 0.0, 0.0
    lines = sum(len(report.strip("\n").splitlines()) for report in reports)
    chars = sum(len(report.strip("\n")) for report in reports)
    return len(reports), lines / len(reports), chars / len(reports)


def measure(
    root: Path, db: Path, policy: str, repeats: int
) -> tuple[float, float, float, float, str]:
    """Best-of-`repeats` wall and CPU of the session with its summary and with `--tb=no`."""
    extra = (f"--verdryx-fail-on={policy}",)
    full, terse = [], []
    output = ""
    for _ in range(repeats):
        wall, cpu, output = _session(root, db, *extra)
        full.append((wall, cpu))
        wall, cpu, _ = _session(root, db, *extra, "--tb=no")
        terse.append((wall, cpu))
    best = min(full), min(c for _, c in full), min(terse), min(c for _, c in terse)
    return best[0][0], best[1], best[2][0], best[3], output


def _print_row(policy: str, cases: int, row: tuple[float, float, float, float, str]) -> float:
    """Print one policy's figures; returns its CPU ratio."""
    wall, cpu, bare_wall, bare_cpu, output = row
    ratio = cpu / bare_cpu
    print(
        f"{policy:>8} {cases:>7}  {wall:>6.2f} s ({cpu:>6.2f} CPU)  "
        f"{bare_wall:>6.2f} s ({bare_cpu:>6.2f} CPU)  {wall / bare_wall:.2f}x, {ratio:.2f}x"
        f"  ({load()})",
        flush=True,
    )
    count, lines, chars = _failure_reports(output)
    print(f"{'':>8} failure reports: {count}, {lines:.1f} lines / {chars:.0f} characters each")
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200_000, help="size under the verdict")
    parser.add_argument(
        "--cases-policy-cases", type=int, default=20_000, help="size under fail-on=cases"
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="200 cases, one repeat")
    args = parser.parse_args()
    sizes = {"verdict": args.cases, "cases": args.cases_policy_cases}
    if args.quick:
        sizes = {"verdict": 200, "cases": 200}
    repeats = 1 if args.quick else args.repeats
    print(f"{'policy':>8} {'cases':>7}  {'with summary':>19}  {'--tb=no':>19}  ratio (wall, CPU)")
    worst = 0.0
    prepared: dict[int, tuple[Path, Path]] = {}
    with contextlib.ExitStack() as stack:
        for policy, cases in sizes.items():
            if cases not in prepared:  # one eval set and its baseline per size
                root = Path(stack.enter_context(tempfile.TemporaryDirectory()))
                prepared[cases] = (root, _prepare(root, cases))
            worst = max(
                worst, _print_row(policy, cases, measure(*prepared[cases], policy, repeats))
            )
    print(f"10% excused, 1% new failures; best of {repeats}; CPU ratio is the figure")
    print(verdict(worst <= TARGET, f"worst CPU ratio {worst:.2f}x, target <= {TARGET}x"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
