"""Comparable or refused: matching a run (and its window) to a baseline, then judging drift.

Only cases present in both, under the same content fingerprint, enter the comparison, so a
`-k` subset is judged against the same subset of the baseline and an edited case is reported
as changed instead of silently compared. A different model or judge is refused unless allowed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from verdryx_core.errors import ModelChangeError, UsageError
from verdryx_core.gating.case_drops import DEFAULT_FDR, CaseDrop, case_drop_tests
from verdryx_core.gating.drift import (
    DEFAULT_ITERATIONS,
    DEFAULT_THRESHOLD,
    DriftStats,
    Scores,
    compute_drift,
)
from verdryx_core.gating.pass_metric import baseline_pass_value, pass_value
from verdryx_core.gating.set_targets import same_targets, target_differences, version_change
from verdryx_core.lazy_names import renamed, warn_renamed
from verdryx_core.runs import Baseline, EvalRun, iso_utc
from verdryx_core.settings_table import setting
from verdryx_core.store import RunSummary, Store

__all__ = [
    "METRICS",
    "CaseDelta",
    "Comparison",
    "Window",
    "check_models",
    "compare_to_baseline",
    "not_comparable",
    "select_window",
    "window_runs",
]

#: What the gate compares per case (`--verdryx-gate-metric`): the score, or pass/fail.
METRICS: Final = setting("verdryx_gate_metric").choices


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseDelta:
    key: str
    baseline: float
    current: float

    @property
    def delta(self) -> float:
        return self.current - self.baseline


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """A run's cases matched with its baseline's: what was added, removed or changed, each
    matched case's delta and drop test, and the drift statistics of the matched cases
    (`stats`). The gate's decision on it is a `GateOutcome` (verdryx_core.gating.compare)."""

    baseline: Baseline
    stats: DriftStats | None
    matched: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    #: Matched cases, worst change first.
    deltas: tuple[CaseDelta, ...]
    #: Why there are no statistics (nothing matched), in words.
    note: str | None = None
    model_change: str | None = None
    #: Baseline cases this run has but did not measure (unmeasured now).
    unmeasured: tuple[str, ...] = ()
    #: What was compared: `score` (mean scores) or `pass` (pass rates), docs/statistics.md.
    metric: str = "score"
    #: The same target at another declared version: the comparison the gate is for.
    target_change: str | None = None
    #: Eval sets of the baseline this run has no case of (renamed, deleted or not
    #: collected): their cases are among `removed`.
    absent_sets: tuple[str, ...] = ()
    #: The drop test of each matched case sampled at least twice on both sides, by key
    #: (docs/statistics.md, "Which cases regressed").
    case_drops: Mapping[str, CaseDrop] = field(default_factory=dict)
    #: The false discovery rate they were corrected at.
    fdr: float = DEFAULT_FDR
    #: The earlier runs a window pooled with this one, newest first (their ids).
    pooled: tuple[str, ...] = ()
    #: The earlier runs a window passed over as not comparable: (run id, why).
    window_skipped: tuple[tuple[str, str], ...] = ()

    @property
    def report(self) -> DriftStats | None:
        """The old name of `stats`."""
        warn_renamed("Comparison.report", "Comparison.stats")
        return self.stats

    def significant(self, key: str) -> bool:
        """Whether this case's drop is significant after the false discovery correction."""
        drop = self.case_drops.get(key)
        return drop is not None and drop.significant

    def dropped_cases(self) -> list[CaseDelta]:
        """The matched cases that dropped: significant drops first, then the rest, each
        group worst first."""
        drops = [item for item in self.deltas if item.delta < 0]
        return sorted(drops, key=lambda item: not self.significant(item.key))

    def drop_words(self, key: str) -> str:
        """`significant drop (q 0.012)`, `within noise (q 0.31)`, `cannot show a drop with 3
        samples a side (smallest p 0.2)`, or `not tested (fewer than 2 samples a side)`."""
        drop = self.case_drops.get(key)
        if drop is None:
            return "not tested (fewer than 2 samples a side)"
        if drop.q_value is None:
            return f"cannot show a drop with {drop.samples_words()} (smallest p {drop.min_p:.3g})"
        if drop.significant:
            return f"significant drop (q {drop.q_value:.3g})"
        return f"within noise (q {drop.q_value:.3g})"

    def cannot_show(self) -> int:
        """How many tested cases cannot show a drop with their samples (left out of the
        false discovery count)."""
        return sum(1 for drop in self.case_drops.values() if not drop.counted)

    @property
    def expected(self) -> int:
        """The baseline's cases this run was to compare: matched, unmeasured, edited, or
        missing from it (a case left out by `-k` is not expected)."""
        return self.matched + len(self.unmeasured) + len(self.changed) + len(self.removed)

    @property
    def coverage(self) -> float:
        """The share of the expected baseline cases that were compared (1.0 when none was
        expected)."""
        return self.matched / self.expected if self.expected else 1.0

    def coverage_words(self) -> str:
        """`12 of 40 baseline cases compared (20 unmeasured, 5 edited, 3 missing)`."""
        parts = [
            f"{count} {word}"
            for count, word in (
                (len(self.unmeasured), "unmeasured"),
                (len(self.changed), "edited since the baseline"),
                (len(self.removed), "missing from this run"),
            )
            if count
        ]
        detail = f" ({', '.join(parts)})" if parts else ""
        absent = ""
        if self.absent_sets:
            shown = ", ".join(self.absent_sets[:5]) + (" ..." if len(self.absent_sets) > 5 else "")
            absent = f"; baseline eval set(s) absent from this run: {shown}"
        return f"{self.matched} of {self.expected} baseline cases compared{detail}{absent}"

    @property
    def regressed(self) -> bool:
        return self.stats is not None and self.stats.verdict == "regressed"


def check_models(
    run: EvalRun | RunSummary,
    baseline: Baseline,
    *,
    allow: bool,
) -> str | None:
    """A message when the run measured another model, judge or target (agent under test)
    than the baseline; raises unless `allow`."""
    problems = []
    if run.model != baseline.model:
        problems.append(f"model {run.model!r} (baseline: {baseline.model!r})")
    if run.judge_model and baseline.judge_model and run.judge_model != baseline.judge_model:
        problems.append(f"judge {run.judge_model!r} (baseline: {baseline.judge_model!r})")
    # The agent under test, eval set by eval set: one file of a project whose sets name
    # their own targets is compared on its own sets (docs/targets.md).
    problems.extend(target_differences(run, baseline))
    if not problems:
        return None
    message = (
        f"this run measured {' and '.join(problems)}: comparing them to baseline "
        f"{baseline.label or baseline.id!r} would compare different things"
    )
    if not allow:
        raise ModelChangeError(
            message,
            hint="save a new baseline for this model, or pass {allow_model_change} to compare "
            "anyway",
        )
    return message


def run_changes(
    run: EvalRun | RunSummary, baseline: Baseline, *, allow: bool
) -> tuple[str | None, str | None]:
    """(`check_models`' message, the target's version change in words, if any)."""
    return check_models(run, baseline, allow=allow), version_change(run, baseline)


def compare_to_baseline(
    window: Sequence[EvalRun],
    baseline: Baseline,
    *,
    known_keys: Collection[str] | None = None,
    gate: str = "significant",
    threshold: float = DEFAULT_THRESHOLD,
    min_effect: float = 0.0,
    allow_model_change: bool = False,
    iterations: int = DEFAULT_ITERATIONS,
    seed: int = 0,
    detect: float | None = None,
    metric: str = "score",
    two_sample_interval: bool = False,
    fdr: float = DEFAULT_FDR,
) -> Comparison:
    """Judge `window` (newest first; `window[0]` is the current run) against `baseline`, on
    mean scores (`metric="score"`) or pass rates per case (`"pass"`); `two_sample_interval`:
    bootstrap the two-sample interval too when cases pair (see `compute_drift`)."""
    if metric not in METRICS:
        raise UsageError(f"unknown gate metric {metric!r}; expected one of {', '.join(METRICS)}")
    if not window:
        raise UsageError("no run to compare against the baseline")
    current = window[0]
    model_change, target_change = run_changes(current, baseline, allow=allow_model_change)
    base_cases = baseline.case_map()
    current_sets = set(current.eval_set_ids) | {score.eval_set_id for score in current.scores}

    changed: set[str] = set()
    unmeasured: set[str] = set()
    per_case: dict[str, list[float]] = defaultdict(list)
    # Each sample's score, for the per-case drop test, and the case's cluster now.
    per_sample: dict[str, list[float]] = defaultdict(list)
    cluster_of: dict[str, str | None] = {}
    # Each score's key once (a run can hold 50,000 scores; the key is built, not stored).
    keyed = [[(score.key, score) for score in run.scores] for run in window]
    # An earlier run of the window adds samples only of a case graded as it is now.
    graded_as = {key: score.fingerprint for key, score in keyed[0]} if len(window) > 1 else {}
    for run, scores in zip(window, keyed, strict=True):
        for key, score in scores:
            base = base_cases.get(key)
            if base is None:
                continue
            if run is not current and score.fingerprint != graded_as.get(key, score.fingerprint):
                continue
            if score.value is None:
                if run is current:
                    unmeasured.add(key)
                continue
            if base.fingerprint and score.fingerprint and base.fingerprint != score.fingerprint:
                if run is current:
                    changed.add(key)
                continue
            per_case[key].append(score.value if metric == "score" else pass_value(score))
            per_sample[key].extend(score.samples or (score.value,))
            cluster_of.setdefault(key, score.cluster)

    current_keys = {key for key, _ in keyed[0]}
    # An unmeasured case is in neither side's numbers: it is not news that it has no baseline.
    added = sorted(
        key for key, score in keyed[0] if score.value is not None and key not in base_cases
    )
    present = set(known_keys) if known_keys is not None else current_keys
    # Coverage counts the whole baseline: an eval set absent from a whole run (renamed,
    # deleted, not collected) is missing, not "not selected"; only a run narrowed by
    # selection (partial: file arguments, -k) is compared on its own eval sets
    # (docs/statistics.md, "Coverage").
    removed = sorted(
        key
        for key, case in base_cases.items()
        if (not current.partial or case.eval_set_id in current_sets) and key not in present
    )
    if current.partial and known_keys is None:
        # A stored selection (`verdryx drift` on a `-k` run): which cases it left out on
        # purpose is not stored, so its cases alone are expected; its summary says partial.
        removed = []
    absent_sets = sorted(
        {base_cases[key].eval_set_id for key in removed} - current_sets - _sets_of(present)
    )
    # Only cases the current run measured are compared; the window adds samples to those.
    matched = [key for key in base_cases if key in per_case and key in current_keys]
    matched = [key for key in matched if key not in changed]
    unmeasured -= set(per_case)  # measured in an earlier run of the window: compared
    if not matched:
        return unmatched_result(
            baseline,
            added=added,
            removed=removed,
            absent_sets=absent_sets,
            changed=sorted(changed),
            unmeasured=sorted(unmeasured),
            model_change=model_change,
            target_change=target_change,
            metric=metric,
        )
    pooled = [value for key in matched for value in per_case[key]]
    base_values = [
        base_cases[key].value if metric == "score" else baseline_pass_value(base_cases[key])
        for key in matched
    ]
    case_means = [math.fsum(per_case[key]) / len(per_case[key]) for key in matched]
    # The cluster the case has now; the baseline's when this run names none.
    labels = [cluster_of.get(key) or base_cases[key].cluster for key in matched]
    return matched_result(
        baseline,
        keys=matched,
        pooled=pooled,
        base_values=base_values,
        base_scores=[base_cases[key].value for key in matched],
        case_means=case_means,
        labels=labels,
        samples={
            key: (base_cases[key].samples, per_sample[key])
            for key in matched
            if len(base_cases[key].samples) >= 2 and len(per_sample[key]) >= 2
        },
        added=added,
        removed=removed,
        absent_sets=absent_sets,
        changed=sorted(changed),
        unmeasured=sorted(unmeasured),
        model_change=model_change,
        target_change=target_change,
        window=len(window),
        gate=gate,
        threshold=threshold,
        min_effect=min_effect,
        iterations=iterations,
        seed=seed,
        detect=detect,
        metric=metric,
        two_sample_interval=two_sample_interval,
        fdr=fdr,
    )


def unmatched_result(
    baseline: Baseline,
    *,
    added: Sequence[str],
    removed: Sequence[str],
    absent_sets: Sequence[str] = (),
    changed: Sequence[str],
    unmeasured: Sequence[str],
    model_change: str | None,
    target_change: str | None,
    metric: str,
) -> Comparison:
    """The result when no measured case of the run matches the baseline."""
    return Comparison(
        baseline=baseline,
        stats=None,
        matched=0,
        added=tuple(added),
        removed=tuple(removed),
        absent_sets=tuple(absent_sets),
        changed=tuple(changed),
        deltas=(),
        note="no measured case of this run matches the baseline: nothing to compare",
        model_change=model_change,
        unmeasured=tuple(unmeasured),
        metric=metric,
        target_change=target_change,
    )


def matched_result(
    baseline: Baseline,
    *,
    keys: Sequence[str] | None,
    pooled: Scores,
    base_values: Scores,
    base_scores: Scores,
    case_means: Scores,
    labels: Sequence[str | None] | None,
    samples: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    added: Sequence[str],
    removed: Sequence[str],
    changed: Sequence[str],
    unmeasured: Sequence[str],
    model_change: str | None,
    target_change: str | None,
    window: int,
    absent_sets: Sequence[str] = (),
    gate: str,
    threshold: float,
    min_effect: float,
    iterations: int,
    seed: int,
    detect: float | None,
    metric: str,
    two_sample_interval: bool,
    fdr: float,
) -> Comparison:
    """The statistics of the matched cases, in the baseline's case order: `pooled` every
    current score of the window, `base_values` (by the metric), `base_scores` and
    `case_means` one per matched case (its `keys`; None: not read, and `deltas` are then
    left empty), `labels` their clusters,
    `samples` the (baseline, current) samples of those sampled twice a side. What
    `compare_to_baseline` gives for the same cases, however they were read."""
    stats = compute_drift(
        pooled,
        base_values,
        paired_current=case_means,
        paired_baseline=base_values,
        baseline_id=baseline.label or baseline.id,
        gate=gate,
        threshold=threshold,
        min_effect=min_effect,
        window=window,
        iterations=iterations,
        seed=seed,
        detect=detect,
        two_sample_interval=two_sample_interval,
        paired_clusters=(
            labels if labels is not None and any(label is not None for label in labels) else None
        ),
    )
    drops = case_drop_tests(samples, fdr=fdr, seed=seed)
    deltas: list[CaseDelta] = []
    if keys is not None:
        # Worst change first, then by key (keys are unique: a total order). Sorted as plain
        # tuples, the same order `CaseDelta.delta` gives, at a fraction of the cost at 50,000.
        ordered = sorted(
            (float(mean) - float(value), key, float(value), float(mean))
            for key, value, mean in zip(keys, base_scores, case_means, strict=True)
        )
        deltas = [
            CaseDelta(key=key, baseline=value, current=mean) for _, key, value, mean in ordered
        ]
    return Comparison(
        baseline=baseline,
        stats=stats,
        matched=len(base_values),
        added=tuple(added),
        removed=tuple(removed),
        absent_sets=tuple(absent_sets),
        changed=tuple(changed),
        deltas=tuple(deltas),
        model_change=model_change,
        unmeasured=tuple(unmeasured),
        metric=metric,
        target_change=target_change,
        case_drops=drops,
        fdr=fdr,
    )


def _sets_of(keys: Collection[str]) -> set[str]:
    """The eval sets of `set::case` keys."""
    return {key.split("::", 1)[0] for key in keys}


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    """The runs a window pools (the current one first, then earlier ones, newest first),
    and the earlier runs passed over as not comparable: (run id, why), newest first."""

    runs: tuple[EvalRun, ...]
    skipped: tuple[tuple[str, str], ...] = ()


def not_comparable(summary: RunSummary, current: EvalRun) -> str | None:
    """Why an earlier complete run of the same eval sets may not be pooled with `current`,
    in words (`another target`); None when it may (docs/options.md, `--verdryx-window`).
    A window pools samples of one measurement: the same model, judge, agent under test and
    its version. A run of anything else would move the verdict by what it measured."""
    if summary.partial:
        return "partial"
    if summary.model != current.model:
        return "another model"
    if summary.judge_model != current.judge_model:
        return "another judge"
    if not same_targets(summary, current):
        return "another target"
    if summary.target_version != current.target_version:
        return "another target version"
    return None


def window_runs(store: Store, current: EvalRun, size: int) -> Window:
    """The current run and the `size - 1` complete runs before it of the same eval sets,
    model, judge, target and target version, newest first, with the runs passed over on the
    way (docs/options.md, `--verdryx-window`). Partial runs (a `-k` subset, an `--lf` rerun)
    are passed over too: they measured other cases than a whole run does."""
    if size < 1:
        raise UsageError(f"window {size} is not a positive number of runs")
    if size == 1:
        return Window(runs=(current,))
    runs = [current]
    skipped: list[tuple[str, str]] = []
    for summary in store.list_runs(
        eval_set_ids=current.eval_set_ids,
        complete_only=True,
        before=iso_utc(current.started_at),
    ):
        if len(runs) == size:
            break
        if summary.id == current.id:
            continue
        why = not_comparable(summary, current)
        if why is not None:
            skipped.append((summary.id, why))
            continue
        run = store.load_run(summary.id)
        if run is not None:
            runs.append(run)
    return Window(runs=tuple(runs), skipped=tuple(skipped))


def select_window(store: Store, current: EvalRun, size: int) -> list[EvalRun]:
    """`window_runs(store, current, size).runs` as a list."""
    return list(window_runs(store, current, size).runs)


#: Old names, kept resolvable with a DeprecationWarning (docs/python-api.md, "Renamed").
__getattr__ = renamed(__name__, {"GateResult": "Comparison"})
