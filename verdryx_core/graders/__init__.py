"""Graders: one module per kind, one shape (`Grader.grade(case, output, context) -> Grade`)."""

from __future__ import annotations

from collections.abc import Mapping

from verdryx_core.graders.base import Grade, GradeContext, Grader
from verdryx_core.graders.exact import ExactGrader
from verdryx_core.graders.outcome_tag import OutcomeTagGrader
from verdryx_core.graders.regex import RegexGrader
from verdryx_core.graders.tool_trace import ToolTraceGrader
from verdryx_core.llm.base import ModelAdapter
from verdryx_core.typryx import TypryxClient

__all__ = [
    "ExactGrader",
    "Grade",
    "GradeContext",
    "Grader",
    "OutcomeTagGrader",
    "RegexGrader",
    "ToolTraceGrader",
    "build_graders",
]


def build_graders(
    *,
    outcome_map: Mapping[str, float] | None = None,
    judge: ModelAdapter | None = None,
    typed_client: TypryxClient | None = None,
) -> dict[str, Grader]:
    """The graders for one run. Graders that cost money (the LLM judge, the typed verdict
    service) are present only when their dependency is given: nothing is paid by default."""
    graders: dict[str, Grader] = {
        "exact": ExactGrader(),
        "regex": RegexGrader(),
        "outcome_tag": OutcomeTagGrader(outcome_map),
        "tool_trace": ToolTraceGrader(),
    }
    # Free and deterministic, so always present; imported lazily like the paid graders.
    from verdryx_core.graders.contract import ContractGrader

    graders["contract"] = ContractGrader()
    if judge is not None:
        from verdryx_core.graders.llm_judge import LLMJudgeGrader

        graders["llm_judge"] = LLMJudgeGrader(judge)
    if typed_client is not None:
        from verdryx_core.graders.typed import TypedGrader

        graders["typed"] = TypedGrader(typed_client)
    return graders
