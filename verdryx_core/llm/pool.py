"""The bounded pool every model call of a session runs in.

All calls the selected items need are submitted before the first item runs; at most
`concurrency` are in flight, so N calls take about N x latency / concurrency. Each item then
waits on its own future, so results keep collection order whatever order calls finish in.
Retries happen inside each call (the SDK's backoff), so a throttled call holds its slot
while it waits, which is what a rate limit asks for.

The workers are daemon threads, not a `ThreadPoolExecutor`'s: the interpreter joins those at
exit, so one hung call would hold up a Ctrl-C'd session until its timeout. Here `close(wait=
False)` returns at once and a call still in flight is abandoned with the process.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import Any, Self, TypeVar

from verdryx_core.errors import UsageError
from verdryx_core.llm.progress import Progress

__all__ = ["CallPool"]

_T = TypeVar("_T")

#: One queued call: its future, the function and its arguments.
_Job = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class CallPool:
    """`concurrency` worker threads; `progress`, when given, advances as each call ends."""

    def __init__(self, concurrency: int, *, progress: Progress | None = None) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise UsageError(
                f"concurrency {concurrency!r} is not a positive integer",
                hint="pass {concurrency}=N with N >= 1 (default 8)",
            )
        self.concurrency = concurrency
        self.progress = progress
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._futures: list[Future[Any]] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        future: Future[_T] = Future()
        if self.progress is not None:
            progress = self.progress

            def advance(done: Future[_T]) -> None:
                if not done.cancelled():
                    progress.advance()

            future.add_done_callback(advance)
        with self._lock:
            if self._closed:
                raise RuntimeError("the call pool is closed")
            self._futures.append(future)
            # Threads start as work arrives, never more than the bound.
            if len(self._threads) < self.concurrency:
                thread = threading.Thread(
                    target=self._work,
                    name=f"verdryx-call-{len(self._threads)}",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def cancel_pending(self) -> int:
        """Cancel every call that has not started; returns how many were cancelled."""
        with self._lock:
            futures = list(self._futures)
        return sum(future.cancel() for future in futures)

    def close(self, *, cancel: bool = False, wait: bool = True) -> None:
        """Stop taking work and end the progress line. `cancel` drops the calls not started;
        `wait` waits for the ones in flight (without it they are abandoned, for Ctrl-C)."""
        if cancel:
            self.cancel_pending()
        with self._lock:
            already, self._closed = self._closed, True
            threads = list(self._threads)
        if not already:
            for _ in threads:
                self._jobs.put(None)
        if wait:
            for thread in threads:
                thread.join()
        if self.progress is not None:
            self.progress.close()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, fn, args, kwargs = job
            if not future.set_running_or_notify_cancel():
                continue  # cancelled before it started
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # the caller's future carries whatever it raised
                future.set_exception(exc)
            else:
                future.set_result(result)
            del job, future  # no reference to a finished call's result stays in the worker

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(cancel=exc_type is not None)
