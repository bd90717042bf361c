"""What a target returns, normalised (docs/targets.md, "What a target returns").

A target may return a plain string (the output), a `TargetResult`, or a dict with the same
keys. Everything is checked here, once, so the rest of verdryx reads one shape; a bad value
is a `TargetResultError` of one line naming the field, which becomes that case's error.
"""

from __future__ import annotations

import json
import math
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from verdryx_core.cases import ToolCall
from verdryx_core.errors import TargetResultError
from verdryx_core.limits import cost_problem, token_problem
from verdryx_core.untrusted.json_input import MAX_DEPTH, nesting_depth

__all__ = ["TargetResult", "TargetUsage", "TooDeepToEncode", "call_dict", "normalise_result"]

_RESULT_KEYS: Final = ("output", "tool_calls", "usage", "metadata", "state", "done")
#: What verdryx adds to a simulated dialogue's result (docs/scenarios.md): never a target's.
_DIALOGUE_KEYS: Final = ("transcript", "ended")
_CALL_KEYS: Final = ("name", "arguments", "result")
_USAGE_KEYS: Final = ("input_tokens", "output_tokens", "cost_usd", "model")
_PREVIEW: Final = 80


#: `repr` cut short, levels deep and long: a value nested 5,000 deep shows its first levels
#: (the builtin `repr` would recurse to a RecursionError).
_REPR: Final = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 4, _PREVIEW, _PREVIEW


class TooDeepToEncode(TargetResultError):
    """A value the target returned nests deeper than verdryx encodes (`MAX_DEPTH` levels of
    lists and dicts): verdryx's own limit on that case, not an error of the target."""


def _preview(value: object) -> str:
    text = " ".join(_REPR.repr(value).split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 3] + "..."


def _json_safe(value: object, where: str) -> None:
    # Measured without recursion first: JSON is written (cache, xdist) and walked (graders)
    # by recursive code, which the interpreter stops at about 1,000 levels.
    depth = nesting_depth(value)
    if depth > MAX_DEPTH:
        raise TooDeepToEncode(
            f"{where} nests {depth:,} levels of lists and dicts, and verdryx encodes at most "
            f'{MAX_DEPTH} (docs/targets.md, "What a target returns")'
        )
    try:
        json.dumps(value, allow_nan=False)
    except RecursionError:
        raise TooDeepToEncode(
            f"{where} nests deeper than verdryx encodes (at most {MAX_DEPTH} levels of lists "
            'and dicts; docs/targets.md, "What a target returns")'
        ) from None
    except (TypeError, ValueError) as exc:
        raise TargetResultError(
            f"{where} is not JSON data ({' '.join(str(exc).split())}); use str, int, float, "
            "bool, None, lists and dicts with string keys"
        ) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetUsage:
    """What one target call consumed, as the target reports it (zero when it does not).
    With a `model` and no `cost_usd`, the run prices the tokens by its price book
    (docs/targets.md, "What a target returns")."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None

    def __post_init__(self) -> None:
        for name in ("input_tokens", "output_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TargetResultError(
                    f"usage.{name} is {_preview(value)}, expected a non-negative integer"
                )
            # Bounded where it enters: the case's, the run's and the store's sums are then
            # far from any 64-bit limit (verdryx_core/limits.py, docs/store.md "Maxima").
            problem = token_problem(value)
            if problem is not None:
                raise TargetResultError(f"usage.{name}: {problem}")
        cost = self.cost_usd
        if isinstance(cost, bool) or not isinstance(cost, int | float):
            raise TargetResultError(f"usage.cost_usd is {_preview(cost)}, expected a number")
        if not math.isfinite(cost) or cost < 0:
            raise TargetResultError(
                f"usage.cost_usd is {cost!r}, expected a non-negative, finite number of dollars"
            )
        problem = cost_problem(cost)
        if problem is not None:
            raise TargetResultError(f"usage.cost_usd: {problem}")
        object.__setattr__(self, "cost_usd", float(cost))
        model = self.model
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise TargetResultError(f"usage.model is {_preview(model)}, expected a model name")

    @classmethod
    def coerce(cls, value: object) -> TargetUsage:
        if isinstance(value, TargetUsage):
            return value
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise TargetResultError(
                f"usage is {_preview(value)}, expected a dict with {', '.join(_USAGE_KEYS)}"
            )
        unknown = sorted(str(key) for key in value if key not in _USAGE_KEYS)
        if unknown:
            raise TargetResultError(
                f"usage has unknown key {unknown[0]!r}; expected only {', '.join(_USAGE_KEYS)}"
            )
        return cls(**{str(key): item for key, item in value.items()})

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }
        if self.model is not None:
            data["model"] = self.model
        return data


#: The usage of a call that reports none: frozen, so every such result shares it (a result is
#: built per call, and checking an empty usage again each time is work for nothing).
_NO_USAGE: Final = TargetUsage()


def _no_usage() -> TargetUsage:
    return _NO_USAGE


def _tool_call(value: object, index: int) -> ToolCall:
    where = f"tool_calls[{index}]"
    if isinstance(value, ToolCall):
        value = call_dict(value)
    if isinstance(value, str):  # a bare name: a call whose arguments were not recorded
        value = {"name": value}
    if not isinstance(value, Mapping):
        raise TargetResultError(
            f"{where} is {_preview(value)}, expected a dict with name and arguments"
        )
    unknown = sorted(str(key) for key in value if key not in _CALL_KEYS)
    if unknown:
        raise TargetResultError(
            f"{where} has unknown key {unknown[0]!r}; expected only name, arguments and result"
        )
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        raise TargetResultError(f"{where}.name is {_preview(name)}, expected a tool name")
    # What the tool answered (docs/scenarios.md, "Simulated users"): a later turn of a
    # dialogue is shown it, so it must be data that can be written down.
    result = value.get("result")
    if result is not None:
        _json_safe(result, f"{where}.result")
    arguments = value.get("arguments")
    if arguments is None:  # not recorded
        return ToolCall(name=name, result=result)
    if not isinstance(arguments, Mapping):
        raise TargetResultError(
            f"{where}.arguments is {_preview(arguments)}, expected a dict of arguments"
        )
    arguments = dict(arguments)
    _json_safe(arguments, f"{where}.arguments")
    return ToolCall(name=name, arguments=arguments, result=result)


def call_dict(call: ToolCall) -> dict[str, Any]:
    """A call as a target writes it: its name, its arguments, and its result when it has one."""
    data = call.to_dict()
    if call.result is not None:
        data["result"] = call.result
    return data


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetResult:
    """One target call's result: the output text, the tools it called in order (`ToolCall`s,
    with their arguments; None when not recorded), what it consumed, and free-form metadata.

    Construct it with plain lists and dicts; they are checked and normalised here, so a
    target that builds a bad one fails that case with a one-line reason.
    """

    output: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: TargetUsage = field(default_factory=_no_usage)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: The agent's end state as it reports it (its order database, say), any JSON value;
    #: the `final_state` grader compares it with the case's expectation.
    state: Any = None
    #: In a simulated dialogue: the agent ends it with this reply (docs/scenarios.md).
    done: bool = False
    #: A simulated dialogue's whole transcript and why it ended, set by verdryx.
    transcript: tuple[Mapping[str, Any], ...] | None = None
    ended: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.output, str):
            raise TargetResultError(f"output is {_preview(self.output)}, expected a string")
        calls: Any = self.tool_calls
        # A reply without tools, usage or metadata (most of them) skips the checks below: an
        # empty tuple, the shared empty usage and an empty dict have nothing to check.
        if calls is None or (type(calls) is tuple and not calls):
            object.__setattr__(self, "tool_calls", ())
        elif isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Sequence):
            raise TargetResultError(
                f"tool_calls is {_preview(calls)}, expected a list of "
                '{"name": ..., "arguments": {...}}'
            )
        else:
            object.__setattr__(
                self, "tool_calls", tuple(_tool_call(call, i) for i, call in enumerate(calls))
            )
        if self.usage is not _NO_USAGE:
            object.__setattr__(self, "usage", TargetUsage.coerce(self.usage))
        metadata: Any = self.metadata
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping):
            raise TargetResultError(f"metadata is {_preview(metadata)}, expected a dict")
        metadata = dict(metadata)
        if metadata:
            _json_safe(metadata, "metadata")
        object.__setattr__(self, "metadata", metadata)
        if self.state is not None:
            _json_safe(self.state, "state")
        if not isinstance(self.done, bool):
            raise TargetResultError(f"done is {_preview(self.done)}, expected true or false")
        if self.transcript is not None:
            object.__setattr__(self, "transcript", tuple(dict(m) for m in self.transcript))

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The ordered tool names: what the tool_trace grader compares."""
        return tuple(call.name for call in self.tool_calls)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "output": self.output,
            "tool_calls": [call_dict(call) for call in self.tool_calls],
            "usage": self.usage.to_dict(),
            "metadata": dict(self.metadata),
        }
        # Only when set: a result recorded before them reads back the same.
        if self.state is not None:
            data["state"] = self.state
        if self.done:
            data["done"] = True
        if self.transcript is not None:
            data["transcript"] = [dict(m) for m in self.transcript]
            data["ended"] = self.ended
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, dialogue: bool = False) -> TargetResult:
        """From a target's dict; `dialogue`: a simulated dialogue's as verdryx recorded it
        (with its transcript)."""
        allowed = (*_RESULT_KEYS, *_DIALOGUE_KEYS) if dialogue else _RESULT_KEYS
        unknown = sorted(str(key) for key in data if key not in allowed)
        if unknown:
            raise TargetResultError(
                f"the result has unknown key {unknown[0]!r}; expected only "
                f"{', '.join(_RESULT_KEYS)}"
            )
        if "output" not in data:
            raise TargetResultError(
                'the result has no output; return a dict with an output string ("" when '
                "the agent only called tools)"
            )
        return cls(
            output=data["output"],
            tool_calls=data.get("tool_calls") or (),
            usage=data.get("usage"),  # type: ignore[arg-type]  # coerced in __post_init__
            metadata=data.get("metadata") or {},
            state=data.get("state"),
            done=data.get("done", False),
            transcript=data.get("transcript") if dialogue else None,
            ended=data.get("ended") if dialogue else None,
        )


def normalise_result(value: object) -> TargetResult:
    """A target's return value as a `TargetResult`, or a TargetResultError saying why not."""
    if isinstance(value, TargetResult):
        return value
    if isinstance(value, str):
        return TargetResult(output=value)
    if isinstance(value, Mapping):
        return TargetResult.from_dict(value)
    raise TargetResultError(
        f"the target returned {type(value).__name__} {_preview(value)}; expected a string, a "
        "TargetResult or a dict with output (and optionally tool_calls, usage, metadata, state, "
        "done)"
    )
