"""Contract verdicts and the cost of quality on the plugin side, in real pytest sessions
(pytester): contract cases graded in pytest with their verdicts stored per agent id at
session end and shown by `verdryx runs --agent`; the cost of quality (model and judge spend
apart, cost per passing case) in the terminal summary and in the stored run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic
from plugin_support import stored_runs, write_evalset

from verdryx_core.addons.contracts.history import verdicts as stored_verdicts
from verdryx_core.cli import main
from verdryx_core.reporting.summary import fmt_usd
from verdryx_core.store import Store

AGENT = "agent://acme.example/bot"
OTHER = "agent://acme.example/other"
MODEL = "claude-haiku-4-5"  # priced at $1 / $5 per million input / output tokens


# -- contracts -------------------------------------------------------------------------------


def _workspace(root: Path) -> None:
    ws = root / "ws"
    (ws / "data").mkdir(parents=True)
    (ws / "report.md").write_text("# Week 32\n\n## Summary\nOrders grew.\n")
    (ws / "data" / "summary.json").write_text('{"orders": 4}')
    (ws / ".env").write_text("API_KEY=x\n")  # breaks the scope guard of one case
    db = sqlite3.connect(ws / "app.db")
    db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    db.executemany("INSERT INTO orders VALUES (?)", [(1,), (2,)])
    db.commit()
    db.close()


def _contract_case(case_id: str, criteria: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    contract = {"success_criteria": criteria, **extra.pop("contract_extra", {})}
    return {"id": case_id, "prompt": f"task {case_id}", "grader": "contract", **extra,
            "contract": contract}  # fmt: skip


CONTRACT_CASES = [
    _contract_case(
        "report",
        [
            {"id": "summary", "type": "file_contains", "path": "report.md", "pattern": "Summary"},
            {"id": "json", "type": "json_valid", "path": "data/summary.json"},
            {"id": "rows", "type": "sqlite_table_has_rows", "path": "app.db", "table": "orders"},
        ],
        output="ws",
    ),
    _contract_case(
        "scope",
        [{"id": "no-env", "type": "path_absent", "path": ".env"}],
        output="ws",
    ),
    _contract_case(
        "emailed",
        [{"id": "exists", "type": "file_exists", "path": "report.md"}],
        output="ws",
        contract_extra={"unverifiable_claims": ["the report was emailed"]},
    ),
    _contract_case(
        "nowhere",
        [{"id": "exists", "type": "file_exists", "path": "report.md"}],
        output="no-such-workspace",
    ),
]


def _runs_json(capsys: pytest.CaptureFixture[str], db: Path, agent: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["runs", "--db", str(db), "--agent", agent, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_contract_cases_are_graded_in_pytest_and_stored_per_agent(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    _workspace(pytester.path)
    write_evalset(pytester.path, "contracts", "contracts", CONTRACT_CASES)
    db = pytester.path / "v.db"
    args = [f"--verdryx-db={db}", f"--verdryx-agent-id={AGENT}", "-rs"]
    result = pytester.runpytest(*args)
    # PASS 1.0, FAIL 0.0, a FLAG the contract decides (a claim it cannot verify) unmeasured
    # (skipped with the reason): never a zero. A FLAG the output caused (it names a folder
    # that is not there) scores 0 (docs/outcomes.md, "What counts as unmeasured").
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*unverifiable*the report was emailed*"])
    result.stdout.fnmatch_lines(
        [
            "*contracts::nowhere scored 0.000, below the pass bar*",
            "could not grade the output (scored 0): FLAG: base path*no-such-workspace*",
        ]
    )
    (run,) = stored_runs(db)
    values = {score.case_id: score.value for score in run.scores}
    assert values == {"report": 1.0, "scope": 0.0, "emailed": None, "nowhere": 0.0}
    failed_by = {score.case_id: score.failed_by_output for score in run.scores}
    assert failed_by["nowhere"] and "no-such-workspace" in failed_by["nowhere"]
    assert failed_by["scope"] is None and failed_by["emailed"] is None

    document = _runs_json(capsys, db, AGENT)
    assert [item["run_id"] for item in document["runs"]] == [run.id]
    verdicts = {item["task_id"]: item for item in document["contract_verdicts"]}
    assert {task: item["verdict"] for task, item in verdicts.items()} == {
        "report": "PASS",
        "scope": "FAIL",
        "emailed": "FLAG",
        "nowhere": "FLAG",
    }
    assert {item["agent_id"] for item in verdicts.values()} == {AGENT}
    assert {item["run_id"] for item in verdicts.values()} == {run.id}
    assert ".env is a file" in verdicts["scope"]["reason"]  # the evidence travels along
    assert "table 'orders' in app.db has 2 rows" in verdicts["report"]["reason"]

    # A second session adds to the agent's record, newest first; no other agent has one.
    pytester.runpytest(*args).assert_outcomes(passed=1, failed=2, skipped=1)
    mine = _runs_json(capsys, db, AGENT)
    assert len(mine["runs"]) == 2 and len(mine["contract_verdicts"]) == 8
    assert {item["agent_id"] for item in mine["contract_verdicts"]} == {AGENT}
    newest = mine["runs"][0]["run_id"]
    assert {item["run_id"] for item in mine["contract_verdicts"][:4]} == {newest}
    assert _runs_json(capsys, db, OTHER)["contract_verdicts"] == []

    assert main(["runs", "--db", str(db), "--agent", AGENT]) == 0
    out = capsys.readouterr().out
    assert f"contract verdicts of agent {AGENT}:" in out
    assert out.count(" FAIL ") == 2 and out.count(" PASS ") == 2


def test_no_store_no_verdicts_and_no_contract_cases_no_rows(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Verdicts are written only with the run: no contract case, no verdict row."""
    write_evalset(
        pytester.path,
        "plain",
        "plain",
        [{"id": "a", "prompt": "p", "expected": "yes", "output": "yes"}],
    )
    db = pytester.path / "v.db"
    pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-agent-id={AGENT}").assert_outcomes(
        passed=1
    )
    with Store.open(db) as store:
        assert stored_verdicts(store) == []
    assert _runs_json(capsys, db, AGENT)["contract_verdicts"] == []


def test_without_a_session_agent_the_contracts_agent_id_keeps_the_verdict(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    _workspace(pytester.path)
    case = _contract_case(
        "report",
        [{"id": "summary", "type": "file_contains", "path": "report.md", "pattern": "Summary"}],
        output="ws",
        contract_extra={"agent_id": AGENT},
    )
    write_evalset(pytester.path, "contracts", "contracts", [case])
    db = pytester.path / "v.db"
    pytester.runpytest(f"--verdryx-db={db}").assert_outcomes(passed=1)
    verdicts = _runs_json(capsys, db, AGENT)["contract_verdicts"]
    assert [item["verdict"] for item in verdicts] == ["PASS"]


# -- cost of quality -------------------------------------------------------------------------


@pytest.mark.usefixtures("anthropic_env")
def test_summary_and_store_keep_model_and_judge_spend_apart(
    pytester: pytest.Pytester, server: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    server.judge_score = 0.9
    cases = [
        {"id": "right", "prompt": "question 0", "expected": "echo: question 0"},
        {"id": "wrong", "prompt": "question 1", "expected": "something else"},
        {"id": "judged", "prompt": "p", "grader": "llm_judge", "rubric": "r", "output": "o"},
    ]
    write_evalset(pytester.path, "cost", "cost", cases)
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        f"--verdryx-db={db}", f"--verdryx-model={MODEL}", f"--verdryx-judge={MODEL}"
    )
    result.assert_outcomes(passed=2, failed=1)
    call = (10 * 1.0 + 5 * 5.0) / 1e6  # every fake reply uses 10 in, 5 out tokens
    (run,) = stored_runs(db)
    assert run.model_cost_usd == pytest.approx(2 * call)  # two live completions
    assert run.judge_cost_usd == pytest.approx(call)  # one judge call, on a recorded output
    with Store.open(db) as store:
        (summary,) = store.list_runs()
    assert summary.model_cost_usd == pytest.approx(2 * call)
    assert summary.judge_cost_usd == pytest.approx(call)
    passing = [score.case_id for score in run.scores if score.passed]
    assert sorted(passing) == ["judged", "right"]
    total = run.model_cost_usd + run.judge_cost_usd
    line = (
        f"tokens: {run.total_tokens}   cost: {fmt_usd(total)} "
        f"(model {fmt_usd(run.model_cost_usd)}, judge {fmt_usd(run.judge_cost_usd)})"
        f"   per passing case: {fmt_usd(total / 2)}"
    )
    assert line in result.stdout.lines
    assert "(model $0.000070, judge $0.000035)" in line
    capsys.readouterr()
    assert main(["runs", "--db", str(db), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["runs"]
    assert row["model_cost_usd"] == pytest.approx(2 * call)
    assert row["judge_cost_usd"] == pytest.approx(call)
    assert row["total_cost_usd"] == pytest.approx(3 * call)


def test_no_spend_shows_no_cost_per_passing_case(pytester: pytest.Pytester) -> None:
    write_evalset(
        pytester.path,
        "free",
        "free",
        [{"id": "a", "prompt": "p", "expected": "yes", "output": "yes"}],
    )
    result = pytester.runpytest("--no-verdryx-store")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tokens: 0   cost: $0 (model $0, judge $0)"])
    assert "per passing case" not in result.stdout.str()
