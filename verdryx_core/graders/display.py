"""How a case's output and expectation read in a stored score (`Score.output`,
`Score.expected`), for whoever builds scores from grades.

A tool trace's calls read as their JSON objects joined by ", " (names alone when only names
are known), which `verdryx show --json` turns back into a list; an expectation of calls reads
the same way, several acceptable lists separated by " | ".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from verdryx_core.cases import CHECKS_GRADER, EvalCase, ToolCall

__all__ = ["expected_text", "output_text"]


def _call_text(item: Any) -> str:
    if isinstance(item, ToolCall | Mapping):
        return str(ToolCall.from_value(item, made=True))
    return str(item)


def _calls_text(calls: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(str(ToolCall.from_value(call)) for call in calls)


def output_text(output: Any) -> str | None:
    if output is None:
        return None
    if isinstance(output, list | tuple):
        return ", ".join(_call_text(item) for item in output)
    return str(output)


def expected_text(case: EvalCase) -> str | None:
    if case.grader == "tool_trace":
        if case.expected_tool_calls_any is not None:
            return " | ".join(_calls_text(calls) for calls in case.expected_tool_calls_any)
        if case.expected_tool_calls is not None:
            return _calls_text(case.expected_tool_calls)
        return ", ".join(case.expected_tools or ())
    if case.grader == "llm_judge":
        return case.rubric
    if case.grader == CHECKS_GRADER:
        parts = [
            f"{check.grader}: {check.expected if check.expected is not None else check.rubric}"
            for check in case.checks or ()
        ]
        return "; ".join(parts)
    return case.expected
