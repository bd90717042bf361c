"""Record and trace loaders: every malformed line or row is an error naming file and place;
pyarrow is optional and its absence says how to install it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.addons.traces import (
    TraceError,
    cost_per_outcome,
    cost_report_for,
    load_records,
    load_run_records,
    read_csv,
    read_ndjson,
)
from verdryx_core.errors import VerdryxError
from verdryx_core.limits import MAX_COST_USD


def test_ndjson_skips_blank_lines_and_passes_records_through(tmp_path: Path) -> None:
    path = tmp_path / "runs.ndjson"
    path.write_text(
        '{"outcome": "case_resolved", "cost_usd": 0.1, "extra": 1}\n'
        "   \n"
        '{"outcome": "abandoned", "cost_usd": 0.25}\n'
    )
    assert load_records(path) == [
        {"outcome": "case_resolved", "cost_usd": 0.1, "extra": 1},
        {"outcome": "abandoned", "cost_usd": 0.25},
    ]
    assert read_ndjson(path) == load_records(path)


@pytest.mark.parametrize(
    ("third_line", "message"),
    [
        ('{"outcome": "x", "cost_usd": ', r"line 3: not valid JSON"),
        ('["outcome", 1]', r"line 3: a JSON list where a JSON object was expected"),
        ('{"cost_usd": 0.1}', r"line 3: outcome is missing"),
        ('{"outcome": "x"}', r"line 3: cost_usd is missing"),
        ('{"outcome": "x", "cost_usd": "ten"}', r"line 3: cost_usd 'ten' is not a number"),
        ('{"outcome": "x", "cost_usd": true}', r"line 3: cost_usd True is not a number"),
        ('{"outcome": "x", "cost_usd": NaN}', r"line 3: cost_usd nan is not finite"),
    ],
)
def test_a_bad_ndjson_line_is_named(tmp_path: Path, third_line: str, message: str) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text('{"outcome": "a", "cost_usd": 1}\n\n' + third_line + "\n")
    with pytest.raises(TraceError, match=rf"runs\.jsonl: {message}"):
        cost_report_for(path)
    with pytest.raises(TraceError, match=rf"runs\.jsonl: {message}"):
        load_records(path)


def test_csv_values_stay_strings_and_costs_are_coerced(tmp_path: Path) -> None:
    path = tmp_path / "runs.CSV"
    path.write_text("outcome,cost_usd\ncase_resolved,0.10\nescalated,0.30\ncase_resolved,0.20\n")
    assert read_csv(path)[0] == {"outcome": "case_resolved", "cost_usd": "0.10"}
    report = cost_report_for(path)
    assert report.resolved is not None
    assert report.resolved.count == 2
    assert report.resolved.total_cost_usd == pytest.approx(0.3)
    assert report.overall.count == 3


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("outcome,cost_usd\na,0.1\nb,0.2,9\n", r"row 3 \(line 3\): 3 cells where the header has 2"),
        ("outcome,cost_usd\na,0.1\nb,free\n", r"row 3 \(line 3\): cost_usd 'free' is not a number"),
        ("outcome,cost_usd\na,0.1\nb,\n", r"row 3 \(line 3\): cost_usd is missing"),
        ("outcome\na\n", r"row 2 \(line 2\): cost_usd is missing"),
    ],
)
def test_a_bad_csv_row_is_named(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(body)
    with pytest.raises(TraceError, match=rf"runs\.csv: {message}"):
        cost_report_for(path)


def test_unknown_suffix_says_what_is_readable(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"don't know how to read .*runs\.txt.*\['\.csv'"):
        load_records(tmp_path / "runs.txt")


def test_a_missing_trace_directory_is_said_to_be_missing(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"'.*no-traces' does not exist; expected a directory"):
        cost_report_for(tmp_path / "no-traces")


@pytest.mark.slow
def test_records_stream_through_the_cost_report(tmp_path: Path) -> None:
    """Memory holds a few floats per tag, not the records: 60,000 lines peak far below what
    keeping them (a dict each, several MB) would take."""
    path = tmp_path / "runs.ndjson"
    tags = ["case_resolved", "escalated", "abandoned"]
    with path.open("w") as handle:
        for i in range(60_000):
            handle.write(json.dumps({"outcome": tags[i % 3], "cost_usd": 0.001 * (i % 7)}) + "\n")
    tracemalloc.start()
    try:
        report = cost_report_for(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.overall.count == 60_000
    assert report.resolved is not None and report.resolved.count == 20_000
    assert peak < 1_000_000, peak


def test_slo_records_from_csv_are_typed_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(
        "outcome,cost_usd,refused_calls,agent_id,last_ts_millis\n"
        "case_resolved,0.5,0,agent://a/x,1700000000000\n"
        ",,,,\n"
    )
    first, second = load_run_records(path)
    assert first["cost_usd"] == 0.5 and first["refused_calls"] == 0
    assert first["last_ts_millis"] == 1_700_000_000_000
    assert second["cost_usd"] is None and second["refused_calls"] is None
    path.write_text("refused_calls\n1.5\n")
    with pytest.raises(TraceError, match=r"row 2.*refused_calls '1.5' is not a whole number"):
        load_run_records(path)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["case_resolved", "escalated", "abandoned", ""]),
            # Costs as records may hold them: 0 up to a call's maximum (a negative or a larger
            # one is refused, tests/test_hard_totals.py), small and large mixed.
            st.floats(0, 10, allow_nan=False)
            | st.floats(0, MAX_COST_USD, allow_nan=False, allow_infinity=False),
        ),
        max_size=40,
    )
)
def test_record_aggregation_matches_exact_sums(rows: list[tuple[str, float]]) -> None:
    """Totals are correctly rounded sums (exactly `math.fsum` of the costs, though records
    stream through), so they do not depend on record order."""
    records = [{"outcome": tag, "cost_usd": cost} for tag, cost in rows]
    report = cost_per_outcome(iter(records))
    backwards = cost_per_outcome(list(reversed(records)))
    assert report == backwards
    for tag, row in report.by_outcome.items():
        costs = [cost for t, cost in rows if t == tag]
        assert row.count == len(costs)
        assert row.total_cost_usd == math.fsum(costs)
        assert row.mean_cost_usd == row.total_cost_usd / row.count
    assert report.overall.count == len(rows)
    assert report.overall.total_cost_usd == math.fsum(cost for _, cost in rows)
    if not rows:
        assert report.by_outcome == {} and report.overall.mean_cost_usd == 0.0


def test_trace_file_and_ndjson_give_the_same_report(tmp_path: Path) -> None:
    rows = [("r1", 0, "case_resolved", 150_000), ("r2", 0, "escalated", 250_000)]
    table = pa.table(
        {
            "run_id": [r[0] for r in rows],
            "step": pa.array([r[1] for r in rows], pa.uint32()),
            "outcome": [r[2] for r in rows],
            "cost_microusd": [r[3] for r in rows],
        }
    )
    pq.write_table(table, tmp_path / "trace.parquet")
    (tmp_path / "runs.ndjson").write_text(
        "\n".join(json.dumps(record) for record in load_records(tmp_path / "trace.parquet"))
    )
    assert cost_report_for(tmp_path / "trace.parquet") == cost_report_for(tmp_path / "runs.ndjson")


def test_without_pyarrow_records_work_and_traces_say_how_to_install(tmp_path: Path) -> None:
    (tmp_path / "runs.ndjson").write_text('{"outcome": "case_resolved", "cost_usd": 0.5}\n')
    (tmp_path / "trace").mkdir()
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["pyarrow"] = None
        from verdryx_core.addons.traces import cost_report_for, TracesExtraMissing
        from verdryx_core.errors import VerdryxError
        print(cost_report_for({str(tmp_path / "runs.ndjson")!r}).overall.count)
        try:
            cost_report_for({str(tmp_path / "trace")!r})
        except TracesExtraMissing as exc:
            assert isinstance(exc, VerdryxError)
            print(exc)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    count, message = result.stdout.strip().splitlines()
    assert count == "1"
    assert "pip install 'verdryx[traces]'" in message


def test_trace_errors_are_verdryx_errors() -> None:
    assert issubclass(TraceError, VerdryxError)
