"""A benchmark script run the way its smoke tests run it: `benchmarks/SCRIPT --quick` in a
process of its own, from the project root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_quick(script: str) -> str:
    """What `script` printed with `--quick`; a non-zero exit fails the test with its output."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
