"""`verdryx slo`: the printout, the JSON document, the scores join from a real store and
`slo_burn` events in a real event log."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from verdryx_core.cli import main
from verdryx_core.runs import EvalRun, Score
from verdryx_core.store import Store

A = "agent://acme/support"
B = "agent://acme/billing"
DAY = 86_400_000


def write_records(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def fleet() -> list[dict[str, Any]]:
    rows = []
    for i in range(40):  # A: half its runs escalate -> an established breach
        outcome = "case_resolved" if i % 2 else "escalated"
        rows.append(
            {
                "agent_id": A,
                "key_id": "k-ops",
                "outcome": outcome,
                "refused_calls": 0,
                "cost_usd": 0.1,
                "last_ts_millis": i * DAY,
            }
        )
    for i in range(30):  # B: healthy
        rows.append(
            {
                "agent_id": B,
                "key_id": "k-ops",
                "outcome": "case_resolved",
                "refused_calls": 0,
                "cost_usd": 0.1,
                "last_ts_millis": i * DAY,
            }
        )
    rows += [{"agent_id": "", "outcome": "case_resolved", "cost_usd": 0.1}] * 10
    return rows


def test_printout(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.delenv("VERDRYX_EVENTS_PATH", raising=False)
    source = write_records(tmp_path / "runs.ndjson", fleet())
    assert main(["slo", "--input", str(source)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "" and lines[1] == f"Agent error budget -- {source}"
    assert lines[2] == "  window=28d  subjects=2  runs=80  identity=agent_id"
    assert "client-supplied header" in lines[3]
    assert lines[4] == "  fleet median run cost: $0.100000"
    assert lines[5] == "  10 run(s) (12.5%) carry no agent_id and are in no subject's numbers"
    at = lines.index(f"-- {A}")
    assert lines[at + 1] == ("     task_success     0.5000 (target 0.95, ci [0.3520,0.6480], n=40)")
    assert lines[at + 2].startswith("                      budget -900.0% left, burn ")
    assert lines[at + 2].endswith("[exhausted]")
    assert "     quality_floor    not measured: no per-run score" in out
    assert "  blind to:" in lines
    assert (
        "  1 slo_burn event(s) to emit (exhausted and fast burn only; a slow burn is "
        "reported, never alerted)"
    ) in lines
    assert "emitted to" not in out
    assert lines[-1] == ""


def test_events_go_to_the_log_for_established_breaches_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_records(tmp_path / "runs.ndjson", fleet())
    log = tmp_path / "events.ndjson"
    assert main(["slo", "--input", str(source), "--events", str(log)]) == 0
    assert f"  1 emitted to {log}" in capsys.readouterr().out
    (event,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert event["type"] == "slo_burn" and event["agent_id"] == A
    assert event["severity"] == "high" and event["source"] == "verdryx"
    assert event["data"]["sli"] == "task_success" and event["data"]["events"] == 40
    assert "_subject" not in event["data"] and "run_id" not in event


def test_key_subjects_are_reported_not_emitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_records(tmp_path / "runs.ndjson", fleet())
    log = tmp_path / "events.ndjson"
    args = ["slo", "--input", str(source), "--identity", "key_id", "--events", str(log)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "identity=key_id" in out and "-- k-ops" in out
    assert "  0 emitted to" in out
    assert "not emitted: the subject is a key_id" in out
    assert not log.exists()


def test_scores_join_from_the_eval_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "verdryx.db"
    start = datetime(2026, 8, 1, tzinfo=UTC)
    with Store.open(db) as store:
        for n, agent in enumerate([A, None]):
            scores = tuple(
                Score(
                    case_id=f"c{i}", eval_set_id="set", value=1.0 if i % 4 else 0.0, grader="exact"
                )
                for i in range(24)
            )
            store.save_run(
                EvalRun(
                    id=f"run-{n}",
                    model="m",
                    started_at=start + timedelta(days=n),
                    finished_at=start + timedelta(days=n, minutes=5),
                    eval_set_ids=("set",),
                    agent_id=agent,
                    scores=scores,
                )
            )
    source = write_records(tmp_path / "runs.ndjson", fleet())
    assert main(["slo", "--input", str(source), "--scores-db", str(db), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["total_scores"] == 48 and document["unattributed_scores"] == 24
    quality = {m["sli"]: m for m in document["subjects"][A]}["quality_floor"]
    assert quality["measured"] and (quality["events"], quality["good"]) == (24, 18)
    assert [event["subject"] for event in document["burn_events"]] == [A, A]
    assert main(["slo", "--input", str(source), "--scores-db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"  48 score(s) joined from {db}" in out
    assert "24 score(s) (50.0%) come from a run evaluated with no --agent-id" in out


def test_scores_db_with_key_identity_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_records(tmp_path / "runs.ndjson", fleet())
    args = ["slo", "--input", str(source), "--identity-field", "key_id", "--scores-db", "x.db"]
    assert main(args) == 2
    assert (
        "records the agent a run was evaluated for, not the credential" in capsys.readouterr().err
    )


def test_traces_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """From Parquet: calls fold into runs, the refused decisions feed containment."""
    folder = tmp_path / "trace"
    folder.mkdir()
    rows = []
    for run in range(30):
        for step in range(2):
            rows.append(
                {
                    "ts_millis": run * DAY + step,
                    "run_id": f"r{run}",
                    "step": step,
                    "decision": "wardryx_deny" if run < 3 and step == 1 else "allowed",
                    "cost_microusd": 100_000,
                    "agent_id": A if step == 0 else "",
                    "outcome": "case_resolved" if step == 1 else "",
                    "key_id": "",
                }
            )
    table = pa.Table.from_pylist(rows)
    pq.write_table(table.slice(0, 31), folder / "calls-00000001.parquet")
    pq.write_table(table.slice(31), folder / "calls-00000002.parquet")
    assert main(["slo", "--traces", str(folder), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["total_runs"] == 30 and document["cost_reference_usd"] == 0.2
    slis = {m["sli"]: m for m in document["subjects"][A]}
    assert (slis["task_success"]["events"], slis["task_success"]["good"]) == (30, 30)
    assert (slis["containment"]["events"], slis["containment"]["good"]) == (30, 27)


def test_target_must_be_a_fraction(tmp_path: Path) -> None:
    source = write_records(tmp_path / "runs.ndjson", fleet())
    with pytest.raises(SystemExit) as exc:
        main(["slo", "--input", str(source), "--target-containment", "95"])
    assert exc.value.code == 2


def test_the_events_variable_is_read_when_the_command_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """No --events: $VERDRYX_EVENTS_PATH, read when the command runs (docs/slo.md, "Events")."""
    source = write_records(tmp_path / "runs.ndjson", fleet())
    log = tmp_path / "live-events.ndjson"
    monkeypatch.setenv("VERDRYX_EVENTS_PATH", str(log))
    assert main(["slo", "--input", str(source)]) == 0
    assert f"  1 emitted to {log}" in capsys.readouterr().out
    (event,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert event["type"] == "slo_burn" and event["agent_id"] == A
    assert main(["slo", "--input", str(source), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["events_path"] == str(log) and document["emitted"] == 1
    assert len(log.read_text().splitlines()) == 2  # the hash chain resumed, appended
