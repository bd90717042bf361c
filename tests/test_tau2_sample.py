"""The tau2 sample (tests/fixtures/tau2, converted by scripts/tau2_to_evalsets.py from the
inspect-evals wheel): 40 airline and retail dialogues with a scripted user, run against an
offline simulated agent in two versions through pytest and `verdryx eval`, the two versions
gated, and every stored score re-computed by a checker of the test's own
(docs/scenarios.md, "The tau2 sample")."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from plugin_support import stored_runs

from verdryx_core.cli import main
from verdryx_core.runs import EvalRun, Score

FIXTURES = Path(__file__).parent / "fixtures" / "tau2"
SETS = ("tau2-airline", "tau2-retail")


def _agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tau2_agent_checked", FIXTURES / "tau2_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AGENT = _agent()
CASES: dict[str, dict[str, Any]] = {
    case["id"]: case
    for name in SETS
    for case in json.loads((FIXTURES / f"{name}.json").read_text())["cases"]
}


# -- the independent checker ------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _lcs(made: list[Any], wanted: list[Any]) -> int:
    table = [[0] * (len(wanted) + 1) for _ in range(len(made) + 1)]
    for i, call in enumerate(made):
        for j, other in enumerate(wanted):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if _same(call, other) else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


def expected_score(case_id: str, version: str) -> tuple[float, list[Any], str, str]:
    """The case's score as tau2's rules and the documented formulas give it, from the task and
    what the agent does (never from verdryx): the score, the calls, the final reply, and how
    the dialogue ends."""
    case = CASES[case_id]
    first, second = AGENT.plan(case_id, version)
    made = [*first, *second]
    said = AGENT.SCRIPT[case_id]["say"]
    # The agent ends on its third reply; a user with one turn is done after the second.
    long = len(case["user"]["turns"]) >= 2
    ending = "the agent ended the dialogue" if long else "the user is done"
    told = f" (noted: {said})" if said else ""
    final = (
        f"Is there anything else I can help with{told}?"
        if long
        else f"I have made the changes you asked for{told}."
    )
    state: dict[str, list[Any]] = {}
    for call in second:
        if not call["name"].startswith(("get_", "find_", "search_", "list_", "calculate")):
            state.setdefault(call["name"], []).append(call["arguments"])
    values = []
    for check in case["checks"]:
        if check["grader"] == "tool_trace":
            wanted = check["expected_tool_calls"]
            exact = len(made) == len(wanted) and all(map(_same, made, wanted))
            values.append(1.0 if exact else _lcs(made, wanted) / max(len(made), len(wanted)))
        elif check["grader"] == "final_state":
            values.append(1.0 if _same(state, check["expected"]) else 0.0)
        else:
            assert check["grader"] == "icontains"
            values.append(1.0 if check["expected"].casefold() in final.casefold() else 0.0)
    return sum(values) / len(values), made, final, ending


def mismatches(scores: list[Score] | tuple[Score, ...], version: str) -> list[str]:
    """Every stored score against the checker's: its value, its pass, and its transcript."""
    found = []
    assert sorted(s.case_id for s in scores) == sorted(CASES)
    for score in scores:
        value, made, final, ending = expected_score(score.case_id, version)
        lines = (score.output or "").splitlines()
        recorded = [json.loads(line[len("  -> ") :]) for line in lines if line.startswith("  -> ")]
        replies = [line for line in lines if line.startswith("assistant: ")]
        if score.value is None or abs(score.value - value) > 1e-12:
            found.append(f"{score.case_id}: verdryx {score.value}, checker {value}")
        if score.passed != (value >= 1.0):
            found.append(f"{score.case_id}: passed {score.passed}, checker {value >= 1.0}")
        # A turn's words are one JSON string after its role (docs/scenarios.md).
        if not (_same(recorded, made) and json.loads(replies[-1][len("assistant: ") :]) == final):
            found.append(f"{score.case_id}: the transcript is not the dialogue the agent held")
        if lines[-1] != f"[ended: {ending}]":
            found.append(f"{score.case_id}: ended {lines[-1]}, checker {ending}")
    return found


def test_version_b_gets_some_cases_wrong_and_version_a_none() -> None:
    wrong = [case for case in CASES if AGENT.mistake(case)]
    assert len(CASES) == 40 and 8 <= len(wrong) <= 16
    assert all(expected_score(case, "a")[0] == 1.0 for case in CASES)
    assert all(expected_score(case, "b")[0] < 1.0 for case in wrong)
    # Both rules of ending occur; every dialogue crosses turns (calls in two of them).
    endings = {expected_score(case, "a")[3] for case in CASES}
    assert endings == {"the agent ended the dialogue", "the user is done"}


# -- through pytest and `verdryx eval` ---------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in SETS:
        shutil.copy(FIXTURES / f"{name}.json", tmp_path / f"{name}.evalset.json")
    for name in ("tau2_agent.py", "agent_script.json"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    sys.modules.pop("tau2_agent", None)


def _newest(db: Path) -> EvalRun:
    return max(stored_runs(db), key=lambda run: run.started_at)


def test_the_sample_through_pytest_gates_the_regressed_version(
    pytester: pytest.Pytester, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = project / "v.db"
    common = ["-p", "no:randomly", f"--verdryx-db={db}", "--verdryx-target=tau2_agent:answer"]
    monkeypatch.setenv("TAU2_AGENT_VERSION", "a")
    first = pytester.runpytest(
        *common, "--verdryx-target-version=a", "--verdryx-save-baseline=tau2"
    )
    assert first.ret == 0, first.stdout.str()[-2000:]
    first.assert_outcomes(passed=40)
    assert mismatches(_newest(db).scores, "a") == []
    monkeypatch.setenv("TAU2_AGENT_VERSION", "b")
    second = pytester.runpytest(*common, "--verdryx-target-version=b", "--verdryx-baseline=tau2")
    assert second.ret == 1 and "regressed" in second.stdout.str(), second.stdout.str()[-3000:]
    failed = sum(1 for case in CASES if expected_score(case, "b")[0] < 1.0)
    # Below the bar under a baseline: dropped (xfailed), and the verdict fails the session.
    second.assert_outcomes(passed=40 - failed, xfailed=failed, failed=1)  # the gate's item
    assert mismatches(_newest(db).scores, "b") == []
    # Without a baseline each such case fails, and its report shows the dialogue.
    third = pytester.runpytest(*common, "--verdryx-target-version=b", "--no-verdryx-store")
    third.assert_outcomes(passed=40 - failed, failed=failed)
    text = third.stdout.str()
    assert "transcript: [transcript]" in text
    assert "  -> " in text and "[ended: the agent ended the dialogue]" in text


def test_the_sample_through_verdryx_eval_gates_the_regressed_version(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAU2_AGENT_VERSION", "a")  # restored after the test
    db = str(project / "v.db")
    sets = [str(project / f"{name}.evalset.json") for name in SETS]

    def evaluated(version: str) -> str:
        os.environ["TAU2_AGENT_VERSION"] = version  # monkeypatch restores it
        target = ["--target", "tau2_agent:answer", "--target-version", version]
        code = main(["eval", *sets, *target, "--db", db, "--json"])
        # Version b fails cases, and the run fails as a pytest session would (exit 1).
        assert code == (0 if version == "a" else 1)
        document = json.loads(capsys.readouterr().out)
        assert document["errors"] == []
        return str(document["run_id"])

    baseline = evaluated("a")
    assert main(["baseline", baseline, "--label", "tau2", "--db", db]) == 0
    capsys.readouterr()
    assert mismatches(_newest(project / "v.db").scores, "a") == []
    evaluated("a")
    assert main(["drift", "--baseline", "tau2", "--db", db]) == 0  # unchanged: no regression
    assert "regressed" not in capsys.readouterr().out.lower()
    evaluated("b")
    assert mismatches(_newest(project / "v.db").scores, "b") == []
    capsys.readouterr()
    assert main(["drift", "--baseline", "tau2", "--db", db]) == 1
    assert "regressed" in capsys.readouterr().out
