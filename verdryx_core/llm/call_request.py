"""One protocol call as the request it makes, defined once for all that must agree on it.

The adapters send it (each in its API's shape), the response cache keys on it and a Message
Batch carries it (verdryx_core.llm.batch). The judge's request is the one that matters: its
system prompt, its rendered user message, the `record_verdict` tool and the forced choice
are decided here, so a cached verdict always stands for the request the judge is really sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verdryx_core.judge.prompt import (
    JUDGE_SYSTEM,
    RECORD_VERDICT_TOOL,
    TOOL_CHOICE,
    render_judge_prompt,
)

__all__ = ["CallRequest", "call_request", "conversation_arguments", "conversation_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRequest:
    """What one call asks, before any API gives it a shape."""

    #: complete, tools or judge (`verdryx_core.llm.base.CALL_KINDS`).
    kind: str
    #: The user message; for a judge, the rendered judge prompt.
    prompt: str
    system: str | None = None
    #: A case's whole conversation (`{"role", "content"}` mappings, the last the user's),
    #: sent in place of the one user message `prompt`; None: just `prompt`.
    messages: Sequence[Mapping[str, Any]] | None = None
    #: As the caller gave them (a cache key tells None from an empty list); None for complete.
    tools: Sequence[Mapping[str, Any]] | None = None
    #: Anthropic's form (`{"type": "tool", "name": ...}`); only the judge forces a tool.
    tool_choice: Mapping[str, Any] | None = None


def call_request(
    kind: str,
    prompt: str,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    output: str | None = None,
    rubric: str | None = None,
    system: str | None = None,
    messages: Sequence[Mapping[str, Any]] | None = None,
) -> CallRequest:
    """The request of the protocol call `kind` with these arguments (`complete(prompt)`,
    `complete_with_tools(prompt, tools)`, `judge(prompt, output, rubric)`); a case's own
    `system` and `messages` go with the model's calls, never with the judge's."""
    if kind == "judge":
        return CallRequest(
            kind=kind,
            prompt=render_judge_prompt(prompt, output or "", rubric or ""),
            system=JUDGE_SYSTEM,
            tools=(RECORD_VERDICT_TOOL,),
            tool_choice=TOOL_CHOICE,
        )
    conversation = tuple(messages) if messages else None
    if kind == "complete":
        return CallRequest(kind=kind, prompt=prompt, system=system, messages=conversation)
    if kind == "tools":
        return CallRequest(
            kind=kind, prompt=prompt, tools=tools, system=system, messages=conversation
        )
    raise ValueError(f"unknown call kind {kind!r}")


def conversation_of(request: CallRequest) -> list[dict[str, Any]]:
    """The messages `request` sends: its conversation as given, else one user message."""
    if request.messages is not None:
        return [dict(message) for message in request.messages]
    return [{"role": "user", "content": request.prompt}]


def conversation_arguments(
    system: str | None, messages: Sequence[Mapping[str, Any]] | None
) -> dict[str, Any]:
    """The keyword arguments that carry a case's conversation to `complete` and
    `complete_with_tools`, only those it has: an adapter written before conversations
    existed still answers every case without one."""
    found: dict[str, Any] = {}
    if system is not None:
        found["system"] = system
    if messages is not None:
        found["messages"] = messages
    return found
