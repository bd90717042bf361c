"""`exact`: literal equality; whitespace and case count."""

from __future__ import annotations

from typing import Any, ClassVar, final

from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.model import EvalCase

__all__ = ["ExactGrader"]


@final
class ExactGrader:
    kind: ClassVar[str] = "exact"

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        if case.expected is None:
            # Without this, a case lacking `expected` would score 1.0 on a None output.
            raise ValueError(
                f"grader 'exact' requires case.expected (the literal); case {case.id!r} has none"
            )
        return Grade(value=1.0 if output == case.expected else 0.0)
