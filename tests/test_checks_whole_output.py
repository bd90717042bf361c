"""One agent run graded every way: a multi-check case's `tool_trace`, text and `llm_judge`
checks read the same target (or model) call (docs/graders.md, "Multi-check cases").

Real pytest sessions through `pytester`, `verdryx eval` through its entry point, the runs
read back from SQLite, the judge and the model behind the fake Messages server."""

from __future__ import annotations

import fnmatch
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic
from plugin_support import TOOLS, stored_runs

from verdryx_core.cli import main
from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.runs import EvalRun

MODEL = "claude-haiku-4-5"

#: An agent that owns its tools: it logs each call, and version 2 forgets the refund.
AGENT = textwrap.dedent(
    """
    import os
    import pathlib

    def answer(case):
        with (pathlib.Path(__file__).parent / "calls.log").open("a") as log:
            log.write(case.id + "\\n")
        order = case.metadata["order"]
        calls = [{"name": "lookup_order", "arguments": {"order_id": order}}]
        if os.environ.get("AGENT_VERSION") != "2":
            calls.append({"name": "refund_order", "arguments": {"order_id": order}})
        return {"output": f"Your refund for {order} is on its way.", "tool_calls": calls}
    """
)

CHECKS = [
    {
        "grader": "tool_trace",
        "expected_tool_calls": [
            {"name": "lookup_order", "arguments": {"order_id": "ORDER"}},
            {"name": "refund_order", "arguments": {"order_id": "ORDER"}},
        ],
    },
    {"grader": "icontains", "expected": "refund for ORDER"},
    {"grader": "llm_judge", "rubric": "Does the reply confirm the refund politely?"},
]


def _case(number: int) -> dict[str, Any]:
    order = f"A-{1000 + number}"
    checks = json.loads(json.dumps(CHECKS).replace("ORDER", order))
    return {
        "id": f"s{number}",
        "prompt": f"Please refund order {order}",
        "metadata": {"order": order},
        "checks": checks,
    }


def _write(root: Path, count: int) -> Path:
    path = root / "support.evalset.json"
    cases = [_case(n) for n in range(count)]
    path.write_text(json.dumps({"id": "support", "cases": cases}), encoding="utf-8")
    (root / "support_agent.py").write_text(AGENT, encoding="utf-8")
    return path


def _calls(root: Path) -> list[str]:
    log = root / "calls.log"
    return log.read_text().split() if log.exists() else []


def _checks(run: EvalRun) -> dict[str, list[float | None]]:
    """Each case's check values, as the store keeps them (docs/scenarios.md)."""
    return {score.case_id: [check.value for check in score.checks] for score in run.scores}


@pytest.fixture
def judge_env(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropic:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    server.judge_score = 0.8
    return server


def test_one_target_call_per_case_graded_by_every_check_under_pytest(
    pytester: pytest.Pytester, judge_env: FakeAnthropic
) -> None:
    _write(pytester.path, 3)
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--verdryx-db={db}",
        "--verdryx-target=support_agent:answer",
        f"--verdryx-judge={MODEL}",
    )
    result.assert_outcomes(passed=3)
    assert sorted(_calls(pytester.path)) == ["s0", "s1", "s2"]  # one call per case
    (run,) = stored_runs(db)
    assert _checks(run) == {f"s{n}": [1.0, 1.0, 0.8] for n in range(3)}
    score = next(s for s in run.scores if s.case_id == "s1")
    assert score.value == pytest.approx(2.8 / 3)
    assert '"refund_order"' in (score.output or "") and "refund for A-1001" in (score.output or "")
    # The judge reads the case's prompt and the reply text, not the calls.
    judged = [r for r in judge_env.requests if r.body.get("tool_choice")]
    assert len(judged) == 3
    texts = sorted(r.user_text for r in judged)
    assert "Please refund order A-1000" in texts[0]
    assert "Your refund for A-1000 is on its way." in texts[0]
    assert "refund_order" not in texts[0]


def test_a_regressed_agent_fails_its_tool_check_and_the_gate(pytester: pytest.Pytester) -> None:
    _write(pytester.path, 4)
    db = pytester.path / "s.db"
    common = (
        "-p",
        "no:cacheprovider",
        f"--verdryx-db={db}",
        "--verdryx-target=support_agent:answer",
        "--verdryx-judge=stub",
    )
    pytester.runpytest(*common, "--verdryx-save-baseline=v1").assert_outcomes(passed=4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_VERSION", "2")
        result = pytester.runpytest(*common, "--verdryx-baseline=v1")
    assert result.ret == 1
    # Each case's mean, (0.5 + 1 + 1) / 3, stays above the default bar; the gate sees the drop.
    result.stdout.fnmatch_lines(["*verdict: REGRESSED*", "  support::s0: 1.000 -> 0.833*"])
    newest = stored_runs(db)
    regressed = max(newest, key=lambda run: run.started_at)
    assert {tuple(v) for v in _checks(regressed).values()} == {(0.5, 1.0, 1.0)}
    assert len(_calls(pytester.path)) == 8  # 4 cases, 2 runs, one call each


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    sys.modules.pop("support_agent", None)


def test_verdryx_eval_grades_the_same_run_the_same_way(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(project, 2)
    db = project / "v.db"
    code = main(
        ["eval", str(path), "--target", "support_agent:answer", "--judge", "stub", "--db", str(db)]
    )
    assert code == 0, capsys.readouterr()
    assert sorted(_calls(project)) == ["s0", "s1"]
    (run,) = stored_runs(db)
    assert _checks(run) == {"s0": [1.0, 1.0, 1.0], "s1": [1.0, 1.0, 1.0]}


def test_without_a_target_the_model_answers_once_with_the_cases_tools(
    pytester: pytest.Pytester, judge_env: FakeAnthropic
) -> None:
    judge_env.tool_calls = ["lookup"]
    case = {
        "id": "m",
        "prompt": "Where is my order?",
        "tools": TOOLS,
        "checks": [
            {"grader": "tool_trace", "expected_tools": ["lookup"]},
            {"grader": "contains", "expected": "look that up"},
        ],
    }
    (pytester.path / "m.evalset.json").write_text(json.dumps({"id": "m", "cases": [case]}))
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--verdryx-db={db}", f"--verdryx-model={MODEL}"
    )
    result.assert_outcomes(passed=1)
    (asked,) = judge_env.requests
    assert [tool["name"] for tool in asked.body["tools"]] == ["lookup", "act", "notify"]
    assert _checks(stored_runs(db)[0]) == {"m": [1.0, 1.0]}


def test_tool_calls_asked_of_the_model_without_tools_is_the_cases_error(
    pytester: pytest.Pytester,
) -> None:
    case = {"id": "t", "prompt": "p", "checks": [{"grader": "tool_trace", "expected_tools": []}]}
    (pytester.path / "t.evalset.json").write_text(json.dumps({"id": "t", "cases": [case]}))
    result = pytester.runpytest("-p", "no:cacheprovider", "--no-verdryx-store")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*case 't': field 'tools': its tool calls are graded and no target is in effect*"]
    )


@pytest.mark.parametrize(
    ("case", "field", "message"),
    [
        (
            {"checks": [{"grader": "tool_trace", "expected": "a"}]},
            "checks[0].expected",
            "*'expected_tools' (names)*",
        ),
        (
            {"checks": [{"grader": "tool_trace"}]},
            "checks[0].expected_tools",
            "grader 'tool_trace' requires*",
        ),
        (
            {"expected_tools": ["a"], "checks": [{"grader": "tool_trace", "expected_tools": []}]},
            "expected_tools",
            "a multi-check case sets it on its tool_trace check",
        ),
        (
            {"checks": [{"grader": "contains", "expected": "x", "expected_tools": ["a"]}]},
            "checks[0].expected_tools",
            "only valid with grader 'tool_trace'*",
        ),
        (
            {
                "tools": TOOLS,
                "checks": [{"grader": "tool_trace", "expected_tools": ["refund"]}],
            },
            "checks[0].expected_tools[0]",
            "tool 'refund' is expected but not offered*",
        ),
        (
            {"output": "x", "checks": [{"grader": "tool_trace", "expected_tools": []}]},
            "output",
            "a recorded output is text*",
        ),
        (
            {"tools": TOOLS, "checks": [{"grader": "contains", "expected": "x"}]},
            "tools",
            "only valid with grader 'tool_trace'*",
        ),
    ],
)
def test_a_tool_trace_check_is_checked_at_load(
    tmp_path: Path, case: dict[str, Any], field: str, message: str
) -> None:
    path = tmp_path / "bad.evalset.json"
    path.write_text(json.dumps({"id": "bad", "cases": [{"id": "c", "prompt": "p", **case}]}))
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    assert caught.value.field == field
    assert caught.value.case is not None and "'c'" in caught.value.case
    assert "\n" not in str(caught.value)
    assert fnmatch.fnmatch(caught.value.detail, message), caught.value.detail


def test_a_custom_case_grades_a_whole_result_with_checks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_custom="""
        import pytest

        @pytest.mark.verdryx(case_id="whole", checks=[
            {"grader": "tool_trace", "expected_tools": ["lookup_order"]},
            {"grader": "contains", "expected": "on its way"},
        ])
        def test_whole(verdryx):
            verdryx.grade({"output": "It is on its way.",
                           "tool_calls": [{"name": "lookup_order", "arguments": {}}]})
        """
    )
    db = pytester.path / "s.db"
    pytester.runpytest("-p", "no:cacheprovider", f"--verdryx-db={db}").assert_outcomes(passed=1)
    assert _checks(stored_runs(db)[0]) == {"whole": [1.0, 1.0]}
