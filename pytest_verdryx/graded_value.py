"""What `verdryx.grade()` takes, grader by grader (docs/custom-cases.md, "What grade() takes").

A whole result (a `TargetResult`, or a dict with `output` and only a result's keys) is taken
by every grader, as a target's is for a file case: a tool_trace case grades its calls, a
final_state case its state, a text grader its reply, a multi-check case all of it. Other
values are what a grader reads (text, a list of calls, a state). A value no built-in grader
can read is the test's mistake, not the agent's: `WrongValue`, which fails the test with its
reason, and no score is recorded. A custom grader gets any value as given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Final

from verdryx_core.cases import CHECKS_GRADER, GRADER_KINDS, CaseOutput, ToolCall
from verdryx_core.errors import TargetResultError
from verdryx_core.targets import TargetResult

__all__ = ["TEXT_GRADERS", "WrongValue", "graded_value"]

#: Built-in graders of one text output: a number, an object or a list reads as its JSON text.
TEXT_GRADERS: Final = (
    "exact",
    "regex",
    "contains",
    "icontains",
    "numeric",
    "f1",
    "json",
    "llm_judge",
    "exec",
)
_RESULT_KEYS: Final = frozenset(("output", "tool_calls", "usage", "metadata", "state", "done"))
_RESULT: Final = "a whole result (a TargetResult, or a dict with output and tool_calls)"


class WrongValue(Exception):
    """What the test handed `grade()` is not something its grader reads; the message says
    what it takes, in one line."""


def graded_value(grader: str, output: object) -> object:
    """`output` as the case's grader reads it; raises WrongValue."""
    if grader != CHECKS_GRADER and grader not in GRADER_KINDS:
        return output  # a custom grader's (an add-on's too): as given
    result = _result(output, checks=grader == CHECKS_GRADER)
    if grader == CHECKS_GRADER:
        return output if result is None else result
    if result is not None:
        return result.part_for(grader)
    if grader == "tool_trace":
        return _calls(output)
    if grader == "final_state":
        if not _is_json(output):
            raise WrongValue(
                f"grader 'final_state' compares an end state, any JSON value, or {_RESULT} "
                f"with a state; got {type(output).__name__}"
            )
        return output
    if grader in TEXT_GRADERS:
        return _text(grader, output)
    return output


def _result(output: object, *, checks: bool) -> CaseOutput | None:
    """A whole result as one `CaseOutput`, or None when `output` is not one."""
    if isinstance(output, TargetResult):
        found = output
    elif isinstance(output, Mapping) and "output" in output:
        if not checks and not set(output) <= _RESULT_KEYS:
            return None  # an object that happens to have an `output` member
        try:
            found = TargetResult.from_dict(output)
        except TargetResultError as exc:
            raise WrongValue(f"a result dict: {exc}") from None
    else:
        return None
    return CaseOutput(
        text=found.output,
        tool_calls=found.tool_calls,
        metadata=found.metadata,
        state=found.state,
    )


def _calls(output: object) -> object:
    if output is None:
        return output  # no call made
    if isinstance(output, list | tuple) and all(
        isinstance(item, str | Mapping | ToolCall) for item in output
    ):
        return output
    raise WrongValue(
        "grader 'tool_trace' grades the tool calls made: a list of names or {name, arguments} "
        f"objects, or {_RESULT}; got {_kind(output)}"
    )


def _text(grader: str, output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping | list | tuple | bool | int | float) and _is_json(output):
        # An object, a list or a number reads as its JSON text.
        return json.dumps(output, ensure_ascii=False)
    raise WrongValue(
        f"grader {grader!r} grades text: a string, a number, a JSON object or list, or "
        f"{_RESULT}; got {_kind(output)}"
    )


def _is_json(value: object) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return not (isinstance(value, float) and not math.isfinite(value))


def _kind(value: object) -> str:
    if isinstance(value, list | tuple):
        items = sorted({type(item).__name__ for item in value})
        return f"{type(value).__name__} of {', '.join(items)}" if items else type(value).__name__
    return type(value).__name__
