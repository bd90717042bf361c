"""`tool_trace`: the tool calls made, against the calls expected.

A call matches an expected one when the names are equal and, when the expected call gives
`arguments`, the arguments match: `argument_match: exact` (default) the same keys with
matching values, `subset` the expected keys with matching values (others may be there too).
A value `{"one_of": [...]}` accepts any listed value, and `{"one_of": [...], "optional": true}`
also its absence (see `verdryx_core.graders.values`). The text options (`ignore_case`,
`normalize_whitespace`, `ignore_punctuation`, `unicode_normalize`) read both sides of every
string comparison of arguments, and `check_types` also holds each call's arguments to the
types of its tool's `input_schema` (`verdryx_core.graders.argument_types`).

Partial credit by `tool_match` (M is the number of calls matched, A the calls made, E the
calls expected; both empty scores 1.0):

* `ordered` (default): 1.0 on an exact match, else LCS(A, E) / max(|A|, |E|); order matters
  and an extra call costs as much as a missing one.
* `unordered`: M / max(|A|, |E|) with M a largest one-to-one matching (a multiset match).
* `superset`: M / |E|: every expected call must be made; extra calls are free.
* `subset`: M / |A|: every call made must be expected; missing calls are free.

With `expected_tool_calls_any`, each list is scored and the best one counts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Final, final

from verdryx_core.cases import EvalCase, ToolCall
from verdryx_core.graders.argument_types import type_problem
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.text import TEXT_OPTIONS, normalize
from verdryx_core.graders.tool_trace_rules import check_tool_trace_case
from verdryx_core.graders.trace_diff import trace_report
from verdryx_core.graders.values import Text, is_optional, members_match, value_matches

__all__ = [
    "ARGUMENT_MATCHES",
    "TOOL_MATCHES",
    "ToolTraceGrader",
    "arguments_match",
    "call_matcher",
    "calls_score",
    "lcs_length",
    "matching_size",
    "trace_score",
]

TOOL_MATCHES: Final = ("ordered", "unordered", "subset", "superset")
ARGUMENT_MATCHES: Final = ("exact", "subset")

Match = Callable[[ToolCall, ToolCall], bool]


def lcs_length(
    a: Sequence[Any], b: Sequence[Any], match: Callable[[Any, Any], bool] | None = None
) -> int:
    """Longest-common-subsequence length, one row of memory; `match(x, y)` pairs an item of
    `a` with one of `b` (equality by default)."""
    if not a or not b:
        return 0
    same = match or (lambda x, y: x == y)
    previous = [0] * (len(b) + 1)
    for item in a:
        current = [0]
        for j, other in enumerate(b, start=1):
            current.append(
                previous[j - 1] + 1 if same(item, other) else max(previous[j], current[-1])
            )
        previous = current
    return previous[-1]


def matching_size(a: Sequence[Any], b: Sequence[Any], match: Callable[[Any, Any], bool]) -> int:
    """The size of a largest one-to-one matching between `a` and `b` (Kuhn's augmenting
    paths): with `one_of` or subset arguments, one call may match several expected ones,
    so a greedy pairing could undercount."""
    edges = [[j for j, other in enumerate(b) if match(item, other)] for item in a]
    owner: list[int | None] = [None] * len(b)

    def augment(i: int, seen: list[bool]) -> bool:
        for j in edges[i]:
            if seen[j]:
                continue
            seen[j] = True
            holder = owner[j]
            if holder is None or augment(holder, seen):
                owner[j] = i
                return True
        return False

    return sum(1 for i in range(len(a)) if augment(i, [False] * len(b)))


def trace_score(
    actual: Sequence[str], expected: Sequence[str], tool_match: str = "ordered"
) -> float:
    """The score of a name-only trace (see the module docstring for each mode)."""
    actual, expected = list(actual), list(expected)
    if tool_match == "ordered":
        if actual == expected:
            return 1.0
        return lcs_length(actual, expected) / max(len(actual), len(expected))
    matched = sum((Counter(actual) & Counter(expected)).values())
    return _ratio(matched, len(actual), len(expected), tool_match)


def arguments_match(
    expected: Mapping[str, Any] | None,
    actual: Mapping[str, Any] | None,
    mode: str = "exact",
    *,
    text: Text = None,
) -> bool:
    if expected is None:
        return True  # arguments not given: not checked
    if actual is None:
        return False
    return members_match(expected, actual, extra_allowed=mode == "subset", text=text)


def _schemas(case: EvalCase) -> dict[str, Mapping[str, Any]]:
    return {
        str(tool.get("name")): tool.get("input_schema") or {}
        for tool in case.tools or ()
        if isinstance(tool, Mapping)
    }


def call_type_problem(call: ToolCall, schemas: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Why `call`'s arguments are not of its tool's input_schema types, or None."""
    schema = schemas.get(call.name)
    if schema is None:
        return f"{call.name} is not an offered tool, so its argument types are unknown"
    return type_problem(dict(call.arguments or {}), schema, "")


def _text_reader(options: Mapping[str, Any]) -> Text:
    if not any(options.get(name) for name in TEXT_OPTIONS):
        return None
    chosen = {name: options[name] for name in TEXT_OPTIONS if name in options}
    return lambda value: normalize(value, chosen)


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def argument_differences(
    made: ToolCall,
    wanted: ToolCall,
    *,
    argument_match: str = "exact",
    options: Mapping[str, Any] | None = None,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """How the arguments of `made` differ from those `wanted` (same tool), one phrase each."""
    text = _text_reader(options or {})
    got = dict(made.arguments or {})
    found: list[str] = []
    for key, want in (wanted.arguments or {}).items():
        if key not in got:
            if not is_optional(want):
                found.append(f"{key}: missing (expected {_shown(want)})")
        elif not value_matches(want, got[key], text=text):
            found.append(f"{key}: expected {_shown(want)}, got {_shown(got[key])}")
    if argument_match == "exact" and wanted.arguments is not None:
        found += [
            f"{key}: not expected (got {_shown(got[key])})"
            for key in got
            if key not in wanted.arguments
        ]
    if schemas is not None:
        problem = call_type_problem(made, schemas)
        if problem is not None:
            found.append(f"type {problem}")
    return found


def call_matcher(
    argument_match: str = "exact",
    options: Mapping[str, Any] | None = None,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
) -> Match:
    """Whether a call made matches an expected one, under the case's options: names equal,
    arguments matching (strings read through the text options), and with `schemas` (a
    `check_types` case's tools) the call's arguments of its tool's types."""
    if argument_match not in ARGUMENT_MATCHES:
        raise ValueError(
            f"argument_match {argument_match!r}: expected one of {', '.join(ARGUMENT_MATCHES)}"
        )
    text = _text_reader(options or {})

    def match(made: ToolCall, wanted: ToolCall) -> bool:
        if made.name != wanted.name:
            return False
        if not arguments_match(wanted.arguments, made.arguments, argument_match, text=text):
            return False
        return schemas is None or call_type_problem(made, schemas) is None

    return match


def calls_score(
    actual: Sequence[ToolCall],
    expected: Sequence[ToolCall],
    *,
    tool_match: str = "ordered",
    argument_match: str = "exact",
    match: Match | None = None,
) -> float:
    """The score of a trace of calls against one expected list (module docstring); `match`
    (a `call_matcher`) replaces the plain one built from `argument_match`."""
    if tool_match not in TOOL_MATCHES:
        raise ValueError(f"tool_match {tool_match!r}: expected one of {', '.join(TOOL_MATCHES)}")
    if match is None:
        match = call_matcher(argument_match)

    if not actual and not expected:
        return 1.0
    if tool_match == "ordered":
        if len(actual) == len(expected) and all(map(match, actual, expected)):
            return 1.0
        return lcs_length(actual, expected, match) / max(len(actual), len(expected))
    return _ratio(matching_size(actual, expected, match), len(actual), len(expected), tool_match)


def _ratio(matched: int, made: int, wanted: int, tool_match: str) -> float:
    if tool_match == "unordered":
        denominator = max(made, wanted)
    elif tool_match == "superset":
        denominator = wanted
    else:  # subset
        denominator = made
    return 1.0 if denominator == 0 else matched / denominator


def expected_lists(case: EvalCase) -> list[list[ToolCall]]:
    """Every acceptable expected list of the case, as calls."""
    if case.expected_tool_calls_any is not None:
        return [[ToolCall.from_value(c) for c in calls] for calls in case.expected_tool_calls_any]
    if case.expected_tool_calls is not None:
        return [[ToolCall.from_value(c) for c in case.expected_tool_calls]]
    return [[ToolCall(name=name) for name in case.expected_tools or ()]]


@final
class ToolTraceGrader:
    kind: ClassVar[str] = "tool_trace"
    #: A trace passes only when it is exactly right (docs/graders.md).
    default_min_score: ClassVar[float] = 1.0
    #: The text options compare string arguments (docs/graders.md, "Tool traces").
    options: ClassVar[frozenset[str]] = frozenset(
        {"argument_match", "tool_match", "check_types", *TEXT_OPTIONS}
    )
    check_case = staticmethod(check_tool_trace_case)

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        if output is None:
            actual: list[ToolCall] = []  # no completion recorded: no tool was called
        elif isinstance(output, list | tuple) and all(
            isinstance(item, str | Mapping | ToolCall) for item in output
        ):
            actual = [ToolCall.from_value(item, made=True) for item in output]
        else:
            # A string here is a model's text, not a trace: not "no calls", and not
            # unmeasured either, since what the agent returned decides it (scored 0).
            return Grade.output_failure(
                "a tool_trace output is the list of tool calls made (names or "
                f"{{name, arguments}} objects), got {type(output).__name__}"
            )
        tool_match = case.options.get("tool_match", "ordered")
        argument_match = case.options.get("argument_match", "exact")
        candidates = expected_lists(case)
        if any(call.arguments is None for call in actual) and any(
            call.arguments is not None for calls in candidates for call in calls
        ):
            return Grade.output_failure(
                "the trace has tool names without arguments, and the case expects arguments"
            )
        schemas = _schemas(case) if case.options.get("check_types") else None
        match = call_matcher(argument_match, case.options, schemas)
        scores = [
            calls_score(actual, calls, tool_match=tool_match, match=match) for calls in candidates
        ]
        best = max(range(len(scores)), key=scores.__getitem__)
        value = scores[best]
        if value == 1.0:
            return Grade(value=value)
        which = f", best of {len(candidates)}: #{best + 1}" if len(candidates) > 1 else ""
        report = trace_report(
            actual,
            candidates[best],
            tool_match=tool_match,
            match=match,
            argument_diff=lambda made, wanted: argument_differences(
                made,
                wanted,
                argument_match=argument_match,
                options=case.options,
                schemas=schemas,
            ),
        )
        return Grade(value=value, reason=f"tool calls ({tool_match}{which}): {report}")
