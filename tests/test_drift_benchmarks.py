"""The drift benchmarks run end to end in their --quick form."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(script: str) -> str:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,  # 10x and more what a smoke run takes on a loaded machine
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_gate_error_rates_prints_both_rules_for_every_size() -> None:
    out = _run("gate_error_rates.py")
    rows = [line.split("|") for line in out.splitlines() if line.count("|") == 3]
    sizes = [row[0].strip() for row in rows if row[0].strip().replace(",", "").isdigit()]
    assert sizes == ["20", "50", "200", "1,000"]
    assert "default rule, worst false-alarm rate:" in out


def test_drift_benchmark_times_the_command_against_numpy_and_scipy() -> None:
    out = _run("drift.py")
    for size in ("1,000", "2,000"):
        assert f"{size} cases a side" in out
    rows = [line.split() for line in out.splitlines() if " s  " in line and "x   mean" in line]
    names = [" ".join(row[:2]) for row in rows]
    assert names == ["verdryx drift", "numpy script", "scipy bootstrap"] * 2, out
    # The three answer the same question: the same mean difference, and intervals that
    # agree within the Monte Carlo error of 2,000 resamples.
    for first in range(0, 6, 3):
        answers = [row[row.index("verdict:") + 1 :] for row in rows[first : first + 3]]
        assert len({answer[0] for answer in answers}) == 1, answers
        lows = [float(answer[1].strip("[,")) for answer in answers]
        highs = [float(answer[2].strip("]")) for answer in answers]
        spread = max(highs) - min(lows)
        assert max(lows) - min(lows) < spread / 4 and max(highs) - min(highs) < spread / 4
    assert "load average" in out
    assert any(line.startswith(("PASS: ", "MISSED: ")) for line in out.splitlines()), out
