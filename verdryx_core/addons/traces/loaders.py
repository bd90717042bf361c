"""One entry point per question: which reader a path needs, and the records it yields."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from verdryx_core.addons.errors import TraceError
from verdryx_core.addons.traces.cost import CostPerOutcomeReport, cost_per_outcome, cost_report
from verdryx_core.addons.traces.parquet import read_parquet, read_parquet_runs, reduce_traces
from verdryx_core.addons.traces.records import (
    iter_csv,
    iter_ndjson,
    optional_cost,
    optional_float,
    optional_int,
    required_cost,
    required_outcome,
)

__all__ = ["RECORD_SUFFIXES", "cost_report_for", "load_records", "load_run_records", "source_kind"]

RECORD_SUFFIXES: Final = (".csv", ".jsonl", ".ndjson", ".parquet")

Kind = Literal["parquet", "ndjson", "csv"]


def source_kind(path: str | Path) -> Kind:
    """Which reader a path needs: a directory or `.parquet` is a trace, the rest records."""
    path = Path(path)
    if path.is_dir():
        return "parquet"
    suffix = path.suffix.lower()
    if not suffix and not path.exists():
        # Most likely a --traces directory that is not there: say so, not "unknown format".
        raise TraceError(
            f"{str(path)!r} does not exist; expected a directory of .parquet files, "
            f"or a file ending in one of {list(RECORD_SUFFIXES)}"
        )
    if suffix == ".parquet":
        return "parquet"
    if suffix in (".ndjson", ".jsonl"):
        return "ndjson"
    if suffix == ".csv":
        return "csv"
    raise TraceError(
        f"don't know how to read {str(path)!r}: expected a directory of .parquet files, "
        f"or one of {list(RECORD_SUFFIXES)}"
    )


def _rows(path: Path, kind: Kind) -> Any:
    return iter_ndjson(path) if kind == "ndjson" else iter_csv(path)


def load_records(path: str | Path) -> list[dict[str, Any]]:
    """`{"outcome", "cost_usd"}` records: reduced per run from a trace, or passed through
    from NDJSON/CSV after checking each line has an outcome and a numeric cost."""
    path = Path(path)
    kind = source_kind(path)
    if kind == "parquet":
        return read_parquet(path)
    records = []
    for where, record in _rows(path, kind):
        required_outcome(record, where)
        required_cost(record, where)
        records.append(record)
    return records


def load_run_records(path: str | Path) -> list[dict[str, Any]]:
    """Per-run records for the SLO. From NDJSON/CSV every field is optional, and one that is
    present must parse (numbers from CSV strings are converted here, naming the row)."""
    path = Path(path)
    kind = source_kind(path)
    if kind == "parquet":
        return read_parquet_runs(path)
    records = []
    for where, record in _rows(path, kind):
        typed = dict(record)
        typed["cost_usd"] = optional_cost(record, where)
        typed["score"] = optional_float(record, "score", where)
        for name in ("refused_calls", "calls", "last_ts_millis", "first_ts_millis"):
            typed[name] = optional_int(record, name, where)
        if "outcome" in record and record["outcome"] is not None:
            typed["outcome"] = required_outcome(record, where)
        records.append(typed)
    return records


def cost_report_for(path: str | Path) -> CostPerOutcomeReport:
    """The cost-per-outcome report of any supported source. A trace is streamed with
    run-less calls folded into totals (memory is bounded by the number of runs) and without
    tracking the order runs first appear in (totals do not depend on it)."""
    path = Path(path)
    kind = source_kind(path)
    if kind == "parquet":
        return cost_report(reduce_traces(path, keep_loose=False, ordered=False))
    # Streamed: each line is checked (naming its line or row) and folded, never kept.
    return cost_per_outcome(
        {"outcome": required_outcome(record, where), "cost_usd": required_cost(record, where)}
        for where, record in _rows(path, kind)
    )
