"""The per-case drop benchmark runs end to end in its --quick form and prints its table (the
figures themselves: docs/statistics.md, "Which cases regressed")."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_benchmark_prints_each_procedure_for_each_design() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "case_drops.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = re.findall(
        r"^(.+?)\s+(\d+) \| (all|filter|tarone)\s+\| +(\S+%|-) +\| +(\d+\.\d)% \| +(\d+\.\d)% "
        r"\[ *(\d+\.\d)%, *(\d+\.\d)%\]$",
        result.stdout,
        re.M,
    )
    assert len(rows) == 15, result.stdout
    for *_, rate, low, high in rows:
        assert float(low) <= float(rate) <= float(high)
    # The 51-case set: one broken case among 50 that always pass, never seen by plain
    # Benjamini-Hochberg, always by the filter (deterministic: no sample varies).
    first = {row[2]: row[3] for row in rows[:3]}
    assert first == {"all": "0.0%", "filter": "100.0%", "tarone": "100.0%"}
    assert result.stdout.rstrip().splitlines()[-1].startswith("PASS: ")
