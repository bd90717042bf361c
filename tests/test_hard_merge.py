"""Concurrent merges: several `verdryx merge --into` of the same stores at once all succeed
and leave each row once (idempotent upserts of identical rows); only rows of different
content conflict, and then the refused merge writes nothing (docs/store.md, "Merging
stores"; docs/troubleshooting.md, "Reliability: stored data").

Real processes, started together behind a gate file, against a real PostgreSQL schema (and a
SQLite file, whose write lock serialises them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from store_support import BACKENDS, store_target

from verdryx_core.addons.contracts.history import save_verdicts, verdicts
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import CacheEntry, Store, StoreTarget, StoreUrl

T0 = datetime(2025, 6, 1, tzinfo=UTC)

#: A merge process that says it is ready (verdryx imported) and waits at the gate, so every
#: process starts its merge together.
MERGER = textwrap.dedent(
    """
    import os, sys, time
    from verdryx_core.cli import main
    gate = sys.argv[1]
    open(f"{gate}.ready-{os.getpid()}", "w").close()
    while not os.path.exists(gate):
        time.sleep(0.002)
    sys.exit(main(["merge", *sys.argv[2:]]))
    """
)


def _run(run_id: str, shift: float, cases: int = 12) -> EvalRun:
    return EvalRun(
        id=run_id,
        model="stub",
        started_at=T0 + timedelta(minutes=int(shift * 100)),
        eval_set_ids=("m",),
        scores=tuple(
            Score(
                case_id=f"k{i}",
                eval_set_id="m",
                value=((i * 7 + int(shift * 10)) % 5) / 4,
                grader="exact",
                tokens=3 + i,
                output=f"{run_id} {i}",
            )
            for i in range(cases)
        ),
        run_group="nightly",
    )


def _shard(path: Path, name: str, runs: int, *, shift: float = 0.0) -> Path:
    with Store.open(path) as store:
        saved = [_run(f"{name}-{i:03d}", shift) for i in range(runs)]
        for run in saved:
            store.save_run(run)
        store.save_baseline(Baseline.from_run(saved[0], id=f"{name}-b", label=name, created_at=T0))
        store.cache_put_many(
            [
                CacheEntry(key=f"{name}-c{i}", model="stub", response={"t": i}, cost_usd=0.1)
                for i in range(20)
            ]
        )
        save_verdicts(
            store,
            [
                {
                    "agent_id": "bot",
                    "task_id": f"{name}-t{i}",
                    "verdict": "PASS",
                    "reason": "ok",
                    "run_id": f"{name}-000",
                    "created_at": (T0 + timedelta(seconds=i)).isoformat(),
                }
                for i in range(5)
            ],
        )
    return path


@pytest.fixture(params=BACKENDS)
def into(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
    with store_target(request.param, tmp_path, "into.db") as where:
        yield where


def _db(target: StoreTarget) -> str:
    return target.url if isinstance(target, StoreUrl) else str(target)


class _Writers:
    """Holds the target's write lock while the merges start, so every merge has read its
    plan before any of them writes: their writes then meet, as merges started at once by
    several CI jobs do. PostgreSQL: a transaction holding `runs` in EXCLUSIVE mode (reads go
    on), released once every merge waits on a lock; SQLite: a write transaction, released
    after the merges had time to read (well inside their 5 s busy timeout)."""

    def __init__(self, target: StoreTarget) -> None:
        self.target = target
        Store.open(target).close()  # the tables exist before the merges start
        if isinstance(target, StoreUrl):
            import psycopg

            self.pg = psycopg.connect(target.url, autocommit=True)
            self.pg.execute("BEGIN")
            self.pg.execute("LOCK TABLE runs IN EXCLUSIVE MODE")
        else:
            import sqlite3

            self.lite = sqlite3.connect(target, isolation_level=None)
            self.lite.execute("BEGIN IMMEDIATE")

    def release_when_waiting(self, count: int) -> None:
        if isinstance(self.target, StoreUrl):
            import psycopg

            # Watched from a connection of its own: inside a transaction PostgreSQL shows the
            # activity view as it was when the transaction began.
            holder = self.pg.info.backend_pid
            with psycopg.connect(self.target.url, autocommit=True) as watch:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    row = watch.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND pid <> %s AND datname = current_database()",
                        (holder,),
                    ).fetchone()
                    if row is not None and row[0] >= count:
                        break
                    time.sleep(0.05)
                else:
                    raise AssertionError(f"{count} merges never all waited to write")
            self.pg.execute("COMMIT")
            self.pg.close()
        else:
            time.sleep(2.5)
            self.lite.execute("COMMIT")
            self.lite.close()


def _merge_at_once(
    tmp_path: Path, target: StoreTarget, jobs: list[list[str]], round_: int, *, hold: bool = True
) -> list[subprocess.CompletedProcess[str]]:
    """Run `verdryx merge` with each argument list, in processes started together; with
    `hold`, their writes are made to meet (see `_Writers`)."""
    script = tmp_path / "merger.py"
    script.write_text(MERGER)
    gate = tmp_path / f"gate-{round_}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    processes = [
        subprocess.Popen(
            [sys.executable, str(script), str(gate), *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for argv in jobs
    ]
    writers = _Writers(target) if hold else None
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob(f"{gate.name}.ready-*"))) < len(processes):
        assert all(process.poll() is None for process in processes) and time.monotonic() < deadline
        time.sleep(0.01)
    gate.touch()  # every process imported verdryx and waits at the gate
    if writers is not None:
        writers.release_when_waiting(len(jobs))
    results = []
    for process in processes:
        out, err = process.communicate(timeout=180)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return results


def _counts(target: StoreTarget) -> dict[str, int]:
    with Store.open(target, read_only=True) as store:
        ids = store.run_ids()
        return {
            "runs": len(ids),
            "distinct_runs": len(set(ids)),
            "scores": len(store.case_scores(ids)),
            "baselines": len(store.list_baselines()),
            "cache": len(list(store.cache_entries())),
            "verdicts": len(verdicts(store)),
        }


def test_merges_of_the_same_stores_at_once_all_succeed_and_store_each_row_once(
    into: StoreTarget, tmp_path: Path
) -> None:
    round_ = 0  # the gate file's name
    one = _shard(tmp_path / f"one-{round_}.db", "one", 40)
    two = _shard(tmp_path / f"two-{round_}.db", "two", 25, shift=0.5)
    db = _db(into)
    jobs = [
        [str(one), str(two), "--into", db, "--json"],
        [str(two), str(one), "--into", db, "--json"],
        [str(one), "--into", db, "--json"],
        [str(two), str(one), "--into", db, "--json"],
    ]
    results = _merge_at_once(tmp_path, into, jobs, round_)
    for result in results:
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "duplicate key" not in result.stderr
    documents = [json.loads(result.stdout) for result in results]
    # Every run was added by exactly one merge; the others found it there, identical.
    assert sum(document["runs_added"] for document in documents) == 65
    assert sum(document["verdicts_added"] for document in documents) == 10
    assert sum(document["baselines_added"] for document in documents) == 2
    for document, job in zip(documents, jobs, strict=True):
        expected_runs = 40 * job.count(str(one)) + 25 * job.count(str(two))
        assert document["runs_added"] + document["runs_present"] == expected_runs
    assert _counts(into) == {
        "runs": 65,
        "distinct_runs": 65,
        "scores": 65 * 12,
        "baselines": 2,
        "cache": 40,
        "verdicts": 10,
    }
    with Store.open(into, read_only=True) as store, Store.open(one, read_only=True) as source:
        assert store.load_run("one-007") == source.load_run("one-007")
    # Once more, all at once: nothing left to add (so nothing waits on a write lock).
    again = _merge_at_once(tmp_path, into, jobs[:2], round_ + 100, hold=False)
    assert [json.loads(result.stdout)["runs_added"] for result in again] == [0, 0]
    assert _counts(into)["runs"] == 65


def test_merges_at_once_that_disagree_about_a_run_conflict_and_the_refused_one_writes_nothing(
    into: StoreTarget, tmp_path: Path
) -> None:
    left = _shard(tmp_path / "left.db", "same", 30)
    right = _shard(tmp_path / "right.db", "same", 30, shift=0.3)  # same ids, other scores
    db = _db(into)
    results = _merge_at_once(
        tmp_path, into, [[str(left), "--into", db], [str(right), "--into", db]], 0
    )
    codes = sorted(result.returncode for result in results)
    assert codes == [0, 2], [result.stderr for result in results]
    refused = next(result for result in results if result.returncode == 2)
    line = refused.stderr.strip().splitlines()[-1]
    assert line.startswith("error: merge refused, nothing written to ") and "run same-" in line
    assert "Traceback" not in refused.stderr
    winner = left if results[0].returncode == 0 else right
    with Store.open(into, read_only=True) as store, Store.open(winner, read_only=True) as source:
        assert sorted(store.run_ids()) == sorted(source.run_ids())
        for run_id in ("same-000", "same-017", "same-029"):
            assert store.load_run(run_id) == source.load_run(run_id)  # whole, one version
        assert len(verdicts(store)) == 5
