"""The verification service benchmark's --quick form runs end to end (real `verdryx serve`,
concurrent clients) and its ledger check holds: every verdict present exactly once; with
`--db URL` on PostgreSQL too, beside SQLite in the same run (skipped only when
VERDRYX_TEST_POSTGRES_URL is unset)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.store_support import fresh_schema, needs_postgres

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_benchmark_runs_and_the_ledger_holds() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "verification_service.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(
        r"48 bundles from 4 concurrent clients in [\d.]+s = \d+ bundles/s; "
        r"latency p50 [\d.]+ ms, p99 [\d.]+ ms",
        done.stdout,
    ), done.stdout
    assert re.search(r"the service runs at [\d.]+x of it", done.stdout)
    verdicts = next(line for line in done.stdout.splitlines() if line.startswith("verdicts:"))
    assert sorted(re.findall(r"'(\w+)': 16", verdicts)) == ["FAIL", "FLAG", "PASS"]
    assert "ledger: all 48 verdicts present exactly once" in done.stdout


def test_the_quick_benchmark_compares_postgres_with_sqlite_over_two_servers() -> None:
    with fresh_schema(needs_postgres()) as url:
        done = subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "verification_service.py"),
                "--quick",
                "--db",
                url.url,
                "--servers",
                "2",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    for store in ("SQLite file", "PostgreSQL"):
        assert re.search(
            rf"verification service \({store}\): 48 bundles from 4 concurrent clients over 2 "
            r"servers in [\d.]+s = \d+ bundles/s",
            done.stdout,
        ), done.stdout
    assert re.search(r"PostgreSQL vs SQLite, same run: \d+ vs \d+ bundles/s = [\d.]+x", done.stdout)
    assert "ledger: all 48 verdicts present exactly once in each store" in done.stdout
