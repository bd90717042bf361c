"""The plugin with human labels (docs/calibrating-the-judge.md): the summary's judge block,
the corrected gate refused with too few labels, and a broken labels file as one line."""

from __future__ import annotations

import hashlib
import json

import pytest
from plugin_support import write_evalset

OUTPUTS = ["Happy to help: your refund is on its way.", "No.", "Read the manual."]


def _labels(pytester: pytest.Pytester, verdicts: list[str]) -> None:
    lines = [
        {
            "eval_set_id": "support",
            "case_id": f"c{index}",
            "output_sha256": hashlib.sha256(output.encode()).hexdigest(),
            "label": verdict,
            "labeler": "ann",
        }
        for index, (output, verdict) in enumerate(zip(OUTPUTS, verdicts, strict=False))
    ]
    (pytester.path / "team.labels.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
    )


def test_labels_give_a_judge_block_and_the_correction_refuses_with_too_few(
    pytester: pytest.Pytester,
) -> None:
    cases = [
        {
            "id": f"c{index}",
            "prompt": "help me",
            "grader": "llm_judge",
            "rubric": "polite",
            "output": output,
        }
        for index, output in enumerate(OUTPUTS)
    ]
    write_evalset(pytester.path, "support", "support", cases)
    _labels(pytester, ["pass", "fail", "fail"])
    db = pytester.path / "v.db"
    first = pytester.runpytest(
        f"--verdryx-db={db}",
        "--verdryx-judge=stub",
        "--verdryx-labels=team.labels.jsonl",
        "--verdryx-save-baseline=v1",
    )
    assert first.ret == 0
    # The stub judge passes everything: 1 of 3 agree, kappa 0, TNR 0.
    first.stdout.fnmatch_lines(
        [
            "*judge vs labels: n 3, agreement 33%, kappa 0.00*, TPR 1.00, TNR 0.00",
            "*pass/pass 1, pass/fail 0, fail/pass 2, fail/fail 0; 2 disagreement(s)*",
        ]
    )
    second = pytester.runpytest(
        f"--verdryx-db={db}",
        "--verdryx-judge=stub",
        "--verdryx-labels=team.labels.jsonl",
        "--verdryx-baseline=v1",
        "--verdryx-judge-correction",
    )
    assert second.ret == pytest.ExitCode.USAGE_ERROR
    second.stdout.fnmatch_lines(
        ["*gate refused:*label 19 more pass and 18 more fail (labels: --verdryx-labels)*"]
    )
    (pytester.path / "team.labels.jsonl").write_text(
        '{"eval_set_id": "support", "label": "pass"}\n'
    )
    broken = pytester.runpytest(
        f"--verdryx-db={db}", "--verdryx-judge=stub", "--verdryx-labels=team.labels.jsonl"
    )
    assert broken.ret == pytest.ExitCode.USAGE_ERROR
    broken.stdout.fnmatch_lines(["*ERROR: *team.labels.jsonl:1: field 'case_id': missing*"])
    assert "Traceback" not in broken.stdout.str()


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist-2"])
def test_cases_human_labels_count_under_xdist_too(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    # Under -n the controller collects no item: the workers send the labels with the scores.
    cases = [
        {
            "id": f"c{index}",
            "prompt": "help me",
            "grader": "llm_judge",
            "rubric": "polite",
            "output": output,
            "human_label": verdict,
        }
        for index, (output, verdict) in enumerate(
            zip(OUTPUTS, ["pass", "fail", "fail"], strict=True)
        )
    ]
    write_evalset(pytester.path, "support", "support", cases)
    result = pytester.runpytest("--no-verdryx-store", "--verdryx-judge=stub", *xdist)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["*judge vs labels: n 3, agreement 33%, kappa 0.00*, TPR 1.00, TNR 0.00"]
    )
