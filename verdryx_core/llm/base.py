"""The one adapter protocol every model call goes through, and the values it returns.

A `Completion` is what the model under evaluation said; a `Judgement` is what a judge model
said about an output. Both are frozen and cross the store (the response cache) and xdist
workers through `to_dict` / `from_dict`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from verdryx_core.cases import ToolCall
from verdryx_core.untrusted.text import clean_text, clean_value

__all__ = ["CALL_KINDS", "CALL_NAMES", "Completion", "Judgement", "ModelAdapter"]

#: The three kinds of call, as named in cache keys and error messages.
CALL_KINDS = ("complete", "tools", "judge")
#: How a message names each kind of call ("model M (judge call): ...").
CALL_NAMES: Mapping[str, str] = {
    "complete": "model call",
    "tools": "model call with tools",
    "judge": "judge call",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """One model answer: its text, the ordered tool calls it made, and what it cost.

    `tool_calls` are the calls with their arguments; `tool_names` their names (either may be
    given, the other is filled in; an answer cached before arguments were kept has names
    only). `cost_usd` is what the call cost when it was made; `cached` True means this run
    did not pay it again (the answer came from the response cache).
    """

    text: str
    tool_names: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False

    def __post_init__(self) -> None:
        # The text rule (untrusted/text.py): a provider's answer may hold a lone surrogate (a
        # JSON escape); cleaned here, where it enters, so the cache, the grade and the store
        # all hold the same valid text and none of them fails to encode it.
        object.__setattr__(self, "text", clean_text(self.text))
        object.__setattr__(self, "tool_names", tuple(map(clean_text, self.tool_names)))
        object.__setattr__(
            self,
            "tool_calls",
            tuple(
                replace(call, name=clean_text(call.name), arguments=clean_value(call.arguments))
                for call in self.tool_calls
            ),
        )
        if self.tool_calls and not self.tool_names:
            object.__setattr__(self, "tool_names", tuple(call.name for call in self.tool_calls))
        elif self.tool_names and not self.tool_calls:
            object.__setattr__(
                self, "tool_calls", tuple(ToolCall(name=name) for name in self.tool_names)
            )

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tool_names": list(self.tool_names),
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Completion:
        return cls(
            text=str(data["text"]),
            tool_names=tuple(str(name) for name in data.get("tool_names") or ()),
            tool_calls=tuple(ToolCall.from_value(call) for call in data.get("tool_calls") or ()),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            cost_usd=float(data.get("cost_usd", 0.0)),
            cached=bool(data.get("cached", False)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Judgement:
    """A judge's verdict on one output.

    `score` is None exactly when the answer was unreadable, and `unmeasured` then says why;
    an unreadable answer is never clamped or defaulted into a score. Tokens and cost are
    real either way: the call was paid.
    """

    score: float | None
    reason: str = ""
    unmeasured: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False

    def __post_init__(self) -> None:
        # The judge's words may hold a lone surrogate too (see Completion).
        object.__setattr__(self, "reason", clean_text(self.reason))
        if self.unmeasured is not None:
            object.__setattr__(self, "unmeasured", clean_text(self.unmeasured))
        if (self.score is None) == (self.unmeasured is None):
            raise ValueError("a Judgement has exactly one of score and unmeasured")
        if self.score is not None and not 0.0 <= self.score <= 1.0:
            raise ValueError(f"a Judgement score is in [0, 1], got {self.score!r}")

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def measured(self) -> bool:
        return self.score is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "reason": self.reason,
            "unmeasured": self.unmeasured,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Judgement:
        score = data.get("score")
        return cls(
            score=None if score is None else float(score),
            reason=str(data.get("reason") or ""),
            unmeasured=data.get("unmeasured"),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            cost_usd=float(data.get("cost_usd", 0.0)),
            cached=bool(data.get("cached", False)),
        )


@runtime_checkable
class ModelAdapter(Protocol):
    """A model behind one protocol. Implementations are thread-safe: a pool calls them
    concurrently.

    `repeat` is the sample index under `--verdryx-repeat`: adapters send the same request
    for every index (the provider samples), while the cache keys each index apart so repeats
    are real samples. Infrastructure failures raise `verdryx_core.errors.ModelCallError`.

    An adapter may also expose `parameters: Mapping[str, Any]`, the settings that change its
    answers (max_tokens, temperature, a stub's canned values); the response cache keys on them.
    """

    model: str

    def complete(
        self,
        prompt: str,
        *,
        repeat: int = 0,
        system: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion: ...

    def complete_with_tools(
        self,
        prompt: str,
        tools: Sequence[Mapping[str, Any]],
        *,
        repeat: int = 0,
        system: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion: ...

    def judge(self, prompt: str, output: str, rubric: str, *, repeat: int = 0) -> Judgement: ...
