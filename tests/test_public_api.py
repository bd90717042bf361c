"""The Python API (docs/python-api.md): the names `verdryx_core` exports, and evaluate ->
compare end to end on real files and a real SQLite store, with a target written in Python."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import verdryx_core
from verdryx_core import (
    Baseline,
    EvalSetError,
    EvalSettings,
    Store,
    UsageError,
    compare,
    evaluate,
    find_baseline,
    load_evalsets,
)


def _write_set(folder: Path, name: str, cases: list[dict[str, Any]]) -> Path:
    path = folder / f"{name}.evalset.json"
    path.write_text(json.dumps({"id": name, "cases": cases}))
    return path


CASES = [{"id": f"q{i}", "prompt": f"question {i}", "expected": f"answer {i}"} for i in range(12)]


def _agent(right: int) -> Any:
    """A target answering the first `right` questions correctly."""

    def answer(case: Any) -> str:
        number = int(case.prompt.split()[-1])
        return f"answer {number}" if number < right else "no idea"

    return answer


def test_every_exported_name_resolves_and_nothing_else_does() -> None:
    for name in verdryx_core.__all__:
        assert getattr(verdryx_core, name) is not None, name
    assert set(dir(verdryx_core)) == set(verdryx_core.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        verdryx_core.nope  # noqa: B018
    assert (Path(verdryx_core.__file__).parent / "py.typed").is_file()


def test_importing_a_value_module_does_not_load_the_evaluation() -> None:
    code = (
        "import sys, verdryx_core.cases\n"
        "heavy = [m for m in ('numpy', 'verdryx_core.evaluation', 'verdryx_core.store')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_evaluate_then_compare_on_a_stored_run(tmp_path: Path) -> None:
    _write_set(tmp_path, "qa", CASES)
    db = tmp_path / "runs.db"
    first = evaluate(load_evalsets([tmp_path]), target=_agent(12), store=db)
    assert first.complete and first.mean_score == 1.0 and len(first.scores) == 12
    with Store.open(db) as store:
        stored = store.load_run(first.id)
    assert stored is not None and [s.value for s in stored.scores] == [1.0] * 12
    baseline = Baseline.from_run(first, id=str(uuid.uuid4()), label="v1")

    same = evaluate([tmp_path / "qa.evalset.json"], target=_agent(12))
    kept = compare(same, baseline)
    assert (kept.verdict, kept.exit, kept.exit_reason) == ("on-track", "ok", None)

    worse = evaluate(load_evalsets([tmp_path]), target=_agent(4))
    assert worse.mean_score == pytest.approx(4 / 12)
    dropped = compare(worse, baseline)
    assert dropped.verdict == "regressed" and dropped.exit == "regressed"
    assert dropped.drift is not None and dropped.drift.delta == pytest.approx(4 / 12 - 1)
    assert dropped.exit_reason is not None and "v1" in dropped.exit_reason


def test_without_a_store_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_set(tmp_path, "qa", CASES[:2])
    monkeypatch.chdir(tmp_path)
    run = evaluate([tmp_path], EvalSettings(cache="on"), target=_agent(2))
    assert run.mean_score == 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qa.evalset.json"]


def test_a_case_whose_target_raises_leaves_the_run_incomplete_and_ungated(tmp_path: Path) -> None:
    _write_set(tmp_path, "qa", CASES[:3])

    def flaky(case: Any) -> str:
        if case.id == "q1":
            raise RuntimeError("tool backend down")
        return f"answer {case.id[1:]}"

    run = evaluate([tmp_path], target=flaky)
    assert not run.complete
    assert len(run.errors) == 1 and "qa::q1" in run.errors[0]
    assert [score.case_id for score in run.scores] == ["q0", "q2"]
    baseline = Baseline.from_run(evaluate([tmp_path], target=_agent(3)), id="b", label="v1")
    outcome = compare(run, baseline)
    assert outcome.verdict == "not-compared" and outcome.not_gated
    assert outcome.exit == "ok"


def test_bad_input_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.evalset.json"
    bad.write_text(json.dumps({"id": "bad", "cases": [{"id": "a", "prompt": 3}]}))
    with pytest.raises(EvalSetError) as caught:
        load_evalsets([tmp_path])
    assert "bad.evalset.json" in str(caught.value) and "'prompt'" in str(caught.value)
    with pytest.raises(UsageError, match="no eval set file or folder"):
        load_evalsets([tmp_path / "missing"])
    (tmp_path / "a").mkdir()
    _write_set(tmp_path / "a", "same", CASES[:1])
    _write_set(tmp_path, "same", CASES[:1])
    bad.unlink()
    with pytest.raises(UsageError, match="more than once"):
        evaluate([tmp_path])
    with pytest.raises(UsageError, match="unknown baseline 'v9'"):
        find_baseline("v9", root=tmp_path)


def test_a_model_run_without_a_store_and_cache_off_calls_the_model_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anthropic_env: Any
) -> None:
    _write_set(tmp_path, "qa", [{"id": "q", "prompt": "say hi", "expected": "no such reply"}])
    monkeypatch.chdir(tmp_path)
    settings = EvalSettings(model="claude-haiku-4-5", cache="off")
    run = evaluate([tmp_path], settings)
    assert run.mean_score == 0.0 and len(anthropic_env.requests) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qa.evalset.json"]
    with pytest.raises(UsageError, match="cache mode 'replay' needs a store"):
        evaluate([tmp_path], EvalSettings(model="claude-haiku-4-5", cache="replay"))
