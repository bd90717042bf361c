"""The xdist benchmark runs end to end in its --quick form (benchmarks/xdist_runs.py; figures:
README's Measured): a target eval serial and under `-n 2`, whose controller calls every case
itself and so has no line to say about workers calling (docs/targets.md, "Under
pytest-xdist"). The anchors and the controller's memory figure are left to the full run:
more `-n 2` sessions would multiply this test's CPU."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_xdist_benchmark_times_both_runs_and_shows_no_note() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "xdist_runs.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"serial [\d.]+ s \([\d.]+ CPU\), -n 2 [\d.]+ s", done.stdout), done.stdout
    note = re.search(r"^the session's note under -n: (.*)$", done.stdout, re.M)
    assert note is not None and note.group(1) == "(none)"
    assert re.search(r"^(PASS|MISSED): -n 2 at [\d.]+x the serial run", done.stdout, re.M)
