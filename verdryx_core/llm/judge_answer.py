"""A judge call's answer as a `Judgement`, by one rule set for every adapter.

The answer is read by `verdryx_core.judge.prompt`'s rules (a `JudgeReading`) and carries
the call's tokens and cost (an unmeasured reading was paid too). A 2xx answer that cannot be
read at all (a proxy's error page, truncated JSON) is unmeasured as well, its cost unknown,
and never cached (`UNREADABLE_ANSWER`); a call that was refused or never answered stays an
infrastructure error, not a reading (docs/models-and-judges.md).
"""

from __future__ import annotations

from collections.abc import Callable

from verdryx_core.errors import ModelCallError
from verdryx_core.judge.prompt import JudgeReading
from verdryx_core.llm.base import Judgement
from verdryx_core.llm.usage import TokenUsage
from verdryx_core.llm.wire import UNREADABLE_ANSWER

__all__ = ["judgement", "unmeasured_if_unreadable", "unreadable_judgement"]


def judgement(reading: JudgeReading, usage: TokenUsage, cost: float) -> Judgement:
    """`reading` with its call's tokens and `cost` (dollars)."""
    return Judgement(
        score=reading.score,
        reason=reading.reason,
        unmeasured=reading.unmeasured,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output,
        cost_usd=cost,
    )


def unreadable_judgement(problem: str) -> Judgement:
    """A 2xx answer nobody can read: unmeasured, and its cost unknown."""
    return Judgement(score=None, unmeasured=f"{UNREADABLE_ANSWER}: {problem}")


def unmeasured_if_unreadable(ask: Callable[[], Judgement]) -> Judgement:
    """`ask()`, with a `ModelCallError` for an unreadable 2xx answer turned into an unmeasured
    verdict; any other failure is raised."""
    try:
        return ask()
    except ModelCallError as exc:
        if exc.status is None or not 200 <= exc.status < 300:
            raise  # refused or unreachable: an infrastructure error, not a verdict
        return unreadable_judgement(str(exc))
