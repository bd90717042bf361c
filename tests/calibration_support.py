"""Runs with judged cases, for the calibration tests (docs/calibrating-the-judge.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from verdryx_core.judge.calibration.labels import Label, output_sha256
from verdryx_core.runs import EvalRun, Score

RUBRIC = "Score 1 when the answer is polite and correct."


def judged_run(
    verdicts: Sequence[tuple[float, str]],
    *,
    run_id: str = "run-1",
    judge: str = "claude-judge-1",
    eval_set_id: str = "support",
) -> EvalRun:
    """A complete run of llm_judge cases `c0`, `c1`, ...: (judge score, output) each."""
    scores = tuple(
        Score(
            case_id=f"c{index}",
            eval_set_id=eval_set_id,
            value=value,
            grader="llm_judge",
            passed=value >= 0.5,
            output=output,
            expected=RUBRIC,
            reason=f"reason {index}",
        )
        for index, (value, output) in enumerate(verdicts)
    )
    return EvalRun(
        id=run_id,
        model="stub",
        judge_model=judge,
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        finished_at=datetime(2026, 1, 1, tzinfo=UTC),
        eval_set_ids=(eval_set_id,),
        scores=scores,
    )


def label_of(run: EvalRun, index: int, label: str | float, *, output: str | None = None) -> Label:
    score = run.scores[index]
    return Label(
        eval_set_id=score.eval_set_id,
        case_id=score.case_id,
        output_sha256=output_sha256(output if output is not None else score.output or ""),
        label=label,
        labeler="tester",
    )
