"""The clustered-plan benchmark runs end to end in its --quick form and prints its table (the
figures themselves: docs/statistics.md, "Clustered cases in a plan")."""

from __future__ import annotations

import re

from benchmark_support import run_quick


def test_the_quick_benchmark_prints_each_plan_and_its_simulated_power() -> None:
    out = run_quick("plan_clusters.py")
    cells = re.findall(r"\| +(\d+\.\d)%  \| +(\d+\.\d)% \[ *(\d+\.\d)%, *(\d+\.\d)%\]$", out, re.M)
    assert len(cells) >= 9, out
    for _, rate, low, high in cells:
        assert float(low) <= float(rate) <= float(high)
    # A strong per-session shock: repeats are not offered; a weak one: they are.
    assert re.search(r"^ +0\.7 \| true parts +\| repeats: not offered", out, re.M), out
    assert re.search(r"^ +0\.05 \| true parts +\| +500 cases x \d+ +\(repeats\)", out, re.M), out
    assert "elapsed" in out
