"""xdist: workers send plain dicts out; the controller merges them in.

Registered only when xdist is loaded, so a session without it never sees an unknown hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from verdryx_core.model import Score

if TYPE_CHECKING:
    from pytest_verdryx.session import VerdryxSession

__all__ = ["XdistHooks", "worker_payload"]


def worker_payload(session: VerdryxSession, pytest_session: pytest.Session) -> dict[str, Any]:
    """Builtins only: what one worker graded, in collection order."""
    return {
        "scores": [
            [seq, nodeid, score.to_dict()] for nodeid, (seq, score) in session.scores.items()
        ],
        "expected": session.expected_count,
        "known_keys": sorted(session.known_keys),
        "interrupted": bool(pytest_session.shouldfail or pytest_session.shouldstop),
        "cache": [list(entry) for entry in session.cache_entries],
        "stability": dict(session.stability),
        "cache_stats": dict(session.cache_stats),
        "unpriced": sorted(session.unpriced),
        "contract_ids": dict(session.contract_ids),
        "not_run": sorted(session.not_run),
        "bars": dict(session.bars),
    }


class XdistHooks:
    def __init__(self, session: VerdryxSession) -> None:
        self.session = session

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["verdryx"] = self.session.controller_state()

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # Before xdist schedules anything: the controller answers the model calls ahead.
        self.session.prefetch_for_workers(ids)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        session = self.session
        if error:
            session.worker_failures.append(f"worker {getattr(node, 'gateway', node)}: {error}")
        payload = getattr(node, "workeroutput", {}).get("verdryx")
        if payload is None:
            return
        for seq, nodeid, data in payload["scores"]:
            session.scores[nodeid] = (seq, Score.from_dict(data))
        session.expected_count = max(session.expected_count, payload["expected"])
        session.known_keys.update(payload["known_keys"])
        session.worker_interrupted |= bool(payload["interrupted"])
        session.cache_entries.extend(tuple(entry) for entry in payload["cache"])
        session.stability.update(payload["stability"])
        for name, value in payload["cache_stats"].items():
            session.cache_stats[name] = session.cache_stats.get(name, 0) + value
        session.unpriced.update(payload["unpriced"])
        session.contract_ids.update(payload["contract_ids"])
        session.not_run.update(payload.get("not_run", ()))
        session.bars.update(payload.get("bars", {}))
