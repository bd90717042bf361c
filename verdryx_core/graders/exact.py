"""`exact`: equality with the expected text; whitespace and case count unless the case's
options say otherwise (`ignore_case`, `normalize_whitespace`, `ignore_punctuation`,
`unicode_normalize`; see `verdryx_core.graders.text`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, final

from verdryx_core.cases import EvalCase
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.case_rules import require_expected, text_expectation
from verdryx_core.graders.text import TEXT_OPTIONS, normalize

__all__ = ["ExactGrader", "exact_score"]


def exact_score(output: str, expected: str, options: Any = None) -> float:
    options = options or {}
    return 1.0 if normalize(output, options) == normalize(expected, options) else 0.0


@final
class ExactGrader:
    kind: ClassVar[str] = "exact"
    options: ClassVar[frozenset[str]] = frozenset(TEXT_OPTIONS)

    @staticmethod
    def check_case(case: Mapping[str, Any]) -> None:
        require_expected(case, "exact")
        text_expectation(case, "exact")

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        if case.expected is None:
            # Without this, a case lacking `expected` would score 1.0 on a None output.
            raise ValueError(
                f"grader 'exact' requires case.expected (the literal); case {case.id!r} has none"
            )
        if not case.options:
            return Grade(value=1.0 if output == case.expected else 0.0)
        text = "" if output is None else str(output)
        return Grade(value=exact_score(text, case.expected, case.options))
