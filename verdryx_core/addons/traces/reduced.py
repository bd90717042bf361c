"""What a run reduction returns: reduced records as columns, and the vocabularies they index."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ReducedRuns", "RunColumns"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunColumns:
    """Reduced records as columns. Codes index the vocabularies of `ReducedRuns`; -1 means
    untagged (outcome) or empty (agent, key). Detail columns are None in a cost-only pass,
    and so is `run_id` (run-less calls have none: their run id is ""); `calls` too in the
    pass without order (`RunTotals`: counting calls would cost it one more aggregate)."""

    run_id: list[str] | None
    outcome: np.ndarray
    cost_microusd: np.ndarray
    calls: np.ndarray | None
    refused_calls: np.ndarray | None = None
    agent_id: np.ndarray | None = None
    key_id: np.ndarray | None = None
    first_ts_millis: np.ndarray | None = None
    last_ts_millis: np.ndarray | None = None
    has_ts: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.outcome)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReducedRuns:
    """The reduction's result: runs in order of first appearance, then run-less calls.

    With `keep_loose=False` run-less calls are not kept one by one: `loose_counts` and
    `loose_cost_microusd` (indexed by outcome code) carry them, so memory stays bounded.
    """

    outcomes: tuple[str, ...]
    agents: tuple[str, ...]
    keys: tuple[str, ...]
    runs: RunColumns
    loose: RunColumns | None
    loose_counts: np.ndarray
    loose_cost_microusd: np.ndarray
    rows_read: int

    def outcome_totals(self) -> tuple[np.ndarray, np.ndarray]:
        """(count, cost in microdollars) per outcome code; the last slot is `(untagged)`."""
        size = len(self.outcomes) + 1
        untagged = len(self.outcomes)
        counts = np.zeros(size, dtype=np.int64)
        costs = np.zeros(size, dtype=np.int64)
        parts = [self.runs] if self.loose is None else [self.runs, self.loose]
        for part in parts:
            codes = np.where(part.outcome < 0, untagged, part.outcome)
            counts += np.bincount(codes, minlength=size)
            np.add.at(costs, codes, part.cost_microusd)
        counts[: len(self.loose_counts)] += self.loose_counts
        costs[: len(self.loose_cost_microusd)] += self.loose_cost_microusd
        return counts, costs
