"""A case's conversation, written once in a provider-neutral form, in each API's shape
(docs/scenarios.md, "Conversations with tool turns").

The neutral form has three roles: `user` (`content`), `assistant` (`content`, and
`tool_calls`: `[{"name", "arguments"}]`) and `tool` (`name`, `content`: one call's result).
A tool turn answers the first call of that name, not yet answered, of the assistant turn
before it; the loader has checked that every call is answered (`verdryx_core.evalsets`).
Ids pairing a call with its result are generated from their position, so the same
conversation is always the same request (and the same cache key).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["anthropic_messages", "has_tool_turns", "openai_messages", "paired_calls"]


def has_tool_turns(messages: Sequence[Mapping[str, Any]]) -> bool:
    return any(m.get("role") == "tool" or m.get("tool_calls") for m in messages)


def _call_id(turn: int, index: int) -> str:
    # Anthropic's and OpenAI's id rules both accept this: letters, digits, '_'.
    return f"call_{turn}_{index}"


def paired_calls(messages: Sequence[Mapping[str, Any]]) -> list[str | None]:
    """For each message, the id of the call a tool message answers (None for the others,
    and for a tool message that answers no call)."""
    ids: list[str | None] = []
    waiting: list[tuple[str, str]] = []  # (name, id) of the last assistant turn, unanswered
    for turn, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            calls = message.get("tool_calls") or ()
            waiting = [(str(call["name"]), _call_id(turn, i)) for i, call in enumerate(calls)]
            ids.append(None)
        elif role == "tool":
            name = str(message.get("name"))
            found = next((pair for pair in waiting if pair[0] == name), None)
            if found is not None:
                waiting.remove(found)
            ids.append(None if found is None else found[1])
        else:
            waiting = []
            ids.append(None)
    return ids


def _arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    arguments = call.get("arguments")
    return dict(arguments) if isinstance(arguments, Mapping) else {}


def anthropic_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The Messages API's shape: an assistant's calls as `tool_use` blocks, each result a
    `tool_result` block in the user turn after it (consecutive turns of one role merged, as
    the API wants every result of a turn in the one user message that follows it)."""
    if not has_tool_turns(messages):
        return [dict(message) for message in messages]
    ids = paired_calls(messages)
    shaped: list[dict[str, Any]] = []
    for turn, message in enumerate(messages):
        role = message.get("role")
        blocks: list[dict[str, Any]] = []
        if role == "tool":
            role = "user"
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": ids[turn],
                    "content": str(message.get("content", "")),
                }
            )
        else:
            text = message.get("content")
            if text:
                blocks.append({"type": "text", "text": str(text)})
            for index, call in enumerate(message.get("tool_calls") or ()):
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": _call_id(turn, index),
                        "name": str(call["name"]),
                        "input": _arguments(call),
                    }
                )
        if shaped and shaped[-1]["role"] == role:
            shaped[-1]["content"].extend(blocks)
        else:
            shaped.append({"role": role, "content": blocks})
    return shaped


def openai_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The chat-completions shape: an assistant's calls as `tool_calls` (arguments as JSON
    text), each result a `tool` message naming its call's `tool_call_id`."""
    if not has_tool_turns(messages):
        return [dict(message) for message in messages]
    ids = paired_calls(messages)
    shaped: list[dict[str, Any]] = []
    for turn, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            shaped.append(
                {
                    "role": "tool",
                    "tool_call_id": ids[turn],
                    "content": str(message.get("content", "")),
                }
            )
            continue
        calls = message.get("tool_calls") or ()
        if role != "assistant" or not calls:
            shaped.append({"role": role, "content": str(message.get("content", ""))})
            continue
        shaped.append(
            {
                "role": "assistant",
                "content": str(message["content"]) if message.get("content") else None,
                "tool_calls": [
                    {
                        "id": _call_id(turn, index),
                        "type": "function",
                        "function": {
                            "name": str(call["name"]),
                            "arguments": json.dumps(_arguments(call), ensure_ascii=False),
                        },
                    }
                    for index, call in enumerate(calls)
                ],
            }
        )
    return shaped
