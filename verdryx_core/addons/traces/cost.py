"""Cost per outcome: count, total and mean dollars per tag, overall, and the headline."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from verdryx_core.addons.errors import TraceError
from verdryx_core.addons.traces.decisions import UNTAGGED
from verdryx_core.addons.traces.records import required_cost, required_outcome
from verdryx_core.addons.traces.reduction import ReducedRuns
from verdryx_core.limits import MAX_TOTAL_COST_USD, MICROUSD_PER_USD

__all__ = [
    "ABANDONED",
    "ESCALATED",
    "RESOLVED",
    "CostPerOutcomeReport",
    "Headline",
    "OutcomeCost",
    "cost_per_outcome",
    "cost_report",
]

RESOLVED: Final = "case_resolved"
ESCALATED: Final = "escalated"
ABANDONED: Final = "abandoned"

_MICRO_PER_USD: Final = MICROUSD_PER_USD


@dataclass(frozen=True, slots=True, kw_only=True)
class OutcomeCost:
    outcome: str
    count: int
    total_cost_usd: float
    mean_cost_usd: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "total_usd": self.total_cost_usd,
            "mean_usd": self.mean_cost_usd,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Headline:
    """What a reader asks first: what one resolved case really costs once every run's spend
    is paid for (failures included), and how much went to runs that were abandoned."""

    resolved_tag: str
    resolved_runs: int
    usd_per_resolved: float | None  # all spend / resolved runs; None when nothing resolved
    abandoned_tag: str
    abandoned_runs: int
    abandoned_usd: float
    abandoned_share: float | None  # of all spend; None when nothing was spent

    def to_dict(self) -> dict[str, Any]:
        return {
            "resolved_tag": self.resolved_tag,
            "resolved_runs": self.resolved_runs,
            "usd_per_resolved": self.usd_per_resolved,
            "abandoned_tag": self.abandoned_tag,
            "abandoned_runs": self.abandoned_runs,
            "abandoned_usd": self.abandoned_usd,
            "abandoned_share": self.abandoned_share,
        }


def _bucket(tag: str, count: int, total: float) -> OutcomeCost:
    return OutcomeCost(
        outcome=tag,
        count=count,
        total_cost_usd=total,
        mean_cost_usd=total / count if count else 0.0,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CostPerOutcomeReport:
    by_outcome: Mapping[str, OutcomeCost] = field(default_factory=dict)
    overall: OutcomeCost = field(default_factory=lambda: _bucket("overall", 0, 0.0))

    def get(self, tag: str) -> OutcomeCost | None:
        return self.by_outcome.get(tag)

    @property
    def resolved(self) -> OutcomeCost | None:
        return self.get(RESOLVED)

    @property
    def escalated(self) -> OutcomeCost | None:
        return self.get(ESCALATED)

    @property
    def abandoned(self) -> OutcomeCost | None:
        return self.get(ABANDONED)

    def ordered(self) -> list[OutcomeCost]:
        """Tags alphabetically, `(untagged)` last: unexplained spend closes the table."""
        return sorted(
            self.by_outcome.values(), key=lambda row: (row.outcome == UNTAGGED, row.outcome)
        )

    def headline(self, *, resolved: str = RESOLVED, abandoned: str = ABANDONED) -> Headline:
        won = self.get(resolved)
        lost = self.get(abandoned)
        spend = self.overall.total_cost_usd
        resolved_runs = won.count if won else 0
        lost_usd = lost.total_cost_usd if lost else 0.0
        return Headline(
            resolved_tag=resolved,
            resolved_runs=resolved_runs,
            usd_per_resolved=spend / resolved_runs if resolved_runs else None,
            abandoned_tag=abandoned,
            abandoned_runs=lost.count if lost else 0,
            abandoned_usd=lost_usd,
            abandoned_share=lost_usd / spend if spend > 0 else None,
        )

    def to_dict(self, *, resolved: str = RESOLVED, abandoned: str = ABANDONED) -> dict[str, Any]:
        """The `cost-per-correct --json` document (docs/cli.md), plus the headline."""
        return {
            "outcomes": {row.outcome: row.to_dict() for row in self.ordered()},
            "overall": self.overall.to_dict(),
            "headline": self.headline(resolved=resolved, abandoned=abandoned).to_dict(),
        }


class _ExactSum:
    """A running sum kept exactly as a few non-overlapping floats (Shewchuk's partials, the
    algorithm behind `math.fsum`), so records can stream through in constant memory and the
    total is still the correctly rounded sum of every value."""

    __slots__ = ("count", "partials")

    def __init__(self) -> None:
        self.count = 0
        self.partials: list[float] = []

    def add(self, value: float) -> None:
        self.count += 1
        partials = self.partials
        kept = 0
        for other in partials:
            if abs(value) < abs(other):
                value, other = other, value
            high = value + other
            low = other - (high - value)
            if low:
                partials[kept] = low
                kept += 1
            value = high
        partials[kept:] = [value]

    def total(self) -> float:
        return math.fsum(self.partials)


def cost_per_outcome(records: Iterable[Mapping[str, Any]]) -> CostPerOutcomeReport:
    """Aggregate dollar records (NDJSON/CSV, or `read_parquet` output), streamed: memory
    holds a few floats per tag, never the records. Sums are correctly rounded (as
    `math.fsum`), so the order records arrive in never changes a total."""
    sums: dict[str, _ExactSum] = {}
    for number, record in enumerate(records, start=1):
        where = f"record {number}"
        tag = required_outcome(record, where)
        cost = required_cost(record, where)
        bucket = sums.get(tag)
        if bucket is None:
            bucket = sums[tag] = _ExactSum()
        bucket.add(cost)
    # The partials of every tag sum exactly to the grand total, so fsum rounds it once.
    overall = math.fsum(part for bucket in sums.values() for part in bucket.partials)
    if overall > MAX_TOTAL_COST_USD:
        # Each record is bounded (`required_cost`); their sum is checked too, as the trace
        # reduction's is, so the two sources have the same maximum (docs/store.md).
        raise TraceError(
            f"the records' total cost (${overall:,.2f}) passes the maximum of "
            f"${MAX_TOTAL_COST_USD:,} (docs/store.md); check the cost_usd values"
        )
    return CostPerOutcomeReport(
        by_outcome={
            tag: _bucket(tag, bucket.count, bucket.total()) for tag, bucket in sums.items()
        },
        overall=_bucket("overall", sum(bucket.count for bucket in sums.values()), overall),
    )


def cost_report(reduced: ReducedRuns) -> CostPerOutcomeReport:
    """Aggregate a trace reduction. Totals are summed in integer microdollars and turned
    into dollars once, so they are exact whatever the order or size of the trace."""
    counts, micro = reduced.outcome_totals()
    tags = [*reduced.outcomes, UNTAGGED]
    by_outcome = {
        tags[code]: _bucket(tags[code], int(counts[code]), int(micro[code]) / _MICRO_PER_USD)
        for code in range(len(tags))
        if counts[code]
    }
    overall = _bucket("overall", int(counts.sum()), int(micro.sum()) / _MICRO_PER_USD)
    return CostPerOutcomeReport(by_outcome=by_outcome, overall=overall)
