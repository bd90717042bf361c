"""The one evaluation pipeline, driven by both faces (`verdryx eval` and the pytest plugin).

settings -> scorer (graders + where the output comes from) -> calls ahead in the bounded
pool -> Score (pass bar decided once) -> run assembly -> saving. See docs/architecture.md.
"""

from __future__ import annotations

from verdryx_core.errors import TargetCallError
from verdryx_core.evaluation.assembly import assemble_run
from verdryx_core.evaluation.bar import pass_bar, stability
from verdryx_core.evaluation.calls import CallTally, ModelCalls
from verdryx_core.evaluation.pipeline import Pipeline
from verdryx_core.evaluation.prefetch import Ahead, Work, call_ahead, score_all, start_ahead
from verdryx_core.evaluation.saving import Promises, promises_of, save_run
from verdryx_core.evaluation.scoring import CaseScorer, decided, missing_grader_reason
from verdryx_core.evaluation.settings import (
    DEFAULT_MIN_SCORE,
    EvalSettings,
    judge_in_effect,
)
from verdryx_core.evaluation.sources import (
    ModelOutput,
    OutputSource,
    Produced,
    RecordedOutput,
    source_for,
)
from verdryx_core.evaluation.target_output import TargetOutput, target_of

__all__ = [
    "DEFAULT_MIN_SCORE",
    "Ahead",
    "CallTally",
    "CaseScorer",
    "EvalSettings",
    "ModelCalls",
    "ModelOutput",
    "OutputSource",
    "Pipeline",
    "Produced",
    "Promises",
    "RecordedOutput",
    "TargetCallError",
    "TargetOutput",
    "Work",
    "assemble_run",
    "call_ahead",
    "decided",
    "judge_in_effect",
    "missing_grader_reason",
    "pass_bar",
    "promises_of",
    "save_run",
    "score_all",
    "source_for",
    "stability",
    "start_ahead",
    "target_of",
]
