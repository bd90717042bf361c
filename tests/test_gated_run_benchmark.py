"""The gated-run benchmark runs end to end in its --quick form (figures: README's Measured)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_gated_run_benchmark_runs_both_sides() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gated_run.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    row = re.search(
        r"^\s+500\s+([\d.]+) s \(\s*([\d.]+) CPU\)\s+([\d.]+) s \(\s*([\d.]+) CPU\)\s+"
        r"([\d.]+)x, ([\d.]+)x  \(load average [^)]*\)$",
        result.stdout,
        re.M,
    )
    assert row is not None, result.stdout
    plain, plain_cpu, gated, gated_cpu, ratio, cpu_ratio = (float(v) for v in row.groups())
    assert min(plain, plain_cpu, gated, gated_cpu) > 0
    # The printed figures are rounded: the ratios agree with them to a few hundredths.
    assert abs(ratio - gated / plain) < 0.05
    assert abs(cpu_ratio - gated_cpu / plain_cpu) < 0.05
    assert re.search(r"^(PASS|MISSED): worst CPU ratio [\d.]+x plain pytest", result.stdout, re.M)
