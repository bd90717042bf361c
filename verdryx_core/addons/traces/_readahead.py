"""Read ahead on a thread: Parquet decoding releases the GIL, so the next row group is
decoded while the reduction works on this one. The queue is short, so memory stays at a
few row groups."""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator
from typing import Final, TypeVar

__all__ = ["read_ahead"]

T = TypeVar("T")

_DONE: Final = object()


def read_ahead(source: Iterator[T], *, depth: int = 2) -> Generator[T, None, None]:
    """Yield what `source` yields, produced on a worker thread at most `depth` items ahead.
    An exception in the worker is raised here, at the item where it happened; closing the
    generator early stops the worker."""
    slots: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                slots.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in source:
                if not put(item):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put(_Failure(exc))
            return
        put(_DONE)

    worker = threading.Thread(target=work, name="verdryx-trace-reader", daemon=True)
    worker.start()
    try:
        while True:
            item = slots.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error
