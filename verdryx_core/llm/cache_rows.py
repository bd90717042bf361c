"""Which stored answers the response cache may replay.

A row of the store's `model_cache` is JSON another tool, a bad merge or a hand edit may have
damaged. Replayed as it is, a token count written as `"12"` or past the store's bound would
record a wrong cost, and a missing `text` or a score of 2.5 would stop the session with a
traceback. Such a row is a miss instead: the call is made again and its fresh answer
replaces the row (answers are kept to save money, not as a record; docs/store.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from verdryx_core.cases import ToolCall
from verdryx_core.limits import cost_problem, token_problem

__all__ = ["replayable"]


def replayable(response: Mapping[str, Any]) -> bool:
    """Whether `response` (a stored completion's or judgement's dict) reads back as the
    answer it was: counts that are counts, a completion's text and tool calls, a judgement's
    score in [0, 1] or its unmeasured reason."""
    for name in ("input_tokens", "output_tokens"):
        if name in response and token_problem(response[name]) is not None:
            return False
    if "cost_usd" in response and cost_problem(response["cost_usd"]) is not None:
        return False
    if "text" in response:
        return _completion(response)
    return _judgement(response)


def _completion(response: Mapping[str, Any]) -> bool:
    if not isinstance(response["text"], str):
        return False
    names = response.get("tool_names") or []
    calls = response.get("tool_calls") or []
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return False
    if not isinstance(calls, list):
        return False
    for call in calls:
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            return False
        arguments = call.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            return False
        ToolCall.from_value(call, made=True)
    return True


def _judgement(response: Mapping[str, Any]) -> bool:
    if "score" not in response:
        return False
    score, unmeasured = response["score"], response.get("unmeasured")
    reason = response.get("reason")
    if reason is not None and not isinstance(reason, str):
        return False
    if score is None:
        return isinstance(unmeasured, str)
    if isinstance(score, bool) or not isinstance(score, int | float):
        return False
    return unmeasured is None and math.isfinite(score) and 0.0 <= score <= 1.0
