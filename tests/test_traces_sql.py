"""The SQL reduction docs/cost-per-outcome.md gives for warehouses and Spark is run, as its
exact text, on DuckDB over the same Parquet segments verdryx reads, and must agree with
verdryx's answer to the microdollar."""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.addons.traces import BLOCKED_DECISIONS, cost_report_for

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "cost-per-outcome.md"

SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("step", pa.uint32()),
        ("outcome", pa.string()),
        ("cost_microusd", pa.int64()),
        ("decision", pa.string()),
    ]
)


def documented_query() -> str:
    """The one ```sql block of the "Beyond one machine" section, as printed."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Beyond one machine", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sql\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, "the section should hold exactly one SQL block"
    return blocks[0]


def sql_answer(folder: Path) -> dict[str, tuple[int, float]]:
    connection = duckdb.connect()
    try:
        pattern = str(folder / "*.parquet").replace("'", "''")
        connection.execute(
            "CREATE VIEW calls AS SELECT *, row_number() OVER (ORDER BY filename, "
            f"file_row_number) - 1 AS row_index FROM read_parquet('{pattern}', "
            "filename = true, file_row_number = true, union_by_name = true)"
        )
        rows = connection.execute(documented_query()).fetchall()
    finally:
        connection.close()
    return {tag: (count, int(micro) / 1_000_000) for tag, count, micro in rows}


def verdryx_answer(folder: Path) -> dict[str, tuple[int, float]]:
    report = cost_report_for(folder)
    return {tag: (row.count, row.total_cost_usd) for tag, row in report.by_outcome.items()}


rows = st.lists(
    st.fixed_dictionaries(
        {
            "run_id": st.none() | st.sampled_from(["", "r1", "r2", "r3", "run-é", "r10"]),
            "step": st.none() | st.integers(0, 3),
            "outcome": st.none() | st.sampled_from(["", "case_resolved", "escalated"]),
            "cost_microusd": st.none() | st.integers(0, 3_000_000),
            "decision": st.none()
            | st.sampled_from(["", "allowed", "wardryx_deny", *sorted(BLOCKED_DECISIONS)]),
        }
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(rows, st.integers(1, 3), st.integers(1, 8))
def test_documented_sql_agrees_with_verdryx(
    calls: list[dict[str, Any]], files: int, group_rows: int
) -> None:
    """Null steps (read order), ties in step, re-tags, blocked calls, run-less calls."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        per = -(-len(calls) // files)
        for number, start in enumerate(range(0, len(calls), per)):
            table = pa.Table.from_pylist(calls[start : start + per], schema=SCHEMA)
            pq.write_table(table, folder / f"calls-{number:04d}.parquet", row_group_size=group_rows)
        assert sql_answer(folder) == verdryx_answer(folder)


@pytest.mark.parametrize("layout", ["ordered", "scattered"])
def test_documented_sql_agrees_on_the_benchmark_traces(tmp_path: Path, layout: str) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import traces as benchmark
    finally:
        sys.path.pop(0)
    benchmark.generate(tmp_path, rows=60_000, runs=3_000, segments=3, layout=layout)
    answer = verdryx_answer(tmp_path)
    assert answer == sql_answer(tmp_path)
    assert {"case_resolved", "escalated", "abandoned", "(untagged)"} <= set(answer)
