"""Which stored answers the response cache may replay.

A row of the store's `model_cache` is JSON another tool, a bad merge or a hand edit may have
damaged. Replayed as it is, a token count written as `"12"` or past the store's bound would
record a wrong cost, and a missing `text` or a score of 2.5 would stop the session with a
traceback. Such a row is a miss instead: the call is made again and its fresh answer
replaces the row (answers are kept to save money, not as a record; docs/store.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verdryx_core.limits import cost_problem, token_problem
from verdryx_core.llm.base import Completion, Judgement

__all__ = ["replayable"]


def replayable(response: Mapping[str, Any]) -> bool:
    """Whether `response` (a stored completion's or judgement's dict) reads back as the
    answer it was. `from_dict` checks what the answer types check themselves (a score in
    [0, 1], exactly one of score and unmeasured, named tool calls); what it would coerce
    instead (`"12"` tokens, a text of 7, a score of `"0.5"`) is checked here first."""
    for name in ("input_tokens", "output_tokens"):
        if name in response and token_problem(response[name]) is not None:
            return False
    if "cost_usd" in response and cost_problem(response["cost_usd"]) is not None:
        return False
    if "text" in response:
        answer_type: type[Completion | Judgement] = Completion
        calls = response.get("tool_calls") or []
        if not isinstance(response["text"], str) or not isinstance(calls, list):
            return False
        if not all(
            isinstance(call, Mapping) and isinstance(call.get("name"), str) for call in calls
        ):
            return False
    else:
        answer_type = Judgement
        score = response.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            return False
        if not isinstance(response.get("reason") or "", str):
            return False
    try:
        answer_type.from_dict(response)
    except (KeyError, TypeError, ValueError):
        return False
    return True
