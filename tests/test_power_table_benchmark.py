"""A smoke run of the power table benchmark (benchmarks/power_table.py): one trial of three
designs, through real pytest sessions; the table's rows and intervals are well formed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RATE = r"\s+(\d+\.\d)% \[\s*(\d+\.\d)%,\s*(\d+\.\d)%\]"


def test_power_table_smoke_run() -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "power_table.py"),
            "--quick",
            "--designs",
            "stable x auto,clustered",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    rows = re.findall(rf"^(.+?)\s+\|{RATE} \|{RATE} \|\s+(\d+\.\d)%$", out, re.M)
    assert [row[0] for row in rows] == [
        "stable x auto",
        "clustered",
        "clustered, no cluster",
    ], out
    for _, *cells in rows:
        values = [float(value) for value in cells]
        for rate, low, high in zip(values[0:6:3], values[1:6:3], values[2:6:3], strict=True):
            assert 0 <= low <= rate <= high <= 100
        assert 0 <= values[6] <= 100  # the plan's predicted power
    assert re.search(r"^(PASS|MISSED): clustered false alarms", out, re.M), out
    assert "elapsed" in out


def test_power_table_replay_smoke_run() -> None:
    """benchmarks/power_table_replay.py replays the table's stable cells through the core."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "power_table_replay.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("uniform x 3", "auto"):
        assert re.search(rf"^{name}\s+false alarms" + RATE, result.stdout, re.M), result.stdout
    assert re.search(r"^(PASS|MISSED): false alarms at most 5%", result.stdout, re.M)
