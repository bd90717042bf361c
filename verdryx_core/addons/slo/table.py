"""The SLO's inputs as columns: one row per run (or per eval-store score), numpy arrays.

Missing values stay missing (NaN cost or score, -1 refused calls, `has_ts` False): an
indicator that cannot judge a run leaves it out of both numerator and denominator, and
an unmeasured indicator is never a zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verdryx_core.addons.traces import (
    UNTAGGED,
    ReducedRuns,
    load_run_records,
    reduce_traces,
    source_kind,
)

__all__ = ["RunTable", "ScoreTable", "run_table_for"]


def _float(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
        return int(number) if number.is_integer() else None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunTable:
    """Per-run columns. `subject` is the identity field's value ("" when absent)."""

    subject: np.ndarray  # object array of str
    outcome: np.ndarray  # object array of str ("" when absent)
    score: np.ndarray  # float64, NaN when absent
    refused_calls: np.ndarray  # int64, -1 when absent
    cost_usd: np.ndarray  # float64, NaN when absent
    ts_millis: np.ndarray  # int64, meaningful where has_ts
    has_ts: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.subject)

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], identity_field: str) -> RunTable:
        rows = list(records)
        ts = [_int(row.get("last_ts_millis")) for row in rows]
        refused = [_int(row.get("refused_calls")) for row in rows]
        return cls(
            subject=np.array([str(row.get(identity_field) or "") for row in rows], dtype=object),
            outcome=np.array([str(row.get("outcome") or "") for row in rows], dtype=object),
            score=np.array([_float(row.get("score")) for row in rows], dtype=np.float64),
            refused_calls=np.array([-1 if r is None else r for r in refused], dtype=np.int64),
            cost_usd=np.array([_float(row.get("cost_usd")) for row in rows], dtype=np.float64),
            ts_millis=np.array([0 if t is None else t for t in ts], dtype=np.int64),
            has_ts=np.array([t is not None for t in ts], dtype=bool),
        )

    @classmethod
    def from_reduced(cls, reduced: ReducedRuns, identity_field: str) -> RunTable:
        """Straight from the trace reduction's columns, no per-run dicts."""
        parts = [reduced.runs] if reduced.loose is None else [reduced.runs, reduced.loose]
        vocabulary = reduced.agents if identity_field == "agent_id" else reduced.keys

        def strings(codes: np.ndarray, names: Sequence[str], missing: str) -> np.ndarray:
            table = np.array([*names, missing], dtype=object)
            return table[np.where(codes < 0, len(names), codes)]

        def stack(pick: Any) -> np.ndarray:
            return np.concatenate([pick(part) for part in parts])

        subject_codes = stack(lambda p: p.agent_id if identity_field == "agent_id" else p.key_id)
        return cls(
            subject=strings(subject_codes, vocabulary, ""),
            outcome=strings(stack(lambda p: p.outcome), reduced.outcomes, UNTAGGED),
            score=np.full(len(subject_codes), math.nan),
            refused_calls=stack(lambda p: p.refused_calls),
            cost_usd=stack(lambda p: p.cost_microusd) / 1_000_000,
            ts_millis=stack(lambda p: p.last_ts_millis),
            has_ts=stack(lambda p: p.has_ts),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreTable:
    """Per-case scores from the eval store, keyed by the agent id of the run they came from."""

    subject: np.ndarray
    score: np.ndarray
    ts_millis: np.ndarray
    has_ts: np.ndarray

    def __len__(self) -> int:
        return len(self.subject)

    @classmethod
    def from_records(cls, scores: Iterable[Mapping[str, Any]], identity_field: str) -> ScoreTable:
        rows = list(scores)
        ts = [_int(row.get("last_ts_millis")) for row in rows]
        return cls(
            # Scores carry an agent id only: grouped by key_id they belong to nobody.
            subject=np.array(
                [str(row.get(identity_field) or "") for row in rows]
                if identity_field == "agent_id"
                else [""] * len(rows),
                dtype=object,
            ),
            score=np.array([_float(row.get("score")) for row in rows], dtype=np.float64),
            ts_millis=np.array([0 if t is None else t for t in ts], dtype=np.int64),
            has_ts=np.array([t is not None for t in ts], dtype=bool),
        )


def run_table_for(path: str | Path, identity_field: str) -> RunTable:
    """Per-run columns of a trace (reduced in streaming, straight to columns) or of an
    NDJSON/CSV file of per-run records."""
    if source_kind(path) == "parquet":
        return RunTable.from_reduced(reduce_traces(path, detail=True), identity_field)
    return RunTable.from_records(load_run_records(path), identity_field)
