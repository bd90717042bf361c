"""The load-time rules of a `tool_trace` case (or check): its one expectation, each expected
tool among those offered, and a recorded output that is the list of calls made."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verdryx_core.cases import TOOL_EXPECTATIONS
from verdryx_core.graders.case_rules import CaseProblem, check_tools

__all__ = ["check_tool_trace_case"]


def check_tool_trace_case(case: Mapping[str, Any]) -> None:
    """A tool_trace case (or a check, given its case's `tools`)."""
    output = case.get("output")
    if output is not None and not isinstance(output, list):
        raise CaseProblem(
            "output",
            "a recorded tool_trace output is the list of calls made (names or {name, arguments})",
        )
    # No `tools` needed: a target owns its tools, and a recorded or custom case's calls were
    # made already. A case asked of the model without them is that case's error (sources.py).
    offered = check_tools(case["tools"], "tools") if "tools" in case else None
    wants_arguments = _check_expectation(case, offered)
    if wants_arguments and isinstance(output, list) and any(isinstance(o, str) for o in output):
        raise CaseProblem(
            "output",
            "the recorded calls are names only, and the case expects arguments; record "
            "{name, arguments} objects, or expect names with 'expected_tools'",
        )


def _check_expectation(spec: Mapping[str, Any], offered: Sequence[str] | None) -> bool:
    """The case's one expectation, each expected tool among those `offered` when tools are
    given; True when some expected call gives arguments."""
    if "expected" in spec:
        raise CaseProblem(
            "expected",
            "grader 'tool_trace' reads its expectation from 'expected_tools' (names) or "
            "'expected_tool_calls' (names and arguments), not 'expected'",
        )
    if spec.get("check_types") and offered is None:
        raise CaseProblem(
            "check_types",
            "arguments are checked against the tools' input_schema, and the case gives no "
            "'tools'; add them (the target still calls its own)",
        )
    given = [name for name in TOOL_EXPECTATIONS if name in spec]
    if not given:
        raise CaseProblem(
            "expected_tools",
            "grader 'tool_trace' requires the field 'expected_tools' (names) or "
            "'expected_tool_calls' (names and arguments) or 'expected_tool_calls_any'",
        )
    if len(given) > 1:
        raise CaseProblem(
            given[1], f"give one of {', '.join(TOOL_EXPECTATIONS)}, not both {given[0]!r} and it"
        )
    field = given[0]
    if field == "expected_tools":
        lists = [[(f"expected_tools[{i}]", name, None) for i, name in enumerate(spec[field])]]
    elif field == "expected_tool_calls":
        lists = [
            [
                (f"{field}[{i}].name", c["name"], c.get("arguments"))
                for i, c in enumerate(spec[field])
            ]
        ]
    else:
        lists = [
            [(f"{field}[{j}][{i}].name", c["name"], c.get("arguments")) for i, c in enumerate(seq)]
            for j, seq in enumerate(spec[field])
        ]
    wants_arguments = False
    for calls in lists:
        for where, name, arguments in calls:
            wants_arguments = wants_arguments or arguments is not None
            if offered is not None and name not in offered:
                raise CaseProblem(
                    where,
                    f"tool {name!r} is expected but not offered in 'tools' "
                    f"(offered: {', '.join(offered)})",
                )
    return wants_arguments
