"""Evaluating cases: get the output (recorded, or from the model), grade it, make a Score.

Both faces use this: the CLI's `eval` and the pytest items. Cases that talk to the network
(the model, the judge, the verdict service) are started together in a bounded pool before the
first result is needed; the rest are graded inline, where a pool would only add overhead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any, Final

from verdryx_core.graders.base import Grade, GradeContext, Grader
from verdryx_core.model import EvalCase, Score

__all__ = [
    "DEFAULT_MIN_SCORE",
    "MISSING_GRADER_REASONS",
    "CaseEvaluator",
    "is_remote",
    "pass_bar",
    "stability",
]

DEFAULT_MIN_SCORE: Final = 0.5

#: Why a case whose grader is not configured is skipped: each names the flag that enables it.
MISSING_GRADER_REASONS: Final[Mapping[str, str]] = {
    "llm_judge": "llm_judge cases need a judge model and are never paid for by default: "
    "pass --verdryx-judge MODEL (with --verdryx-model stub the stub judge is used)",
    "typed": "typed cases need the verdict service: pass --verdryx-typed-url URL "
    "(and a key file with --verdryx-typed-key-file or $VERDRYX_TYPRYX_KEY_FILE)",
    "contract": "contract cases need the contracts extra of this build",
}

#: Stored outputs are for reading in reports; beyond this they are cut (and say so).
_MAX_STORED_OUTPUT: Final = 8_000


def pass_bar(case_min_score: float | None, default: float = DEFAULT_MIN_SCORE) -> float:
    return default if case_min_score is None else case_min_score


def stability(samples: Sequence[float], bar: float) -> str | None:
    """stable-pass, stable-fail or flaky across repeated samples; None for a single sample."""
    if len(samples) < 2:
        return None
    passes = sum(1 for value in samples if value >= bar)
    if passes == len(samples):
        return "stable-pass"
    if passes == 0:
        return "stable-fail"
    return "flaky"


def is_remote(case: EvalCase, graders: Mapping[str, Grader]) -> bool:
    """Whether evaluating this case makes a network call (model, judge or verdict service)."""
    if case.grader not in graders:
        return False  # skipped before any call
    return case.needs_model or case.grader in ("llm_judge", "typed")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Sample:
    grade: Grade
    output: Any
    tokens: int
    model_cost_usd: float


class CaseEvaluator:
    """Evaluates cases with one model adapter (may be None: then only recorded outputs)."""

    def __init__(
        self,
        *,
        graders: Mapping[str, Grader],
        adapter: Any = None,
        repeat: int = 1,
        min_score: float = DEFAULT_MIN_SCORE,
    ) -> None:
        self.graders = graders
        self.adapter = adapter
        self.repeat = max(1, repeat)
        self.min_score = min_score

    def evaluate(self, case: EvalCase, context: GradeContext) -> Score:
        """Grade one case; raises ModelCallError on infrastructure failure."""
        grader = self.graders.get(case.grader)
        if grader is None:
            return self._score(case, context, value=None, unmeasured=_missing_reason(case.grader))
        # Repeats sample the model; a recorded output is one fixed measurement.
        rounds = self.repeat if case.needs_model else 1
        samples = [self._sample(case, grader, context, index) for index in range(rounds)]
        measured = [s.grade.value for s in samples if s.grade.value is not None]
        tokens = sum(s.tokens for s in samples)
        model_cost = math.fsum(s.model_cost_usd for s in samples)
        judge_cost = math.fsum(s.grade.cost_usd for s in samples)
        last = samples[-1]
        reasons = [s.grade.reason for s in samples if s.grade.reason]
        if not measured:
            return self._score(
                case,
                context,
                value=None,
                unmeasured=last.grade.unmeasured or "unmeasured",
                tokens=tokens,
                cost_usd=model_cost,
                judge_cost_usd=judge_cost,
                output=last.output,
                reason=reasons[-1] if reasons else None,
            )
        value = math.fsum(measured) / len(measured)
        return self._score(
            case,
            context,
            value=min(1.0, max(0.0, value)),  # guards float sums only; each sample is in [0, 1]
            tokens=tokens,
            cost_usd=model_cost,
            judge_cost_usd=judge_cost,
            output=last.output,
            reason=reasons[-1] if reasons else None,
            samples=tuple(measured) if rounds > 1 else (),
        )

    def prefetch(
        self,
        cases: Iterable[tuple[EvalCase, GradeContext]],
        submit: Callable[..., Future[Score]],
    ) -> dict[int, Future[Score]]:
        """Start every remote case now; returns futures keyed by position in `cases`."""
        return {
            index: submit(self.evaluate, case, context)
            for index, (case, context) in enumerate(cases)
            if is_remote(case, self.graders)
        }

    def _sample(self, case: EvalCase, grader: Grader, context: GradeContext, index: int) -> _Sample:
        output, tokens, cost = self._output(case, index)
        grade = grader.grade(case, output, replace(context, repeat=index))
        return _Sample(
            grade=grade, output=output, tokens=tokens + grade.tokens, model_cost_usd=cost
        )

    def _output(self, case: EvalCase, repeat: int) -> tuple[Any, int, float]:
        if case.output is not None:
            return case.output, 0, 0.0
        if case.grader == "outcome_tag":
            return case.prompt, 0, 0.0
        if case.grader == "contract":
            return None, 0, 0.0
        if self.adapter is None:
            raise RuntimeError(f"case {case.id!r} needs a model and none is configured")
        if case.grader == "tool_trace":
            completion = self.adapter.complete_with_tools(
                case.prompt, list(case.tools or ()), repeat=repeat
            )
            return list(completion.tool_calls), completion.tokens, completion.cost_usd
        completion = self.adapter.complete(case.prompt, repeat=repeat)
        return completion.text, completion.tokens, completion.cost_usd

    def _score(
        self,
        case: EvalCase,
        context: GradeContext,
        *,
        value: float | None,
        unmeasured: str | None = None,
        tokens: int = 0,
        cost_usd: float = 0.0,
        judge_cost_usd: float = 0.0,
        output: Any = None,
        reason: str | None = None,
        samples: tuple[float, ...] = (),
    ) -> Score:
        bar = pass_bar(case.min_score, self.min_score)
        return Score(
            case_id=case.id,
            eval_set_id=context.eval_set_id,
            value=value,
            unmeasured=unmeasured,
            grader=case.grader,
            tokens=tokens,
            cost_usd=cost_usd,
            judge_cost_usd=judge_cost_usd,
            fingerprint=case.fingerprint(),
            passed=None if value is None else value >= bar,
            samples=samples,
            output=_text(output),
            expected=_expected_text(case),
            reason=reason,
        )


def _missing_reason(kind: str) -> str:
    return MISSING_GRADER_REASONS.get(kind, f"no grader is configured for kind {kind!r}")


def _text(output: Any) -> str | None:
    if output is None:
        return None
    text = ", ".join(map(str, output)) if isinstance(output, list | tuple) else str(output)
    if len(text) > _MAX_STORED_OUTPUT:
        return text[:_MAX_STORED_OUTPUT] + f"... [{len(text) - _MAX_STORED_OUTPUT} chars cut]"
    return text


def _expected_text(case: EvalCase) -> str | None:
    if case.grader == "tool_trace":
        return ", ".join(case.expected_tools or ())
    if case.grader == "llm_judge":
        return case.rubric
    return case.expected
