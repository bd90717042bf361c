"""The README's main job, run as a test: the examples against the stub model and the
committed baseline are on track, and the summary says so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from plugin_support import stored_runs

ROOT = Path(__file__).resolve().parent.parent


def test_the_examples_are_on_track_against_the_committed_baseline(
    pytester: pytest.Pytester,
) -> None:
    shutil.copytree(ROOT / "examples", pytester.path / "examples")
    shutil.copytree(
        ROOT / ".verdryx", pytester.path / ".verdryx", ignore=shutil.ignore_patterns("*.db*")
    )
    db = pytester.path / "fresh.db"  # a fresh runner: only the committed baseline file
    result = pytester.runpytest("examples", "--verdryx-baseline=v1", f"--verdryx-db={db}")
    assert result.ret == pytest.ExitCode.OK
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] >= 20 and outcomes["xfailed"] == 1
    result.stdout.fnmatch_lines(["*1 below the bar as in the baseline*", "*verdict: ON-TRACK*"])
    run = stored_runs(db)[0]
    assert {
        "support-agent",
        "tool-agent",
        "stub-model",
        "contracts-example",
        "order-support-target",
        "workspace-swe-example",
    } <= set(run.eval_set_ids)
    # No judge is named: the llm_judge case is unmeasured (never the stub judge's 1.0).
    assert [score.case_id for score in run.unmeasured] == ["judged-helpfulness"]
