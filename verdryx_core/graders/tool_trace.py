"""`tool_trace`: the ordered tool names called, against the expected ones.

Exact match (both empty included) is 1.0; otherwise LCS length over the longer list's length,
so order matters and every extra or missing call costs the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, final

from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.model import EvalCase

__all__ = ["ToolTraceGrader", "lcs_length", "trace_score"]


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Classic longest-common-subsequence length, one row of memory."""
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for item in a:
        current = [0]
        for j, other in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if item == other else max(previous[j], current[-1]))
        previous = current
    return previous[-1]


def trace_score(actual: Sequence[str], expected: Sequence[str]) -> float:
    if list(actual) == list(expected):
        return 1.0
    return lcs_length(actual, expected) / max(len(actual), len(expected))


@final
class ToolTraceGrader:
    kind: ClassVar[str] = "tool_trace"

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        if output is None:
            actual: list[str] = []  # no completion recorded: no tool was called
        elif isinstance(output, list | tuple):
            actual = [str(name) for name in output]
        else:
            # A string here is a model's text, not a trace; scoring it as "no calls" would
            # invent a measurement.
            return Grade.unmeasured_because(
                f"a tool_trace output is the list of tool names called, got {type(output).__name__}"
            )
        expected = list(case.expected_tools or ())
        value = trace_score(actual, expected)
        reason = None if value == 1.0 else f"called {actual}, expected {expected}"
        return Grade(value=value, reason=reason)
