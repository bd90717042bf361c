"""`numeric`: the output's number against the expected one, within a tolerance.

The output's number is the whole output when it is a number, else the last number in it
(thousands separators removed), so "The answer is 1,234." reads 1234. It passes (1.0) when
|output - expected| <= `tolerance` (absolute, default 0) or <= `relative` * |expected|;
else 0.0. No number in the output is 0.0 with the reason.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final, final

from verdryx_core.cases import EvalCase
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.case_rules import CaseProblem, require_expected

__all__ = ["NumericGrader", "numeric_score", "read_number"]

_NUMBER: Final = re.compile(
    r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+"
)


def read_number(text: str) -> float | None:
    """The number a text states: all of it when it parses, else its last number."""
    stripped = text.strip()
    try:
        value = float(stripped)
    except ValueError:
        found = _NUMBER.findall(stripped)
        if not found:
            return None
        value = float(found[-1].replace(",", ""))
    return value if math.isfinite(value) else None


def numeric_score(actual: float, expected: float, options: Mapping[str, Any]) -> float:
    difference = abs(actual - expected)
    tolerance = float(options.get("tolerance") or 0.0)
    relative = float(options.get("relative") or 0.0)
    # A hair of slack for binary floating point: 0.1 + 0.2 is within 0 of 0.3.
    slack = 1e-12 * max(1.0, abs(expected))
    within = difference <= tolerance + slack or difference <= relative * abs(expected) + slack
    return 1.0 if within else 0.0


@final
class NumericGrader:
    kind: ClassVar[str] = "numeric"
    options: ClassVar[frozenset[str]] = frozenset({"tolerance", "relative"})

    @staticmethod
    def check_case(case: dict[str, Any]) -> None:
        """The expectation is a finite number, kept as its JSON text."""
        require_expected(case, "numeric")
        expected = case["expected"]
        if expected is None:
            return
        if isinstance(expected, bool):
            raise CaseProblem("expected", "expected a number, got a boolean")
        if isinstance(expected, int | float):
            case["expected"] = json.dumps(expected)
            return
        try:
            number = float(str(expected))
        except ValueError:
            raise CaseProblem(
                "expected", f"grader 'numeric' expects a number, got {expected!r}"
            ) from None
        if not math.isfinite(number):
            raise CaseProblem(
                "expected", f"grader 'numeric' expects a finite number, got {expected!r}"
            )
        case["expected"] = str(expected).strip()

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        if case.expected is None:
            raise ValueError(f"grader 'numeric' requires case.expected; case {case.id!r} has none")
        expected = float(case.expected)
        actual = read_number("" if output is None else str(output))
        if actual is None:
            return Grade(value=0.0, reason="no number in the output")
        value = numeric_score(actual, expected, case.options)
        return Grade(
            value=value, reason=None if value else f"read {actual:g}, expected {expected:g}"
        )
