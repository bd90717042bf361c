"""The vectorised, streamed TokenFuse reduction agrees exactly with a plain loop over rows:
runs split across batches, row groups and files, untagged and re-tagged runs,
blocked calls, null cells, missing columns and run-less calls."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verdryx_core.addons.traces import (
    BLOCKED_DECISIONS,
    REFUSED_DECISIONS,
    RunReducer,
    TraceError,
    cost_per_outcome,
    cost_report,
    read_parquet,
    read_parquet_runs,
    reduce_traces,
    reduced_records,
)
from verdryx_core.addons.traces._readahead import read_ahead

SCHEMA = pa.schema(
    [
        ("ts_millis", pa.int64()),
        ("run_id", pa.string()),
        ("decision", pa.string()),
        ("cost_microusd", pa.int64()),
        ("step", pa.uint32()),
        ("agent_id", pa.string()),
        ("outcome", pa.string()),
        ("key_id", pa.string()),
    ]
)

# -- the slow reference: docs/cost-per-outcome.md's rules written as a loop over rows ----


def slow_reduce(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    calls = []
    fallback = 0
    for row in rows:
        run_id = row.get("run_id") or None
        outcome = row.get("outcome") or ""
        step = row.get("step")
        if step is None:
            step = fallback
        fallback += 1
        if run_id is None and not outcome:
            continue
        decision = row.get("decision") or ""
        cost = row.get("cost_microusd") or 0
        calls.append(
            {
                "run_id": run_id,
                "step": step,
                "outcome": outcome,
                "cost": 0 if decision in BLOCKED_DECISIONS else cost,
                "refused": decision in REFUSED_DECISIONS,
                "agent_id": row.get("agent_id") or "",
                "key_id": row.get("key_id") or "",
                "ts": row.get("ts_millis"),
            }
        )
    runs: dict[str, dict[str, Any]] = {}
    for call in calls:
        if call["run_id"] is not None and call["run_id"] not in runs:
            runs[call["run_id"]] = {
                "outcome": "",
                "micro": 0,
                "run_id": call["run_id"],
                "agent_id": "",
                "key_id": "",
                "calls": 0,
                "refused_calls": 0,
                "first_ts_millis": None,
                "last_ts_millis": None,
            }
    ordered = sorted(
        (call for call in calls if call["run_id"] is not None),
        key=lambda call: (call["run_id"], call["step"]),
    )
    for call in ordered:
        run = runs[call["run_id"]]
        if call["outcome"]:
            run["outcome"] = call["outcome"]
        for field in ("agent_id", "key_id"):
            if call[field]:
                run[field] = call[field]
        run["micro"] += call["cost"]
        run["calls"] += 1
        run["refused_calls"] += int(call["refused"])
        if call["ts"] is not None:
            if run["first_ts_millis"] is None:
                run["first_ts_millis"] = call["ts"]
            run["last_ts_millis"] = call["ts"]
    records = []
    for run in runs.values():
        run["outcome"] = run["outcome"] or "(untagged)"
        records.append(run)
    for call in calls:
        if call["run_id"] is None:
            records.append(
                {
                    "outcome": call["outcome"],
                    "micro": call["cost"],
                    "run_id": "",
                    "agent_id": call["agent_id"],
                    "key_id": call["key_id"],
                    "calls": 1,
                    "refused_calls": int(call["refused"]),
                    "first_ts_millis": call["ts"],
                    "last_ts_millis": call["ts"],
                }
            )
    for record in records:
        record["cost_usd"] = record.pop("micro") / 1_000_000
    return records


def slow_totals(records: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    totals: dict[str, tuple[int, int]] = {}
    for record in records:
        count, micro = totals.get(record["outcome"], (0, 0))
        totals[record["outcome"]] = (count + 1, micro + round(record["cost_usd"] * 1_000_000))
    return totals


# -- generated traces -------------------------------------------------------------------

DECISIONS = [None, "", "allowed", "wardryx_deny", "wardryx_hold", *sorted(BLOCKED_DECISIONS)]

row_strategy = st.fixed_dictionaries(
    {
        "ts_millis": st.none() | st.integers(0, 50),
        "run_id": st.none() | st.sampled_from(["", "r1", "r2", "r3", "run-é", "r10"]),
        "decision": st.sampled_from(DECISIONS),
        "cost_microusd": st.none() | st.integers(0, 3_000_000),
        "step": st.none() | st.integers(0, 3),
        "agent_id": st.none() | st.sampled_from(["", "agent://a/x", "agent://b/y"]),
        "outcome": st.none() | st.sampled_from(["", "case_resolved", "escalated", "abandoned"]),
        "key_id": st.none() | st.sampled_from(["", "k-ops", "k-dev"]),
    }
)


@st.composite
def segmented(draw: st.DrawFn) -> list[list[list[dict[str, Any]]]]:
    """Files of row groups of rows; every cut is somewhere a run can be split."""
    rows = draw(st.lists(row_strategy, max_size=60))
    files: list[list[list[dict[str, Any]]]] = []
    while rows:
        take = draw(st.integers(1, len(rows)))
        file_rows, rows = rows[:take], rows[take:]
        groups = []
        while file_rows:
            size = draw(st.integers(1, len(file_rows)))
            groups.append(file_rows[:size])
            file_rows = file_rows[size:]
        files.append(groups)
    return files


def as_batch(
    rows: list[dict[str, Any]], drop: frozenset[str] = frozenset(), *, dictionary: bool = False
) -> pa.RecordBatch:
    """A batch as given (plain strings: rows folded one by one), or with run ids
    dictionary-encoded as the Parquet reader hands them (grouped per run first)."""
    schema = pa.schema([field for field in SCHEMA if field.name not in drop])
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    index = batch.schema.get_field_index("run_id")
    if not dictionary or index < 0:
        return batch
    encoded = batch.column(index).dictionary_encode()
    return batch.set_column(index, "run_id", encoded)


def expected_records(files: list[list[list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    return slow_reduce([row for groups in files for group in groups for row in group])


def check(records: list[dict[str, Any]], expected: list[dict[str, Any]], *, detail: bool) -> None:
    if not detail:
        expected = [{"outcome": r["outcome"], "cost_usd": r["cost_usd"]} for r in expected]
    assert records == expected


@settings(max_examples=100, deadline=None)
@given(segmented(), st.booleans(), st.booleans())
def test_batches_agree_with_the_row_loop(
    files: list[list[list[dict[str, Any]]]], detail: bool, dictionary: bool
) -> None:
    reducer = RunReducer(detail=detail)
    for groups in files:
        for group in groups:
            reducer.feed(as_batch(group, dictionary=dictionary))
    reduced = reducer.finish()
    expected = expected_records(files)
    check(reduced_records(reduced, detail=detail), expected, detail=detail)
    assert reduced.rows_read == sum(len(group) for groups in files for group in groups)

    counts, micro = reduced.outcome_totals()
    tags = [*reduced.outcomes, "(untagged)"]
    got = {tags[i]: (int(counts[i]), int(micro[i])) for i in range(len(tags)) if counts[i]}
    assert got == slow_totals(expected)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# Any column may be missing from an older segment (a segment with no column at all has no
# rows in Arrow, so at least one stays).
@given(segmented(), st.sets(st.sampled_from(sorted(SCHEMA.names)), max_size=len(SCHEMA) - 1))
def test_parquet_segments_agree_with_the_row_loop(
    files: list[list[list[dict[str, Any]]]], old_columns: set[str]
) -> None:
    """Written as real segment files; the first file is an "older" one lacking columns
    (run_id, cost and decision included: then its tagged calls are run-less records)."""
    with tempfile.TemporaryDirectory() as folder:
        for number, groups in enumerate(files):
            drop = frozenset(old_columns) if number == 0 else frozenset()
            rows = [row for group in groups for row in group]
            table = pa.Table.from_batches([as_batch(rows, drop)])
            pq.write_table(
                table,
                Path(folder) / f"calls-{number:08d}.parquet",
                row_group_size=max(1, max(len(group) for group in groups)),
            )
        seen = [
            {k: (None if k in old_columns and n == 0 else v) for k, v in row.items()}
            for n, groups in enumerate(files)
            for group in groups
            for row in group
        ]
        expected = slow_reduce(seen)
        check(read_parquet_runs(folder), expected, detail=True)
        check(read_parquet(folder), expected, detail=False)
        streamed = cost_report(reduce_traces(folder, keep_loose=False, ordered=False))
        assert streamed == cost_report(reduce_traces(folder))
        slow = slow_totals(expected)
        assert {tag: row.count for tag, row in streamed.by_outcome.items()} == {
            tag: count for tag, (count, _) in slow.items()
        }
        assert {tag: row.total_cost_usd for tag, row in streamed.by_outcome.items()} == {
            tag: micro / 1_000_000 for tag, (_, micro) in slow.items()
        }


@settings(max_examples=60, deadline=None)
@given(segmented(), st.lists(st.booleans(), min_size=1))
def test_many_flushes_agree_with_one(
    files: list[list[list[dict[str, Any]]]], dictionary: list[bool]
) -> None:
    """Folding partials after every batch (the worst case for bounded memory) or once at
    the end gives the same records, whichever batches come grouped or row by row."""
    reducer = RunReducer(detail=True, flush_rows=1)
    for number, group in enumerate(group for groups in files for group in groups):
        reducer.feed(as_batch(group, dictionary=dictionary[number % len(dictionary)]))
    records = reduced_records(reducer.finish(), detail=True)
    check(records, expected_records(files), detail=True)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.integers(-(2**62), 2**62) | st.integers(0, 3),
            st.sampled_from(["case_resolved", "escalated", ""]),
        ),
        max_size=30,
    ),
    st.integers(1, 8),
)
def test_huge_steps_take_the_sorting_path(
    rows: list[tuple[str, int, str]], batch_rows: int
) -> None:
    """Steps too large to fold with the row index into one int64 are sorted instead."""
    dicts = [
        {"run_id": run, "step": step, "outcome": tag, "cost_microusd": 1} for run, step, tag in rows
    ]
    schema = pa.schema(
        [
            ("run_id", pa.string()),
            ("step", pa.int64()),
            ("outcome", pa.string()),
            ("cost_microusd", pa.int64()),
        ]
    )
    reducer = RunReducer()
    for start in range(0, len(dicts), batch_rows):
        reducer.feed(pa.RecordBatch.from_pylist(dicts[start : start + batch_rows], schema=schema))
    check(reduced_records(reducer.finish(), detail=False), slow_reduce(dicts), detail=False)


def test_reference_rules_by_example(tmp_path: Path) -> None:
    """Re-tagged run: last tag by step wins (not last in the file); blocked calls cost 0;
    an untagged run is kept; a run-less tagged call is its own record after the runs."""
    rows = [
        {"run_id": "r1", "step": 2, "outcome": "case_resolved", "cost_microusd": 150_000},
        {"run_id": "r2", "step": 0, "outcome": "", "cost_microusd": 10_000},
        {"run_id": "", "step": 0, "outcome": "abandoned", "cost_microusd": 5},
        {"run_id": "r1", "step": 1, "outcome": "escalated", "cost_microusd": 50_000},
        {"run_id": "r1", "step": 3, "decision": "identity_mismatch", "cost_microusd": 999_999},
        {"run_id": None, "step": 9, "outcome": "", "cost_microusd": 77},
    ]
    schema = pa.schema([field for field in SCHEMA if field.name != "ts_millis"])
    first, second = (pa.Table.from_pylist(part, schema=schema) for part in (rows[:3], rows[3:]))
    pq.write_table(first, tmp_path / "calls-00000001.parquet")
    pq.write_table(second, tmp_path / "calls-00000002.parquet")
    (tmp_path / "notes.txt").write_text("ignored")
    assert read_parquet(tmp_path) == [
        {"outcome": "case_resolved", "cost_usd": 0.2},
        {"outcome": "(untagged)", "cost_usd": 0.01},
        {"outcome": "abandoned", "cost_usd": 0.000005},
    ]
    report = cost_per_outcome(read_parquet(tmp_path))
    assert report.overall.count == 3
    assert report.resolved is not None and report.resolved.total_cost_usd == 0.2


def test_empty_directory_reduces_to_nothing(tmp_path: Path) -> None:
    assert read_parquet(tmp_path) == []
    report = cost_report(reduce_traces(tmp_path))
    assert report.by_outcome == {} and report.overall.count == 0


def test_non_integer_cost_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "calls-1.parquet"
    pq.write_table(pa.table({"run_id": ["r"], "cost_microusd": [1.5]}), path)
    with pytest.raises(TraceError, match=r"calls-1\.parquet \(row group 0\).*cost_microusd"):
        read_parquet(path)


def test_string_step_column_names_file_and_column(tmp_path: Path) -> None:
    path = tmp_path / "calls-1.parquet"
    pq.write_table(pa.table({"run_id": ["r"], "step": ["one"]}), path)
    with pytest.raises(TraceError, match=r"calls-1\.parquet.*'step'.*expected an integer"):
        read_parquet(path)


def test_damaged_segment_is_named(tmp_path: Path) -> None:
    good = tmp_path / "calls-1.parquet"
    pq.write_table(pa.table({"run_id": ["r"], "outcome": ["escalated"]}), good)
    (tmp_path / "calls-2.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(TraceError, match=r"calls-2\.parquet: not a readable Parquet file"):
        read_parquet(tmp_path)


def test_prefetch_passes_items_errors_and_stops_early() -> None:
    def source(fail_at: int | None) -> Iterator[int]:
        for i in range(10):
            if i == fail_at:
                raise TraceError(f"broken at {i}")
            yield i

    assert list(read_ahead(source(None))) == list(range(10))
    seen = []
    with pytest.raises(TraceError, match="broken at 3"):
        for item in read_ahead(source(3)):
            seen.append(item)
    assert seen == [0, 1, 2]
    early = read_ahead(source(None), depth=1)
    assert next(early) == 0
    early.close()  # joins the worker; a hang here would time the test out
