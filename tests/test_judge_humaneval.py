"""Calibration on data whose truth nobody here decided (docs/calibrating-the-judge.md, "A
worked example"): HumanEval solutions and mutations, labelled pass / fail by running their own
tests, judged through the real anthropic SDK by a fake judge with a known error profile, and
the stub judge; every figure checked against scikit-learn."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, recall_score

from tests.fakes.anthropic_server import FakeAnthropic, RecordedRequest, Reply, message_reply
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.evaluation import EvalSettings, evaluate
from verdryx_core.judge.calibration import (
    Calibration,
    agreement,
    corrected_rate,
    judged_samples,
    match_labels,
    read_labels,
)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "calibration"
SET = FIXTURES / "humaneval-set.json"
LABELS = FIXTURES / "humaneval.labels.jsonl"
JUDGE = "claude-haiku-4-5"


def _script() -> ModuleType:
    path = ROOT / "scripts" / "humaneval_calibration.py"
    spec = importlib.util.spec_from_file_location("humaneval_calibration", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_the_labels_are_what_the_tests_say() -> None:
    """Re-run every program's own tests: the committed labels are exactly their verdicts."""
    evalset = load_evalset(SET)
    verdicts = _script().passes_tests(
        [
            {
                "program": str(case.output),
                "test": case.metadata["test"],
                "entry_point": case.metadata["entry_point"],
            }
            for case in evalset.cases
        ]
    )
    labels = {label.case_id: label for label in read_labels([LABELS])}
    assert len(evalset.cases) == len(labels) == 80
    for case, passed in zip(evalset.cases, verdicts, strict=True):
        assert labels[case.id].label == ("pass" if passed else "fail"), case.id
        assert labels[case.id].output_sha256 == _sha(str(case.output))
    # Both classes are there in numbers the correction accepts.
    assert 20 <= sum(verdicts) <= 60


def _profiled_judge(truth: dict[str, bool]):  # type: ignore[no-untyped-def]
    """A judge that knows the truth and errs on a fixed share: it fails a correct program
    whose hash ends in 0 (of 16 hex digits: TPR about 15/16) and passes a wrong one whose hash
    ends in 0-3 (TNR about 12/16)."""

    def respond(request: RecordedRequest) -> Reply:
        text = request.user_text
        output = text.split("<output>\n", 1)[1].rsplit("\n</output>", 1)[0]
        sha = _sha(output)
        right = truth[sha]
        wrong_way = sha[-1] == "0" if right else sha[-1] in "0123"
        judged = right != wrong_way
        verdict = {"score": 1.0 if judged else 0.0, "reason": "read the code"}
        return message_reply(tool_uses=[("record_verdict", verdict)])

    return respond


def _figures_match_sklearn(human: list[bool], judge: list[bool], figures: object) -> None:
    [[tn, fp], [fn, tp]] = confusion_matrix(human, judge, labels=[False, True])
    assert figures.table.to_dict() == {"tp": tp, "fn": fn, "fp": fp, "tn": tn}  # type: ignore[attr-defined]
    assert figures.kappa == pytest.approx(cohen_kappa_score(human, judge))  # type: ignore[attr-defined]
    assert figures.tpr == pytest.approx(recall_score(human, judge, pos_label=True))  # type: ignore[attr-defined]
    assert figures.tnr == pytest.approx(recall_score(human, judge, pos_label=False))  # type: ignore[attr-defined]


def test_a_judge_with_a_known_error_profile_through_the_sdk(
    anthropic_env: FakeAnthropic, tmp_path: Path
) -> None:
    labels = read_labels([LABELS])
    truth = {label.output_sha256: label.label == "pass" for label in labels}
    anthropic_env.responder = _profiled_judge(truth)
    run = evaluate([SET], EvalSettings(judge=JUDGE), store=tmp_path / "v.db")
    assert run.complete and len(run.measured) == 80
    matched = match_labels(judged_samples(run), labels)
    assert matched.stale == 0 and matched.unlabelled == 0
    figures = agreement(matched)
    human, judge = matched.human, matched.judge
    _figures_match_sklearn(human, judge, figures)
    # The profile the fake was built with, read back: it errs both ways, but rarely.
    assert 0 < figures.table.fn < figures.table.tp and 0 < figures.table.fp < figures.table.tn
    assert figures.kappa is not None and 0.4 < figures.kappa < 1.0
    # The corrected rate, by hand from sklearn's TPR / TNR: the Rogan-Gladen estimator.
    tpr = recall_score(human, judge, pos_label=True)
    tnr = recall_score(human, judge, pos_label=False)
    observed = sum(judge) / len(judge)
    rate = corrected_rate(judge, Calibration(human=tuple(human), judge=tuple(judge)))
    assert rate.observed == pytest.approx(observed)
    assert rate.corrected == pytest.approx(
        min(1.0, max(0.0, (observed + tnr - 1) / (tpr + tnr - 1)))
    )
    # Calibrated on the same labels it corrects, the estimate lands on the true rate.
    assert rate.corrected == pytest.approx(sum(human) / len(human), abs=0.02)
    assert rate.ci is not None and rate.ci[0] <= sum(human) / len(human) <= rate.ci[1]


def test_the_stub_judge_passes_everything_and_agrees_by_chance_only() -> None:
    labels = read_labels([LABELS])
    run = evaluate([SET], EvalSettings(judge="stub"))
    matched = match_labels(judged_samples(run), labels)
    figures = agreement(matched)
    human, judge = matched.human, matched.judge
    assert all(judge)
    assert figures.kappa == pytest.approx(cohen_kappa_score(human, judge)) == 0.0
    assert figures.tpr == 1.0 and figures.tnr == 0.0
    # A judge no better than chance cannot be corrected for: the gate would refuse.
    shortfall = Calibration(human=tuple(human), judge=tuple(judge)).shortfall()
    assert shortfall is not None and "no better than chance" in shortfall
    assert json.dumps(figures.to_dict())  # JSON-ready as `verdryx judge-agreement --json`
