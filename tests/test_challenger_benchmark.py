"""The challenger benchmark runs end to end in its --quick form (benchmarks/challenger.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_quick_benchmark_runs_and_prints_its_figures() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "challenger.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,  # 10x what the smoke run takes on a loaded machine
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "calls:            400 in one challenger session (200 per agent)" in out
    assert re.search(r"wall time: .* (\d+\.\d+)x", out), out
    assert re.search(r"detection: +REGRESSED on \d+ of 40 draws at a 5-point drop", out), out
    assert "1 of 1 real sessions reached the verdict the rule reaches" in out
