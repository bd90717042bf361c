"""Calling a target for many cases at once (docs/targets.md, "Concurrency and timeouts").

Every call is a task on ONE event loop, run in a dedicated daemon thread and bounded by one
semaphore of `concurrency` slots, so at most that many calls are in flight whatever their
kind: an `async def` target is awaited on the loop (all of them share it, as an async HTTP
client expects), a plain function runs in a daemon thread of its own while its task holds
the slot.

Each call is bounded by `timeout`: past it the call is that case's error and its slot is
freed. A coroutine is cancelled; a thread cannot be, so it is abandoned (it is a daemon: it
never holds up the process's exit). A watchdog settles any call the loop itself cannot (an
`async def` target that blocks the loop with a synchronous sleep).

Calls not yet started can be cancelled (`cancel_pending`, for `-x` / `--maxfail`), and
`abort` returns at once whatever is in flight (KeyboardInterrupt): nothing waits on a hung
call. Every answer carries the call's latency, measured from the moment it got its slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import time
from concurrent.futures import CancelledError, Future, InvalidStateError
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Protocol, Self

from verdryx_core.errors import TargetResultError, UsageError
from verdryx_core.lazy_names import renamed
from verdryx_core.targets.cache import TargetCache
from verdryx_core.targets.case import TargetCase
from verdryx_core.targets.result import TargetResult, TooDeepToEncode, normalise_result
from verdryx_core.targets.spans import OTEL_MODES, CallSpans, SpanCollector, span_collector
from verdryx_core.targets.target import Target
from verdryx_core.timeouts import DEFAULT_TIMEOUT_S, check_timeout

__all__ = ["ERROR_KINDS", "TargetCall", "TargetRunner"]

#: Why a call produced no result: it raised, it overran the timeout, it returned a bad value,
#: its OpenTelemetry spans could not be read, or (replaying) no result was recorded for it.
ERROR_KINDS: Final = ("exception", "timeout", "bad_result", "bad_spans", "not_recorded")

_MESSAGE_LIMIT: Final = 300
#: The span collector before the first call asks for it.
_UNKNOWN: Final = object()
#: How long past its deadline the watchdog lets the loop settle a call before doing it itself.
_WATCHDOG_GRACE_S: Final = 0.5
_WATCHDOG_TICK_S: Final = 0.1
#: How long `abort` waits for the loop thread to stop before abandoning it.
_ABORT_JOIN_S: Final = 0.5


class _Advances(Protocol):
    def advance(self) -> None: ...

    def close(self) -> None: ...


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def _describe(exc: BaseException) -> str:
    text = _one_line(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetCall:
    """One call of a target: what it returned (`result`, a `TargetResult`), or the one-line
    reason there is none (`error`, with `error_kind` in ERROR_KINDS), and how long it took.
    Never a score: grading an error is the pipeline's decision."""

    case_id: str
    repeat: int
    result: TargetResult | None
    error: str | None = None
    error_kind: str | None = None
    latency_s: float = 0.0
    #: Served from the store under the declared target version: no call was made.
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.result is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "repeat": self.repeat,
            "result": None if self.result is None else self.result.to_dict(),
            "error": self.error,
            "error_kind": self.error_kind,
            "latency_s": self.latency_s,
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, data: Any) -> TargetCall:
        result = data.get("result")
        return cls(
            case_id=str(data["case_id"]),
            repeat=int(data.get("repeat", 0)),
            result=None if result is None else TargetResult.from_dict(result, dialogue=True),
            error=data.get("error"),
            error_kind=data.get("error_kind"),
            latency_s=float(data.get("latency_s", 0.0)),
            cached=bool(data.get("cached", False)),
        )


@dataclass(slots=True)
class _InFlight:
    target: Target
    case: TargetCase
    future: Future[TargetCall]
    deadline: float = 0.0
    cache_key: str | None = None


#: What a target receives, for an error that shows it expected something else.
_CASE_HINT: Final = (
    "a target is called with a TargetCase: read case.prompt or case.conversation(); or "
    "annotate its one parameter `str`, def answer(prompt: str) -> str, to be called with "
    "the prompt"
)


class TargetRunner:
    """Runs target calls; `submit` returns at once with a future of the `TargetCall`.

    Use as a context manager: leaving normally waits for every call (each bounded by the
    timeout), leaving on an exception cancels what has not started, and leaving on
    KeyboardInterrupt aborts without waiting. With a `cache` that is enabled (a declared
    target version), a stored result is served without a call and new results are recorded.
    With `otel="auto"` each call's OpenTelemetry spans give its result the tool calls and
    usage it did not return (verdryx_core.targets.spans); `span_results` counts the calls they
    gave something, `span_overridden` those whose own tool calls or usage won over the spans'.
    """

    def __init__(
        self,
        *,
        concurrency: int = 8,
        timeout: float = DEFAULT_TIMEOUT_S,
        progress: _Advances | None = None,
        cache: TargetCache | None = None,
        otel: str = "auto",
    ) -> None:
        if otel not in OTEL_MODES:
            raise UsageError(
                f"otel {otel!r} is not one of {', '.join(OTEL_MODES)}",
                hint="pass {otel} auto or off",
            )
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise UsageError(
                f"concurrency {concurrency!r} is not a positive integer",
                hint="pass {concurrency} N with N >= 1 (default 8)",
            )
        self.concurrency = concurrency
        self.timeout = check_timeout(timeout)
        self.progress = progress
        self.cache = cache if cache is not None and cache.enabled else None
        self._lock = threading.Lock()
        self._pending: set[Future[TargetCall]] = set()
        self._running: dict[Future[TargetCall], _InFlight] = {}
        #: Calls submitted and not yet handed to the loop, in order; `_wake_due` while a
        #: `_spawn_queued` is scheduled to take them.
        self._queued: list[_InFlight] = []
        self._wake_due = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._stopped = threading.Event()
        self._closed = False
        self.otel = otel
        self._collector: object = _UNKNOWN  # a SpanCollector, or None: none this run
        self.span_results = 0
        self.span_overridden = 0

    # -- the caller's side -----------------------------------------------------------------

    def submit(self, target: Target, case: TargetCase) -> Future[TargetCall]:
        """Queue one call; it starts when a slot is free. A cached result (or, replaying, its
        absence) settles the future at once."""
        future: Future[TargetCall] = Future()
        call = _InFlight(target, case, future)
        if self.cache is not None and case.workspace is not None:
            # What a workspace case's call did is the files it left, which no cached result
            # holds: never cached, never replayed (docs/workspaces-and-execution.md).
            if self.cache.replaying:
                future.set_running_or_notify_cancel()
                future.set_result(
                    self._error(
                        call,
                        f"target {target.spec}: case {case.id} has a workspace, and a "
                        "workspace case's call is never recorded (its result is the files it "
                        "leaves), so a replay cannot answer it",
                        "workspace_replay",
                        0.0,
                    )
                )
                return future
        elif self.cache is not None:
            call.cache_key = self.cache.key(target.spec, case, target.variant)
            known = self._from_cache(call)
            if known is not None:
                future.set_running_or_notify_cancel()
                future.add_done_callback(self._forget)
                future.set_result(known)
                return future
        with self._lock:
            if self._closed:
                raise RuntimeError("the target runner is closed")
            loop = self._ensure_loop()
            if self._collector is _UNKNOWN:
                # Here, once, before any call's clock starts: the first collection imports
                # opentelemetry-sdk (and may set the provider), which no call's latency is.
                self._collector = span_collector(self.otel)
            self._pending.add(future)
        future.add_done_callback(self._forget)
        with self._lock:
            self._queued.append(call)
            wake, self._wake_due = not self._wake_due, True
        if wake:
            # One wake-up of the loop for all the calls queued before it takes them: each is a
            # system call (a write to the loop's self-pipe), and a session submits its cases
            # together, before its first item runs.
            try:
                loop.call_soon_threadsafe(self._spawn_queued)
            except RuntimeError:  # the loop is closed: the next submit must find that too
                with self._lock:
                    self._wake_due = False
                raise
        return future

    def _from_cache(self, call: _InFlight) -> TargetCall | None:
        assert self.cache is not None and call.cache_key is not None
        result = self.cache.get(call.cache_key)
        if result is not None:
            return TargetCall(
                case_id=call.case.id, repeat=call.case.repeat, result=result, cached=True
            )
        if self.cache.replaying:
            error = (
                f"target {call.target.spec}: no result recorded under version "
                f"{self.cache.version} for case {call.case.id} (repeat {call.case.repeat}), "
                "and a replay never calls"
            )
            return self._error(call, error, "not_recorded", 0.0)
        return None

    def run(self, target: Target, cases: list[TargetCase]) -> list[TargetCall]:
        """Every case through `target`, answers in the cases' order (for scripts and tests)."""
        futures = [self.submit(target, case) for case in cases]
        return [future.result() for future in futures]

    def cancel_pending(self) -> int:
        """Cancel every call that has not started; returns how many were cancelled."""
        with self._lock:
            pending = list(self._pending)
        return sum(future.cancel() for future in pending)

    def close(self, *, cancel: bool = False) -> None:
        """Wait for the calls (dropping those not started when `cancel`), then stop the loop."""
        if cancel:
            self.cancel_pending()
        while True:
            with self._lock:
                waiting = [f for f in (*self._pending, *self._running) if not f.done()]
            if not waiting:
                break
            for future in waiting:
                with contextlib.suppress(CancelledError):
                    future.exception()
        # Every call is settled; only a call that blocks the loop could keep it from stopping.
        self._shutdown(join=_ABORT_JOIN_S)

    def abort(self) -> None:
        """Return now: cancel what has not started, give up on what is in flight (coroutines
        are cancelled, threads abandoned) and stop the loop, waiting at most half a second."""
        self.cancel_pending()
        with self._lock:
            running = list(self._running)
        for future in running:
            _settle_cancelled(future)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_cancel_all_tasks, loop)
        self._shutdown(join=_ABORT_JOIN_S)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        elif issubclass(exc_type, Exception):
            self.close(cancel=True)
        else:  # KeyboardInterrupt, SystemExit: nothing may wait
            self.abort()

    # -- the loop's side -------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                self._semaphore = asyncio.Semaphore(self.concurrency)
                ready.set()
                try:
                    loop.run_forever()
                    # Let cancelled tasks unwind, so closing the loop leaves none pending.
                    tasks = asyncio.all_tasks(loop)
                    for task in tasks:
                        task.cancel()
                    if tasks:
                        loop.run_until_complete(asyncio.wait(tasks, timeout=_ABORT_JOIN_S))
                finally:
                    with contextlib.suppress(RuntimeError):
                        loop.close()

            thread = threading.Thread(target=serve, name="verdryx-targets", daemon=True)
            thread.start()
            ready.wait()
            threading.Thread(target=self._watchdog, name="verdryx-watchdog", daemon=True).start()
            self._loop, self._loop_thread = loop, thread
        return self._loop

    def _spawn_queued(self) -> None:
        with self._lock:
            calls, self._queued, self._wake_due = self._queued, [], False
        for call in calls:
            asyncio.get_running_loop().create_task(self._run(call))

    async def _run(self, call: _InFlight) -> None:
        assert self._semaphore is not None
        async with self._semaphore:
            future = call.future
            with self._lock:
                self._pending.discard(future)
                if not future.set_running_or_notify_cancel():
                    return
                started = time.perf_counter()
                call.deadline = time.monotonic() + self.timeout
                self._running[future] = call
            try:
                if call.target.is_async:
                    answer = await self._call_async(call, started)
                else:
                    answer = await self._call_in_thread(call, started)
            except asyncio.CancelledError:
                _settle_cancelled(future)
                raise
            finally:
                with self._lock:
                    self._running.pop(future, None)
            # Recorded only when this is the answer the caller saw (not a late answer after
            # the watchdog reported a timeout).
            settled = self._settle(future, answer)
            if settled and self.cache and answer.result is not None and call.cache_key:
                self.cache.remember(call.cache_key, call.target.spec, answer.result)

    def _spans(self, call: _InFlight) -> CallSpans | None:
        """The collection of this call's spans, or None (`off`, or no opentelemetry-sdk)."""
        collector = self._collector
        return collector.call(call.case.id) if isinstance(collector, SpanCollector) else None

    async def _call_async(self, call: _InFlight, started: float) -> TargetCall:
        spans = self._spans(call)
        try:
            async with asyncio.timeout(self.timeout):
                with spans if spans is not None else contextlib.nullcontext():
                    value = await call.target.function(call.target.argument(call.case))
        except TimeoutError:
            return self._timed_out(call)
        except Exception as exc:
            return self._raised(call, exc, started)
        return self._finish(call, value, started, spans)

    async def _call_in_thread(self, call: _InFlight, started: float) -> TargetCall:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[TargetCall] = loop.create_future()

        def work() -> None:
            try:
                spans = self._spans(call)
                with spans if spans is not None else contextlib.nullcontext():
                    value = call.target.function(call.target.argument(call.case))
                answer = self._finish(call, value, started, spans)
            except BaseException as exc:
                answer = self._raised(call, exc, started)
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
                loop.call_soon_threadsafe(_set_once, done, answer)

        threading.Thread(target=work, name=f"verdryx-target-{call.case.id}", daemon=True).start()
        try:
            # shield: on timeout the thread keeps `done`, and must find it alive.
            return await asyncio.wait_for(asyncio.shield(done), self.timeout)
        except TimeoutError:
            return self._timed_out(call)

    def _finish(
        self, call: _InFlight, value: object, started: float, spans: CallSpans | None = None
    ) -> TargetCall:
        latency = time.perf_counter() - started
        if inspect.isawaitable(value):
            if inspect.iscoroutine(value):
                value.close()  # never awaited: say so here, not as a RuntimeWarning at exit
            error = (
                f"target {call.target.spec} returned an awaitable from a plain function; "
                "declare it `async def` so verdryx awaits it"
            )
            return self._error(call, error, "bad_result", latency)
        try:
            result = normalise_result(value)
        except TargetResultError as exc:
            return self._error(call, _bad_result(call, exc), "bad_result", latency)
        except RecursionError:  # verdryx's own walk of the value, never the target's raise
            error = (
                f"verdryx's encoding limit: the result target {call.target.spec} returned "
                "nests deeper than verdryx can read"
            )
            return self._error(call, error, "bad_result", latency)
        if spans is not None:
            try:
                result = spans.merge(result)
            except TargetResultError as exc:
                error = f"target {call.target.spec}: its OpenTelemetry spans cannot be read: {exc}"
                return self._error(call, error, "bad_spans", latency)
            with self._lock:
                self.span_results += spans.took
                self.span_overridden += spans.overridden
        return TargetCall(
            case_id=call.case.id, repeat=call.case.repeat, result=result, latency_s=latency
        )

    def _raised(self, call: _InFlight, exc: BaseException, started: float) -> TargetCall:
        if isinstance(exc, TargetResultError):  # a dialogue's turn returned a bad value
            latency = time.perf_counter() - started
            return self._error(call, _bad_result(call, exc), "bad_result", latency)
        error = f"target {call.target.spec} raised {_describe(exc)}"
        if not call.target.takes_text and "TargetCase" in str(exc):
            # A function written for a prompt, given the case object (docs/targets.md).
            error += f" ({_CASE_HINT})"
        return self._error(call, error, "exception", time.perf_counter() - started)

    def _timed_out(self, call: _InFlight) -> TargetCall:
        error = f"target {call.target.spec} did not return within {self.timeout:g}s"
        return self._error(call, error, "timeout", self.timeout)

    def _error(self, call: _InFlight, error: str, kind: str, latency: float) -> TargetCall:
        return TargetCall(
            case_id=call.case.id,
            repeat=call.case.repeat,
            result=None,
            error=_one_line(error),
            error_kind=kind,
            latency_s=latency,
        )

    def _settle(self, future: Future[TargetCall], answer: TargetCall) -> bool:
        try:
            future.set_result(answer)
        except InvalidStateError:  # the watchdog or abort got there first
            return False
        return True

    def _forget(self, future: Future[TargetCall]) -> None:
        with self._lock:
            self._pending.discard(future)
        if self.progress is not None and not future.cancelled():
            self.progress.advance()

    def _watchdog(self) -> None:
        """Settle calls the loop cannot: it is blocked by a call that never yields."""
        while not self._stopped.wait(_WATCHDOG_TICK_S):
            now = time.monotonic()
            with self._lock:
                overdue = [
                    call
                    for future, call in self._running.items()
                    if not future.done() and now > call.deadline + _WATCHDOG_GRACE_S
                ]
            for call in overdue:
                self._settle(call.future, self._timed_out(call))

    def _shutdown(self, *, join: float | None) -> None:
        with self._lock:
            self._closed = True
            loop, thread = self._loop, self._loop_thread
        self._stopped.set()
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # already closed
            loop.call_soon_threadsafe(loop.stop)
        thread.join(join)
        if self.progress is not None:
            self.progress.close()
            self.progress = None


def _set_once(future: asyncio.Future[TargetCall], answer: TargetCall) -> None:
    if not future.done():
        future.set_result(answer)


def _settle_cancelled(future: Future[TargetCall]) -> None:
    with contextlib.suppress(InvalidStateError):
        future.set_exception(CancelledError())


def _cancel_all_tasks(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()


def _bad_result(call: _InFlight, exc: TargetResultError) -> str:
    """The case's error for a result that cannot be taken: the target's (a bad value), or
    verdryx's own encoding limit (a value nested deeper than it encodes), said as such."""
    if isinstance(exc, TooDeepToEncode):
        return f"verdryx's encoding limit (not an error of target {call.target.spec}): {exc}"
    return f"target {call.target.spec} returned a bad result: {exc}"


#: Old names, kept resolvable with a DeprecationWarning (docs/python-api.md, "Renamed").
__getattr__ = renamed(__name__, {"TargetAnswer": "TargetCall"})
