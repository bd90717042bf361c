"""Traces and outcome records: loaders, the TokenFuse run reduction, cost per outcome."""

from __future__ import annotations

from verdryx_core.addons.errors import TraceError, TracesExtraMissing
from verdryx_core.addons.traces._arrow import INSTALL_HINT
from verdryx_core.addons.traces.cost import (
    ABANDONED,
    ESCALATED,
    RESOLVED,
    CostPerOutcomeReport,
    Headline,
    OutcomeCost,
    cost_per_outcome,
    cost_report,
)
from verdryx_core.addons.traces.decisions import BLOCKED_DECISIONS, REFUSED_DECISIONS, UNTAGGED
from verdryx_core.addons.traces.loaders import (
    RECORD_SUFFIXES,
    cost_report_for,
    load_records,
    load_run_records,
    source_kind,
)
from verdryx_core.addons.traces.parquet import (
    iter_trace_batches,
    read_parquet,
    read_parquet_runs,
    reduce_traces,
    trace_files,
)
from verdryx_core.addons.traces.records import read_csv, read_ndjson
from verdryx_core.addons.traces.reduction import ReducedRuns, RunColumns, RunReducer, reduce_batches
from verdryx_core.addons.traces.runs import reduced_records
from verdryx_core.addons.traces.totals import KeySpaceExceeded, RunTotals

__all__ = [
    "ABANDONED",
    "BLOCKED_DECISIONS",
    "ESCALATED",
    "INSTALL_HINT",
    "RECORD_SUFFIXES",
    "REFUSED_DECISIONS",
    "RESOLVED",
    "UNTAGGED",
    "CostPerOutcomeReport",
    "Headline",
    "KeySpaceExceeded",
    "OutcomeCost",
    "ReducedRuns",
    "RunColumns",
    "RunReducer",
    "RunTotals",
    "TraceError",
    "TracesExtraMissing",
    "cost_per_outcome",
    "cost_report",
    "cost_report_for",
    "iter_trace_batches",
    "load_records",
    "load_run_records",
    "read_csv",
    "read_ndjson",
    "read_parquet",
    "read_parquet_runs",
    "reduce_batches",
    "reduce_traces",
    "reduced_records",
    "source_kind",
    "trace_files",
]
