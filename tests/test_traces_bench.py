"""The trace benchmark runs end to end at smoke size and its two engines agree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "traces.py"


def test_quick_benchmark_agrees_with_duckdb() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--rows", "40000"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "answers agree" in result.stdout
    assert "ratio verdryx/duckdb" in result.stdout
