"""Client CPU per call: the model, judge and target-with-SDK paths against the loopback fake
Anthropic server at 0 ms latency, beside the wire's own cost, and the model phase at
concurrency 64 against its ideal. CPU time of this process (all threads) is the figure: the
fake server runs in a child process, and the machine may be shared.

Rows, all measured in this run:
- the wire: `http.client` posting the same request on one keep-alive connection and
  `json.loads` of the answer (no SDK): the floor of any client;
- the SDK alone: `anthropic.Anthropic().messages.with_raw_response.create` + `json.loads`,
  and `AsyncAnthropic` the same way in one event loop: what the SDK and httpx cost; and both
  built with `sdk_client_options` (the keep-alive transport verdryx uses), so the model row
  minus the sync one is verdryx's own part, the target row minus the async one the runner's;
- model / judge: verdryx's adapter (`complete`, `judge`) through the response cache layer
  (mode off: every call is made), one call at a time;
- target with SDK: an async target calling `AsyncAnthropic` (one client for the run) through
  `TargetRunner`, a round's cases submitted together as a session submits them, at
  concurrency 1 (one call at a time), its client built with verdryx's `sdk_client_options`
  (docs/targets.md, "A target on an SDK"); beside it the same target on the SDK's default
  client, what a target that does not use the helper pays.

The rows run interleaved, in rounds (each round runs every row in turn), so a change in the
machine's load touches all of them alike; each row's figure is its median round (the fastest
beside it), and each is also given as a ratio to the SDK alone on its default transport.

Targets: at most 1.0 ms of client CPU per call (median round) on each verdryx path; the model
phase of N calls at 100 ms latency and concurrency 64 within 1.3x of N x latency / 64 (a
wall-time figure: it holds only on an idle machine, where CPU per call times N stays under
the ideal).

    python benchmarks/call_cost.py [--calls 500] [--rounds 10] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import io
import json
import statistics
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchlib import load, own_cpu, verdict  # noqa: E402
from concurrency import MODEL, served  # noqa: E402

from tests.fakes.anthropic_server import DEFAULT_KEY  # noqa: E402
from verdryx_core.llm import CachedAdapter, CallPool, Progress, make_adapter  # noqa: E402
from verdryx_core.targets import (  # noqa: E402
    Target,
    TargetCase,
    TargetRunner,
    sdk_client_options,
)

PER_CALL_TARGET_MS = 1.0
C64_TARGET = 1.3
_BODY = {"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": "q"}]}


#: One row's work: `batch(first, count)` makes `count` calls, numbered from `first`.
Batch = Callable[[int, int], None]


@contextmanager
def _wire(url: str) -> Iterator[Batch]:
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
    headers = {
        "x-api-key": DEFAULT_KEY,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }

    def batch(first: int, count: int) -> None:
        for index in range(first, first + count):
            body = dict(_BODY, messages=[{"role": "user", "content": f"case {index}"}])
            connection.request("POST", "/v1/messages", json.dumps(body).encode(), headers)
            json.loads(connection.getresponse().read())

    try:
        yield batch
    finally:
        connection.close()


@contextmanager
def _sdk(url: str, *, light: bool = False) -> Iterator[Batch]:
    import anthropic

    options = sdk_client_options(anthropic.Anthropic) if light else {}
    client = anthropic.Anthropic(base_url=url, api_key=DEFAULT_KEY, **options)

    def batch(first: int, count: int) -> None:
        for index in range(first, first + count):
            messages = [{"role": "user", "content": f"case {index}"}]
            raw = client.messages.with_raw_response.create(
                model=MODEL, max_tokens=1024, messages=messages
            )
            json.loads(raw.read())

    try:
        yield batch
    finally:
        client.close()


@contextmanager
def _async_sdk(url: str, *, light: bool = False) -> Iterator[Batch]:
    import anthropic

    loop = asyncio.new_event_loop()
    options = sdk_client_options(anthropic.AsyncAnthropic) if light else {}
    client = anthropic.AsyncAnthropic(base_url=url, api_key=DEFAULT_KEY, **options)

    async def calls(first: int, count: int) -> None:
        for index in range(first, first + count):
            messages = [{"role": "user", "content": f"case {index}"}]
            raw = await client.messages.with_raw_response.create(
                model=MODEL, max_tokens=1024, messages=messages
            )
            json.loads(await raw.read())

    try:
        yield lambda first, count: loop.run_until_complete(calls(first, count))
    finally:
        loop.run_until_complete(client.close())
        loop.close()


def _adapter(url: str) -> Any:
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": DEFAULT_KEY}
    return CachedAdapter(make_adapter(MODEL, env=env), None, "off")


@contextmanager
def _model(url: str) -> Iterator[Batch]:
    adapter = _adapter(url)

    def batch(first: int, count: int) -> None:
        for index in range(first, first + count):
            adapter.complete(f"case {index}")

    yield batch


@contextmanager
def _judge(url: str) -> Iterator[Batch]:
    adapter = _adapter(url)

    def batch(first: int, count: int) -> None:
        for index in range(first, first + count):
            adapter.judge(f"case {index}", "an answer", "is it right?")

    yield batch


@contextmanager
def _target(url: str, *, light: bool = True) -> Iterator[Batch]:
    """A target's own `AsyncAnthropic`, built with verdryx's `sdk_client_options` (the
    keep-alive transport) or, with `light=False`, with the SDK's defaults."""
    import anthropic

    options = sdk_client_options(anthropic.AsyncAnthropic) if light else {}
    client = anthropic.AsyncAnthropic(base_url=url, api_key=DEFAULT_KEY, **options)

    async def answer(case: TargetCase) -> str:
        messages = [{"role": "user", "content": case.prompt}]
        raw = await client.messages.with_raw_response.create(
            model=MODEL, max_tokens=1024, messages=messages
        )
        message = json.loads(await raw.read())
        return "".join(block.get("text", "") for block in message["content"])

    target = Target.of(answer, spec="bench:answer")
    with TargetRunner(concurrency=1) as runner:

        def batch(first: int, count: int) -> None:
            # Submitted together, as a session submits its cases before the first item runs
            # (docs/targets.md, "Concurrency"); concurrency 1 keeps the calls one at a time.
            cases = [
                TargetCase(id=f"c{index}", eval_set_id="bench", prompt=f"case {index}")
                for index in range(first, first + count)
            ]
            outcomes = runner.run(target, cases)
            assert all(outcome.ok for outcome in outcomes), outcomes

        yield batch


def _interleaved(rows: dict[str, Batch], calls: int, rounds: int) -> dict[str, list[float]]:
    """Milliseconds of this process's CPU per call of each row, one figure per round: every
    round runs each row in turn, so a change in the machine's load touches all rows alike."""
    each = max(1, calls // rounds)
    for batch in rows.values():
        batch(-1, 1)  # warm-up: connections, imports, first-call caches
    figures: dict[str, list[float]] = {name: [] for name in rows}
    for round_ in range(rounds):
        for name, batch in rows.items():
            before = own_cpu()
            batch(round_ * each, each)
            figures[name].append((own_cpu() - before) / each * 1000)
    return figures


def _concurrent(url: str, calls: int, concurrency: int) -> tuple[float, float]:
    """Wall seconds and CPU ms per call of `calls` model calls at `concurrency`."""
    adapter = _adapter(url)
    adapter.complete("warm")
    before, started = own_cpu(), time.perf_counter()
    with CallPool(concurrency, progress=Progress(calls, stream=io.StringIO())) as pool:
        futures = [pool.submit(adapter.complete, f"case {i}") for i in range(calls)]
        texts = [future.result().text for future in futures]
    wall = time.perf_counter() - started
    assert texts == [f"echo: case {i}" for i in range(calls)], "results out of order"
    return wall, (own_cpu() - before) / calls * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="calls per serial row")
    parser.add_argument("--rounds", type=int, default=10, help="rounds the calls are split in")
    parser.add_argument("--phase-calls", type=int, default=256, help="calls at concurrency 64")
    parser.add_argument("--quick", action="store_true", help="20 calls a row, smoke run")
    args = parser.parse_args(argv)
    calls, phase = (20, 64) if args.quick else (args.calls, args.phase_calls)
    rounds = 2 if args.quick else args.rounds
    report: dict[str, Any] = {}
    makers: dict[str, Callable[[str], AbstractContextManager[Batch]]] = {
        "the wire (http.client)": _wire,
        "the SDK alone (sync, raw)": _sdk,
        "the SDK alone (async, raw)": _async_sdk,
        "the SDK alone (sync, light)": lambda url: _sdk(url, light=True),
        "the SDK alone (async, light)": lambda url: _async_sdk(url, light=True),
        "model (adapter.complete)": _model,
        "judge (adapter.judge)": _judge,
        "target with SDK (TargetRunner)": _target,
        "target, SDK's default client": lambda url: _target(url, light=False),
    }
    with served(0.0, False, report) as url, ExitStack() as stack:
        batches = {name: stack.enter_context(make(url)) for name, make in makers.items()}
        figures = _interleaved(batches, calls, rounds)
        _, c64_cpu = _concurrent(url, phase, 64)
    rows = {name: statistics.median(values) for name, values in figures.items()}
    latency = 0.1
    with served(latency, False, report) as url:
        # Three phases, each on a new client (64 new connections): the median is the figure.
        walls = [_concurrent(url, phase, 64)[0] for _ in range(1 if args.quick else 3)]
    wall = statistics.median(walls)
    ideal = phase * latency / 64
    print(
        f"client CPU per call, {calls} calls a row in {rounds} interleaved rounds (median "
        "round, fastest round), fake server at 0 ms in a child process"
    )
    sdk_ms = rows["the SDK alone (sync, raw)"]
    for name, ms in rows.items():
        print(
            f"  {name:<32} {ms:6.2f} ms  (fastest {min(figures[name]):.2f}; "
            f"{ms / sdk_ms:.2f}x the SDK alone, sync)"
        )
    print(f"  {'model, concurrency 64 (0 ms)':<32} {c64_cpu:6.2f} ms  ({load()})")
    # What verdryx adds on each path over the same SDK client alone: the part verdryx owns.
    shares = {
        "model": rows["model (adapter.complete)"] - rows["the SDK alone (sync, light)"],
        "target": rows["target with SDK (TargetRunner)"] - rows["the SDK alone (async, light)"],
    }
    print(
        "verdryx's own share over the same SDK client alone: "
        + ", ".join(f"{name} {ms:+.2f} ms" for name, ms in shares.items())
    )
    ratio = wall / ideal
    print(
        f"model phase, {phase} calls x {latency * 1000:.0f} ms at concurrency 64: {wall:.3f} s "
        f"(median of {', '.join(f'{w:.3f}' for w in walls)}), ideal {ideal:.3f} s, "
        f"ratio {ratio:.2f}x ({load()})"
    )
    if report.get("violations"):
        print(f"request shape violations: {report['violations'][:3]}")
        return 1
    paths = ("model (adapter.complete)", "judge (adapter.judge)", "target with SDK (TargetRunner)")
    worst = max(rows[name] for name in paths)
    print(
        verdict(
            worst <= PER_CALL_TARGET_MS,
            f"worst verdryx path {worst:.2f} ms CPU a call, target <= {PER_CALL_TARGET_MS} ms",
        )
    )
    print(
        verdict(
            ratio <= C64_TARGET,
            f"concurrency 64 at {ratio:.2f}x its ideal, target <= {C64_TARGET}x on an idle machine",
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
