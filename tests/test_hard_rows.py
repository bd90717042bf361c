"""Rows read back are validated: a stored row out of range (a score of 7.5, text in a REAL
column, a NaN that SQLite kept as NULL, a negative token count) is named by run, case and
column with the command that repairs it; `verdryx runs` still lists the other runs, `show`,
`drift` and `report` say it in one line, and `verdryx repair` makes the store read again
(docs/store.md, "Rows that cannot be read"; docs/troubleshooting.md, "Reliability: stored
data").

The rows are broken the way another program would break them: with real SQL against a real
SQLite file or a real PostgreSQL schema, never by patching verdryx.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_support import BACKENDS, store_target

from verdryx_core.cli import main
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store, StoreRowError, StoreTarget, StoreUrl

RUN_IDS = ("oldrun01", "badrun02", "newrun03")


def _run(run_id: str, day: int) -> EvalRun:
    return EvalRun(
        id=run_id,
        model="stub",
        started_at=datetime(2025, 4, day, tzinfo=UTC),
        eval_set_ids=("set",),
        scores=tuple(
            Score(
                case_id=f"q{i}",
                eval_set_id="set",
                value=0.25 * i,
                grader="exact",
                tokens=10,
                cost_usd=0.01,
                passed=i > 1,
            )
            for i in range(4)
        ),
    )


def _fill(target: StoreTarget) -> None:
    with Store.open(target) as store:
        for day, run_id in enumerate(RUN_IDS, start=1):
            store.save_run(_run(run_id, day))
        store.save_baseline(Baseline.from_run(_run("oldrun01", 1), id="b-1", label="v1"))


def _sql(target: StoreTarget, statement: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement as another program would, outside verdryx."""
    if isinstance(target, StoreUrl):
        import psycopg

        with psycopg.connect(target.url, autocommit=True) as connection:
            connection.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
        return
    connection = sqlite3.connect(target)
    with connection:
        connection.execute(statement, params)
    connection.close()


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
    with store_target(request.param, tmp_path) as where:
        _fill(where)
        yield where


def _db(target: StoreTarget) -> str:
    return target.url if isinstance(target, StoreUrl) else str(target)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


#: What another program may leave in scores.value, per backend (PostgreSQL's DOUBLE PRECISION
#: keeps only numbers, NaN and the infinities among them; SQLite keeps anything).
SQLITE_VALUES = (
    st.floats(1.0001, 1e300)
    | st.floats(-1e300, -1e-9)
    | st.sampled_from([math.nan, "n/a", "0.5x", b"\x00\x01", 3])  # NaN: SQLite stores NULL
)
POSTGRES_VALUES = st.floats(1.0001, 1e300) | st.sampled_from([math.nan, math.inf, -math.inf, -0.5])


def _break_and_check(
    target: StoreTarget, capsys: pytest.CaptureFixture[str], value: object, tmp_path: Path
) -> None:
    db = _db(target)
    _sql(target, "UPDATE scores SET value = ? WHERE run_id = ? AND seq = 2", (value, "badrun02"))
    # `runs` lists the other runs and names the broken one (judging a run reads its scores).
    code, out, err = _cli(capsys, "runs", "--db", db)
    assert code == 2
    assert "oldrun01" in out and "newrun03" in out
    line = _one_error(err)
    assert "run badrun02" in line and "case set::q2" in line and "scores.value" in line
    assert "verdryx repair badrun02" in line
    code, out, _ = _cli(capsys, "runs", "--db", db, "--json")
    listed = json.loads(out)
    assert [row["run_id"] for row in listed["runs"]] == ["newrun03", "badrun02", "oldrun01"]
    assert listed["unreadable"][0]["run_id"] == "badrun02"
    # show, drift and report: one line naming run, case, column and the repair.
    for argv in (
        ["show", "badrun02"],
        ["drift", "--baseline", "v1", "--run", "badrun02"],
        ["report", "--run", "badrun02", "-o", str(tmp_path / "r.html")],
    ):
        code, _, err = _cli(capsys, *argv, "--db", db)
        line = _one_error(err)
        assert code == 2, (argv, err)
        assert "run badrun02" in line and "case set::q2" in line, line
        assert "column scores.value" in line and "`verdryx repair badrun02 --db " in line
    # The repair makes every command read again; the unknown score is unmeasured, not made up.
    code, out, _ = _cli(capsys, "repair", "badrun02", "--db", db)
    assert code == 0 and "case set::q2: scores.value" in out
    for argv in (
        ["runs"],
        ["show", "badrun02"],
        # Its repaired case is unmeasured: 3 of 4 compared, under the default floor of 0.8.
        ["drift", "--baseline", "v1", "--run", "badrun02", "--min-coverage", "0.5"],
        ["report", "--run", "badrun02", "-o", str(tmp_path / "r.html")],
    ):
        code, _, err = _cli(capsys, *argv, "--db", db)
        assert code in (0, 1) and not err.strip().startswith("error:"), (argv, err)
    with Store.open(target) as store:
        run = store.load_run("badrun02")
        (summary,) = [s for s in store.list_runs() if s.id == "badrun02"]
    assert run is not None
    assert [score.value for score in run.scores] == [0.0, 0.25, None, 0.75]
    assert run.scores[2].unmeasured is not None and run.scores[2].passed is None
    assert (summary.cases, summary.unmeasured) == (3, 1)
    assert summary.mean_score == pytest.approx((0.0 + 0.25 + 0.75) / 3)
    code, out, _ = _cli(capsys, "repair", "badrun02", "--db", db)
    assert "nothing to repair" in out  # a second repair changes nothing


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=SQLITE_VALUES)
def test_a_bad_score_value_in_sqlite_is_named_and_repaired(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], value: object
) -> None:
    directory = tmp_path_factory.mktemp("rows")
    target = directory / "v.db"
    _fill(target)
    _break_and_check(target, capsys, value, directory)


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=POSTGRES_VALUES)
def test_a_bad_score_value_in_postgresql_is_named_and_repaired(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], value: object
) -> None:
    directory = tmp_path_factory.mktemp("rows")
    with store_target("postgres", directory) as target:
        _fill(target)
        _break_and_check(target, capsys, value, directory)


@pytest.mark.parametrize(
    ("column", "value", "named"),
    [
        ("tokens", -40, "scores.tokens"),
        ("cost_usd", -0.75, "scores.cost_usd"),
        ("judge_cost_usd", 1e20, "scores.judge_cost_usd"),
        ("passed", 7, "scores.passed"),
        ("samples", "[0.5, 2]", "scores.samples"),
        ("unmeasured", "also measured", "scores.unmeasured"),
    ],
)
def test_every_score_column_is_checked(
    target: StoreTarget, column: str, value: object, named: str
) -> None:
    _sql(target, f"UPDATE scores SET {column} = ? WHERE run_id = 'newrun03' AND seq = 1", (value,))
    with Store.open(target, read_only=True) as store:
        with pytest.raises(StoreRowError) as caught:
            store.load_run("newrun03")
        assert caught.value.column == named and caught.value.case == "set::q1"
        with pytest.raises(StoreRowError):
            store.case_scores(["newrun03"])
        assert store.load_run("oldrun01") is not None  # the others still read
    with Store.open(target) as store:
        changed = store.repair_run("newrun03")
        assert changed and any(named in line for line in changed)
        assert store.load_run("newrun03") is not None
        assert store.repair_run("newrun03") == []


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("mean_score", 3.0),
        ("total_tokens", -1),
        ("model_cost_usd", -2.0),
        ("complete", 9),
        ("is_partial", 4),
        ("finished_at", "yesterday"),
        ("eval_set_ids", "not json"),
        ("set_targets", '{"set": 5}'),
    ],
)
def test_a_bad_run_row_is_named_and_the_others_are_listed(
    target: StoreTarget, capsys: pytest.CaptureFixture[str], column: str, value: object
) -> None:
    _sql(target, f"UPDATE runs SET {column} = ? WHERE id = 'oldrun01'", (value,))
    code, out, err = _cli(capsys, "runs", "--db", _db(target))
    assert code == 2 and "newrun03" in out and "badrun02" in out
    line = _one_error(err)
    assert f"run oldrun01: column runs.{column} " in line and "verdryx repair oldrun01" in line
    with Store.open(target) as store:
        store.repair_run("oldrun01")
        (summary,) = [s for s in store.list_runs() if s.id == "oldrun01"]
    # What could not be read never overstates the run: not complete, or partial.
    if column == "complete":
        assert not summary.complete
    if column == "is_partial":
        assert summary.partial
    assert summary.eval_set_ids == ("set",) and summary.cases == 4
    assert _cli(capsys, "runs", "--db", _db(target))[0] == 0


def test_a_run_whose_start_cannot_be_read_can_only_be_removed(
    target: StoreTarget, capsys: pytest.CaptureFixture[str]
) -> None:
    _sql(target, "UPDATE runs SET started_at = 'soon' WHERE id = 'newrun03'")
    code, _, err = _cli(capsys, "show", "newrun03", "--db", _db(target))
    assert code == 2 and "verdryx repair newrun03 --delete" in _one_error(err)
    code, _, err = _cli(capsys, "repair", "newrun03", "--db", _db(target))
    assert code == 2 and "--delete" in err
    code, out, _ = _cli(capsys, "repair", "newrun", "--delete", "--db", _db(target))
    assert code == 0 and "removed run newrun03" in out
    with Store.open(target) as store:
        assert sorted(store.run_ids()) == ["badrun02", "oldrun01"]
        assert store.case_scores(["newrun03"]) == []


def test_a_bad_baseline_row_is_named_and_can_be_removed(
    target: StoreTarget, capsys: pytest.CaptureFixture[str]
) -> None:
    _sql(target, "UPDATE baseline_cases SET value = ? WHERE case_id = 'q3'", (12.5,))
    code, _, err = _cli(capsys, "drift", "--baseline", "v1", "--db", _db(target))
    line = _one_error(err)
    assert code == 2 and "baseline v1" in line and "baseline_cases.value" in line
    assert "verdryx repair --baseline b-1" in line
    # `runs` judges against nothing then, and still lists every run.
    code, out, err = _cli(capsys, "runs", "--db", _db(target))
    assert code == 2 and all(run_id in out for run_id in RUN_IDS)
    assert _cli(capsys, "repair", "--baseline", "b-1", "--db", _db(target))[0] == 0
    assert _cli(capsys, "runs", "--db", _db(target))[0] == 0


def test_a_broken_cache_row_is_a_miss_not_an_error(target: StoreTarget) -> None:
    from verdryx_core.store import CacheEntry

    with Store.open(target) as store:
        store.cache_put_many(
            [
                CacheEntry(key="k-good", model="m", response={"text": "a"}, cost_usd=0.5),
                CacheEntry(key="k-bad", model="m", response={"text": "b"}, cost_usd=0.5),
            ]
        )
    _sql(
        target,
        "UPDATE model_cache SET response = ?, cost_usd = ? WHERE key = 'k-bad'",
        ("{cut", -3.0),
    )
    with Store.open(target) as store:
        assert set(store.cache_get_many(["k-good", "k-bad"])) == {"k-good"}
        assert [entry.key for entry in store.cache_entries()] == ["k-good"]
