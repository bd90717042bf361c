"""The pass bar: decided here, once per case, and carried on the Score (`Score.bar`).

Every reader of a score (the item's outcome, the summary's counts, the stability label)
uses `score.bar`, never its own copy of the rule.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["pass_bar", "stability"]


def pass_bar(case_min_score: float | None, default: float) -> float:
    """A case's own `min_score`, else the run's default."""
    return float(default if case_min_score is None else case_min_score)


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
