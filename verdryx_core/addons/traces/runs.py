"""Reduced runs as plain records: the `{"outcome", "cost_usd", ...}` dicts callers compare."""

from __future__ import annotations

from typing import Any

import numpy as np

from verdryx_core.addons.traces.decisions import UNTAGGED
from verdryx_core.addons.traces.reduction import ReducedRuns, RunColumns

__all__ = ["reduced_records"]

MICRO_PER_USD = 1_000_000


def _names(codes: np.ndarray, vocabulary: tuple[str, ...], missing: str) -> list[str]:
    table = [*vocabulary, missing]
    return [table[code] for code in np.where(codes < 0, len(vocabulary), codes).tolist()]


def _part(part: RunColumns, reduced: ReducedRuns, *, detail: bool) -> list[dict[str, Any]]:
    outcomes = _names(part.outcome, reduced.outcomes, UNTAGGED)
    costs = [micro / MICRO_PER_USD for micro in part.cost_microusd.tolist()]
    if not detail:
        return [{"outcome": o, "cost_usd": c} for o, c in zip(outcomes, costs, strict=True)]
    assert part.agent_id is not None and part.key_id is not None and part.has_ts is not None
    assert part.refused_calls is not None and part.calls is not None
    assert part.first_ts_millis is not None and part.last_ts_millis is not None
    count = len(part)
    run_ids = [""] * count if part.run_id is None else part.run_id
    agents = _names(part.agent_id, reduced.agents, "")
    keys = _names(part.key_id, reduced.keys, "")
    has_ts = part.has_ts.tolist()
    first = [
        ts if ok else None for ts, ok in zip(part.first_ts_millis.tolist(), has_ts, strict=True)
    ]
    last = [ts if ok else None for ts, ok in zip(part.last_ts_millis.tolist(), has_ts, strict=True)]
    return [
        {
            "outcome": outcomes[i],
            "cost_usd": costs[i],
            "run_id": run_ids[i],
            "agent_id": agents[i],
            "key_id": keys[i],
            "calls": calls,
            "refused_calls": refused,
            "first_ts_millis": first[i],
            "last_ts_millis": last[i],
        }
        for i, (calls, refused) in enumerate(
            zip(part.calls.tolist(), part.refused_calls.tolist(), strict=True)
        )
    ]


def reduced_records(reduced: ReducedRuns, *, detail: bool) -> list[dict[str, Any]]:
    """Runs in order of first appearance, then the run-less calls in read order."""
    records = _part(reduced.runs, reduced, detail=detail)
    if reduced.loose is not None:
        records += _part(reduced.loose, reduced, detail=detail)
    return records
