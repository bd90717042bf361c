"""The eval set formats benchmark's smoke run: it runs, every format grades the same cases to
the same mean, and it prints the ratio to JSON (timings are never asserted in tests)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_benchmark_runs_and_prints_the_ratios() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "evalset_formats.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    means = re.findall(r"^  (json|jsonl|csv) .*\(mean score ([0-9.]+)\)$", done.stdout, re.M)
    assert [name for name, _ in means] == ["json", "jsonl", "csv"]
    assert len({mean for _, mean in means}) == 1
    assert re.search(r"^JSONL / JSON = [0-9.]+ \(target <= 1\.10\)", done.stdout, re.M)
