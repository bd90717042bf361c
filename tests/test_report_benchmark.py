"""The report benchmark's smoke run: it runs, and the report stays under target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_benchmark_runs_and_meets_the_target() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "report.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "target < 5 s: ok" in done.stdout
    assert "x faster than that" in done.stdout
