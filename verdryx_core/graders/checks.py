"""`checks`: a case graded by several graders; its score is their weighted mean.

Each check is graded as a case of its own grader would be (the same output, the check's
`expected` and options), and its result is kept (`Grade.checks`). A whole run's output
(`CaseOutput`: the text and the tool calls of one target or model call) gives each check its
part: tool_trace the calls, every other grader the text. If any check is
unmeasured, so is the case: a mean over the checks that happened to be measured would be a
different quantity from one run to the next.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar, Protocol, final

from verdryx_core.cases import CaseOutput, EvalCase
from verdryx_core.graders.base import Grade, GradeContext, Grader
from verdryx_core.runs import CheckResult

__all__ = ["ChecksGrader", "checks_reason", "weighted_mean"]


def weighted_mean(results: list[CheckResult]) -> float:
    total = math.fsum(result.weight for result in results)
    value = math.fsum(result.weight * (result.value or 0.0) for result in results) / total
    return min(1.0, max(0.0, value))


def checks_reason(results: list[CheckResult]) -> str:
    """One line per check: `#1 exact 1.000 (w 1)`, with the check's reason when it has one."""
    parts = []
    for index, result in enumerate(results, start=1):
        shown = "--" if result.value is None else f"{result.value:.3f}"
        why = result.unmeasured or result.reason
        parts.append(
            f"#{index} {result.grader} {shown} (w {result.weight:g})" + (f": {why}" if why else "")
        )
    return "; ".join(parts)


class _Graders(Protocol):
    """The run's grader table (`verdryx_core.graders.table`), as a check looks one up."""

    def find(self, name: str) -> Grader | None: ...

    def missing_reason(self, name: str) -> str: ...


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
                        grader=check.grader, weight=check.weight, value=None, unmeasured=why
                    )
                )
                continue
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
            part = output.part_for(check.grader) if isinstance(output, CaseOutput) else output
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
        return Grade(
            value=weighted_mean(results),
            reason=reason,
            tokens=tokens,
            cost_usd=cost,
            checks=tuple(results),
        )
