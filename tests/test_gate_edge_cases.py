"""Edge cases of the gate and the drift CLI found in review, on a real SQLite store."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from verdryx_core.cli import main
from verdryx_core.runs import Baseline, EvalRun, Score

START = datetime(2026, 1, 1, tzinfo=UTC)


def _run(run_id: str, eval_set: str, values: list[float], minutes: int) -> EvalRun:
    return EvalRun(
        id=run_id,
        model="stub",
        started_at=START + timedelta(minutes=minutes),
        eval_set_ids=(eval_set,),
        scores=tuple(
            Score(case_id=f"c{i}", eval_set_id=eval_set, value=value, grader="exact")
            for i, value in enumerate(values)
        ),
    )


def _drift(capsys: pytest.CaptureFixture[str], db: Path, *extra: str) -> tuple[int, dict]:
    code = main(["drift", "--baseline", "v1", "--db", str(db), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_drift_judges_the_newest_run_of_the_baseline_eval_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two suites share one store. The newest run is of the other suite: judging it matched
    # nothing and exited 0, so a regressed "agent" run passed the CI gate unseen.
    from verdryx_core.store import Store

    db = tmp_path / "store.db"
    base_run = _run("base", "agent", [1.0] * 20, 0)
    dropped = _run("dropped", "agent", [0.0] * 10 + [1.0] * 10, 1)
    other = _run("other", "billing", [1.0] * 5, 2)
    with Store.open(db) as store:
        for run in (base_run, dropped, other):
            store.save_run(run)
        store.save_baseline(Baseline.from_run(base_run, id="b1", label="v1"))
    code, document = _drift(capsys, db)
    assert document["run_id"] == "dropped"
    assert document["matched"] == 20
    assert document["verdict"] == "regressed"
    assert code == 1


def test_drift_says_so_when_no_run_shares_an_eval_set_with_the_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from verdryx_core.store import Store

    db = tmp_path / "store.db"
    base_run = _run("base", "agent", [1.0] * 3, 0)
    with Store.open(db) as store:
        store.save_run(_run("other", "billing", [1.0] * 3, 1))
        store.save_baseline(Baseline.from_run(base_run, id="b1", label="v1"))
    code = main(["drift", "--baseline", "v1", "--db", str(db)])
    assert code == 2
    assert "agent" in capsys.readouterr().err
