"""`contains` / `icontains`: the expected text appears in the output (`icontains` ignoring
case). The text options of `exact` apply to both sides first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, final

from verdryx_core.cases import EvalCase
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.text import normalize

__all__ = ["ContainsGrader", "IContainsGrader", "contains_score"]


def contains_score(output: str, expected: str, options: Mapping[str, Any] | None = None) -> float:
    options = options or {}
    return 1.0 if normalize(expected, options) in normalize(output, options) else 0.0


def _grade(kind: str, case: EvalCase, output: Any, options: Mapping[str, Any]) -> Grade:
    if case.expected is None:
        raise ValueError(
            f"grader {kind!r} requires case.expected (the text); case {case.id!r} has none"
        )
    text = "" if output is None else str(output)
    value = contains_score(text, case.expected, options)
    return Grade(value=value, reason=None if value else f"{case.expected!r} not in the output")


@final
class ContainsGrader:
    kind: ClassVar[str] = "contains"

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        return _grade(self.kind, case, output, case.options)


@final
class IContainsGrader:
    kind: ClassVar[str] = "icontains"

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        return _grade(self.kind, case, output, {**case.options, "ignore_case": True})
