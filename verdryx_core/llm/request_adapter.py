"""The shape both SDK adapters share: each protocol call is one request, sent and read.

`complete`, `complete_with_tools` and `judge` each become one `CallRequest`
(verdryx_core.llm.call_request), which the adapter's `_create` sends in its API's shape and
its `_completion` or `_judgement` reads; a judge's 2xx answer that cannot be read at all is
unmeasured, by the one rule of verdryx_core.llm.judge_answer. An adapter supplies only those
three methods.

Each adapter keeps its own constructor, though both take the same settings: the keyword
arguments are its public signature (plus its provider's own credential and endpoint rules),
spelled out where readers and type checkers look for them rather than behind `**kwargs`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from verdryx_core.llm.base import Completion, Judgement
from verdryx_core.llm.call_request import CallRequest, call_request
from verdryx_core.llm.judge_answer import unmeasured_if_unreadable

__all__ = ["RequestAdapter"]

#: What `_create` returns: the answer as the adapter reads it (a checked message, ...).
_Answer = TypeVar("_Answer")


class RequestAdapter(ABC, Generic[_Answer]):
    model: str

    def complete(
        self,
        prompt: str,
        *,
        repeat: int = 0,
        system: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion:
        request = call_request("complete", prompt, system=system, messages=messages)
        return self._completion(self._create(request))

    def complete_with_tools(
        self,
        prompt: str,
        tools: Sequence[Mapping[str, Any]],
        *,
        repeat: int = 0,
        system: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion:
        # Single turn: the tool calls of this first answer are the trace; no tool is executed
        # and nothing is sent back.
        request = call_request("tools", prompt, tools=tools, system=system, messages=messages)
        return self._completion(self._create(request))

    def judge(self, prompt: str, output: str, rubric: str, *, repeat: int = 0) -> Judgement:
        request = call_request("judge", prompt, output=output, rubric=rubric)
        return unmeasured_if_unreadable(lambda: self._judgement(self._create(request)))

    @abstractmethod
    def _create(self, request: CallRequest) -> _Answer:
        """Send `request`; every failure is one `ModelCallError` (status 2xx: unreadable)."""

    @abstractmethod
    def _completion(self, answer: _Answer) -> Completion: ...

    @abstractmethod
    def _judgement(self, answer: _Answer) -> Judgement: ...
