"""`verdryx eval --target`: the same agent-under-test path as the plugin, from the CLI
(docs/targets.md, docs/cli.md)."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from verdryx_core.cli import main
from verdryx_core.store import Store

AGENT = textwrap.dedent(
    """
    import pathlib

    def answer(case):
        with (pathlib.Path(__file__).parent / "calls.log").open("a") as log:
            log.write(case.id + "\\n")
        if "boom" in case.prompt:
            raise RuntimeError("agent down for " + case.id)
        return {"output": case.prompt.upper(), "usage": {"input_tokens": 7, "cost_usd": 0.5}}
    """
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    name = f"cli_agent_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "target_name").write_text(f"{name}:answer", encoding="utf-8")
    yield tmp_path
    sys.modules.pop(name, None)


def _evalset(root: Path, prompts: list[str]) -> Path:
    cases = [{"id": f"c{i}", "prompt": p, "expected": p.upper()} for i, p in enumerate(prompts)]
    path = root / "agent.evalset.json"
    path.write_text(json.dumps({"id": "agent", "cases": cases}), encoding="utf-8")
    return path


def _calls(root: Path) -> list[str]:
    log = root / "calls.log"
    return log.read_text().split() if log.exists() else []


def test_eval_calls_the_target_and_stores_the_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _evalset(project, ["one", "two"])
    target = (project / "target_name").read_text()
    db = project / "v.db"
    code = main(["eval", str(path), "--target", target, "--db", str(db), "--json"])
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    assert document["mean_score"] == 1.0 and document["errors"] == []
    assert document["model_cost_usd"] == pytest.approx(1.0)
    assert sorted(_calls(project)) == ["c0", "c1"]
    with Store.open(db) as store:
        (run,) = store.list_runs()
    assert run.complete


def test_a_failing_case_is_an_error_line_and_the_run_is_incomplete(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _evalset(project, ["one", "boom"])
    target = (project / "target_name").read_text()
    code = main(["eval", str(path), "--target", target, "--db", str(project / "v.db")])
    out = capsys.readouterr().out
    assert code == 1
    assert "1 case(s) errored instead of scoring (stored as incomplete):" in out
    assert f"agent::c1: target {target} raised RuntimeError: agent down for c1" in out


def test_a_declared_version_caches_and_a_bad_target_is_one_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _evalset(project, ["one"])
    target = (project / "target_name").read_text()
    db = ["--db", str(project / "v.db")]
    for _ in range(2):
        assert main(["eval", str(path), "--target", target, "--target-version", "7", *db]) == 0
    assert _calls(project) == ["c0"]
    capsys.readouterr()
    assert main(["eval", str(path), "--target", target.replace("answer", "nope"), *db]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: target '{target.replace('answer', 'nope')}': ")
    assert "has no attribute 'nope'" in err and "\n" not in err
