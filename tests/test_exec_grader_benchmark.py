"""The exec grader benchmark runs end to end in its --quick form (benchmarks/exec_grader.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from verdryx_core.sandbox import detect_isolation

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(not detect_isolation().isolated, reason="no kernel isolation here")
def test_the_quick_benchmark_runs_and_agrees_with_plain_runs() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "exec_grader.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,  # 10x and more what the smoke run takes on a loaded machine
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "agreement:        3/3 cases match sample for sample" in result.stdout
    assert re.search(r"ratio: +\d+\.\d+x", result.stdout), result.stdout
    assert "load average:" in result.stdout and "PASS" in result.stdout
