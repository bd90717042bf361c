"""The pass bar: decided here, once per case, and carried on the Score (`Score.bar`).

Every reader of a score (the item's outcome, the summary's counts, the stability label)
uses `score.bar`, never its own copy of the rule.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["pass_bar", "stability"]


def pass_bar(
    case_min_score: float | None, default: float, *, grader_default: float | None = None
) -> float:
    """A case's own `min_score` (set defaults included), else its grader's own bar (a tool
    trace passes only when right), else the run's default."""
    if case_min_score is not None:
        return float(case_min_score)
    return float(default if grader_default is None else grader_default)


def stability(samples: Sequence[float], bar: float) -> str | None:
    """stable-pass, stable-fail or flaky across repeated samples; None for a single sample."""
    if len(samples) < 2:
        return None
    passes = sum(1 for value in samples if value >= bar)
    if passes == len(samples):
        return "stable-pass"
    if passes == 0:
        return "stable-fail"
    return "flaky"
