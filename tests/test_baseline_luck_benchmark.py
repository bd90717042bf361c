"""The baseline-luck benchmark runs end to end in its --quick form and prints its table (the
figures themselves: docs/statistics.md, "Baselines from several runs")."""

from __future__ import annotations

import re

import pytest
from benchmark_support import run_quick

# A rate cell: red runs, their share and its Wilson 95% interval, `  1/20    5.0% [ 0.9%, 23.6%]`.
RATE = r"\s*(\d+)/(\d+)\s+(\d+\.\d)% \[\s*(\d+\.\d)%,\s*(\d+\.\d)%\]"


@pytest.mark.slow
def test_the_quick_benchmark_prints_each_design() -> None:
    out = run_quick("baseline_luck.py")
    rows = re.findall(rf"^\s*(\d) \|{RATE}\s+\|{RATE}\s+\| ([\d.]+)\s+\| ([\d ]+)$", out, re.M)
    assert [row[0] for row in rows] == ["1", "3", "5"], out
    for _, *cells in rows:
        worst, gated, *worst_cell = cells[0:5]
        total, runs, *pooled_cell = cells[5:10]
        per_baseline = [int(red) for red in cells[11].split()]
        assert (int(gated), int(runs)) == (2, 4)  # 2 sets x 2 gated runs
        assert max(per_baseline) == int(worst) and sum(per_baseline) == int(total)
        for rate, low, high in (worst_cell, pooled_cell):
            assert 0 <= float(low) <= float(rate) <= float(high) <= 100
    assert "14 pytest sessions, 12 conclusions" in out
    assert re.search(r"^(PASS|MISSED): ", out, re.M)
