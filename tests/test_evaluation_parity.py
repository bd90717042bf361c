"""`verdryx eval` and `pytest` drive one evaluation pipeline: on the same eval sets, with the
same settings, they store the same run (scores, cost, contract verdict rows).

Real parts only: the real Anthropic SDK against the fake Messages API, the fake typryx
service over HTTP, a real SQLite store per face, a real pytest session through pytester.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic
from fakes.typryx_server import DEFAULT_KEY as TYPRYX_KEY
from fakes.typryx_server import FakeTypryx
from plugin_support import TOOLS, stored_runs, write_evalset

from verdryx_core.addons.contracts.history import verdicts
from verdryx_core.cli import main
from verdryx_core.runs import EvalRun
from verdryx_core.store import Store

MODEL = "claude-parity-1"  # in no built-in price book: only the price file prices it
_ANSWER_ID = re.compile(r"answer_id [0-9a-f]+")
PRICES = {"models": {MODEL: {"input": 3.0, "output": 15.0}}}

LIVE_CASES: list[dict[str, Any]] = [
    # The fake model echoes the prompt.
    {"id": "exact", "prompt": "question a", "expected": "echo: question a"},
    {"id": "wrong", "prompt": "question b", "expected": "something else"},
    {"id": "regex", "prompt": "question c", "grader": "regex", "expected": "^echo: .*c$"},
    {
        "id": "tools",
        "prompt": "look it up",
        "grader": "tool_trace",
        "tools": TOOLS,
        "expected_tools": ["lookup"],
    },
    {"id": "judged", "prompt": "explain", "grader": "llm_judge", "rubric": "is it clear?"},
    {"id": "bar", "prompt": "question d", "expected": "echo: question d", "min_score": 0.9},
]
RECORDED_CASES: list[dict[str, Any]] = [
    {"id": "recorded", "prompt": "p", "expected": "yes", "output": "yes"},
    {"id": "tag", "prompt": "case_resolved", "grader": "outcome_tag"},
    {"id": "judged-recorded", "prompt": "p", "grader": "llm_judge", "rubric": "r", "output": "o"},
]
TYPED_CASES: list[dict[str, Any]] = [
    {"id": f"t{i}", "prompt": f"Refund order {i}", "grader": "typed", "output": "Done."}
    for i in range(2)
]
CONTRACT_CASES: list[dict[str, Any]] = [
    {
        "id": "report",
        "prompt": "write the report",
        "grader": "contract",
        "output": "ws",
        "contract": {
            "task_id": "weekly-report",
            "success_criteria": [
                {"id": "summary", "type": "file_contains", "path": "report.md", "pattern": "Sum"}
            ],
        },
    },
    {
        "id": "scope",
        "prompt": "touch nothing",
        "grader": "contract",
        "output": "ws",
        "contract": {"success_criteria": [{"id": "no-env", "type": "path_absent", "path": ".env"}]},
    },
]


def _project(root: Path) -> None:
    """Eval sets, the contract workspace, the price file and the typed key under `root`."""
    sets = root / "sets"
    sets.mkdir()
    write_evalset(sets, "live", "live", LIVE_CASES)
    write_evalset(sets, "recorded", "recorded", RECORDED_CASES)
    write_evalset(sets, "typed", "typed", TYPED_CASES)
    write_evalset(sets, "contracts", "contracts", CONTRACT_CASES)
    ws = sets / "ws"
    ws.mkdir()
    (ws / "report.md").write_text("# Week\n\n## Summary\nfine\n")
    (ws / ".env").write_text("SECRET=1\n")  # fails the scope case
    (root / "prices.json").write_text(json.dumps(PRICES))
    (root / "typryx.key").write_text(TYPRYX_KEY)


def _comparable(run: EvalRun) -> list[dict[str, Any]]:
    """What must agree between the faces: every stored field of every score, in case order.
    The typed grading service gives each ask its own answer id (quoted in the reason): that alone
    may differ."""
    scores = [score.to_dict() for score in run.scores]
    for score in scores:
        if score["reason"]:
            score["reason"] = _ANSWER_ID.sub("answer_id -", score["reason"])
    return sorted(scores, key=lambda s: (s["eval_set_id"], s["case_id"]))


def _verdict_rows(db: Path) -> list[tuple[Any, ...]]:
    with Store.open(db) as store:
        rows = verdicts(store)
    return sorted((row["agent_id"], row["task_id"], row["verdict"], row["reason"]) for row in rows)


def _cache_rows(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM model_cache").fetchone()[0])


@pytest.mark.parametrize("repeat", [1, 3])
def test_the_cli_and_the_plugin_store_the_same_run(
    pytester: pytest.Pytester,
    anthropic_env: FakeAnthropic,
    capsys: pytest.CaptureFixture[str],
    repeat: int,
) -> None:
    root = pytester.path
    _project(root)
    sets = sorted(str(path) for path in (root / "sets").glob("*.evalset.json"))
    agent = "agent://acme.example/bot"
    with FakeTypryx() as service:
        cli_db = root / "cli.db"
        code = main(
            [
                "eval",
                *sets,
                "--model",
                MODEL,
                "--judge",
                MODEL,
                "--repeat",
                str(repeat),
                "--prices",
                str(root / "prices.json"),
                "--typed-url",
                service.url,
                "--typed-key-file",
                str(root / "typryx.key"),
                "--agent-id",
                agent,
                "--db",
                str(cli_db),
                "--json",
            ]
        )
        # Two cases fail (live::wrong, contracts::scope): the run fails, as the session does.
        assert code == 1, capsys.readouterr().err
        cli_calls = len(anthropic_env.requests)
        cli_asks = len(service.asks())

        pytester.makeini("[pytest]\nverdryx_prices = prices.json\n")
        plugin_db = root / "plugin.db"
        result = pytester.runpytest(
            "sets",
            f"--verdryx-model={MODEL}",
            f"--verdryx-judge={MODEL}",
            f"--verdryx-repeat={repeat}",
            f"--verdryx-typed-url={service.url}",
            f"--verdryx-typed-key-file={root / 'typryx.key'}",
            f"--verdryx-agent-id={agent}",
            f"--verdryx-db={plugin_db}",
        )
        plugin_asks = len(service.asks()) - cli_asks
    result.assert_outcomes(passed=11, failed=2)  # live::wrong and contracts::scope
    plugin_calls = len(anthropic_env.requests) - cli_calls

    (cli_run,) = stored_runs(cli_db)
    (plugin_run,) = stored_runs(plugin_db)
    assert _comparable(cli_run) == _comparable(plugin_run)
    assert cli_run.total_cost_usd == pytest.approx(plugin_run.total_cost_usd)
    assert cli_run.total_cost_usd > 0
    assert (cli_run.model, cli_run.judge_model, cli_run.agent_id, cli_run.eval_set_ids) == (
        plugin_run.model,
        plugin_run.judge_model,
        plugin_run.agent_id,
        plugin_run.eval_set_ids,
    )
    assert cli_run.complete and plugin_run.complete
    # Repeats sample the model: N samples per model case, one for a recorded output.
    live = {score.case_id: score for score in plugin_run.scores if score.eval_set_id == "live"}
    assert all(len(score.samples) == (repeat if repeat > 1 else 0) for score in live.values())
    assert all(score.samples == () for score in plugin_run.scores if score.eval_set_id != "live")
    # Same calls, same service asks, same cached answers, same contract rows.
    assert cli_calls == plugin_calls > 0
    assert cli_asks == plugin_asks == len(TYPED_CASES)
    assert _cache_rows(cli_db) == _cache_rows(plugin_db) > 0
    rows = _verdict_rows(cli_db)
    assert rows == _verdict_rows(plugin_db)
    assert sorted(row[2] for row in rows) == ["FAIL", "PASS"]


def test_neither_face_caches_the_stub(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    # One rule: the stub model is free and deterministic, so no face stores its answers.
    cases = [
        {"id": "model", "prompt": "p", "expected": "stub output"},
        {"id": "judged", "prompt": "p", "grader": "llm_judge", "rubric": "r"},
    ]
    sets = write_evalset(pytester.path, "stubbed", "stubbed", cases)
    cli_db, plugin_db = pytester.path / "cli.db", pytester.path / "plugin.db"
    # The stub judge only when named (no judge: llm_judge cases are unmeasured).
    assert main(["eval", str(sets), "--judge", "stub", "--db", str(cli_db), "--json"]) == 0
    capsys.readouterr()
    pytester.runpytest(f"--verdryx-db={plugin_db}", "--verdryx-judge=stub").assert_outcomes(
        passed=2
    )
    assert _cache_rows(cli_db) == _cache_rows(plugin_db) == 0
    (cli_run,) = stored_runs(cli_db)
    (plugin_run,) = stored_runs(plugin_db)
    assert _comparable(cli_run) == _comparable(plugin_run)
    assert cli_run.judge_model == plugin_run.judge_model == "stub"
