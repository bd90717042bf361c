"""The PostgreSQL store benchmark's smoke run: eight writers on both backends, every run read
back whole (docs/store.md). Without a server it says it skipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.store_support import postgres_url

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "store_postgres.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    if postgres_url() is None:
        assert done.stdout.startswith("skipped: VERDRYX_TEST_POSTGRES_URL is unset")
        return
    assert "8 writer processes x 2 runs x 100 cases" in done.stdout
    assert "SQLite, one file (WAL):" in done.stdout and "runs/s" in done.stdout
    assert "every run read back whole" in done.stdout
