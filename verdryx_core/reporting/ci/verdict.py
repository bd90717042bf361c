"""The gate's outcome in one sentence, and the interval the verdict rested on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Types only: what CI sees is built without importing the gate (numpy) until it runs.
    from verdryx_core.gating.compare import GateOutcome
    from verdryx_core.gating.drift import DriftStats


__all__ = ["Interval", "verdict_interval", "verdict_line"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Interval:
    low: float
    high: float
    #: True when over per-case differences of matched cases (the paired comparison).
    paired: bool
    n: int

    def __str__(self) -> str:
        kind = f"paired, n={self.n}" if self.paired else f"two-sample, n={self.n}"
        return f"95% CI ({kind}) [{self.low:+.3f}, {self.high:+.3f}]"


def verdict_interval(report: DriftStats) -> Interval | None:
    """The interval the verdict used: paired when at least two cases matched, as
    `compute_drift` decides; two-sample otherwise; None with fewer than two scores a side."""
    paired = report.paired
    if paired is not None and paired.ci_low is not None and paired.ci_high is not None:
        return Interval(low=paired.ci_low, high=paired.ci_high, paired=True, n=paired.n)
    if report.ci_low is not None and report.ci_high is not None:
        return Interval(low=report.ci_low, high=report.ci_high, paired=False, n=report.n)
    return None


def verdict_line(
    gate: GateOutcome, *, subject: str = "verdryx gate", against: str = "baseline"
) -> str:
    """One line: what a JUnit failure message, an annotation and a summary heading say.
    A challenger's gate says `verdryx challenger a:v2` `against` its `champion`."""
    name = gate.baseline
    if gate.refused is not None:
        return f"{subject} refused against {against} {name}: {gate.refused}"
    result = gate.result
    if result is None or result.stats is None:
        if gate.not_gated is not None:
            return f"{subject}: not gated against {against} {name}: {gate.not_gated}"
        note = result.note if result is not None else "no run to compare"
        return f"{subject}: nothing compared against {against} {name}: {note}"
    report = result.stats
    interval = verdict_interval(report)
    shown = str(interval) if interval is not None else "CI n/a (fewer than 2 scores on a side)"
    versions = f" ({result.target_change})" if result.target_change else ""
    return (
        f"{subject}: {report.verdict_label()} against {against} {name}: "
        f"mean {report.mean_score:.3f} ({against} {report.baseline_mean:.3f}), "
        f"delta {report.delta:+.3f}, {shown}{versions}"
    )
