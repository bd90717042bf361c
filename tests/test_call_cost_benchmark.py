"""The per-call cost benchmark runs end to end in its --quick form (benchmarks/call_cost.py;
figures: README's Measured)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_call_cost_benchmark_prints_every_path_and_its_verdicts() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "call_cost.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = dict(re.findall(r"^  (\S.*?\S) +([\d.]+) ms", done.stdout, re.M))
    for path in ("the wire", "model (adapter.complete)", "judge (adapter.judge)"):
        assert any(name.startswith(path) for name in rows), done.stdout
    # Each row is a real measurement: the SDK costs more CPU per call than the bare wire.
    assert float(rows["the SDK alone (sync, raw)"]) > float(rows["the wire (http.client)"]) > 0
    assert re.search(r"ratio [\d.]+x \(load average [\d.]+ /", done.stdout), done.stdout
    verdicts = re.findall(r"^(PASS|MISSED): ", done.stdout, re.M)
    assert len(verdicts) == 2, done.stdout
