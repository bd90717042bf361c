"""`verdryx cost-per-correct`: the table, the headline, the JSON document and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from verdryx_core.cli import main


def write_trace(folder: Path) -> Path:
    folder.mkdir()
    schema = pa.schema(
        [
            ("run_id", pa.string()),
            ("step", pa.uint32()),
            ("decision", pa.string()),
            ("outcome", pa.string()),
            ("cost_microusd", pa.int64()),
        ]
    )
    first = [
        ("r1", 0, "allowed", "", 100_000),
        ("r2", 0, "allowed", "abandoned", 300_000),
        ("r1", 1, "allowed", "escalated", 100_000),
    ]
    second = [
        ("r1", 2, "allowed", "case_resolved", 200_000),
        ("r3", 0, "budget_exceeded", "", 5_000_000),
        ("r3", 1, "allowed", "", 50_000),
        ("r4", 0, "allowed", "case_resolved", 250_000),
    ]
    for name, rows in (("calls-00000001.parquet", first), ("calls-00000002.parquet", second)):
        table = pa.Table.from_pylist(
            [dict(zip(schema.names, r, strict=True)) for r in rows], schema
        )
        pq.write_table(table, folder / name)
    return folder


def test_text_table_and_headline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path / "trace")
    assert main(["cost-per-correct", "--traces", str(trace)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == f"Cost per outcome -- {trace}"
    assert lines[3].split() == ["OUTCOME", "COUNT", "TOTAL", "MEAN"]
    assert lines[4] == "  abandoned                 1 $      0.30 $  0.3000"
    assert lines[5] == "  case_resolved             2 $      0.65 $  0.3250"
    assert lines[6] == "  (untagged)                1 $      0.05 $  0.0500"
    assert lines[7] == "  " + "-" * 52
    assert lines[8] == "  overall                   4 $      1.00 $  0.2500"
    # All spend over resolved runs: $1.00 / 2; the blocked $5 estimate is not spend.
    assert "$0.5000 per resolved case" in lines[10]
    assert lines[11] == "  $0.30 (30.0% of spend) went to 1 abandoned run"


def test_json_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path / "trace")
    assert main(["cost-per-correct", "--traces", str(trace), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert list(document["outcomes"]) == ["abandoned", "case_resolved", "(untagged)"]
    assert document["outcomes"]["case_resolved"] == {
        "count": 2,
        "total_usd": 0.65,
        "mean_usd": 0.325,
    }
    assert document["overall"] == {"count": 4, "total_usd": 1.0, "mean_usd": 0.25}
    assert document["headline"]["usd_per_resolved"] == 0.5
    assert document["headline"]["abandoned_usd"] == 0.3
    assert document["headline"]["abandoned_share"] == pytest.approx(0.3)


def test_nothing_resolved_is_said_not_divided(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.ndjson"
    path.write_text('{"outcome": "escalated", "cost_usd": 1}\n')
    assert main(["cost-per-correct", "--input", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no run was tagged 'case_resolved'" in out
    assert main(["cost-per-correct", "--input", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["headline"]["usd_per_resolved"] is None


def test_a_malformed_line_is_an_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.ndjson"
    path.write_text('{"outcome": "a", "cost_usd": 1}\n{oops\n')
    assert main(["cost-per-correct", "--input", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "runs.ndjson: line 2: not valid JSON" in err


def test_exactly_one_source(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["cost-per-correct", "--input", "a.csv", "--traces", str(tmp_path)])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["cost-per-correct"])
    assert exc.value.code == 2
