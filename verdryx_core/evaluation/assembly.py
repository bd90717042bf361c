"""A run assembled from its scores: complete, or incomplete (the face says why), and the
judge recorded only when it graded something."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from verdryx_core import __version__
from verdryx_core.evaluation.settings import EvalSettings
from verdryx_core.runs import EvalRun, Score

__all__ = ["assemble_run"]


def assemble_run(
    *,
    run_id: str,
    settings: EvalSettings,
    started_at: datetime,
    scores: Sequence[Score],
    complete: bool,
    eval_set_ids: Iterable[str] = (),
) -> EvalRun:
    """`scores` in their order; the eval sets are the scored ones plus `eval_set_ids`."""
    judged = any(score.grader == "llm_judge" and score.value is not None for score in scores)
    return EvalRun(
        id=run_id,
        model=settings.model,
        judge_model=settings.judge_model if judged else None,
        agent_id=settings.agent_id,
        started_at=started_at,
        finished_at=datetime.now(UTC),
        eval_set_ids=tuple({score.eval_set_id for score in scores} | set(eval_set_ids)),
        scores=tuple(scores),
        complete=complete,
        plugin_version=__version__,
    )
