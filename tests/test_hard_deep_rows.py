"""Stored JSON columns nested tens of thousands deep (`scores.checks`, `scores.samples`,
`runs.eval_set_ids`, `runs.set_targets`, a cached answer), as another program may leave them:
read back with the bound every file has, so `runs`, `show`, `report` and `repair` name the row
in one line like any other row that cannot be read, never a RecursionError (docs/store.md,
"Rows that cannot be read"; docs/troubleshooting.md, "Reliability")."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from verdryx_core.cli import main
from verdryx_core.runs import Baseline, CheckResult, EvalRun, Score
from verdryx_core.store import Store
from verdryx_core.store.base import CacheEntry

DEEP = "[" * 50_000 + "]" * 50_000
DEEP_OBJECT = '{"a":' * 30_000 + "1" + "}" * 30_000


def _run(run_id: str, day: int) -> EvalRun:
    checks = (
        CheckResult(grader="exact", weight=1.0, value=1.0),
        CheckResult(grader="contains", weight=1.0, value=0.0),
    )
    return EvalRun(
        id=run_id,
        model="stub",
        started_at=datetime(2025, 4, day, tzinfo=UTC),
        eval_set_ids=("set",),
        scores=tuple(
            Score(
                case_id=f"q{i}",
                eval_set_id="set",
                value=0.5,
                grader="checks",
                passed=True,
                checks=checks,
            )
            for i in range(3)
        ),
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "v.db"
    with Store.open(path) as store:
        for day, run_id in enumerate(("oldrun01", "badrun02", "newrun03"), start=1):
            store.save_run(_run(run_id, day))
        store.save_baseline(Baseline.from_run(_run("oldrun01", 1), id="b-1", label="v1"))
    return path


def _sql(db: Path, statement: str, params: tuple[object, ...]) -> None:
    connection = sqlite3.connect(db)
    with connection:
        connection.execute(statement, params)
    connection.close()


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.parametrize("deep", [DEEP, DEEP_OBJECT], ids=["arrays", "objects"])
@pytest.mark.parametrize("column", ["checks", "samples"])
def test_a_deep_score_column_is_one_line_in_every_command_and_repaired(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, deep: str
) -> None:
    _sql(db, f"UPDATE scores SET {column} = ? WHERE run_id = 'badrun02' AND seq = 1", (deep,))
    words = f"case set::q1: column scores.{column} holds JSON nested deeper than 100 levels"
    code, out, err = _cli(capsys, "runs", "--db", str(db))
    assert code == 2 and "oldrun01" in out and "newrun03" in out
    (line,) = err.strip().splitlines()
    assert "run badrun02" in line and words in line and "verdryx repair badrun02" in line
    for argv in (["show", "badrun02"], ["report", "--run", "badrun02", "-o", str(tmp_path / "r")]):
        code, _, err = _cli(capsys, *argv, "--db", str(db))
        (line,) = err.strip().splitlines()
        assert code == 2 and words in line, argv
    code, out, _ = _cli(capsys, "repair", "badrun02", "--db", str(db))
    assert code == 0 and f"case set::q1: scores.{column} -> NULL" in out
    assert _cli(capsys, "show", "badrun02", "--db", str(db))[0] in (0, 1)
    assert _cli(capsys, "runs", "--db", str(db))[0] == 0


@pytest.mark.parametrize("column", ["eval_set_ids", "set_targets"])
def test_a_deep_json_column_of_a_run_is_named_and_repaired(
    db: Path, capsys: pytest.CaptureFixture[str], column: str
) -> None:
    _sql(db, f"UPDATE runs SET {column} = ? WHERE id = 'newrun03'", (DEEP,))
    code, out, err = _cli(capsys, "runs", "--db", str(db))
    assert code == 2 and "oldrun01" in out and "badrun02" in out
    (line,) = err.strip().splitlines()
    assert f"run newrun03: column runs.{column} holds JSON nested deeper than 100" in line
    code, out, _ = _cli(capsys, "repair", "newrun03", "--db", str(db))
    assert code == 0 and f"runs.{column}" in out
    assert _cli(capsys, "runs", "--db", str(db))[0] == 0


def test_a_deep_cached_answer_is_a_miss(db: Path) -> None:
    with Store.open(db) as store:
        store.cache_put_many(
            [CacheEntry(key="k1", model="stub", response={"text": "ok"}, cost_usd=0.0)]
        )
        assert store.cache_get_many(["k1"]) == {"k1": ({"text": "ok"}, 0.0)}
    _sql(db, "UPDATE model_cache SET response = ? WHERE key = 'k1'", (DEEP,))
    with Store.open(db) as store:
        assert store.cache_get_many(["k1"]) == {}  # called again, and the answer replaced
