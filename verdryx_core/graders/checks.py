"""`checks`: a case graded by several graders, all on one result (docs/scenarios.md,
"Checks over the whole result").

Each check is graded as a case of its own grader would be (the same prompt and conversation,
the check's `expected` and options), and its result is kept (`Grade.checks`). A whole run's
output (`CaseOutput`: the text, the tool calls and the metadata of one target or model call)
gives each check the part its `on` names (`verdryx_core.graders.check_parts`). The case's
score is the checks' weighted mean, or with `"combine": "all"` their lowest score, so the
case reaches its pass bar only when every check does. If any check is unmeasured, so is the
case: a mean over the checks that happened to be measured would be a different quantity
from one run to the next.

A check keeps its own pass bar (`CheckResult.bar`): its `min_score`, else its grader's own
(tool_trace, final_state and exec 1.0). The scorer then passes the case only when every such
check reaches it, beside the case's own bar (`verdryx_core.evaluation.scoring`): half-fixed
code is not a pass because a polite reply carried it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar, Protocol, final

from verdryx_core.cases import MODEL_FREE_GRADERS, Check, EvalCase
from verdryx_core.graders.base import Grade, GradeContext, Grader
from verdryx_core.graders.check_parts import MissingPart, read_part
from verdryx_core.runs import CheckResult

__all__ = ["ChecksGrader", "checks_reason", "combined", "weighted_mean"]


def weighted_mean(results: list[CheckResult]) -> float:
    total = math.fsum(result.weight for result in results)
    value = math.fsum(result.weight * (result.value or 0.0) for result in results) / total
    return min(1.0, max(0.0, value))


def combined(results: list[CheckResult], combine: str) -> float:
    """The case's score from its (all measured) checks: `mean` weighted, `all` the lowest."""
    if combine == "all":
        return min(result.value or 0.0 for result in results)
    return weighted_mean(results)


def checks_reason(results: list[CheckResult]) -> str:
    """One part per check: `#1 exact 1.000 (w 1)`, with the part it read when that is not its
    grader's own (`#2 numeric on metadata.refund 1.000 (w 1)`) and its reason when it has
    one."""
    parts = []
    for index, result in enumerate(results, start=1):
        shown = "--" if result.value is None else f"{result.value:.3f}"
        why = result.unmeasured or result.reason
        own = "tool_calls" if result.grader == "tool_trace" else "output"
        on = f" on {result.on}" if result.on and result.on != own else ""
        below = f", below its bar {result.bar:g}" if result.short else ""
        parts.append(
            f"#{index} {result.grader}{on} {shown} (w {result.weight:g}{below})"
            + (f": {why}" if why else "")
        )
    return "; ".join(parts)


class _Graders(Protocol):
    """The run's grader table (`verdryx_core.graders.table`), as a check looks one up."""

    def find(self, name: str) -> Grader | None: ...

    def missing_reason(self, name: str) -> str: ...


def _shown_part(check: Check) -> str | None:
    """The part a check read, as its result names it; None for a grader that reads the world
    (a workspace), not the output, unless the check says otherwise."""
    if check.on is None and check.grader in MODEL_FREE_GRADERS:
        return None
    return check.reads


@final
class ChecksGrader:
    kind: ClassVar[str] = "checks"

    def __init__(self, graders: _Graders, flags: Mapping[str, str]) -> None:
        self.graders = graders
        self.flags = flags

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        results: list[CheckResult] = []
        tokens = 0
        cost = 0.0
        for check in case.checks or ():
            grader = self.graders.find(check.grader)
            if grader is None:
                # The same reason a single-grader case gets, naming the flag that enables it.
                why = self.graders.missing_reason(check.grader)
                results.append(
                    CheckResult(
                        grader=check.grader,
                        weight=check.weight,
                        value=None,
                        unmeasured=why,
                        on=_shown_part(check),
                        bar=check.min_score,
                    )
                )
                continue
            bar = check.min_score
            if bar is None:
                bar = getattr(grader, "default_min_score", None)
            sub = replace(
                case,
                grader=check.grader,
                expected=check.expected,
                rubric=check.rubric,
                options=check.options,
                checks=None,
                expected_tools=check.expected_tools,
                expected_tool_calls=check.expected_tool_calls,
                expected_tool_calls_any=check.expected_tool_calls_any,
                contract=check.contract,
            )
            try:
                part = read_part(output, check)
            except MissingPart as absent:
                results.append(
                    CheckResult(
                        grader=check.grader,
                        weight=check.weight,
                        value=0.0,
                        reason=str(absent),
                        on=_shown_part(check),
                        bar=bar,
                    )
                )
                continue
            grade = grader.grade(sub, part, context)
            tokens += grade.tokens
            cost += grade.cost_usd
            results.append(
                CheckResult(
                    grader=check.grader,
                    weight=check.weight,
                    value=grade.value,
                    unmeasured=grade.unmeasured,
                    reason=grade.reason,
                    on=_shown_part(check),
                    failed_by_output=grade.failed_by_output,
                    bar=bar,
                )
            )
        reason = checks_reason(results)
        missing = [r for r in results if r.value is None]
        if not results or missing:
            why = "no checks" if not results else f"check {missing[0].grader!r} is unmeasured"
            return Grade(
                value=None,
                unmeasured=f"{why}: {reason}",
                reason=reason,
                tokens=tokens,
                cost_usd=cost,
                checks=tuple(results),
            )
        # A check that could not grade what the agent produced scored 0: so does its part of
        # the case, and the case says why (docs/outcomes.md, "What counts as unmeasured").
        failed = [
            f"check #{number} {result.grader}: {result.failed_by_output}"
            for number, result in enumerate(results, start=1)
            if result.failed_by_output is not None
        ]
        return Grade(
            value=combined(results, case.combine),
            reason=reason,
            tokens=tokens,
            cost_usd=cost,
            checks=tuple(results),
            failed_by_output="; ".join(failed) if failed else None,
        )
