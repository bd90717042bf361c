"""`outcome_tag`: a recorded production outcome mapped to a score through a table."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar, final

from verdryx_core.cases import DEFAULT_OUTCOME_SCORES, EvalCase
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.case_rules import text_expectation

__all__ = ["OutcomeTagGrader"]

_log = logging.getLogger("verdryx.graders")


@final
class OutcomeTagGrader:
    kind: ClassVar[str] = "outcome_tag"
    #: A check reads a part of the case's one output, and an outcome tag is not an output.
    in_checks: ClassVar[bool] = False

    @staticmethod
    def check_case(case: Mapping[str, Any]) -> None:
        text_expectation(case, "outcome_tag")

    def __init__(self, mapping: Mapping[str, float] | None = None, default: float = 0.0) -> None:
        # Copied, so a caller mutating its table (or ours) never changes the defaults.
        self.mapping = dict(DEFAULT_OUTCOME_SCORES if mapping is None else mapping)
        self.default = default
        # Checked here, once, rather than as a failed Score per case halfway through a run.
        for tag, value in [*self.mapping.items(), ("(default)", default)]:
            if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
                raise ValueError(
                    f"outcome tag {tag!r} maps to {value!r}; scores are numbers in [0, 1]"
                )

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        tag = str(output).strip()
        if tag in self.mapping:
            return Grade(value=float(self.mapping[tag]))
        _log.warning("case %s: unknown outcome tag %r scores %s", case.id, tag, self.default)
        known = ", ".join(sorted(self.mapping))
        return Grade(
            value=self.default,
            reason=f"unknown outcome tag {tag!r} (known: {known}) scores {self.default}",
        )
