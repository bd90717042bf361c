"""Eight CI jobs saving runs into one store at once: runs per second on PostgreSQL, and on one
SQLite file in the same run for comparison (docs/store.md).

    VERDRYX_TEST_POSTGRES_URL=postgresql://verdryx@127.0.0.1:54329/verdryx_test \\
        .venv/bin/python benchmarks/store_postgres.py            # 8 writers x 10 runs x 1,000 cases
    .venv/bin/python benchmarks/store_postgres.py --quick        # 8 x 2 x 100, a smoke run

Each writer is a process that opens the store, builds its runs in memory (not timed), waits
at a barrier with the others, then saves its runs one transaction each. The time is from the
barrier to the last save; afterwards every run is read back and checked whole. PostgreSQL gets
a fresh schema, dropped at the end; without VERDRYX_TEST_POSTGRES_URL (or --url) the
PostgreSQL half is skipped, and --quick then skips entirely (exit 0, saying so).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchlib import load, verdict

from verdryx_core.runs import EvalRun, Score
from verdryx_core.store import Store, StoreTarget, StoreUrl

ENV = "VERDRYX_TEST_POSTGRES_URL"
#: One store for several writers is worth having if it keeps at least half one file's rate.
TARGET = 0.5


def make_run(writer: int, index: int, cases: int) -> EvalRun:
    start = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=index)
    return EvalRun(
        id=f"w{writer}-r{index}",
        model="bench-model",
        started_at=start,
        finished_at=start + timedelta(seconds=30),
        eval_set_ids=("bench",),
        run_group=f"writer-{writer}",
        scores=tuple(
            Score(
                case_id=f"case-{case:04d}",
                eval_set_id="bench",
                value=((writer + index + case) % 4) / 4,
                grader="exact",
                tokens=300,
                cost_usd=0.001,
                passed=(writer + index + case) % 4 >= 2,
                output=f"recorded answer {case} of run {index}: " + "words " * 20,
                expected="answer",
            )
            for case in range(cases)
        ),
    )


def writer_main(
    target: StoreTarget, writer: int, runs: int, cases: int, barrier: Any, results: Any
) -> None:
    with Store.open(target) as store:
        built = [make_run(writer, index, cases) for index in range(runs)]
        barrier.wait()
        started = time.time()
        for run in built:
            store.save_run(run)
        results.put((writer, started, time.time()))


def measure(target: StoreTarget, writers: int, runs: int, cases: int) -> float:
    """Runs per second of `writers` processes saving into `target` at once."""
    Store.open(target).close()  # create the schema first: not part of what is timed
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers)
    results = context.Queue()
    processes = [
        context.Process(target=writer_main, args=(target, w, runs, cases, barrier, results))
        for w in range(writers)
    ]
    for process in processes:
        process.start()
    times = [results.get(timeout=600) for _ in processes]
    for process in processes:
        process.join()
        if process.exitcode:
            raise SystemExit(f"a writer failed on {target} (exit {process.exitcode})")
    elapsed = max(end for _, _, end in times) - min(start for _, start, _ in times)
    check(target, writers, runs, cases)
    return writers * runs / elapsed


def check(target: StoreTarget, writers: int, runs: int, cases: int) -> None:
    with Store.open(target, read_only=True) as store:
        assert len(store.run_ids()) == writers * runs, "runs are missing"
        for writer in range(writers):
            for index in (0, runs - 1):
                stored = store.load_run(f"w{writer}-r{index}")
                assert stored == make_run(writer, index, cases), f"run w{writer}-r{index} differs"


def postgres_schema(url: str) -> tuple[StoreUrl, Any]:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{name}" CASCADE')

    return StoreUrl(url).with_query(f"options=-csearch_path%3D{name}"), drop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 x 2 runs x 100 cases")
    parser.add_argument("--url", default=os.environ.get(ENV), help=f"default: ${ENV}")
    parser.add_argument("--writers", type=int, default=8)
    args = parser.parse_args()
    runs, cases = (2, 100) if args.quick else (10, 1000)
    if args.quick and not args.url:
        print(f"skipped: {ENV} is unset (no PostgreSQL server to measure)")
        return 0
    print(
        f"{args.writers} writer processes x {runs} runs x {cases:,} cases, one transaction per run"
    )
    with tempfile.TemporaryDirectory(prefix="verdryx-bench-") as directory:
        sqlite_rate = measure(Path(directory) / "bench.db", args.writers, runs, cases)
    print(f"SQLite, one file (WAL):  {sqlite_rate:8.1f} runs/s")
    if not args.url:
        print(f"PostgreSQL: skipped ({ENV} unset; {load()})")
        print(verdict(False, f"not measured: {ENV} is unset"))
        return 0
    target, drop = postgres_schema(args.url)
    try:
        postgres_rate = measure(target, args.writers, runs, cases)
    finally:
        drop()
    print(f"PostgreSQL ({target}):  {postgres_rate:8.1f} runs/s")
    ratio = postgres_rate / sqlite_rate
    print(f"PostgreSQL / SQLite: {ratio:.2f}x; every run read back whole ({load()})")
    print(
        verdict(
            ratio >= TARGET,
            f"PostgreSQL at {ratio:.2f}x one SQLite file's runs/s, target >= {TARGET}x",
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
