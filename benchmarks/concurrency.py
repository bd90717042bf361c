"""Model-call concurrency: N cases against the fake Anthropic server at a fixed
latency, at concurrency 1 and 16 in the same run, through the real SDK, the cache layer
(mode off: every call is made) and the call pool with its progress counter.

    .venv/bin/python benchmarks/concurrency.py              # 200 cases, 50 ms latency
    .venv/bin/python benchmarks/concurrency.py --quick      # 16 cases, smoke run
    .venv/bin/python benchmarks/concurrency.py --in-process # server shares our GIL

By default the fake server runs in a child process, as a real provider runs on another
machine; `--in-process` puts its handler threads on this interpreter's GIL, which charges the
fake's own CPU to the client. The ideal at concurrency C is N x latency / C; the target is a
wall time within 1.5x of the ideal at 16. Exit status 1 when a full run misses it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The fake server lives with the tests; the repo root makes `tests.fakes` importable.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import load, verdict  # noqa: E402

from tests.fakes.anthropic_server import DEFAULT_KEY, FakeAnthropic  # noqa: E402
from verdryx_core.llm import CachedAdapter, CallPool, Progress, make_adapter  # noqa: E402

TARGET = 1.5
MODEL = "claude-haiku-4-5"


@contextlib.contextmanager
def served(latency: float, in_process: bool, report: dict[str, Any]) -> Iterator[str]:
    """The fake server's URL; on exit `report` holds its request count and violations."""
    if in_process:
        with FakeAnthropic(latency=latency) as server:
            yield server.url
            report.update(requests=len(server.requests), violations=server.violations)
        return
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.anthropic_server", "--latency", str(latency)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        yield child.stdout.readline().strip()
    finally:
        child.stdin.close()
        report.update(json.loads(child.stdout.readline() or "{}"))
        child.wait(timeout=10)


def run(url: str, cases: int, concurrency: int) -> float:
    """Wall seconds for `cases` completions at `concurrency`, results read in case order."""
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": DEFAULT_KEY}
    adapter = CachedAdapter(make_adapter(MODEL, env=env), None, "off")
    progress = Progress(cases, stream=io.StringIO())
    started = time.perf_counter()
    with CallPool(concurrency, progress=progress) as pool:
        futures = [pool.submit(adapter.complete, f"case {index}") for index in range(cases)]
        texts = [future.result().text for future in futures]
    wall = time.perf_counter() - started
    assert texts == [f"echo: case {index}" for index in range(cases)], "results out of order"
    assert progress.done == cases
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 cases instead of 200")
    parser.add_argument("--cases", type=int, default=None)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--in-process", action="store_true", help="serve from this process")
    args = parser.parse_args(argv)
    cases = args.cases or (16 if args.quick else 200)
    latency = args.latency_ms / 1000
    report: dict[str, Any] = {}
    with served(latency, args.in_process, report) as url:
        serial = run(url, cases, 1)
        parallel = run(url, cases, args.concurrency)
    ideal_serial = cases * latency
    ideal = cases * latency / args.concurrency
    ratio = parallel / ideal
    where = "in this process" if args.in_process else "in a child process"
    print(
        f"{cases} cases, {args.latency_ms:g} ms latency, real SDK, fake server {where}, "
        f"{report.get('requests')} requests"
    )
    print(
        f"concurrency  1: {serial:7.3f} s   ideal {ideal_serial:7.3f} s   "
        f"ratio {serial / ideal_serial:5.2f}x"
    )
    print(
        f"concurrency {args.concurrency:2d}: {parallel:7.3f} s   ideal {ideal:7.3f} s   "
        f"ratio {ratio:5.2f}x   ({load()})"
    )
    print(f"speed-up {serial / parallel:.1f}x at concurrency {args.concurrency}")
    met = ratio <= TARGET
    print(
        verdict(
            met,
            f"concurrency {args.concurrency} at {ratio:.2f}x the ideal, target <= {TARGET}x "
            "(a wall-time figure: it holds on an idle machine)",
        )
    )
    if report.get("violations"):
        print(f"request shape violations: {report['violations'][:3]}")
        return 1
    return 0 if met or args.quick else 1


if __name__ == "__main__":
    raise SystemExit(main())
