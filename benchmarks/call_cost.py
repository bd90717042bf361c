"""Client CPU per call: the model, judge and target-with-SDK paths against the loopback fake
Anthropic server at 0 ms latency, beside the SDK's own client alone and the wire's cost, and
the model phase at concurrency 64 against its ideal. CPU time of this process (all threads) is
the figure: the fake server runs in a child process, and the machine may be shared.

Rows, all measured in this run:
- the wire: `http.client` posting the same request on one keep-alive connection and
  `json.loads` of the answer (no SDK): the floor of any client;
- the SDK alone: `anthropic.Anthropic()` on its default client,
  `messages.with_raw_response.create` + `json.loads`, sending the model's request and, in a
  row of its own, the judge's; and `AsyncAnthropic` the same way in one event loop;
- model / judge: verdryx's adapter (`complete`, `judge`) through the response cache layer
  (mode off: every call is made), one call at a time;
- target with SDK: an async target calling `AsyncAnthropic` (the SDK's default client, one
  for the run) through `TargetRunner`, a round's cases submitted together as a session
  submits them, at concurrency 1 (one call at a time).

Each verdryx path minus the SDK alone sending the same request, in the same round (the
median over rounds), is verdryx's own share of a call (the model and judge rows against the
sync client, the target row against the async one): what verdryx adds over the same SDK
client used alone.

The rows run interleaved, in rounds (each round runs every row in turn), so a change in the
machine's load touches all of them alike; each row's figure is its median round (the fastest
beside it), and each is also given as a ratio to the SDK alone (sync, the model's request).

Targets: verdryx's own share at most 0.3 ms of client CPU per call on each path; the model
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
from verdryx_core.llm.call_request import call_request  # noqa: E402
from verdryx_core.targets import Target, TargetCase, TargetRunner  # noqa: E402

SHARE_TARGET_MS = 0.3
C64_TARGET = 1.3
_BODY = {"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": "q"}]}
_JUDGED = ("an answer", "is it right?")


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


def _judge_params(url: str, index: int) -> dict[str, Any]:
    """The Messages API request `adapter.judge(f"case {index}", ...)` sends."""
    request = call_request("judge", f"case {index}", output=_JUDGED[0], rubric=_JUDGED[1])
    return _adapter(url).inner.request_params(request)  # type: ignore[no-any-return]


@contextmanager
def _sdk(url: str, *, judge: bool = False) -> Iterator[Batch]:
    """The SDK's own client on its defaults, sending the model's request (or the judge's)."""
    import anthropic

    client = anthropic.Anthropic(base_url=url, api_key=DEFAULT_KEY)
    judged = _judge_params(url, 0) if judge else None

    def batch(first: int, count: int) -> None:
        for index in range(first, first + count):
            if judged is None:
                params: dict[str, Any] = dict(
                    _BODY, messages=[{"role": "user", "content": f"case {index}"}]
                )
            else:
                params = dict(judged)
            raw = client.messages.with_raw_response.create(**params)
            json.loads(raw.read())

    try:
        yield batch
    finally:
        client.close()


@contextmanager
def _async_sdk(url: str) -> Iterator[Batch]:
    import anthropic

    loop = asyncio.new_event_loop()
    client = anthropic.AsyncAnthropic(base_url=url, api_key=DEFAULT_KEY)

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


def _adapter(url: str, connections: int | None = None) -> Any:
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": DEFAULT_KEY}
    return CachedAdapter(make_adapter(MODEL, env=env, connections=connections), None, "off")


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
            adapter.judge(f"case {index}", *_JUDGED)

    yield batch


@contextmanager
def _target(url: str) -> Iterator[Batch]:
    """A target's own `AsyncAnthropic` on the SDK's defaults, one client for the run."""
    import anthropic

    client = anthropic.AsyncAnthropic(base_url=url, api_key=DEFAULT_KEY)

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
    adapter = _adapter(url, connections=concurrency)
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
        "the SDK alone (sync, judge's)": lambda url: _sdk(url, judge=True),
        "the SDK alone (async, raw)": _async_sdk,
        "model (adapter.complete)": _model,
        "judge (adapter.judge)": _judge,
        "target with SDK (TargetRunner)": _target,
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
    # What verdryx adds on each path over the same SDK client sending the same request: the
    # median over rounds of the two rows' difference in that round, so a change of load
    # between rounds cancels out.
    pairs = {
        "model": ("model (adapter.complete)", "the SDK alone (sync, raw)"),
        "judge": ("judge (adapter.judge)", "the SDK alone (sync, judge's)"),
        "target": ("target with SDK (TargetRunner)", "the SDK alone (async, raw)"),
    }
    shares = {
        name: statistics.median(
            path - alone for path, alone in zip(figures[row], figures[base], strict=True)
        )
        for name, (row, base) in pairs.items()
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
    worst, most = max(shares.items(), key=lambda item: item[1])
    print(
        verdict(
            most <= SHARE_TARGET_MS,
            f"verdryx's largest share {most:+.2f} ms CPU a call ({worst}), "
            f"target <= {SHARE_TARGET_MS} ms",
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
