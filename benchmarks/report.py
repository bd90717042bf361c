"""Time the HTML report over a large store (1,000 runs of 500 cases in under 5 s).

    .venv/bin/python benchmarks/report.py            # 1,000 runs x 500 cases
    .venv/bin/python benchmarks/report.py --quick    # 100 runs x 100 cases, a smoke run

The store is built in a temp dir with `Store.save_run` (not timed against the target). The
report is timed end to end: open the store, read the series, load the current run, compare
it with the baseline (2,000 bootstrap draws), build the page and write the file. The ratio
is against reading every run's scores, which is what a report that plotted per-case data for
each run would have to do first, measured on the same store in the same run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchlib import load, verdict

from verdryx_core.reporting.html import write_report
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store

TARGET_SECONDS = 5.0
GRADERS = ("exact", "regex", "llm_judge", "tool_trace", "outcome_tag")


def build_store(path: Path, runs: int, cases: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with Store.open(path) as store:
        baseline_run = None
        for index in range(runs):
            quality = 0.85 if index < runs * 0.8 else 0.78
            scores = []
            for case in range(cases):
                grader = GRADERS[case % len(GRADERS)]
                if grader == "llm_judge":
                    value = round(min(1.0, max(0.0, rng.gauss(quality, 0.2))) * 4) / 4
                else:
                    value = 1.0 if rng.random() < quality else 0.0
                scores.append(
                    Score(
                        case_id=f"case-{case:04d}",
                        eval_set_id="bench",
                        value=value,
                        grader=grader,
                        tokens=400 + case % 300,
                        cost_usd=0.0012,
                        judge_cost_usd=0.0004 if grader == "llm_judge" else 0.0,
                        passed=value >= 0.5,
                        output=f"recorded answer {case} of run {index}: " + "words " * 20,
                        expected="(?i)answer" if grader == "regex" else None,
                        reason="judge: concrete next step" if grader == "llm_judge" else None,
                    )
                )
            run = EvalRun(
                id=f"run-{index:05d}-{rng.getrandbits(64):016x}",
                model="bench-model",
                judge_model="bench-judge",
                started_at=start + timedelta(hours=index),
                eval_set_ids=("bench",),
                scores=tuple(scores),
            )
            store.save_run(run)
            if index == runs // 2:
                baseline_run = run
        assert baseline_run is not None
        store.save_baseline(Baseline.from_run(baseline_run, id="bench-base", label="bench"))


def timed(action: Callable[[], object], repeats: int) -> float:
    """Median wall time of `repeats` runs (the machine is shared; one run can be unlucky)."""
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        action()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 runs x 100 cases")
    args = parser.parse_args()
    runs, cases = (100, 100) if args.quick else (1000, 500)
    repeats = 3
    with tempfile.TemporaryDirectory(prefix="verdryx-bench-report-") as scratch:
        work = Path(scratch)
        db = work / "verdryx.db"
        begin = time.perf_counter()
        build_store(db, runs, cases)
        print(
            f"store: {runs:,} runs x {cases:,} cases built in {time.perf_counter() - begin:.1f} s"
        )

        out = work / "report.html"

        def report() -> None:
            with Store.open(db) as store:
                write_report(store, out)

        def read_everything() -> None:
            with Store.open(db) as store:
                for summary in store.list_runs():
                    store.load_run(summary.id)

        report_s = timed(report, repeats)
        naive_s = timed(read_everything, 1)
        size = out.stat().st_size
    status = "ok" if report_s < TARGET_SECONDS else "TOO SLOW"
    print(
        f"report: {report_s:.3f} s (median of {repeats}), {size / 1024:.0f} KiB of HTML; "
        f"target < {TARGET_SECONDS:.0f} s: {status}"
    )
    print(
        f"reading every run's scores alone: {naive_s:.3f} s; the report is "
        f"{naive_s / report_s:.1f}x faster than that ({load()})"
    )
    print(
        verdict(
            report_s < TARGET_SECONDS,
            f"the report in {report_s:.3f} s, target < {TARGET_SECONDS:.0f} s",
        )
    )
    return 0 if report_s < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
