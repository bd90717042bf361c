"""The sequential gate's benchmark runs end to end in its --quick form and prints its table
(the figures themselves: docs/statistics.md, "The sequential gate")."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A rate or share cell and its 95% interval: `  2.5% [ 0.4%, 12.9%]`.
CELL = r"\s*(\d+\.\d)% \[\s*(\d+\.\d)%,\s*(\d+\.\d)%\]"


@pytest.mark.slow
def test_the_quick_benchmark_prints_both_agents() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sequential.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    rows = re.findall(
        rf"^(unchanged|10-pt drop)\s+\|{CELL}\s+\|\s+(\d+) /\s+(\d+) /\s+(\d+)\s+\|{CELL}$",
        out,
        re.M,
    )
    assert [row[0] for row in rows] == ["unchanged", "10-pt drop"], out
    for _, *cells in rows:
        rate, low, high, regressed, on_track, unsettled, share, s_low, s_high = map(float, cells)
        assert 0 <= low <= rate <= high <= 100 and 0 <= s_low <= share <= s_high <= 100
        assert regressed + on_track + unsettled == 4  # 2 agents x 2 runs
        assert share > 0  # the target was called
    assert "elapsed" in out
