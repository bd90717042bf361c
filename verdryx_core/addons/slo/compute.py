"""The four indicators per subject: observed ratio with its Wilson interval, error budget
left, burn rate over the recent slice, and the trigger. Measurement only, never enforcement.

Indicators (each judges a run good, bad, or not at all; docs/slo.md, "The four indicators"):
`task_success` (outcome in the good outcomes; untagged runs are not judged),
`quality_floor` (score >= the floor; runs and eval-store scores of the subject),
`containment` (no refused call), `cost_discipline` (cost <= multiple x the fleet median).

Budget and burn are computed over different spans on purpose: over the same runs the rate
is just 1 - remaining and a burn trigger could never fire. The rate is taken over the newest
`burn_window_fraction` of the time span (docs/slo.md, "The numbers").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from verdryx_core.addons.errors import SloInputError
from verdryx_core.addons.slo.stats import budget_remaining, burn_rate, trigger_for, wilson_interval
from verdryx_core.addons.slo.table import RunTable, ScoreTable
from verdryx_core.addons.traces import UNTAGGED

__all__ = [
    "IDENTITY_FIELDS",
    "SLIS",
    "SloMeasurement",
    "SloReport",
    "compute_slo",
    "cost_reference",
]

SLIS: Final = ("task_success", "quality_floor", "containment", "cost_discipline")
IDENTITY_FIELDS: Final = ("agent_id", "key_id")
DEFAULT_TARGET: Final = 0.95

_NOT_JUDGED: Final = -1

_NO_RUNS: Final = (
    "no runs at all for this subject in this window: it is known here only from its "
    "scores, so nothing in the trace describes it"
)
_NO_EVENTS: Final = {
    "task_success": (
        "no run carried an outcome tag (the gateway records the X-Fuse-Outcome header "
        "verbatim and it was never sent)"
    ),
    "quality_floor": (
        "no per-run score reached this subject: record scores with `verdryx eval --agent-id "
        "<id>` and join them with `verdryx slo --scores-db <path>`; a run evaluated with no "
        "--agent-id belongs to nobody"
    ),
    "containment": "no run carried a call count",
    "cost_discipline": "no cost reference could be computed (no run with a positive cost)",
}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class SloMeasurement:
    sli: str
    subject: str
    observed: float
    target: float
    events: int  # eligible (judged) runs
    good: int
    ci_low: float
    ci_high: float
    remaining: float  # fraction of the error budget left; may be negative or -inf
    burn_rate: float
    burn_events_seen: int  # runs the rate was computed over; 0 = rate not measurable
    trigger: str | None
    measured: bool = True
    unmeasured_reason: str = ""

    @property
    def breach_is_established(self) -> bool:
        """Measured, and even the Wilson upper bound is below the objective."""
        return self.measured and self.ci_high < self.target

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: an infinite budget or rate (a target of 1.0) becomes null."""
        return {
            "sli": self.sli,
            "subject": self.subject,
            "measured": self.measured,
            "unmeasured_reason": self.unmeasured_reason,
            "observed": self.observed,
            "target": self.target,
            "events": self.events,
            "good": self.good,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "remaining": _finite(self.remaining),
            "burn_rate": _finite(self.burn_rate),
            "burn_events_seen": self.burn_events_seen,
            "trigger": self.trigger,
            "breach_is_established": self.breach_is_established,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SloReport:
    window: str
    identity_field: str
    subjects: Mapping[str, list[SloMeasurement]]  # SLI order; subjects sorted
    unattributed_runs: int
    total_runs: int
    blind_spots: list[str]
    cost_reference_usd: float | None
    unattributed_scores: int = 0
    total_scores: int = 0
    min_events: int = 20
    confidence: float = 0.95
    targets: Mapping[str, float] = field(default_factory=dict)

    def measurements(self) -> list[SloMeasurement]:
        return [m for rows in self.subjects.values() for m in rows]

    def to_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "identity_field": self.identity_field,
            "total_runs": self.total_runs,
            "unattributed_runs": self.unattributed_runs,
            "total_scores": self.total_scores,
            "unattributed_scores": self.unattributed_scores,
            "cost_reference_usd": self.cost_reference_usd,
            "min_events": self.min_events,
            "confidence": self.confidence,
            "targets": dict(self.targets),
            "subjects": {
                subject: [m.to_dict() for m in rows] for subject, rows in self.subjects.items()
            },
            "blind_spots": list(self.blind_spots),
        }


def cost_reference(costs: np.ndarray) -> float | None:
    """The fleet's median run cost over strictly positive costs; None when there are none."""
    positive = costs[np.isfinite(costs) & (costs > 0)]
    return float(np.median(positive)) if positive.size else None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Settings:
    confidence: float
    min_events: int
    burn_window_fraction: float
    min_burn_events: int


def _recent_burn(
    judged: np.ndarray, ts: np.ndarray, has_ts: np.ndarray, target: float, cfg: _Settings
) -> tuple[float, int]:
    """Burn over the newest slice of the time span, judged among every row handed to the
    SLI (rows it cannot judge still occupy the slice)."""
    if int(has_ts.sum()) < cfg.min_events:
        return 0.0, 0
    stamps = ts[has_ts]
    verdicts = judged[has_ts]
    newest = int(stamps.max())
    span = newest - int(stamps.min())
    if span <= 0:
        return 0.0, 0
    cutoff = newest - span * cfg.burn_window_fraction
    recent = verdicts[stamps >= cutoff]
    recent = recent[recent != _NOT_JUDGED]
    if recent.size < cfg.min_burn_events:
        return 0.0, 0
    return burn_rate(float((recent == 1).sum()) / recent.size, target), int(recent.size)


def _measure(
    sli: str,
    subject: str,
    judged: np.ndarray,
    ts: np.ndarray,
    has_ts: np.ndarray,
    target: float,
    cfg: _Settings,
    *,
    has_runs: bool,
) -> SloMeasurement:
    events = int((judged != _NOT_JUDGED).sum())
    good = int((judged == 1).sum())
    if events < cfg.min_events:
        if not has_runs and (sli != "quality_floor" or events == 0):
            reason = _NO_RUNS
        elif events == 0:
            reason = _NO_EVENTS[sli]
        else:
            reason = (
                f"{events} eligible run(s), below the {cfg.min_events} this report will "
                "compute a ratio from"
            )
        return SloMeasurement(
            sli=sli,
            subject=subject,
            observed=0.0,
            target=target,
            events=events,
            good=good,
            ci_low=0.0,
            ci_high=1.0,
            remaining=0.0,
            burn_rate=0.0,
            burn_events_seen=0,
            trigger=None,
            measured=False,
            unmeasured_reason=reason,
        )
    observed = good / events
    low, high = wilson_interval(good, events, cfg.confidence)
    remaining = budget_remaining(observed, target)
    rate, seen = _recent_burn(judged, ts, has_ts, target, cfg)
    return SloMeasurement(
        sli=sli,
        subject=subject,
        observed=observed,
        target=target,
        events=events,
        good=good,
        ci_low=low,
        ci_high=high,
        remaining=remaining,
        burn_rate=rate,
        burn_events_seen=seen,
        trigger=trigger_for(remaining, rate),
    )


def _verdicts(good: np.ndarray, judged: np.ndarray) -> np.ndarray:
    return np.where(judged, good.astype(np.int8), np.int8(_NOT_JUDGED)).astype(np.int8)


def _targets(targets: Mapping[str, float] | None) -> dict[str, float]:
    chosen = dict.fromkeys(SLIS, DEFAULT_TARGET)
    for name, value in (targets or {}).items():
        if name not in chosen:
            raise SloInputError(f"unknown SLI {name!r} in targets; expected one of {list(SLIS)}")
        if value is None:
            continue
        if not 0.0 <= float(value) <= 1.0:
            raise SloInputError(
                f"target {value!r} for {name} is not within 0..1; pass a fraction such as 0.95"
            )
        chosen[name] = float(value)
    return chosen


def _blind_spots(subjects: Mapping[str, list[SloMeasurement]], min_events: int) -> list[str]:
    lines = []
    for subject, rows in subjects.items():
        dark = [m.sli for m in rows if not m.measured]
        if dark:
            lines.append(
                f"{subject}: {', '.join(dark)} not computed (fewer than {min_events} eligible "
                "runs, or no input for it)"
            )
        rateless = [m.sli for m in rows if m.measured and m.burn_events_seen == 0]
        if rateless:
            lines.append(
                f"{subject}: burn rate not measurable for {', '.join(rateless)} (no usable "
                "timestamp, or too few recent runs), so a fast burn there can never fire"
            )
    return lines


def compute_slo(
    records: Iterable[Mapping[str, Any]] | RunTable,
    *,
    scores: Iterable[Mapping[str, Any]] | ScoreTable | None = None,
    identity_field: str = "agent_id",
    window: str = "28d",
    targets: Mapping[str, float] | None = None,
    confidence: float = 0.95,
    min_events: int = 20,
    good_outcomes: Sequence[str] = ("case_resolved",),
    quality_floor: float = 0.8,
    cost_multiple: float = 3.0,
    burn_window_fraction: float = 1 / 28,
    min_burn_events: int = 5,
) -> SloReport:
    """Measure the four indicators per subject (docs/slo.md)."""
    if identity_field not in IDENTITY_FIELDS:
        raise SloInputError(
            f"identity_field {identity_field!r} is not one of {list(IDENTITY_FIELDS)}; "
            "group by agent_id (client header) or key_id (server-resolved credential)"
        )
    chosen = _targets(targets)
    wilson_interval(0, 0, confidence)  # validates confidence before any work
    cfg = _Settings(
        confidence=confidence,
        min_events=min_events,
        burn_window_fraction=burn_window_fraction,
        min_burn_events=min_burn_events,
    )
    runs = (
        records if isinstance(records, RunTable) else RunTable.from_records(records, identity_field)
    )
    if scores is None:
        score_table = ScoreTable.from_records([], identity_field)
    elif isinstance(scores, ScoreTable):
        score_table = scores
    else:
        score_table = ScoreTable.from_records(scores, identity_field)

    # Verdicts per run, for the whole fleet at once.
    reference = cost_reference(runs.cost_usd)
    outcome = runs.outcome
    tagged = (outcome != "") & (outcome != UNTAGGED)
    won = np.isin(outcome, np.array(list(good_outcomes), dtype=object))
    task = _verdicts(won, tagged)
    scored = ~np.isnan(runs.score)
    quality = _verdicts(np.where(scored, runs.score, -np.inf) >= quality_floor, scored)
    counted = runs.refused_calls >= 0
    contained = _verdicts(runs.refused_calls == 0, counted)
    costed = ~np.isnan(runs.cost_usd) & (reference is not None and reference > 0)
    limit = cost_multiple * reference if reference else 0.0
    thrifty = _verdicts(np.where(costed, runs.cost_usd, np.inf) <= limit, costed)
    score_ok = ~np.isnan(score_table.score)
    score_quality = _verdicts(
        np.where(score_ok, score_table.score, -np.inf) >= quality_floor, score_ok
    )

    run_groups = _groups(runs.subject)
    score_groups = _groups(score_table.subject)
    subjects: dict[str, list[SloMeasurement]] = {}
    empty = np.zeros(0, dtype=np.int64)
    for subject in sorted((set(run_groups) | set(score_groups)) - {""}):
        at = run_groups.get(subject, empty)
        sat = score_groups.get(subject, empty)
        ts, has_ts = runs.ts_millis[at], runs.has_ts[at]
        has_runs = at.size > 0
        rows = []
        for sli, verdicts in (("task_success", task), ("quality_floor", None)):
            if verdicts is None:
                rows.append(
                    _measure(
                        sli,
                        subject,
                        np.concatenate([quality[at], score_quality[sat]]),
                        np.concatenate([ts, score_table.ts_millis[sat]]),
                        np.concatenate([has_ts, score_table.has_ts[sat]]),
                        chosen[sli],
                        cfg,
                        has_runs=has_runs,
                    )
                )
            else:
                rows.append(
                    _measure(
                        sli, subject, verdicts[at], ts, has_ts, chosen[sli], cfg, has_runs=has_runs
                    )
                )
        for sli, verdicts in (("containment", contained), ("cost_discipline", thrifty)):
            rows.append(
                _measure(
                    sli, subject, verdicts[at], ts, has_ts, chosen[sli], cfg, has_runs=has_runs
                )
            )
        subjects[subject] = rows

    return SloReport(
        window=window,
        identity_field=identity_field,
        subjects=subjects,
        unattributed_runs=int(run_groups.get("", empty).size),
        total_runs=len(runs),
        blind_spots=_blind_spots(subjects, min_events),
        cost_reference_usd=reference,
        unattributed_scores=int(score_groups.get("", empty).size),
        total_scores=len(score_table),
        min_events=min_events,
        confidence=confidence,
        targets=chosen,
    )


def _groups(subject: np.ndarray) -> dict[str, np.ndarray]:
    """Row positions per subject, in row order (one sort, not one scan per subject)."""
    if subject.size == 0:
        return {}
    names, inverse = np.unique(subject.astype(str), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(names) + 1))
    return {str(name): order[bounds[i] : bounds[i + 1]] for i, name in enumerate(names.tolist())}
