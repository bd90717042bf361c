"""The bounded pool every model call of a session runs in.

All calls the selected items need are submitted before the first item runs; at most
`concurrency` are in flight, so N calls take about N x latency / concurrency. Each item then
waits on its own future, so results keep collection order whatever order calls finish in.
Retries happen inside each call (the SDK's backoff), so a throttled call holds its slot
while it waits, which is what a rate limit asks for.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, Self, TypeVar

from verdryx_core.errors import UsageError
from verdryx_core.llm.progress import Progress

__all__ = ["CallPool"]

_T = TypeVar("_T")


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
        self._executor = ThreadPoolExecutor(
            max_workers=concurrency, thread_name_prefix="verdryx-call"
        )

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        future = self._executor.submit(fn, *args, **kwargs)
        if self.progress is not None:
            progress = self.progress

            def advance(done: Future[_T]) -> None:
                if not done.cancelled():
                    progress.advance()

            future.add_done_callback(advance)
        return future

    def close(self, *, cancel: bool = False) -> None:
        """Wait for the calls in flight (dropping queued ones when `cancel`), then end the
        progress line."""
        self._executor.shutdown(wait=True, cancel_futures=cancel)
        if self.progress is not None:
            self.progress.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(cancel=exc_type is not None)
