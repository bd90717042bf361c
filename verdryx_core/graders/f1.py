"""`f1`: token-overlap F1 between the output and the expected answer, with SQuAD's answer
normalisation (lower case, punctuation and articles removed). Both empty is 1.0; one empty
is 0.0."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar, final

from verdryx_core.cases import EvalCase
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.case_rules import require_expected, text_expectation
from verdryx_core.graders.text import squad_tokens

__all__ = ["F1Grader", "f1_score"]


def f1_score(output: str, expected: str) -> float:
    predicted = squad_tokens(output)
    gold = squad_tokens(expected)
    if not predicted or not gold:
        return 1.0 if predicted == gold else 0.0
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(gold)
    return min(1.0, 2 * precision * recall / (precision + recall))


@final
class F1Grader:
    kind: ClassVar[str] = "f1"

    @staticmethod
    def check_case(case: Mapping[str, Any]) -> None:
        require_expected(case, "f1")
        text_expectation(case, "f1")

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        if case.expected is None:
            raise ValueError(f"grader 'f1' requires case.expected; case {case.id!r} has none")
        value = f1_score("" if output is None else str(output), case.expected)
        return Grade(value=value)
