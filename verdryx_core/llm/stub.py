"""The stub model (`--verdryx-model=stub`, the default): deterministic, offline, free.

It records every call, so tests can see what a run asked for, and its judge goes through the
same verdict rules as a real one (a configured score outside [0, 1] is unmeasured, not clamped).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verdryx_core.cases import ToolCall
from verdryx_core.judge.prompt import reading_from_input
from verdryx_core.llm.base import Completion, Judgement
from verdryx_core.llm.judge_answer import judgement
from verdryx_core.llm.usage import TokenUsage

__all__ = ["StubAdapter", "StubCall"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StubCall:
    """One recorded call: `kind` is "complete", "tools" or "judge"."""

    kind: str
    prompt: str
    repeat: int = 0
    tools: tuple[Mapping[str, Any], ...] | None = None
    output: str | None = None
    rubric: str | None = None


class StubAdapter:
    """A deterministic model.

    * `completion`: the text `complete` returns, or a function of the prompt.
    * `judge_value` / `judge_reason`: the verdict `judge` returns; None (or anything that is
      not a number in [0, 1]) gives an unmeasured judgement, as a real judge would.
    * `tool_names`: what `complete_with_tools` reports calling; None means the first tool's
      name (or none when there are no tools); an explicit `[]` means no call. Each call has
      empty arguments, unless `tool_calls` (`[{"name", "arguments"}]`) gives the calls.
    * token counts and `cost_usd` are attached to every call.
    """

    def __init__(
        self,
        *,
        model: str = "stub",
        completion: str | Callable[[str], str] = "stub output",
        judge_value: float | None = 1.0,
        judge_reason: str = "stub judge",
        tool_names: Sequence[str] | None = None,
        tool_calls: Sequence[Mapping[str, Any]] | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        self.model = model
        self.completion = completion
        self.judge_value = judge_value
        self.judge_reason = judge_reason
        self.tool_names = None if tool_names is None else tuple(tool_names)
        self.tool_calls = (
            None
            if tool_calls is None
            else tuple(ToolCall.from_value(c, made=True) for c in tool_calls)
        )
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cost_usd = cost_usd
        self.calls: list[StubCall] = []
        self._lock = threading.Lock()

    @property
    def parameters(self) -> Mapping[str, Any]:
        """What changes the stub's answers, so the response cache never serves a stale one."""
        completion = self.completion
        return {
            "completion": completion
            if isinstance(completion, str)
            else getattr(completion, "__qualname__", repr(completion)),
            "judge_value": self.judge_value,
            "judge_reason": self.judge_reason,
            "tool_names": None if self.tool_names is None else list(self.tool_names),
            **(
                {}
                if self.tool_calls is None
                else {"tool_calls": [call.to_dict() for call in self.tool_calls]}
            ),
        }

    def _record(self, call: StubCall) -> None:
        with self._lock:
            self.calls.append(call)

    def _completion(self, text: str, tool_calls: tuple[ToolCall, ...] = ()) -> Completion:
        return Completion(
            text=text,
            tool_calls=tool_calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
        )

    # The stub answers from the prompt (a conversation's last user message) alone: a system
    # prompt or earlier turns are accepted and do not change its deterministic answer.
    def complete(
        self,
        prompt: str,
        *,
        repeat: int = 0,
        system: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion:
        self._record(StubCall(kind="complete", prompt=prompt, repeat=repeat))
        text = self.completion if isinstance(self.completion, str) else self.completion(prompt)
        return self._completion(text)

    def complete_with_tools(
        self,
        prompt: str,
        tools: Sequence[Mapping[str, Any]],
        *,
        repeat: int = 0,
        system: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion:
        tools = tuple(tools)
        self._record(StubCall(kind="tools", prompt=prompt, repeat=repeat, tools=tools))
        if self.tool_calls is not None:
            return self._completion("stub", self.tool_calls)
        if self.tool_names is not None:
            names = self.tool_names
        elif tools and isinstance(tools[0].get("name"), str):
            names = (tools[0]["name"],)
        else:
            names = ()
        return self._completion("stub", tuple(ToolCall(name=name, arguments={}) for name in names))

    def judge(self, prompt: str, output: str, rubric: str, *, repeat: int = 0) -> Judgement:
        self._record(
            StubCall(kind="judge", prompt=prompt, repeat=repeat, output=output, rubric=rubric)
        )
        reading = reading_from_input({"score": self.judge_value, "reason": self.judge_reason})
        usage = TokenUsage(fresh=self.input_tokens, output=self.output_tokens)
        return judgement(reading, usage, self.cost_usd)
