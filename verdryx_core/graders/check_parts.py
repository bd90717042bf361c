"""What a check reads of a case's one result (docs/scenarios.md, "Checks over the whole
result"): `on` names the part.

* `output`: the reply text (every grader but tool_trace, by default);
* `tool_calls`: the calls made (tool_trace, by default; any other grader reads them as
  their JSON text);
* `metadata` or `metadata.<path>`: what the target reported in its `metadata`;
* `output.<path>`: a value inside the reply, read as JSON;
* `transcript`: a simulated dialogue's whole transcript, in the one form that keeps its
  roles as data (`verdryx_core.transcript`): what the agent wrote stays inside its own turn
  however it reads, so a check cannot be passed by words that imitate the user.

Without `on`, a `final_state` check reads the end state the target reported, and in a
simulated dialogue an `llm_judge` check reads the whole transcript (docs/scenarios.md,
"Simulated users").

A path is dotted, list positions are numbers (`refund.items.0.sku`), as in the json grader's
`fields`. A value that is not text reaches a text grader as its JSON text. A part the result
does not have (no such path, a reply that is not JSON) is not a grader's question: the check
fails, 0.0, saying which part was missing, since the agent did not produce what the case asks
of it.
"""

from __future__ import annotations

import json
from typing import Any, Final

from verdryx_core.cases import CaseOutput, Check, ToolCall, output_text, transcript_text
from verdryx_core.graders.json_output import MISSING, read_output, resolve_path

__all__ = ["MissingPart", "on_problem", "read_part"]

_WHOLE: Final = ("output", "tool_calls", "metadata", "transcript")
_PATHED: Final = ("output.", "metadata.")


class MissingPart(Exception):
    """The result has no such part; the message says what is missing, in one line."""


def on_problem(on: object) -> str | None:
    """Why `on` names no part of a result, or None."""
    if not isinstance(on, str):
        return f"expected text, one of {', '.join(_WHOLE)}, output.<path> or metadata.<path>"
    if on in _WHOLE:
        return None
    for prefix in _PATHED:
        if on.startswith(prefix):
            path = on[len(prefix) :]
            if not path or any(not part for part in path.split(".")):
                return f"{on!r} has an empty step in its path; write {prefix}a.b.0.c"
            return None
    return (
        f"{on!r} is not a part of the result; expected one of {', '.join(_WHOLE)}, "
        "output.<path> or metadata.<path>"
    )


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def read_part(output: Any, check: Check) -> Any:
    """The part of `output` `check` grades; raises MissingPart when there is none.

    An output that is not a whole result (a custom test's plain value) is every part."""
    on = check.reads
    is_trace = check.grader == "tool_trace"
    if not isinstance(output, CaseOutput):
        if on in ("output", "tool_calls"):
            return output
        raise MissingPart(f"on {on!r}: the output is not a result with {on.split('.')[0]}")
    if check.on is None:
        # By default: final_state the end state, a judge a dialogue's whole transcript.
        return output.part_for(check.grader)
    if on == "tool_calls":
        calls: list[ToolCall] = list(output.tool_calls)
        return calls if is_trace else (output_text(calls) or "")
    if on == "output":
        return output.text
    if on == "transcript":
        if output.transcript is None:
            raise MissingPart(f"on {on!r}: the result is not a simulated dialogue's")
        return transcript_text(output.transcript, output.ended)
    head, _, path = on.partition(".")
    if head == "metadata":
        document: Any = output.metadata
        if document is None:
            raise MissingPart(f"on {on!r}: the result reported no metadata")
    else:
        parsed, document, why = read_output(output.text)
        if not parsed:
            raise MissingPart(f"on {on!r}: the output is not JSON" + (f" ({why})" if why else ""))
    value = resolve_path(document, path) if path else document
    if value is MISSING:
        raise MissingPart(f"on {on!r}: the {head} has no {path!r}")
    return _as_text(value)
