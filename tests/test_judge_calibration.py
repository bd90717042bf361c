"""The judge's calibration (docs/calibrating-the-judge.md): labels files, agreement figures
checked against scikit-learn, the Rogan-Gladen correction checked by simulation, stored
figures and the gate's refusals."""

from __future__ import annotations

import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score, confusion_matrix, recall_score

from tests.calibration_support import judged_run, label_of
from verdryx_core.gating.compare import GatePolicy, compare
from verdryx_core.judge.calibration import (
    MIN_LABELS_PER_CLASS,
    Calibration,
    LabelError,
    agreement,
    append_label,
    judged_samples,
    match_labels,
    output_sha256,
    read_labels,
    rogan_gladen,
    save_figures,
)
from verdryx_core.judge.calibration.judge_check import check_judge
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import Store

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "judge_correction.py"

pairs = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60)


def _labelled(drawn: list[tuple[bool, bool]]) -> tuple[EvalRun, list]:
    """A run whose judge said `judge` on each case, and labels saying `human`."""
    run = judged_run([(0.9 if j else 0.1, f"answer {i}") for i, (_, j) in enumerate(drawn)])
    labels = [label_of(run, i, "pass" if h else "fail") for i, (h, _) in enumerate(drawn)]
    return run, labels


@settings(max_examples=60, deadline=None)
@given(pairs)
def test_kappa_tpr_tnr_and_confusion_equal_sklearn(drawn: list[tuple[bool, bool]]) -> None:
    human = [h for h, _ in drawn]
    judge = [j for _, j in drawn]
    run, labels = _labelled(drawn)
    figures = agreement(match_labels(judged_samples(run), labels))
    [[tn, fp], [fn, tp]] = confusion_matrix(human, judge, labels=[False, True])
    assert figures.table.to_dict() == {"tp": tp, "fn": fn, "fp": fp, "tn": tn}
    assert figures.n == len(drawn)
    assert figures.agreement == pytest.approx((tp + tn) / len(drawn))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns where kappa is undefined
        theirs = cohen_kappa_score(human, judge, labels=[False, True])
    if figures.kappa is None:
        assert np.isnan(theirs)
    else:
        assert figures.kappa == pytest.approx(theirs, abs=1e-12)
        if len(drawn) >= 2:
            assert figures.kappa_ci is not None
    if any(human):
        assert figures.tpr == pytest.approx(recall_score(human, judge, pos_label=True))
    else:
        assert figures.tpr is None
    if not all(human):
        assert figures.tnr == pytest.approx(recall_score(human, judge, pos_label=False))
    else:
        assert figures.tnr is None
    assert len(figures.disagreements) == fp + fn


def test_the_corrected_rate_is_unbiased_in_simulation() -> None:
    """A judge with TPR 0.9 / TNR 0.8, 200 cases of true pass rate 0.6, TPR and TNR measured
    on 50 labels of each class: over 2,000 simulations the corrected rate's mean is within
    one point of 0.6, while the raw judged rate is about 0.62 (biased)."""
    rng = np.random.default_rng(7)
    sims, cases, per_class, truth = 2000, 200, 50, 0.6
    true_pass = rng.random((sims, cases)) < truth
    judged = np.where(true_pass, rng.random((sims, cases)) < 0.9, rng.random((sims, cases)) < 0.2)
    tpr = rng.binomial(per_class, 0.9, size=sims) / per_class
    tnr = rng.binomial(per_class, 0.8, size=sims) / per_class
    raw = judged.mean(axis=1)
    corrected = rogan_gladen(raw, tpr, tnr)
    assert abs(np.mean(corrected) - truth) < 0.01
    assert abs(np.mean(raw) - truth) > 0.015  # the correction has something to correct


def test_the_corrected_interval_covers_at_the_nominal_rate() -> None:
    """A small run of the coverage benchmark (benchmarks/judge_correction.py runs 2,000)."""
    spec = importlib.util.spec_from_file_location("judge_correction", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    covered, _ = module.coverage(simulations=60, seed=3)
    assert covered >= 0.85


def test_labels_files_read_and_bad_lines_name_file_line_and_field(tmp_path: Path) -> None:
    run = judged_run([(0.9, "hello")])
    good = tmp_path / "a.labels.jsonl"
    append_label(good, label_of(run, 0, "pass"))
    good.write_text(
        good.read_text() + '\n{"eval_set_id": "support", "case_id": "c0", "output": "hello", '
        '"label": 0.2, "labeler": "ann", "note": "rude"}'
    )  # no trailing newline: the next append must still start a line of its own
    append_label(good, label_of(run, 0, "skip"))
    labels = read_labels([good])
    assert [label.label for label in labels] == ["pass", 0.2, "skip"]
    assert labels[0].output_sha256 == labels[1].output_sha256
    bad = {
        '{"case_id": "c0", "output": "x", "label": "pass"}': "field 'eval_set_id': missing",
        '{"eval_set_id": "s", "case_id": "c0", "label": "pass"}': "field 'output_sha256': missing",
        '{"eval_set_id": "s", "case_id": "c0", "output": "x", "label": "good"}': "field 'label'",
        '{"eval_set_id": "s", "case_id": "c0", "output": "x", "label": 1.5}': "field 'label'",
        '{"eval_set_id": "s", "case_id": "c0", "output": "x", "label": "pass", "who": 1}': "'who'",
        '{"eval_set_id": "s", "case_id": "c0", "output_sha256": "abc", "label": "pass"}': "64",
        "[1, 2]": "expected a JSON object",
        "{oops": "not a JSON object",
    }
    for line, words in bad.items():
        path = tmp_path / "bad.labels.jsonl"
        path.write_text(line + "\n")
        with pytest.raises(LabelError) as caught:
            read_labels([path])
        message = str(caught.value)
        assert message.startswith(f"{path}:1: ") and words in message, message
        assert "\n" not in message
    with pytest.raises(LabelError, match="no such labels file"):
        read_labels([tmp_path / "missing.labels.jsonl"])


def test_a_label_of_another_output_is_stale_and_not_used() -> None:
    run = judged_run([(0.9, "now"), (0.1, "also now"), (0.8, "unlabelled")])
    labels = [
        label_of(run, 0, "fail", output="what it said before"),
        label_of(run, 1, "fail"),
        label_of(run, 1, "pass"),  # a relabel: the last label wins
    ]
    matched = match_labels(judged_samples(run), labels)
    assert matched.stale == 1
    assert matched.unlabelled == 2
    assert [(s.case_id, human) for s, human, _ in matched.pairs] == [("c1", True)]


def test_a_numeric_label_is_read_against_the_pass_bar() -> None:
    run = judged_run([(0.9, "a"), (0.9, "b")])
    matched = match_labels(judged_samples(run), [label_of(run, 0, 0.7), label_of(run, 1, 0.3)])
    assert matched.human == [True, False]


def _calibrated(
    positives: int, negatives: int, *, tpr: float = 0.9, tnr: float = 0.8
) -> Calibration:
    hits = round(positives * tpr)
    rejections = round(negatives * tnr)
    return Calibration(
        human=(True,) * positives + (False,) * negatives,
        judge=(True,) * hits
        + (False,) * (positives - hits)
        + (False,) * rejections
        + (True,) * (negatives - rejections),
    )


def _baseline(run: EvalRun) -> Baseline:
    return Baseline.from_run(run, id="b1", label="v1")


def test_the_correction_refuses_without_enough_labels_and_says_how_many() -> None:
    base = judged_run([(0.9, f"x{i}") for i in range(30)], run_id="base")
    now = judged_run([(0.9, f"x{i}") for i in range(30)], run_id="now")
    outcome = compare(
        now,
        _baseline(base),
        gate=GatePolicy(judge_correction=True),
        calibration=_calibrated(MIN_LABELS_PER_CLASS, 5),
    )
    assert outcome.exit == "refused"
    assert outcome.refused is not None
    assert f"label 0 more pass and {MIN_LABELS_PER_CLASS - 5} more fail" in outcome.refused
    assert "(labels: RunPolicy.labels)" in outcome.refused  # compare() words it for Python
    bare = compare(now, _baseline(base), gate=GatePolicy(judge_correction=True))
    assert bare.exit == "refused" and "it has 0 and 0" in (bare.refused or "")


def test_the_corrected_gate_sees_a_drop_in_judged_pass_rate() -> None:
    base = judged_run([(0.9, f"x{i}") for i in range(60)], run_id="base")
    # 30 of the 60 cases now fail the judge: corrected, the true rate fell a lot.
    now = judged_run([(0.1 if i % 2 else 0.9, f"x{i}") for i in range(60)], run_id="now")
    outcome = compare(
        now,
        _baseline(base),
        gate=GatePolicy(judge_correction=True),
        calibration=_calibrated(40, 40),
    )
    corrected = outcome.corrected
    assert corrected is not None and corrected.n == 60
    expected_delta = (0.5 - 1.0) / (0.9 + 0.8 - 1.0)
    assert corrected.delta == pytest.approx(
        float(rogan_gladen(0.5, 0.9, 0.8) - rogan_gladen(1.0, 0.9, 0.8))
    )
    assert corrected.delta == pytest.approx(max(expected_delta, -1.0), abs=0.3)
    assert corrected.regressed and outcome.verdict == "regressed"


def test_figures_are_stored_per_fingerprint_and_a_drop_is_judge_drift(tmp_path: Path) -> None:
    outputs = [f"answer {i}" for i in range(40)]
    truth = [i % 2 == 0 for i in range(40)]
    good = judged_run(
        [(0.9 if t else 0.1, o) for t, o in zip(truth, outputs, strict=True)], run_id="good"
    )
    labels = [label_of(good, i, "pass" if t else "fail") for i, t in enumerate(truth)]
    # Re-judged: the same outputs, now the judge passes almost everything.
    worse = judged_run(
        [
            (0.9 if t or i % 5 else 0.1, o)
            for i, (t, o) in enumerate(zip(truth, outputs, strict=True))
        ],
        run_id="worse",
    )
    other = judged_run([(0.9, o) for o in outputs], run_id="other", judge="another-judge")
    with Store.open(tmp_path / "v.db") as store:
        first = check_judge(good, labels, store)
        assert first.agreement.kappa == 1.0 and first.drifts == ()
        save_figures(store, good.id, first.agreement)
        again = check_judge(worse, labels, store)
        assert again.agreement.kappa is not None and again.agreement.kappa < 0.5
        assert len(again.drifts) == 1 and "kappa" in again.drifts[0]
        assert again.calibration.drift
        # Another judge has no stored figure: none is reused for it.
        assert check_judge(other, labels, store).drifts == ()
    base = _baseline(good)
    policy = GatePolicy(require_calibrated_judge=True)
    refused = compare(worse, base, gate=policy, calibration=again.calibration)
    assert refused.exit == "refused" and "agrees less" in (refused.refused or "")
    warned = compare(worse, base, calibration=again.calibration)
    assert warned.exit != "refused"


def test_a_human_label_on_a_case_needs_its_recorded_output(tmp_path: Path) -> None:
    from verdryx_core.errors import EvalSetError
    from verdryx_core.evalsets.load import load_evalset
    from verdryx_core.judge.calibration import case_labels

    case = {"id": "c0", "prompt": "p", "grader": "llm_judge", "rubric": "r", "human_label": 0.8}
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps({"id": "s", "cases": [case | {"output": "an answer"}]}))
    [label] = case_labels([load_evalset(path)])
    assert (label.case_id, label.label) == ("c0", 0.8)
    assert label.output_sha256 == output_sha256("an answer")
    path.write_text(json.dumps({"id": "s", "cases": [case]}))
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    assert "human_label" in str(caught.value) and "c0" in str(caught.value)
