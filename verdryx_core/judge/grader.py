"""`llm_judge`: a judge model scores the output against the case's rubric.

The judge's reason travels in the Grade (shown in failure reports). A reading that is not a
verdict (no `record_verdict` call, a score out of range, two verdicts) is the judge's answer
about this output, which the output can steer: it scores 0, never unmeasured, and never a
clamped score. A 2xx body nobody can read (a proxy's error page) says nothing about the
output: unmeasured (docs/outcomes.md, "What counts as unmeasured"). The judge call is paid
either way, so tokens and cost are kept on every path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, final

from verdryx_core.cases import EvalCase
from verdryx_core.errors import UsageError
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.case_rules import CaseProblem, text_expectation
from verdryx_core.judge.prompt import judged_task
from verdryx_core.llm.base import Judgement, ModelAdapter
from verdryx_core.llm.wire import UNREADABLE_ANSWER

__all__ = ["LLMJudgeGrader"]


@final
class LLMJudgeGrader:
    kind: ClassVar[str] = "llm_judge"
    #: Grading asks the judge model: prefetched, in the bounded pool.
    remote: ClassVar[bool] = True
    calls: ClassVar[str] = "judge calls"

    @staticmethod
    def check_case(case: Mapping[str, Any]) -> None:
        text_expectation(case, "llm_judge")
        if not case.get("rubric"):
            raise CaseProblem("rubric", "grader 'llm_judge' requires a non-empty 'rubric'")

    def __init__(self, judge: ModelAdapter) -> None:
        self.judge = judge

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        """Judge `output`; `context.repeat` is the sample index under `--verdryx-repeat`
        (each index is a separate cached verdict)."""
        if not case.rubric:
            raise UsageError(
                f"case {case.id} of {context.eval_set_id}: an llm_judge case needs a non-empty "
                "rubric; add a 'rubric' field saying what a good output does"
            )
        judgement = self.judge.judge(
            judged_task(case), str(output), case.rubric, repeat=context.repeat
        )
        return self.to_grade(judgement)

    def to_grade(self, judgement: Judgement) -> Grade:
        """The Grade for a verdict already in hand (the plugin prefetches verdicts in a pool)."""
        tokens = judgement.input_tokens + judgement.output_tokens
        if judgement.score is None:
            why = f"judge {self.judge.model}: {judgement.unmeasured or 'no verdict'}"
            if (judgement.unmeasured or "").startswith(UNREADABLE_ANSWER):
                # The wire's fault (not an answer at all): nothing about this output.
                return Grade.unmeasured_because(why, tokens=tokens, cost_usd=judgement.cost_usd)
            return Grade.output_failure(why, tokens=tokens, cost_usd=judgement.cost_usd)
        return Grade(
            value=judgement.score,
            reason=judgement.reason or None,
            tokens=tokens,
            cost_usd=judgement.cost_usd,
        )
