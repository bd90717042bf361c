"""The per-case drop benchmark runs end to end in its --quick form and prints its table (the
figures themselves: docs/statistics.md, "Which cases regressed")."""

from __future__ import annotations

import re

from benchmark_support import run_quick


def test_the_quick_benchmark_prints_each_procedure_for_each_design() -> None:
    out = run_quick("case_drops.py")
    rows = re.findall(
        r"^(.+?)\s+(\d+) \| (all|filter|tarone)\s+\| +(\S+%|-) +\| +(\d+\.\d)% \| +(\d+\.\d)% "
        r"\[ *(\d+\.\d)%, *(\d+\.\d)%\]$",
        out,
        re.M,
    )
    assert len(rows) == 15, out
    for *_, rate, low, high in rows:
        assert float(low) <= float(rate) <= float(high)
    # The 51-case set: one broken case among 50 that always pass, never seen by plain
    # Benjamini-Hochberg, always by the filter (deterministic: no sample varies).
    first = {row[2]: row[3] for row in rows[:3]}
    assert first == {"all": "0.0%", "filter": "100.0%", "tarone": "100.0%"}
    assert out.rstrip().splitlines()[-1].startswith("PASS: ")
