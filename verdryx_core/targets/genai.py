"""A target call's spans read by the OpenTelemetry GenAI semantic conventions: the tool calls,
token usage and model the call did not return itself (docs/targets.md, "Frameworks").

* Tool calls: every `execute_tool` span (`gen_ai.operation.name`), in the order the spans
  started: `gen_ai.tool.name`, and `gen_ai.tool.call.arguments` (a JSON object; absent when the
  framework records no content, which is a call whose arguments were not recorded). A call
  with no `execute_tool` span at all (an SDK's own tool loop, instrumented at the model call
  only) reads the calls the model asked for: the `tool_call` parts of the chat spans'
  `gen_ai.output.messages`.
* Usage: `gen_ai.usage.input_tokens` / `output_tokens` of the spans that report them, each
  model response counted once: a span whose descendant also reports usage is a total of it
  (an agent's run) and is left out, and two spans of one `gen_ai.response.id` (an SDK's own
  span beside an instrumentation's) are one response.
* Model: `gen_ai.response.model`, else `gen_ai.request.model`, of those spans; the one with
  the most tokens when there are several (one model prices a result).

What a span says is the agent's own data: a value of the wrong shape is a
`TargetResultError`, that case's error, as a bad returned result is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verdryx_core.cases import ToolCall
from verdryx_core.errors import TargetResultError
from verdryx_core.targets.result import TargetResult, TargetUsage
from verdryx_core.untrusted.json_input import json_kind, parse_json

__all__ = ["SpanReading", "SpanRecord", "read_spans", "with_reading"]

_OPERATION = "gen_ai.operation.name"
_USAGE = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """What verdryx keeps of one ended span (verdryx_core.targets.spans): what the conventions
    are read from, and nothing of the SDK's own types."""

    span_id: int
    parent_id: int | None
    name: str
    start_ns: int
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SpanReading:
    """What a call's spans say: its tool calls in order, and its usage (None: no span
    reported any)."""

    tool_calls: tuple[ToolCall, ...] = ()
    usage: TargetUsage | None = None


def _where(record: SpanRecord) -> str:
    return f"span {record.name!r}"


def _json_object(text: Any, where: str) -> dict[str, Any] | None:
    if text is None:
        return None
    value = text
    if isinstance(text, str):
        try:
            value = parse_json(text)
        except ValueError:
            raise TargetResultError(f"{where} is not JSON: {text[:60]!r}") from None
    if not isinstance(value, Mapping):
        raise TargetResultError(f"{where} is {json_kind(value)}, expected a JSON object")
    return dict(value)


def _executed(records: Sequence[SpanRecord]) -> list[ToolCall]:
    calls = []
    for record in records:
        if record.attributes.get(_OPERATION) != "execute_tool":
            continue
        name = record.attributes.get("gen_ai.tool.name")
        if not isinstance(name, str) or not name.strip():
            raise TargetResultError(
                f"{_where(record)}: gen_ai.tool.name is {name!r}, expected a tool name"
            )
        arguments = _json_object(
            record.attributes.get("gen_ai.tool.call.arguments"),
            f"{_where(record)}: gen_ai.tool.call.arguments",
        )
        calls.append(ToolCall(name=name, arguments=arguments))
    return calls


def _requested(responses: Sequence[SpanRecord]) -> list[ToolCall]:
    """The tool calls the model asked for, from the chat spans' output messages."""
    calls = []
    for record in responses:
        text = record.attributes.get("gen_ai.output.messages")
        if text is None:
            continue
        where = f"{_where(record)}: gen_ai.output.messages"
        try:
            messages = parse_json(text) if isinstance(text, str) else None
        except ValueError:
            raise TargetResultError(f"{where} is not JSON: {str(text)[:60]!r}") from None
        if not isinstance(messages, list):
            raise TargetResultError(f"{where} is {json_kind(messages)}, expected a JSON array")
        for message in messages:
            parts = message.get("parts") if isinstance(message, Mapping) else None
            for part in parts if isinstance(parts, list) else ():
                if not isinstance(part, Mapping) or part.get("type") != "tool_call":
                    continue
                name = part.get("name")
                if not isinstance(name, str) or not name.strip():
                    raise TargetResultError(f"{where}: a tool_call part has no name")
                arguments = _json_object(part.get("arguments"), f"{where}: {name} arguments")
                calls.append(ToolCall(name=name, arguments=arguments))
    return calls


def _reports(record: SpanRecord) -> bool:
    return any(key in record.attributes for key in _USAGE)


def _responses(records: Sequence[SpanRecord], trace: Sequence[SpanRecord]) -> list[SpanRecord]:
    """The spans that report one model response's usage each (module docstring); `trace` is
    every span known of the call, for their parents."""
    reporting = [r for r in records if _reports(r)]
    parents = {r.span_id: r.parent_id for r in trace}
    totals: set[int] = set()
    for record in (r for r in trace if _reports(r)):
        parent, seen = record.parent_id, 0
        while parent is not None and seen < len(parents):  # bounded: a cycle cannot hang
            totals.add(parent)
            parent, seen = parents.get(parent), seen + 1
    chosen: list[SpanRecord] = []
    responses: set[str] = set()
    for record in reporting:
        if record.span_id in totals:
            continue
        response = record.attributes.get("gen_ai.response.id")
        if isinstance(response, str) and response:
            if response in responses:
                continue
            responses.add(response)
        chosen.append(record)
    return chosen


def _tokens(record: SpanRecord, key: str) -> int:
    value = record.attributes.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TargetResultError(f"{_where(record)}: {key} is {value!r}, expected a token count")
    return value


def _model(record: SpanRecord) -> str | None:
    for key in ("gen_ai.response.model", "gen_ai.request.model"):
        value = record.attributes.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _usage(responses: Sequence[SpanRecord]) -> TargetUsage | None:
    if not responses:
        return None
    inputs = outputs = 0
    by_model: dict[str, int] = {}
    for record in responses:
        spent_in, spent_out = (_tokens(record, key) for key in _USAGE)
        inputs, outputs = inputs + spent_in, outputs + spent_out
        model = _model(record)
        if model is not None:
            by_model[model] = by_model.get(model, 0) + spent_in + spent_out
    # The first model among the largest spenders, as `max` keeps the first of equals.
    model = max(by_model, key=by_model.__getitem__) if by_model else None
    return TargetUsage(input_tokens=inputs, output_tokens=outputs, model=model)


def read_spans(
    records: Sequence[SpanRecord], *, context: Sequence[SpanRecord] | None = None
) -> SpanReading:
    """The reading of a call's spans (ordered as they started); `context`, when given, is
    every span of the call known so far, `records` among them (a dialogue reads each turn's
    spans in the light of the earlier turns')."""
    if not records:
        return SpanReading()
    responses = _responses(records, records if context is None else context)
    calls = _executed(records) or _requested(_chat_spans(records, responses))
    return SpanReading(tool_calls=tuple(calls), usage=_usage(responses))


def _chat_spans(records: Sequence[SpanRecord], responses: Sequence[SpanRecord]) -> list[SpanRecord]:
    """One span per model response with its output messages: the usage spans', else the
    first of its response id that has them (an SDK's span may lack the content)."""
    with_messages: dict[str, SpanRecord] = {}
    for record in records:
        response = record.attributes.get("gen_ai.response.id")
        if "gen_ai.output.messages" in record.attributes and isinstance(response, str):
            with_messages.setdefault(response, record)
    chosen = []
    for record in responses:
        if "gen_ai.output.messages" in record.attributes:
            chosen.append(record)
            continue
        response = record.attributes.get("gen_ai.response.id")
        other = with_messages.get(response) if isinstance(response, str) else None
        if other is not None:
            chosen.append(other)
    return chosen


def _reported(usage: TargetUsage) -> bool:
    return bool(usage.input_tokens or usage.output_tokens or usage.cost_usd or usage.model)


def with_reading(result: TargetResult, reading: SpanReading) -> tuple[TargetResult, bool, bool]:
    """`result` with what the spans say where it says nothing itself: its tool calls when it
    returned none, its usage when it reported none. Returns the result, whether the spans gave
    it something, and whether the result's own tool calls or usage won over the spans'."""
    calls, usage = result.tool_calls, result.usage
    took = overridden = False
    if reading.tool_calls:
        if calls:
            overridden = True
        else:
            calls, took = reading.tool_calls, True
    if reading.usage is not None and _reported(reading.usage):
        if _reported(usage):
            overridden = True
        else:
            usage, took = reading.usage, True
    if not took:
        return result, False, overridden
    merged = TargetResult(
        output=result.output,
        tool_calls=calls,
        usage=usage,
        metadata=result.metadata,
        state=result.state,
        done=result.done,
        transcript=result.transcript,
        ended=result.ended,
    )
    return merged, True, overridden
