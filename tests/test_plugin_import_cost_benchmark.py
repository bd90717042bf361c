"""The plugin's cost to a session without eval cases (benchmarks/plugin_import_cost.py), in
its --quick form: it runs both sides, and the plugin's extra memory stays small (it was
25 MiB when every session imported the core; docs/options.md, "When verdryx turns on")."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_import_cost_benchmark_runs_both_sides() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "plugin_import_cost.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    figures = {
        side: (float(cpu), float(rss))
        for side, cpu, rss in re.findall(
            r"^(-p no:verdryx|with the plugin):\s+([\d.]+) s CPU\s+([\d.]+) MiB peak RSS$",
            result.stdout,
            re.M,
        )
    }
    assert set(figures) == {"-p no:verdryx", "with the plugin"}, result.stdout
    (plain_cpu, plain_rss), (plugin_cpu, plugin_rss) = (
        figures["-p no:verdryx"],
        figures["with the plugin"],
    )
    assert min(plain_cpu, plain_rss, plugin_cpu, plugin_rss) > 0
    ratio = re.search(r"^ratio:\s+([\d.]+)x CPU\s+([\d.]+)x peak RSS$", result.stdout, re.M)
    assert ratio is not None, result.stdout
    # The printed figures are rounded: the ratios agree with them to a few hundredths.
    assert abs(float(ratio.group(1)) - plugin_cpu / plain_cpu) < 0.05
    assert abs(float(ratio.group(2)) - plugin_rss / plain_rss) < 0.05
    # Memory does not move with the machine's load as CPU time does: a bound that holds.
    assert plugin_rss - plain_rss < 8.0, result.stdout
