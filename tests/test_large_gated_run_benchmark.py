"""The large gated-run benchmark runs end to end in its --quick form
(benchmarks/large_gated_run.py; figures: README's Measured)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_large_gated_run_measures_both_policies_against_tb_no() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "large_gated_run.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = re.findall(
        r"^ +(verdict|cases) +200 +[\d.]+ s \( *([\d.]+) CPU\) +[\d.]+ s \( *([\d.]+) CPU\) +"
        r"[\d.]+x, ([\d.]+)x  \(load average",
        done.stdout,
        re.M,
    )
    assert [row[0] for row in rows] == ["verdict", "cases"], done.stdout
    for _, cpu, bare_cpu, ratio in rows:
        assert abs(float(ratio) - float(cpu) / float(bare_cpu)) < 0.05
    reports = re.findall(r"failure reports: (\d+), ([\d.]+) lines", done.stdout)
    # Under the verdict at most the gate fails (at 200 cases a 1% drop may not be significant
    # yet); under `cases` each dropped case (1% of 200) is a failure, each report a few lines.
    assert reports[0][0] in ("0", "1") and int(reports[1][0]) >= 2, done.stdout
    assert float(reports[1][1]) < 20
    assert re.search(r"^(PASS|MISSED): worst CPU ratio", done.stdout, re.M)
