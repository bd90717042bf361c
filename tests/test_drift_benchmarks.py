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


def test_drift_benchmark_times_numpy_against_the_python_loop() -> None:
    out = _run("drift.py")
    assert "1,000  distinct" in out and "2,000  pass/fail" in out
    for label in ("speedup", "time", "peak"):
        assert any(line.strip().startswith(label) for line in out.splitlines()), label
