"""The false-red benchmark runs end to end in its --quick form and prints its tables (the
figures themselves: README's Measured, docs/outcomes.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A rate cell: the share of red sessions and its Wilson 95% interval, `  2.5% [ 0.4%, 12.9%]`.
RATE = r"\s*(\d+\.\d)% \[\s*(\d+\.\d)%,\s*(\d+\.\d)%\]"


def test_the_quick_benchmark_prints_both_policies_for_both_repeat_counts() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gate_false_red.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "unchanged: verdict" in out and "5-pt drop: cases" in out, out
    rows = re.findall(rf"^\s*(\d+)\s+(\d+) \|{RATE}{RATE} \|{RATE}{RATE}$", out, re.M)
    assert [(cases, repeat) for cases, repeat, *_ in rows] == [("20", "1"), ("20", "5")], out
    for _, _, *cells in rows:
        values = [float(value) for value in cells]
        for rate, low, high in zip(values[::3], values[1::3], values[2::3], strict=True):
            assert 0 <= low <= rate <= high <= 100  # each interval holds its rate
    # The one-baseline table: a row of red counts per saved baseline, for each repeat count.
    pooled = re.findall(r"^\s+\| pooled (\d+)/(\d+) = ", out, re.M)
    assert len(pooled) == 2, out
    assert all(int(red) <= int(total) for red, total in pooled)
    assert "elapsed" in out
