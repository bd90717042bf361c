"""xdist: the controller tells workers the run id, start time, baseline and where this run's
target outcomes are handed over; it prefetches the model and target calls for them; workers
send their `SessionState` back as a payload, merged here. The controller collects nothing:
a worker's eval set items, or its verdryx payload, turn verdryx on there.

Registered at configure, only when xdist is loaded, so a session without it never sees an
unknown hook.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_verdryx.longrepr import CrashOverXdist
from pytest_verdryx.run_folder import HANDOFF_KEY, run_folder

if TYPE_CHECKING:
    from pytest_verdryx.state import SessionState

__all__ = ["PAYLOAD_KEY", "XdistHooks"]

#: The key of verdryx's entry in xdist's workerinput / workeroutput.
PAYLOAD_KEY = "verdryx"


class _Prefetched(Protocol):
    def for_workers(self, ids: list[str]) -> None: ...


class _Owner(Protocol):
    """The session's plugin object (`plugin.VerdryxPlugin`), as these hooks see it."""

    @property
    def on(self) -> bool: ...
    @property
    def state(self) -> SessionState: ...
    @property
    def prefetch(self) -> _Prefetched: ...
    def is_evalset(self, name: str) -> bool: ...
    def activate_now(self) -> object: ...
    def controller_state(self) -> dict[str, Any]: ...


class XdistHooks(CrashOverXdist):
    """xdist's hooks, and the crash line carried over its wire (`CrashOverXdist`)."""

    def __init__(self, owner: _Owner) -> None:
        self.owner = owner

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[PAYLOAD_KEY] = {
            **self.owner.controller_state(),
            HANDOFF_KEY: str(run_folder(node.config).handoff),
        }

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        owner = self.owner
        if not owner.on:
            if not any(owner.is_evalset(Path(nodeid.partition("::")[0]).name) for nodeid in ids):
                return
            owner.activate_now()
        # Before xdist schedules anything: the controller prefetches the model calls.
        owner.prefetch.for_workers(ids)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        state = self.owner.state
        if error:
            state.worker_failures.append(f"worker {getattr(node, 'gateway', node)}: {error}")
        # Taken out, not read: xdist keeps each node's workeroutput to the end of the session,
        # and a worker's payload (every score it graded, as builtins) is then held twice.
        payload = getattr(node, "workeroutput", {}).pop(PAYLOAD_KEY, None)
        if payload is not None:
            self.owner.activate_now()
            state.merge(payload)
            del payload
