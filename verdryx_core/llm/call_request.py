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

from verdryx_core.llm.judge_prompt import (
    JUDGE_SYSTEM,
    RECORD_VERDICT_TOOL,
    TOOL_CHOICE,
    render_judge_prompt,
)

__all__ = ["CallRequest", "call_request"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRequest:
    """What one call asks, before any API gives it a shape."""

    #: complete, tools or judge (`verdryx_core.llm.base.CALL_KINDS`).
    kind: str
    #: The user message; for a judge, the rendered judge prompt.
    prompt: str
    system: str | None = None
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
) -> CallRequest:
    """The request of the protocol call `kind` with these arguments (`complete(prompt)`,
    `complete_with_tools(prompt, tools)`, `judge(prompt, output, rubric)`)."""
    if kind == "judge":
        return CallRequest(
            kind=kind,
            prompt=render_judge_prompt(prompt, output or "", rubric or ""),
            system=JUDGE_SYSTEM,
            tools=(RECORD_VERDICT_TOOL,),
            tool_choice=TOOL_CHOICE,
        )
    if kind == "complete":
        return CallRequest(kind=kind, prompt=prompt)
    if kind == "tools":
        return CallRequest(kind=kind, prompt=prompt, tools=tools)
    raise ValueError(f"unknown call kind {kind!r}")
