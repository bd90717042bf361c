"""A custom grader's call, bounded by the run's call timeout (docs/graders.md, "Custom
graders").

Python cannot stop a thread, so a call that does not return in time is abandoned: it runs on in
a daemon thread (which never keeps the process alive) and the caller moves on with an error.
Each calling thread keeps one worker of its own and hands it the calls: a thread started per
call would cost about four times as much (graders run once per case), and a worker per caller
keeps the graders the pool runs side by side just as concurrent as before.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, final

__all__ = ["CallTimedOut", "call_within"]

T = TypeVar("T")


class CallTimedOut(Exception):
    """The call did not return within its bound; it was abandoned, still running."""


@final
@dataclass(slots=True)
class _Job(Generic[T]):
    call: Callable[[], T]
    done: threading.Event = field(default_factory=threading.Event)
    value: Any = None
    error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.call()
        except BaseException as error:
            self.error = error
        finally:
            self.done.set()


def _serve(jobs: queue.SimpleQueue[_Job[Any] | None]) -> None:
    while (job := jobs.get()) is not None:
        job.run()


@final
class _Worker:
    """One calling thread's worker. When the calling thread ends, its thread-local copy of
    this object goes, and the finalizer tells the worker to stop: a process that runs many
    evaluations (each with pool threads of its own) keeps no idle worker behind."""

    __slots__ = ("__weakref__", "jobs")

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        threading.Thread(
            target=_serve, args=(self.jobs,), name="verdryx-custom-grader", daemon=True
        ).start()
        weakref.finalize(self, self.jobs.put, None)


_workers = threading.local()


def _queue_of_this_thread() -> queue.SimpleQueue[_Job[Any] | None]:
    worker: _Worker | None = getattr(_workers, "worker", None)
    if worker is None:
        worker = _workers.worker = _Worker()
    return worker.jobs


def call_within(call: Callable[[], T], timeout_s: float | None) -> T:
    """`call()`'s value (or its exception), waited for at most `timeout_s` seconds; without a
    bound, called right here. Past the bound, CallTimedOut, and the worker that holds the
    stuck call is let go (told to stop once the call ends) so the next call gets a fresh one."""
    if timeout_s is None:
        return call()
    jobs = _queue_of_this_thread()
    job: _Job[T] = _Job(call)
    jobs.put(job)
    if not job.done.wait(timeout_s):
        # Let the stuck worker go (it stops once the call ends, if ever); the next call of
        # this thread gets a new one.
        _workers.worker = None
        raise CallTimedOut
    if job.error is not None:
        raise job.error
    return job.value
