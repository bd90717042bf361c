"""The README's main job, run as a test: the examples against the stub model and the
committed baseline are on track, every case is compared, and the session prints what the
README's "What you get" shows."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest
from plugin_support import stored_runs

ROOT = Path(__file__).resolve().parent.parent

#: What differs between two runs of the same session: ids, the store's path, timings.
_RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_STORED = re.compile(r"^stored: RUN in \S+$")
_FINAL = re.compile(r"^=+ (.*) in [0-9.]+s =+$")
#: Shown only when the calls made ahead took 0.1 s or more: on a busy machine, not idle.
_CALL_TIME = re.compile(r"^[a-z ,]+: [0-9.]+s with concurrency \d+$")


def _normalised(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        line = _RUN_ID.sub("RUN", line.rstrip())
        line = _STORED.sub("stored: RUN in DB", line)
        line = _FINAL.sub(r"\1", line)
        if not _CALL_TIME.match(line):
            out.append(line)
    return out


def _readme_sample() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text.split("## What you get", 1)[1]
    return after.split("```text\n", 1)[1].split("\n```", 1)[0].splitlines()


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
    # Every case the baseline holds is compared: a fingerprint change re-saves it.
    result.stdout.fnmatch_lines(["baseline v1: * over 43 matched cases *"])
    assert "since the baseline (not compared)" not in result.stdout.str()
    # The README shows this session's output as it is, up to ids, paths and timings.
    sample = _normalised(_readme_sample())
    printed = _normalised(result.stdout.lines)
    start = printed.index(sample[0])
    assert printed[start : start + len(sample)] == sample


def test_the_examples_need_only_the_base_install() -> None:
    # The workspace example's contract seals an evidence bundle as canonical JSON: the
    # README's first command installs no extra, so the package that does it is a base one.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(dep.startswith("rfc8785") for dep in project["dependencies"])
