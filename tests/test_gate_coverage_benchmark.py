"""The alpha-budget benchmark runs end to end in its --quick form and prints its table (the
figures themselves: docs/statistics.md, "The alpha budget")."""

from __future__ import annotations

import re

from benchmark_support import run_quick

# A rate cell: its share in % and its Wilson 95% interval, `3.3 [0.6,16.7]`.
CELL = r"(\d+\.\d) \[(\d+\.\d),(\d+\.\d)\]"


def test_the_quick_benchmark_prints_every_rule_for_each_size() -> None:
    out = run_quick("gate_coverage.py")
    rows = re.findall(rf"^ +([\d,]+) \|((?: +{CELL}){{4}}) \|((?: +{CELL}){{4}})$", out, re.M)
    assert [row[0] for row in rows] == ["20", "50"], out
    cells = [cell for row in rows for cell in re.findall(CELL, row[1] + row[5])]
    assert len(cells) == 16, out
    for share, low, high in cells:
        assert float(low) <= float(share) <= float(high)
    assert re.search(r"^gate's false red over every cell: \d+\.\d\d% \[", out, re.M), out
