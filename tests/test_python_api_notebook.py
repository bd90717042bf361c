"""The Python API from a notebook (docs/python-api.md): sets built in Python are held to the
rules a file is, refusals name keyword arguments instead of flags (while the CLI keeps its
own), `save_baseline` and a printable `Conclusion` are there, the target's types are
exported, and what a face is built from lives in `verdryx_core.face`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import verdryx_core
import verdryx_core.face
from verdryx_core import (
    Conclusion,
    EvalCase,
    EvalSet,
    EvalSetError,
    EvalSettings,
    GatePolicy,
    TargetCase,
    TargetResult,
    TargetUsage,
    UsageError,
    compare,
    conclude,
    evaluate,
    find_baseline,
    load_evalsets,
    save_baseline,
)
from verdryx_core.cli import main
from verdryx_core.conclusion import BaselineRefusedError
from verdryx_core.runs import Baseline

YES = {"id": "q", "prompt": "say yes", "expected": "yes", "output": "yes"}


def _cases(n: int = 3) -> tuple[EvalCase, ...]:
    return tuple(
        EvalCase(id=f"q{i}", prompt="say yes", expected="yes", output="yes") for i in range(n)
    )


def test_a_python_built_set_with_an_unknown_grader_is_refused_like_a_file(tmp_path: Path) -> None:
    bad = EvalCase(id="greet", prompt="hi", grader="exect", expected="Hi!", output="Hi!")
    with pytest.raises(EvalSetError) as built:
        evaluate([EvalSet(id="nb", cases=(*_cases(1), bad))])
    path = tmp_path / "nb.evalset.json"
    path.write_text(json.dumps({"id": "nb", "cases": [YES, bad.to_dict()]}))
    with pytest.raises(EvalSetError) as from_file:
        load_evalsets([path])
    assert str(built.value).startswith("eval set 'nb' (built in Python): case 'greet' (#2): ")
    assert (built.value.case, built.value.field) == (from_file.value.case, "grader")
    assert built.value.detail == from_file.value.detail  # the same rule, the same words
    assert "'exect' is not a grader" in built.value.detail


@pytest.mark.parametrize(
    ("case", "field"),
    [
        (EvalCase(id="r", prompt="p", grader="regex", expected="(", output="x"), "expected"),
        (EvalCase(id="m", prompt="p", expected="x", output="x", min_score=0.0), "min_score"),
    ],
)
def test_every_rule_of_a_file_applies(case: EvalCase, field: str) -> None:
    with pytest.raises(EvalSetError) as caught:
        evaluate([EvalSet(id="nb", cases=(case,))])
    assert caught.value.field == field


def test_a_duplicate_id_and_a_replaced_loaded_set_are_checked(tmp_path: Path) -> None:
    twice = EvalSet(id="nb", cases=(*_cases(1), *_cases(1)))
    with pytest.raises(EvalSetError, match="duplicate id"):
        evaluate([twice])
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps({"id": "s", "cases": [YES]}))
    (loaded,) = load_evalsets([path])
    assert evaluate([loaded]).mean_score == 1.0
    broken = dataclasses.replace(
        loaded, cases=(dataclasses.replace(loaded.cases[0], grader="nosuch"),)
    )
    with pytest.raises(EvalSetError) as caught:
        evaluate([broken])
    assert str(caught.value).startswith(f"{path}: case 'q' (#1): field 'grader'")


def test_a_valid_python_set_grades_as_its_file_would(tmp_path: Path) -> None:
    workspace = EvalCase(
        id="w",
        prompt="write hello",
        grader="contract",
        output="done",
        contract={
            "success_criteria": [
                {"id": "g", "type": "file_contains", "path": "hello.txt", "pattern": "hello"}
            ]
        },
        workspace={"files": {"hello.txt": "hello\n"}},
    )
    run = evaluate([EvalSet(id="nb", cases=(*_cases(2), workspace))])
    assert [score.value for score in run.scores] == [1.0, 1.0, 1.0]
    path = tmp_path / "nb.evalset.json"
    path.write_text(
        json.dumps({"id": "nb", "cases": [c.to_dict() for c in _cases(2)] + [workspace.to_dict()]})
    )
    from_file = evaluate([path])
    assert [s.fingerprint for s in run.scores] == [s.fingerprint for s in from_file.scores]


def _run_and_baseline(**baseline: str) -> tuple[verdryx_core.EvalRun, Baseline]:
    run = evaluate([EvalSet(id="nb", cases=_cases())])
    base = Baseline.from_run(dataclasses.replace(run, **baseline), id="b", label="v1")
    return run, base


def test_refusals_name_the_keyword_argument_not_a_flag(tmp_path: Path) -> None:
    run, other_model = _run_and_baseline(model="claude-haiku-4-5")
    outcome = compare(run, other_model)
    assert outcome.refused is not None
    assert "GatePolicy(allow_model_change=True)" in outcome.refused
    assert "--" not in outcome.refused
    assert compare(run, other_model, gate=GatePolicy(allow_model_change=True)).refused is None
    with pytest.raises(BaselineRefusedError) as partial:
        save_baseline(dataclasses.replace(run, partial=True), "v1")
    assert "pass allow_partial=True to save_baseline" in str(partial.value)
    with pytest.raises(UsageError) as unknown:
        find_baseline("v9", root=tmp_path)
    assert str(unknown.value).endswith("save one with save_baseline(run, LABEL)")
    judged = EvalCase(id="j", prompt="p", grader="llm_judge", rubric="r", output="x")
    (score,) = evaluate([EvalSet(id="j", cases=(judged,))]).scores
    assert "pass EvalSettings.judge MODEL" in (score.unmeasured or "")
    settings = EvalSettings(flags=verdryx_core.face.CLI_FLAGS)
    (cli_score,) = evaluate([EvalSet(id="j", cases=(judged,))], settings).scores
    assert "pass --judge MODEL" in (cli_score.unmeasured or "")


def test_the_command_line_keeps_its_own_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "s.db")
    evaluate([EvalSet(id="nb", cases=_cases(1))], store=db)
    code = main(["drift", "--baseline", "v9", "--root", str(tmp_path), "--db", db])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip().endswith("save one with `verdryx baseline RUN_ID --label LABEL`"), err


def test_save_baseline_and_a_printable_conclusion(tmp_path: Path) -> None:
    run = evaluate([EvalSet(id="nb", cases=_cases())])
    saved = save_baseline(run, "v1", root=tmp_path)
    assert saved.path == tmp_path / ".verdryx" / "baselines" / "v1.json"
    baseline = find_baseline("v1", root=tmp_path)
    conclusion = conclude(run, baseline=baseline, store=tmp_path / "s.db")
    assert isinstance(conclusion, Conclusion) and conclusion.exit == "ok"
    text = str(conclusion)
    assert text.splitlines()[0].startswith(f"run {run.id}: mean 1.000 over 3 measured case(s)")
    assert "gate vs v1: on-track" in text and text.splitlines()[-1] == "exit: ok"


def test_the_targets_types_are_exported_and_face_types_live_in_face() -> None:
    def answer(case: TargetCase) -> TargetResult:
        return TargetResult(output="yes", usage=TargetUsage(input_tokens=3, output_tokens=1))

    cases = (EvalCase(id="a", prompt="say yes", expected="yes"),)
    run = evaluate([EvalSet(id="t", cases=cases)], target=answer)
    assert run.mean_score == 1.0 and run.total_tokens == 4
    assert {"TargetCase", "TargetResult", "TargetUsage"} <= set(verdryx_core.__all__)
    assert "Evaluation" not in verdryx_core.__all__
    assert verdryx_core.face.Evaluation is verdryx_core.Evaluation  # kept resolvable
    for name in verdryx_core.face.__all__:
        assert getattr(verdryx_core.face, name) is not None, name
    assert set(verdryx_core.face.PYTHON_FLAGS) == set(verdryx_core.face.CLI_FLAGS)
