"""Calling real sync and async targets for many cases: the concurrency bound seen at the
target, timeouts, errors, cancellation and prompt shutdown (docs/targets.md)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from concurrent.futures import CancelledError
from pathlib import Path

import pytest

from verdryx_core.errors import UsageError
from verdryx_core.targets import Target, TargetCase, TargetResult, TargetRunner

ROOT = Path(__file__).resolve().parent.parent


def cases(n: int) -> list[TargetCase]:
    return [TargetCase(id=f"c{i}", eval_set_id="s", prompt=f"p{i}") for i in range(n)]


class InFlight:
    """Counts calls inside the target; thread-safe, so both kinds can use it."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.calls = 0
        self._lock = threading.Lock()

    def enter(self) -> int:
        with self._lock:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)
            return self.now

    def leave(self) -> None:
        with self._lock:
            self.now -= 1


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown, so threads a test abandons on purpose end with it."""
    event = threading.Event()
    yield event
    event.set()


# -- the concurrency bound, observed at the target ----------------------------------------


@pytest.mark.parametrize("limit", [1, 4])
def test_sync_targets_have_exactly_the_bound_in_flight(limit: int) -> None:
    seen = InFlight()
    # Each call waits for `limit` callers to be inside together, so reaching the bound does
    # not depend on how fast a busy machine starts threads; more than `limit` would show.
    barrier = threading.Barrier(limit, timeout=5)

    def target(case: TargetCase) -> str:
        seen.enter()
        try:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()
            time.sleep(0.005)
            return case.prompt.upper()
        finally:
            seen.leave()

    with TargetRunner(concurrency=limit) as runner:
        outcomes = runner.run(Target.of(target), cases(3 * limit))
    assert seen.peak == limit and seen.calls == 3 * limit
    assert [o.result.output if o.result else None for o in outcomes] == [
        f"P{i}" for i in range(3 * limit)
    ]


def test_async_targets_share_one_loop_with_exactly_the_bound_in_flight() -> None:
    limit = 5
    seen = InFlight()
    loops: set[int] = set()
    threads: set[int] = set()

    class Agent:
        """An instance with an async __call__: awaited on the runner's loop."""

        full: asyncio.Event | None = None

        async def __call__(self, case: TargetCase) -> TargetResult:
            loops.add(id(asyncio.get_running_loop()))
            threads.add(threading.get_ident())
            if self.full is None:
                self.full = asyncio.Event()
            if seen.enter() >= limit:
                self.full.set()
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.full.wait(), 5)
                await asyncio.sleep(0.005)
                return TargetResult(output=case.id, tool_calls=["lookup"])
            finally:
                seen.leave()

    target = Target.of(Agent())
    assert target.is_async
    with TargetRunner(concurrency=limit) as runner:
        outcomes = runner.run(target, cases(4 * limit))
    assert seen.peak == limit and seen.calls == 4 * limit
    assert len(loops) == 1 and len(threads) == 1 and threading.get_ident() not in threads
    assert [o.case_id for o in outcomes] == [f"c{i}" for i in range(4 * limit)]
    assert all(o.result is not None and o.result.tool_names == ("lookup",) for o in outcomes)


def test_calls_start_in_the_order_they_were_submitted() -> None:
    started: list[str] = []

    async def answer(case: TargetCase) -> str:
        started.append(case.id)
        await asyncio.sleep(0)
        return case.id

    with TargetRunner(concurrency=1) as runner:
        outcomes = runner.run(Target.of(answer), cases(40))
    assert started == [f"c{i}" for i in range(40)]
    assert [o.result.output for o in outcomes if o.result is not None] == started


def test_calls_submitted_from_many_threads_while_calls_run_all_start() -> None:
    """Submits racing the loop taking what was queued: none is left waiting."""

    async def answer(case: TargetCase) -> str:
        await asyncio.sleep(0.0005)
        return case.id

    target = Target.of(answer)
    with TargetRunner(concurrency=3) as runner:

        def submit_some(first: int) -> list[str]:
            futures = []
            for i in range(first, first + 50):
                futures.append(
                    runner.submit(target, TargetCase(id=f"c{i}", eval_set_id="s", prompt="p"))
                )
                time.sleep(0.0002 * (i % 3))
            return [future.result(timeout=5).case_id for future in futures]

        got: list[list[str]] = []
        threads = [
            threading.Thread(target=lambda f=f: got.append(submit_some(f)))
            for f in (0, 50, 100, 150)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
        # Inside the block: a call left waiting fails here instead of holding up the exit.
        submitted = sorted(f"c{i}" for i in range(200))
        assert sorted(case_id for ids in got for case_id in ids) == submitted


def test_sync_and_async_targets_share_one_bound() -> None:
    limit = 3
    seen = InFlight()
    barrier = threading.Barrier(limit, timeout=5)

    def plain(case: TargetCase) -> str:
        seen.enter()
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()
        seen.leave()
        return "plain"

    async def coroutine(case: TargetCase) -> str:
        seen.enter()
        await asyncio.sleep(0.05)
        seen.leave()
        return "async"

    with TargetRunner(concurrency=limit) as runner:
        futures = [
            runner.submit(Target.of(plain if i % 2 else coroutine), case)
            for i, case in enumerate(cases(12))
        ]
        outputs = [f.result().result.output for f in futures]  # type: ignore[union-attr]
    assert seen.peak <= limit
    assert outputs == ["async", "plain"] * 6


def test_the_bound_must_be_a_positive_integer() -> None:
    with pytest.raises(UsageError, match="concurrency 0 is not a positive integer"):
        TargetRunner(concurrency=0)
    with pytest.raises(UsageError, match=r"timeout -1 is not a positive.*pass --timeout SECONDS"):
        TargetRunner(timeout=-1)


# -- errors, never scores -----------------------------------------------------------------


def test_an_exception_is_that_cases_error_in_one_line() -> None:
    def target(case: TargetCase) -> str:
        if case.id == "c1":
            raise ValueError("order\nA-1 not found")
        return "ok"

    async def async_target(case: TargetCase) -> str:
        raise KeyError("customer")

    with TargetRunner(concurrency=2) as runner:
        first, second, third = runner.run(Target.of(target, spec="agent:run"), cases(3))
        (fourth,) = runner.run(Target.of(async_target, spec="agent:arun"), cases(1))
    assert first.ok and third.ok
    assert not second.ok and second.result is None and second.error_kind == "exception"
    assert second.error == "target agent:run raised ValueError: order A-1 not found"
    assert fourth.error == "target agent:arun raised KeyError: 'customer'"


def test_a_bad_return_value_is_that_cases_error() -> None:
    def target(case: TargetCase) -> object:
        return {"output": "x", "tool_calls": [{"name": None}]}

    def forgot_async(case: TargetCase) -> object:
        return asyncio.sleep(0)

    with TargetRunner() as runner:
        (bad,) = runner.run(Target.of(target, spec="agent:run"), cases(1))
        (awaitable,) = runner.run(Target.of(forgot_async, spec="agent:run"), cases(1))
    assert bad.error_kind == "bad_result"
    assert bad.error == (
        "target agent:run returned a bad result: tool_calls[0].name is None, expected a tool name"
    )
    assert awaitable.error_kind == "bad_result"
    assert "returned an awaitable from a plain function; declare it `async def`" in (
        awaitable.error or ""
    )


def test_a_hung_sync_call_times_out_and_frees_its_slot(release: threading.Event) -> None:
    def target(case: TargetCase) -> str:
        if case.id == "c0":
            release.wait()  # hangs until teardown
        return "done"

    started = time.monotonic()
    with TargetRunner(concurrency=1, timeout=0.3) as runner:
        hung, after = runner.run(Target.of(target, spec="agent:run"), cases(2))
    elapsed = time.monotonic() - started
    assert hung.error_kind == "timeout" and hung.latency_s == 0.3
    assert hung.error == "target agent:run did not return within 0.3s"
    # With one slot, the second case ran only because the timeout freed it.
    assert after.ok
    assert elapsed < 10.0  # bounded: the hung call alone would take until teardown


def test_a_hung_coroutine_is_cancelled_at_the_timeout() -> None:
    cancelled = threading.Event()

    async def target(case: TargetCase) -> str:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    started = time.monotonic()
    with TargetRunner(timeout=0.2) as runner:
        (outcome,) = runner.run(Target.of(target), cases(1))
    assert outcome.error_kind == "timeout"
    assert cancelled.is_set()
    assert time.monotonic() - started < 10.0  # bounded: the call alone sleeps an hour


def test_a_coroutine_that_blocks_the_loop_still_times_out() -> None:
    async def target(case: TargetCase) -> str:
        time.sleep(5)  # a synchronous call inside async def: the loop cannot interrupt it
        return "late"

    started = time.monotonic()
    runner = TargetRunner(timeout=0.2)
    (outcome,) = runner.run(Target.of(target), cases(1))
    elapsed = time.monotonic() - started
    runner.abort()
    assert outcome.error_kind == "timeout"
    assert elapsed < 4.0  # settled by the watchdog, not by the call's return (5 s)


def test_latency_is_measured_per_call_from_its_start() -> None:
    def target(case: TargetCase) -> str:
        time.sleep(0.1)
        return "ok"

    async def fast(case: TargetCase) -> str:
        return "ok"

    with TargetRunner(concurrency=1) as runner:
        slow = runner.run(Target.of(target), cases(3))
        (quick,) = runner.run(Target.of(fast), cases(1))
    # Queued calls do not count their wait: each is about its own 0.1 s.
    assert all(0.1 <= o.latency_s < 1.0 for o in slow)
    assert 0 <= quick.latency_s < 0.1


# -- cancellation and shutdown ------------------------------------------------------------


def test_calls_not_started_can_be_cancelled(release: threading.Event) -> None:
    seen = InFlight()
    entered = threading.Event()

    def target(case: TargetCase) -> str:
        seen.enter()
        entered.set()
        release.wait(5)
        return "ok"

    runner = TargetRunner(concurrency=1)
    futures = [runner.submit(Target.of(target), case) for case in cases(5)]
    assert entered.wait(5)
    assert runner.cancel_pending() == 4
    release.set()
    assert futures[0].result().ok
    for future in futures[1:]:
        with pytest.raises(CancelledError):
            future.result()
    runner.close()
    assert seen.calls == 1


def test_leaving_on_an_error_cancels_what_has_not_started(release: threading.Event) -> None:
    seen = InFlight()

    def target(case: TargetCase) -> str:
        seen.enter()
        release.wait(0.2)
        return "ok"

    with pytest.raises(RuntimeError, match="stop"), TargetRunner(concurrency=2) as runner:
        for case in cases(10):
            runner.submit(Target.of(target), case)
        raise RuntimeError("stop")
    assert seen.calls <= 2


_INTERRUPTED = textwrap.dedent(
    """
    import asyncio, sys, threading, time
    from verdryx_core.targets import Target, TargetCase, TargetRunner

    hang = threading.Event()
    entered = threading.Semaphore(0)

    def plain(case):
        entered.release()
        hang.wait()

    async def coroutine(case):
        entered.release()
        try:
            await asyncio.sleep(3600)
        finally:
            time.sleep(120)  # a target that is slow even to cancel

    cases = [TargetCase(id=f"c{i}", eval_set_id="s", prompt="p") for i in range(8)]
    try:
        with TargetRunner(concurrency=4, timeout=600) as runner:
            futures = [runner.submit(Target.of(plain if i % 2 else coroutine), case)
                       for i, case in enumerate(cases)]
            for _ in range(4):
                entered.acquire()
            print("ready", flush=True)
            for future in futures:
                future.result()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT semantics")
def test_keyboard_interrupt_returns_without_waiting_for_what_is_in_flight(
    tmp_path: Path,
) -> None:
    script = tmp_path / "interrupted.py"
    script.write_text(_INTERRUPTED, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        process.kill()
        process.wait()
    out, err = process.communicate()
    assert code == 130, err
    assert "interrupted" in out
    # Not waiting for the target slow to cancel (120 s): 10x the 2 s promise, which
    # benchmarks/interrupts.py measures.
    assert took < 20.0, f"took {took:.2f}s to stop"
    assert "Traceback" not in err and "never awaited" not in err
