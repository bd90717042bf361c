"""The case object a target is called with (docs/targets.md, "The case object").

Built fresh for every call from an eval set case, so a target that mutates what it was given
cannot change another repeat's input. It reads the case fields with defaults, so cases from
sets without `system`, `messages` or `metadata` give None there.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TargetCase", "conversation_id"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetCase:
    """One call's input: which case and repeat, and what the case says.

    `messages` is the conversation so far (`{"role": "user"|"assistant", "content": str}`,
    with tool turns as written: an assistant's `tool_calls`, `{"role": "tool", "name",
    "content"}`; in a simulated dialogue, every earlier turn, the results of the agent's own
    calls included) when the case carries one; `conversation()` gives it with the prompt as
    a single user turn otherwise. `tools` are the case's tool definitions, as written in the
    eval set. `conversation_id` names the conversation: the same for every turn of one
    dialogue, another for each case, repeat and run.
    """

    id: str
    eval_set_id: str
    prompt: str
    messages: tuple[Mapping[str, Any], ...] | None = None
    system: str | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None
    metadata: Mapping[str, Any] | None = None
    repeat: int = 0
    #: The path of the case's fresh workspace folder, which the target may change; None when
    #: the case has no workspace.
    workspace: str | None = None
    #: The conversation's id (docs/targets.md, "The case object"): what an agent that keeps
    #: state per conversation keys it by. Not part of what the case is (`to_dict`), so a
    #: cached result is found again in the next run.
    conversation_id: str = ""

    @classmethod
    def from_eval_case(
        cls,
        case: Any,
        *,
        eval_set_id: str,
        repeat: int = 0,
        workspace: str | None = None,
        conversation_id: str = "",
    ) -> TargetCase:
        """From an `EvalCase` (or anything with `id` and `prompt`); `workspace` is the path of
        the sample's fresh copy of the case's workspace."""
        messages = getattr(case, "messages", None)
        tools = getattr(case, "tools", None)
        metadata = getattr(case, "metadata", None)
        return cls(
            id=str(case.id),
            eval_set_id=eval_set_id,
            prompt=str(case.prompt),
            messages=None if messages is None else tuple(dict(m) for m in messages),
            system=getattr(case, "system", None),
            tools=None if tools is None else tuple(copy.deepcopy(dict(t)) for t in tools),
            metadata=None if metadata is None else copy.deepcopy(dict(metadata)),
            repeat=repeat,
            workspace=workspace,
            conversation_id=conversation_id,
        )

    def conversation(self) -> list[dict[str, Any]]:
        """The messages to send a chat model: the case's own, else the prompt as one user
        turn. A fresh list each call."""
        if self.messages:
            return [dict(message) for message in self.messages]
        return [{"role": "user", "content": self.prompt}]

    def user_text(self) -> str:
        """What a plain `str -> str` target is called with: the last user message when the
        case has a conversation, else the prompt (docs/targets.md, "A plain function")."""
        for message in reversed(self.messages or ()):
            if message.get("role") == "user":
                return str(message.get("content", ""))
        return self.prompt

    def to_dict(self) -> dict[str, Any]:
        return self._fields() | ({"workspace": self.workspace} if self.workspace else {})

    def _fields(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "eval_set_id": self.eval_set_id,
            "prompt": self.prompt,
            "messages": None if self.messages is None else [dict(m) for m in self.messages],
            "system": self.system,
            "tools": None if self.tools is None else [dict(t) for t in self.tools],
            "metadata": None if self.metadata is None else dict(self.metadata),
            "repeat": self.repeat,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TargetCase:
        messages = data.get("messages")
        tools = data.get("tools")
        return cls(
            id=str(data["id"]),
            eval_set_id=str(data["eval_set_id"]),
            prompt=str(data["prompt"]),
            messages=None if messages is None else tuple(dict(m) for m in messages),
            system=data.get("system"),
            tools=None if tools is None else tuple(dict(t) for t in tools),
            metadata=data.get("metadata"),
            repeat=int(data.get("repeat", 0)),
            workspace=data.get("workspace"),
            conversation_id=str(data.get("conversation_id") or ""),
        )


def conversation_id(run_id: str, eval_set_id: str, case_id: str, repeat: int) -> str:
    """The id of one sample's conversation: stable across a dialogue's turns, distinct for
    each run, eval set, case and repeat; opaque hex, so it fits any key an agent keeps."""
    material = "\x00".join((run_id, eval_set_id, case_id, str(repeat)))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]
