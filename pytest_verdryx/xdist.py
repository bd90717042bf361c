"""xdist: the controller tells workers the run id, start time, baseline and where this run's
target outcomes are handed over; it makes the model and target calls ahead for them; workers
send their `SessionState` back as a payload, merged here.

Registered only when xdist is loaded, so a session without it never sees an unknown hook.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_verdryx.longrepr import CrashOverXdist
from pytest_verdryx.run_folder import HANDOFF_KEY, run_folder

if TYPE_CHECKING:
    # Types only: the entry point reads PAYLOAD_KEY from here before anything is activated.
    from pytest_verdryx.prefetch import PrefetchCalls
    from pytest_verdryx.state import SessionState

__all__ = ["PAYLOAD_KEY", "XdistHooks"]

#: The key of verdryx's entry in xdist's workerinput / workeroutput.
PAYLOAD_KEY = "verdryx"


class XdistHooks(CrashOverXdist):
    """xdist's hooks, and the crash line carried over its wire (`CrashOverXdist`)."""

    def __init__(
        self,
        state: SessionState,
        prefetch: PrefetchCalls,
        controller_state: Callable[[], dict[str, Any]],
    ) -> None:
        self.state = state
        self.prefetch = prefetch
        self.controller_state = controller_state

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[PAYLOAD_KEY] = {
            **self.controller_state(),
            HANDOFF_KEY: str(run_folder(node.config).handoff),
        }

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # Before xdist schedules anything: the controller answers the model calls ahead.
        self.prefetch.for_workers(ids)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        if error:
            self.state.worker_failures.append(f"worker {getattr(node, 'gateway', node)}: {error}")
        # Taken out, not read: xdist keeps each node's workeroutput to the end of the session,
        # and a worker's payload (every score it graded, as builtins) is then held twice.
        payload = getattr(node, "workeroutput", {}).pop(PAYLOAD_KEY, None)
        if payload is not None:
            self.state.merge(payload)
            del payload
