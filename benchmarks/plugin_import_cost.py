"""What the installed plugin costs a plain unit-test suite: one test, no eval cases, no
verdryx flags, run with the plugin and with `-p no:verdryx`, in the same run.

Each side runs `--runs` times, interleaved (plain, plugin, plain, plugin...), so a machine
that gets busier or quieter during the run shifts both sides alike. Each run is one real
pytest session in a subprocess; its CPU time (user + system) and peak RSS are the child's
own, read from `os.wait4`. Printed: the median of each side and the plugin's extra, as a
difference and as a ratio, and the fastest run of each side. The plugin activates only when
eval cases, the `verdryx` marker or a verdryx option is in play (docs/options.md, "When
verdryx turns on"), so the extra should be a few milliseconds and well under a MiB.

    python benchmarks/plugin_import_cost.py [--runs 10] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchlib import load, verdict

CPU_TARGET_S = 0.05
RSS_TARGET_MIB = 5.0

# As on a user's machine, bytecode is cached between runs (see plugin_overhead.py): without
# it every run would re-compile every module imported, which says nothing about the plugin.
_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
# Nothing from the caller's environment may turn verdryx on (a CI's GITHUB_ACTIONS, say, is
# harmless, but options passed through PYTEST_ADDOPTS are not).
_ENV.pop("PYTEST_ADDOPTS", None)


@dataclass(frozen=True, slots=True)
class Sample:
    cpu_s: float
    rss_mib: float


def _write(root: Path) -> None:
    # An ini file of its own, so the rootdir (and no other project's addopts) is this folder.
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "test_one.py").write_text("def test_one():\n    assert True\n")


def _session(root: Path, *extra: str) -> Sample:
    """One pytest session; its own CPU time and peak RSS (Linux reports ru_maxrss in KiB)."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(command, cwd=root, env=_ENV, stdout=output, stderr=output)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            output.seek(0)
            text = output.read().decode(errors="replace")
            raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{text}")
    return Sample(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="sessions per side (default 10)")
    parser.add_argument("--quick", action="store_true", help="1 session per side (a smoke run)")
    args = parser.parse_args()
    runs = 1 if args.quick else max(1, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root)
        # One of each first, untimed: both sides then start with warm bytecode caches.
        _session(root, "-p", "no:verdryx")
        _session(root)
        plain: list[Sample] = []
        plugin: list[Sample] = []
        for _ in range(runs):
            plain.append(_session(root, "-p", "no:verdryx"))
            plugin.append(_session(root))
    plain_cpu = statistics.median(sample.cpu_s for sample in plain)
    plugin_cpu = statistics.median(sample.cpu_s for sample in plugin)
    plain_rss = statistics.median(sample.rss_mib for sample in plain)
    plugin_rss = statistics.median(sample.rss_mib for sample in plugin)
    print(f"sessions per side:  {runs} (interleaved; medians)")
    print(f"-p no:verdryx:      {plain_cpu:.3f} s CPU  {plain_rss:.1f} MiB peak RSS")
    print(f"with the plugin:    {plugin_cpu:.3f} s CPU  {plugin_rss:.1f} MiB peak RSS")
    print(
        f"plugin's extra:     {plugin_cpu - plain_cpu:+.3f} s CPU  "
        f"{plugin_rss - plain_rss:+.1f} MiB peak RSS"
    )
    print(
        f"ratio:              {plugin_cpu / plain_cpu:.2f}x CPU  "
        f"{plugin_rss / plain_rss:.2f}x peak RSS"
    )
    # Other processes only ever add CPU time to a run: the fastest run of each side is the
    # steadier figure on a shared machine.
    fastest_plain = min(sample.cpu_s for sample in plain)
    fastest_plugin = min(sample.cpu_s for sample in plugin)
    print(
        f"fastest runs:       {fastest_plain:.3f} s vs {fastest_plugin:.3f} s CPU  "
        f"({fastest_plugin - fastest_plain:+.3f} s, {fastest_plugin / fastest_plain:.2f}x)  "
        f"({load()})"
    )
    extra_cpu, extra_rss = fastest_plugin - fastest_plain, plugin_rss - plain_rss
    print(
        verdict(
            extra_cpu <= CPU_TARGET_S and extra_rss <= RSS_TARGET_MIB,
            f"the plugin adds {extra_cpu:+.3f} s CPU (fastest runs) and {extra_rss:+.1f} MiB "
            f"peak RSS (medians), target <= +{CPU_TARGET_S} s and +{RSS_TARGET_MIB} MiB",
        )
    )


if __name__ == "__main__":
    main()
