"""A case scored more than once in one run (a rerun plugin running its item again) as ONE
score whose samples are every attempt's, aggregated like repeats (docs/outcomes.md,
"Reruns"): a rerun is more evidence about the case, never a second chance. Keeping only
the newest attempt would store the best of N+1 tries of a flaky case.
"""

from __future__ import annotations

import math
from dataclasses import replace

from verdryx_core.evaluation.aggregate import aggregate
from verdryx_core.runs import Score

__all__ = ["pooled_attempts"]


def pooled_attempts(earlier: Score, newest: Score, *, rule: str | None) -> Score:
    """`newest` with the samples of `earlier` (the case's attempts so far, pooled) before
    its own, its value aggregated over all of them by the case's `rule` (`aggregate`:
    None is the mean) and its pass decided again against its bar. Every attempt was paid
    for: tokens and spend add up. What a reader sees beside the score (output, reason,
    checks) is the newest attempt's. An attempt that measured nothing adds no sample."""
    spent = replace(
        newest,
        tokens=earlier.tokens + newest.tokens,
        cost_usd=earlier.cost_usd + newest.cost_usd,
        judge_cost_usd=earlier.judge_cost_usd + newest.judge_cost_usd,
        workspaces=earlier.workspaces + newest.workspaces,
    )
    if earlier.value is None:
        return spent
    if newest.value is None:
        # The earlier samples stand as measured; this attempt's calls are paid for all the same.
        return replace(
            earlier,
            tokens=spent.tokens,
            cost_usd=spent.cost_usd,
            judge_cost_usd=spent.judge_cost_usd,
            workspaces=spent.workspaces,
        )
    samples = _samples(earlier) + _samples(newest)
    bar = newest.bar if newest.bar is not None else earlier.bar
    if bar is None:
        # Read back from a store, a score keeps whether it passed, not its bar: nothing to
        # decide a pass by, so the mean stands and the newest attempt's pass with it.
        return replace(spent, value=_mean(samples), samples=samples)
    passes = _passes(earlier, bar) + _passes(newest, bar)
    value = aggregate(samples, list(passes), rule)
    # A check below its own bar fails the case (docs/graders.md, "Multi-check cases"): in
    # either attempt's checks, under the mean; the other rules read it in `passes`.
    short = (rule is None or rule == "mean") and any(
        check.short for attempt in (earlier, newest) for check in attempt.checks
    )
    kept = passes if any(attempt.passes for attempt in (earlier, newest)) else ()
    return replace(
        spent, value=value, samples=samples, passed=value >= bar and not short, passes=kept
    )


def _samples(score: Score) -> tuple[float, ...]:
    """An attempt's samples: its repeats, or its one value."""
    assert score.value is not None
    return score.samples or (score.value,)


def _passes(score: Score, bar: float) -> tuple[bool, ...]:
    """Whether each of an attempt's samples passed: as decided when it was graded."""
    assert score.value is not None
    if score.samples:
        return score.sample_passes() or tuple(value >= bar for value in score.samples)
    if score.passes:
        return score.passes
    return (score.value >= bar and not any(check.short for check in score.checks),)


def _mean(samples: tuple[float, ...]) -> float:
    return min(1.0, max(0.0, math.fsum(samples) / len(samples)))
