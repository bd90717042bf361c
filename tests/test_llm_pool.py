"""The call pool and its progress line, against the fake server's latency."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic, rendezvous

from verdryx_core.errors import ModelCallError, UsageError
from verdryx_core.llm import CachedAdapter, CallPool, Progress, make_adapter

ROOT = Path(__file__).resolve().parent.parent
MODEL = "claude-haiku-4-5"


@pytest.fixture
def server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(latency=0.05) as fake:
        yield fake
        assert fake.violations == []


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    """Time that moves only when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_calls_run_concurrently_up_to_the_bound_and_keep_order(server: FakeAnthropic) -> None:
    rendezvous(server, 4)
    adapter = CachedAdapter(make_adapter(MODEL, env=server.env()), None, "off")
    with CallPool(4) as pool:
        futures = [pool.submit(adapter.complete, f"case {index}") for index in range(24)]
        texts = [future.result().text for future in futures]
    assert texts == [f"echo: case {index}" for index in range(24)]
    assert server.max_in_flight == 4  # bounded, and the bound is reached


def test_the_pool_size_is_the_number_of_calls_in_flight(server: FakeAnthropic) -> None:
    # Observed at the server, not timed here: wall-time ratios live in
    # benchmarks/concurrency.py, where a busy machine cannot fail the suite.
    adapter = make_adapter(MODEL, env=server.env())
    seen = {}
    for concurrency in (1, 16):
        server.reset()
        rendezvous(server, concurrency)
        with CallPool(concurrency) as pool:
            for future in [pool.submit(adapter.complete, f"c{i}") for i in range(16)]:
                future.result()
        seen[concurrency] = server.max_in_flight
    assert seen == {1: 1, 16: 16}


def test_a_failed_call_fails_only_its_own_future(server: FakeAnthropic) -> None:
    bad = make_adapter(MODEL, env=server.env(api_key="wrong"))
    good = make_adapter(MODEL, env=server.env())
    with CallPool(2) as pool:
        failing = pool.submit(bad.complete, "p")
        passing = pool.submit(good.complete, "p")
        with pytest.raises(ModelCallError):
            failing.result()
        assert passing.result().text == "echo: p"


@pytest.mark.parametrize("concurrency", [0, -1, True, 2.5])
def test_a_bad_concurrency_is_a_usage_error(concurrency: object) -> None:
    with pytest.raises(UsageError, match="pass --concurrency=N") as caught:
        CallPool(concurrency)  # type: ignore[arg-type]
    assert caught.value.hint is not None and "{concurrency}" in caught.value.hint


def test_progress_advances_as_calls_end_and_closes_with_the_pool() -> None:
    stream = io.StringIO()
    progress = Progress(10, stream=stream)
    gate = threading.Event()
    with CallPool(3, progress=progress) as pool:
        futures = [pool.submit(gate.wait, 5) for _ in range(10)]
        assert progress.done == 0
        gate.set()
        for future in futures:
            future.result()
    assert progress.done == 10
    assert stream.getvalue().rstrip("\n").splitlines()[-1].startswith("model calls: 10/10")


def test_progress_in_a_log_writes_a_few_lines_not_one_per_call() -> None:
    clock = Clock()
    stream = io.StringIO()
    progress = Progress(1000, stream=stream, clock=clock)
    for _ in range(1000):
        clock.now += 0.02  # 20 s in all
        progress.advance()
    progress.close()
    lines = stream.getvalue().splitlines()
    assert 5 <= len(lines) <= 11  # ~every 2 s and 10 %, plus the final line
    assert "\r" not in stream.getvalue()
    assert lines[-1] == "model calls: 1000/1000, 50.0/s, done in 20s"
    assert lines[0].startswith("model calls: ") and "ETA" in lines[0]


def test_progress_on_a_terminal_rewrites_one_line() -> None:
    clock = Clock()
    stream = Terminal()
    progress = Progress(4, stream=stream, clock=clock, label="judge calls")
    for _ in range(3):
        clock.now += 1.0
        progress.advance()
    text = stream.getvalue()
    assert text.count("\r") == 3 and "\n" not in text
    assert text.endswith("judge calls: 3/4, 1.0/s, ETA 1s")
    clock.now += 1.0
    progress.advance()
    progress.close()
    assert stream.getvalue().endswith("\rjudge calls: 4/4, 1.0/s, done in 4s\n")


def test_progress_with_nothing_to_do_prints_nothing() -> None:
    stream = io.StringIO()
    progress = Progress(0, stream=stream)
    progress.close()
    progress.close()
    assert stream.getvalue() == ""


def test_calls_not_started_are_cancelled_and_the_rest_finish() -> None:
    gate = threading.Event()
    with CallPool(2) as pool:
        futures = [pool.submit(gate.wait, 5) for _ in range(6)]
        while sum(future.running() for future in futures) < 2:
            threading.Event().wait(0.01)
        assert pool.cancel_pending() == 4
        gate.set()
    assert [future.cancelled() for future in futures] == [False] * 2 + [True] * 4
    assert [future.result() for future in futures[:2]] == [True, True]


_HUNG_POOL = """
import sys, threading, time
from verdryx_core.llm import CallPool

started = threading.Event()
def hang():
    started.set()
    time.sleep(60)

pool = CallPool(2)
pool.submit(hang)
started.wait()
pool.close(cancel=True, wait=False)
print("closed", flush=True)
"""


def test_closing_without_waiting_never_holds_up_the_process_exit() -> None:
    # A ThreadPoolExecutor's threads are joined at exit: one hung call would keep a Ctrl-C'd
    # session alive until its timeout.
    process = subprocess.run(
        [sys.executable, "-c", _HUNG_POOL],
        capture_output=True,
        text=True,
        timeout=30,  # the hung call sleeps 60 s; the process alone starts in about 1 s
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert process.returncode == 0, process.stderr
    assert process.stdout.strip() == "closed"
