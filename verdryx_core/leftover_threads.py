"""Threads an agent started and left running cannot keep the process alive (docs/targets.md,
"Threads a target leaves behind").

At exit, Python waits for every non-daemon thread, and `concurrent.futures` for every task
still queued in a pool: one hung thread a target started (a pool's task, a watcher thread)
keeps CI waiting forever after the verdict is printed. So, once a run has its exit status,
`exit_past_leftover_threads` arranges that at interpreter shutdown the threads started since
`threads_now()` get a short grace, and if some still run, the process says which and exits
with that status without waiting for them (exit handlers are still run first).

The hook is `threading._register_atexit`, the one that runs before the interpreter joins its
threads (it is how `concurrent.futures` joins its own); `atexit` runs only after that join.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Final, TextIO

from verdryx_core.untrusted.text import printable

__all__ = ["GRACE_S", "exit_past_leftover_threads", "threads_now"]

#: Seconds the threads left running get to end on their own at exit.
GRACE_S: Final = 2.0

_registered = threading.Lock()
_state: dict[str, object] = {}


def threads_now() -> frozenset[threading.Thread]:
    """The threads alive now, to tell later which ones a run started (the objects, not their
    ids, which a later thread could reuse)."""
    return frozenset(threading.enumerate())


def _joined_at_exit(thread: threading.Thread) -> bool:
    """Whether the interpreter waits for `thread` at exit: a non-daemon thread, or a pool's
    worker (`concurrent.futures` joins those, daemon or not; its registry is the only place
    that says which threads they are)."""
    if not thread.daemon:
        return True
    pools = sys.modules.get("concurrent.futures.thread")
    return thread in getattr(pools, "_threads_queues", {})


def _leftovers(before: frozenset[threading.Thread]) -> list[threading.Thread]:
    main = threading.main_thread()
    return [
        thread
        for thread in threading.enumerate()
        if thread is not main and thread is not threading.current_thread()
        if thread not in before and thread.is_alive() and _joined_at_exit(thread)
    ]


def exit_past_leftover_threads(
    before: frozenset[threading.Thread],
    exit_status: Callable[[], int],
    *,
    grace_s: float = GRACE_S,
    stream: Callable[[], TextIO] = lambda: sys.stderr,
) -> None:
    """At interpreter shutdown, exit with `exit_status()` rather than wait past `grace_s` for
    the threads started since `before`. Called again (a later run in the same process), the
    later run's threads and status replace the earlier ones: one hook per process."""
    _state.update(before=before, status=exit_status, grace=grace_s, stream=stream)
    register = getattr(threading, "_register_atexit", None)
    if register is None or not _registered.acquire(blocking=False):
        return
    with contextlib.suppress(RuntimeError):  # the interpreter is already shutting down
        register(_at_shutdown)


def _at_shutdown() -> None:
    before: frozenset[threading.Thread] = _state["before"]  # type: ignore[assignment]
    leftovers = _leftovers(before)
    deadline = time.monotonic() + float(_state["grace"])  # type: ignore[arg-type]
    for thread in leftovers:
        thread.join(max(0.0, deadline - time.monotonic()))
    running = [thread for thread in leftovers if thread.is_alive()]
    if not running:
        return
    names = printable(", ".join(repr(thread.name) for thread in running[:3]), keep_newlines=False)
    more = f" and {len(running) - 3} more" if len(running) > 3 else ""
    stream: TextIO = _state["stream"]()  # type: ignore[operator]
    print(
        f"verdryx: {len(running)} thread(s) started during the run still running at exit "
        f"({names}{more}); exiting without waiting for them",
        file=stream,
    )
    atexit._run_exitfuncs()
    for out in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            out.flush()
    os._exit(int(_state["status"]()))  # type: ignore[operator]
