"""`verdryx drift` reads the run and the baseline as the objects every face gates (one path:
`verdryx_core.conclusion`); a stored score that cannot be read back is one line naming the
run, the case and the column (docs/store.md, "Rows that cannot be read")."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from verdryx_core.cli import main
from verdryx_core.runs import Baseline, BaselineCase, EvalRun, Score
from verdryx_core.store import Store

START = datetime(2026, 3, 1, tzinfo=UTC)


def _run(run_id: str, cases: list[tuple[Any, ...]], at: datetime, **fields: Any) -> EvalRun:
    return EvalRun(
        id=run_id,
        model=fields.pop("model", "m"),
        started_at=at,
        finished_at=at,
        eval_set_ids=tuple(sorted({case[0] for case in cases} | {"s"})),
        complete=True,
        scores=tuple(
            Score(
                eval_set_id=set_id,
                case_id=case_id,
                value=value,
                unmeasured="timeout" if value is None else None,
                grader="exact",
                fingerprint=fingerprint,
                samples=samples if value is not None else (),
                cluster=cluster,
            )
            for set_id, case_id, value, fingerprint, samples, cluster in cases
        ),
        **fields,
    )


def _baseline(cases: list[tuple[Any, ...]], **fields: Any) -> Baseline:
    unique = {(case[0], case[1]): case for case in cases if case[2] is not None}
    return Baseline(
        id="b-1",
        label="v1",
        run_id="base",
        mean=0.5,
        created_at=START,
        model=fields.get("model", "m"),
        judge_model=fields.get("judge_model"),
        cases=tuple(
            BaselineCase(
                eval_set_id=set_id,
                case_id=case_id,
                value=value,
                fingerprint=fingerprint,
                samples=samples,
                cluster=cluster,
            )
            for set_id, case_id, value, fingerprint, samples, cluster in unique.values()
        ),
    )


def test_a_broken_score_is_named_by_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [("s", f"c{i}", i / 10, "f", (), None) for i in range(10)]
    db = tmp_path / "v.db"
    with Store.open(db) as store:
        store.save_baseline(_baseline(cases))
        store.save_run(_run("now", cases, START))
    assert main(["drift", "--baseline", "v1", "--db", str(db), "--json"]) in (0, 1)
    document = json.loads(capsys.readouterr().out)
    assert document["matched"] == 10 and document["paired"]["n"] == 10
    connection = sqlite3.connect(db)
    with connection:
        connection.execute("UPDATE scores SET value = 'n/a' WHERE case_id = 'c3'")
    connection.close()
    assert main(["drift", "--baseline", "v1", "--db", str(db), "--json"]) == 2
    err = capsys.readouterr().err
    assert "run now" in err and "case s::c3" in err and "column scores.value" in err
