"""The pass bar: decided here, once per case, and carried on the Score (`Score.bar`).

Every reader of a score (the item's outcome, the summary's counts, the stability label)
uses `score.bar`, never its own copy of the rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from verdryx_core.evaluation.settings import DEFAULT_MIN_SCORE

__all__ = ["pass_bar", "stability"]


def pass_bar(
    case_min_score: float | None,
    run_min_score: float | None,
    *,
    grader_default: float | None = None,
) -> float:
    """The first that is set: the case's own `min_score` (its set's `defaults` included), the
    run's (`--verdryx-min-score`, `verdryx eval --min-score`), the grader's own bar (a tool
    trace passes only when right), else 0.5 (docs/graders.md)."""
    for bar in (case_min_score, run_min_score, grader_default):
        if bar is not None:
            return float(bar)
    return DEFAULT_MIN_SCORE


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
