"""What a verdict stands on before the gate may pass a run: an interval, drawn from enough
clusters (docs/statistics.md, "Clustered cases" and "Edge cases, and the choices made").

A verdict with no interval (fewer than two scores on a side, or one cluster) cannot tell a
drop from chance: "on track" would say nothing, so it is refused, never passed. And the
cluster bootstrap resamples whole clusters: with a handful of them its interval is too
narrow to trust either way (a `cluster` shared by every case leaves one, and one line of an
eval set would switch the gate off), so a comparison of fewer than `MIN_CLUSTERS` clusters is
refused whatever the verdict.
"""

from __future__ import annotations

from typing import Final

from verdryx_core.gating.drift import DriftStats

__all__ = ["MIN_CLUSTERS", "footing_problem"]

#: The fewest clusters a cluster bootstrap is trusted with: below it the resampled means
#: take too few distinct values for a 95% interval to hold its coverage.
MIN_CLUSTERS: Final = 10


def footing_problem(report: DriftStats) -> str | None:
    """Why `report`'s verdict cannot decide the gate, in words; None when it can."""
    clusters = report.clusters
    if clusters is not None and clusters.count < MIN_CLUSTERS:
        return (
            f"too few clusters: the {report.paired.n if report.paired else report.n} matched "
            f"cases fall in {clusters.count} cluster{'s' if clusters.count != 1 else ''} "
            f"(their `cluster`), and the cluster bootstrap needs at least {MIN_CLUSTERS} to "
            "draw an interval from; add cases from more sources, or give cases that are not "
            "alike clusters of their own"
        )
    if report.verdict == "on-track" and not _has_interval(report):
        return (
            "no interval: with fewer than 2 scores on a side the gate cannot tell a drop from "
            "chance, so it does not call the run on track; add cases"
        )
    return None


def _has_interval(report: DriftStats) -> bool:
    """Whether the verdict rested on an interval: the paired one when cases matched, else
    the two-sample one."""
    paired = report.paired
    if paired is not None and paired.ci_high is not None:
        return True
    return report.ci_high is not None
