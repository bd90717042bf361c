"""A run broken down by eval set and by grader: mean, passed, failed, unmeasured and, when the
run was gated against a baseline, the delta on each group's matched cases with its paired 95%
interval (the same bootstrap as the gate's, `verdryx_core.gating.drift`). One computation for the
terminal summary, `verdryx show` and the HTML report (docs/cli.md, `show`).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from verdryx_core.reporting.naturalsort import natural_key
from verdryx_core.reporting.summary import fmt_score
from verdryx_core.runs import EvalRun, Score

if TYPE_CHECKING:
    # The gate's statistics (numpy) are imported only for a gated run's deltas.
    from verdryx_core.gating.comparison import CaseDelta, Comparison

__all__ = ["Breakdown", "Group", "breakdown_lines", "compute_breakdown", "delta_words"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """One eval set's or one grader's share of the run."""

    name: str
    cases: int
    mean: float | None
    passed: int
    failed: int
    unmeasured: int
    #: Cases compared with the baseline (0: not gated, or none of this group matched).
    matched: int = 0
    #: Mean of current minus baseline over the matched cases.
    delta: float | None = None
    #: The paired 95% interval of `delta`; None with fewer than 2 matched cases.
    ci_low: float | None = None
    ci_high: float | None = None
    #: Why a gated group has no delta, in words: `1 unmeasured`, `2 edited since the
    #: baseline`, `3 new`; None when it has one, or the run was not gated.
    not_compared: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cases": self.cases,
            "mean": self.mean,
            "passed": self.passed,
            "failed": self.failed,
            "unmeasured": self.unmeasured,
            "matched": self.matched,
            "delta": self.delta,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Breakdown:
    eval_sets: tuple[Group, ...]
    graders: tuple[Group, ...]
    gated: bool

    @property
    def worth_showing(self) -> bool:
        """Whether the breakdown says more than the run's own totals."""
        return len(self.eval_sets) > 1 or len(self.graders) > 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "gated": self.gated,
            "eval_sets": [group.to_dict() for group in self.eval_sets],
            "graders": [group.to_dict() for group in self.graders],
        }


def compute_breakdown(
    run: EvalRun,
    result: Comparison | None = None,
    *,
    iterations: int | None = None,
    seed: int = 0,
) -> Breakdown:
    """`run` by eval set (natural order of ids) and by grader (by name); `result`, the gate's
    verdict on `run`, adds each group's delta on its matched cases (`iterations`: the
    bootstrap's, default the drift's own)."""
    deltas = {item.key: item for item in result.deltas} if result is not None else {}
    gated = result is not None and result.stats is not None
    # Why a measured case has no delta: the words a group without one is described by.
    why = dict.fromkeys(result.changed, "edited since the baseline") if result else {}

    def groups(key: Callable[[Score], str], order: Callable[[str], Any]) -> tuple[Group, ...]:
        by_name: dict[str, list[Score]] = defaultdict(list)
        for score in run.scores:
            by_name[key(score)].append(score)
        return tuple(
            _group(name, by_name[name], deltas, why, gated, iterations=iterations, seed=seed)
            for name in sorted(by_name, key=order)
        )

    return Breakdown(
        eval_sets=groups(lambda s: s.eval_set_id, natural_key),
        graders=groups(lambda s: s.grader, lambda name: name),
        gated=gated,
    )


def _group(
    name: str,
    scores: Sequence[Score],
    deltas: dict[str, CaseDelta],
    why: dict[str, str],
    gated: bool,
    *,
    iterations: int | None,
    seed: int,
) -> Group:
    values = [score.value for score in scores if score.value is not None]
    base = Group(
        name=name,
        cases=len(scores),
        mean=math.fsum(values) / len(values) if values else None,
        passed=sum(1 for score in scores if score.passed is True),
        failed=sum(1 for score in scores if score.passed is False),
        unmeasured=len(scores) - len(values),
    )
    matched = [deltas[score.key] for score in scores if score.key in deltas]
    if not gated:
        return base
    if not matched:
        # Unmeasured now (in the baseline or not), or edited, is not "not in the baseline".
        reasons = Counter(
            "unmeasured" if score.value is None else why.get(score.key, "new since the baseline")
            for score in scores
        )
        words = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        return replace(base, not_compared=words)
    from verdryx_core.gating.drift import DEFAULT_ITERATIONS, compute_drift

    current = [item.current for item in matched]
    baseline = [item.baseline for item in matched]
    report = compute_drift(
        current,
        baseline,
        paired_current=current,
        paired_baseline=baseline,
        iterations=DEFAULT_ITERATIONS if iterations is None else iterations,
        seed=seed,
    )
    paired = report.paired
    assert paired is not None  # pairs were given
    return Group(
        name=base.name,
        cases=base.cases,
        mean=base.mean,
        passed=base.passed,
        failed=base.failed,
        unmeasured=base.unmeasured,
        matched=paired.n,
        delta=paired.mean_diff,
        ci_low=paired.ci_low,
        ci_high=paired.ci_high,
    )


def breakdown_lines(breakdown: Breakdown) -> list[str]:
    """The breakdown as summary lines: a heading per kind, one padded line per group."""
    lines: list[str] = []
    for title, groups in (("by eval set:", breakdown.eval_sets), ("by grader:", breakdown.graders)):
        lines.append(title)
        lines.extend(_group_lines(groups, gated=breakdown.gated))
    return lines


def _group_lines(groups: Iterable[Group], *, gated: bool) -> list[str]:
    groups = list(groups)
    width = max((len(group.name) for group in groups), default=0)
    lines = []
    for group in groups:
        line = (
            f"  {group.name:<{width}}  mean {fmt_score(group.mean)}  {group.passed} passed, "
            # "below the bar", not "failed": the summary's cases line counts the items, and a
            # case below its bar as in the baseline is xfailed there, not failed.
            f"{group.failed} below the bar, {group.unmeasured} unmeasured"
        )
        if gated:
            line += f"   {delta_words(group)}"
        lines.append(line)
    return lines


def delta_words(group: Group) -> str:
    """ "delta -0.083 (95% CI [-0.250, +0.000], 4 matched)", as far as it is known."""
    if group.delta is None:
        return f"not compared: {group.not_compared}" if group.not_compared else "not compared"
    matched = f"{group.matched} matched"
    if group.ci_low is None or group.ci_high is None:
        return f"delta {group.delta:+.3f} ({matched}, too few for an interval)"
    return (
        f"delta {group.delta:+.3f} (95% CI [{group.ci_low:+.3f}, {group.ci_high:+.3f}], {matched})"
    )
