"""`contains` / `icontains`: the expected text appears in the output (`icontains` ignoring
case). The text options of `exact` apply to both sides first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, final

from verdryx_core.cases import EvalCase
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.case_rules import CaseProblem, require_expected, text_expectation
from verdryx_core.graders.text import TEXT_OPTIONS, normalize

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


def _check_case(kind: str, case: Mapping[str, Any]) -> None:
    require_expected(case, kind)
    text_expectation(case, kind)
    options = case if kind == "contains" else {**case, "ignore_case": True}
    if normalize(case["expected"], options) == "":
        shown = repr(case["expected"])
        left = " once normalised by its options" if case["expected"] else ""
        raise CaseProblem(
            "expected",
            f"{shown} is empty{left}: every output contains it, so the case could never "
            "fail; give the text the output must contain",
        )


@final
class ContainsGrader:
    kind: ClassVar[str] = "contains"
    options: ClassVar[frozenset[str]] = frozenset(TEXT_OPTIONS)

    @staticmethod
    def check_case(case: Mapping[str, Any]) -> None:
        _check_case("contains", case)

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        return _grade(self.kind, case, output, case.options)


@final
class IContainsGrader:
    kind: ClassVar[str] = "icontains"
    options: ClassVar[frozenset[str]] = frozenset(TEXT_OPTIONS)

    @staticmethod
    def check_case(case: Mapping[str, Any]) -> None:
        _check_case("icontains", case)

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        return _grade(self.kind, case, output, {**case.options, "ignore_case": True})
