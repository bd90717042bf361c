"""The trace benchmark runs end to end at smoke size, its two engines agree, and the core
it keeps busy is released when it ends."""

from __future__ import annotations

import os
import re
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
    assert re.search(r"^(PASS|MISSED): .*load average", result.stdout, re.MULTILINE)
    spinner = re.search(r"busy core: a CPU-bound process \(pid (\d+)\)", result.stdout)
    assert spinner, result.stdout
    try:
        os.kill(int(spinner.group(1)), 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"the busy-core process {spinner.group(1)} outlived the benchmark")
