"""Comparable or refused: matching a run (and its window) to a baseline, then judging drift.

Only cases present in both, under the same content fingerprint, enter the comparison, so a
`-k` subset is judged against the same subset of the baseline and an edited case is reported
as changed instead of silently compared. A different model or judge is refused unless allowed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from verdryx_core.errors import ModelChangeError, UsageError
from verdryx_core.gating.drift import (
    DEFAULT_ITERATIONS,
    DEFAULT_THRESHOLD,
    DriftReport,
    compute_drift,
)
from verdryx_core.runs import Baseline, EvalRun, iso_utc
from verdryx_core.store import Store

__all__ = [
    "CaseDelta",
    "GateResult",
    "check_models",
    "compare_to_baseline",
    "select_window",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseDelta:
    key: str
    baseline: float
    current: float

    @property
    def delta(self) -> float:
        return self.current - self.baseline


@dataclass(frozen=True, slots=True, kw_only=True)
class GateResult:
    baseline: Baseline
    report: DriftReport | None
    matched: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    #: Matched cases, worst change first.
    deltas: tuple[CaseDelta, ...]
    #: Why there is no report (nothing matched), in words.
    note: str | None = None
    model_change: str | None = None

    @property
    def regressed(self) -> bool:
        return self.report is not None and self.report.verdict == "regressed"


def check_models(
    run: EvalRun,
    baseline: Baseline,
    *,
    allow: bool,
) -> str | None:
    """A message when models differ; raises unless `allow`."""
    problems = []
    if run.model != baseline.model:
        problems.append(f"model {run.model!r} (baseline: {baseline.model!r})")
    if run.judge_model and baseline.judge_model and run.judge_model != baseline.judge_model:
        problems.append(f"judge {run.judge_model!r} (baseline: {baseline.judge_model!r})")
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
) -> GateResult:
    """Judge `window` (newest first; `window[0]` is the current run) against `baseline`."""
    if not window:
        raise UsageError("no run to compare against the baseline")
    current = window[0]
    model_change = check_models(current, baseline, allow=allow_model_change)
    base_cases = baseline.case_map()
    current_sets = set(current.eval_set_ids) | {score.eval_set_id for score in current.scores}

    changed: set[str] = set()
    per_case: dict[str, list[float]] = defaultdict(list)
    for run in window:
        for score in run.scores:
            base = base_cases.get(score.key)
            if base is None or score.value is None:
                continue
            if base.fingerprint and score.fingerprint and base.fingerprint != score.fingerprint:
                if run is current:
                    changed.add(score.key)
                continue
            per_case[score.key].append(score.value)

    current_keys = {score.key for score in current.scores}
    # An unmeasured case is in neither side's numbers: it is not news that it has no baseline.
    added = sorted(
        score.key
        for score in current.scores
        if score.value is not None and score.key not in base_cases
    )
    present = set(known_keys) if known_keys is not None else current_keys
    removed = sorted(
        key
        for key, case in base_cases.items()
        if case.eval_set_id in current_sets and key not in present
    )
    # Only cases the current run measured are compared; the window adds samples to those.
    matched = [key for key in base_cases if key in per_case and key in current_keys]
    matched = [key for key in matched if key not in changed]
    if not matched:
        return GateResult(
            baseline=baseline,
            report=None,
            matched=0,
            added=tuple(added),
            removed=tuple(removed),
            changed=tuple(sorted(changed)),
            deltas=(),
            note="no measured case of this run matches the baseline: nothing to compare",
            model_change=model_change,
        )
    pooled = [value for key in matched for value in per_case[key]]
    base_values = [base_cases[key].value for key in matched]
    case_means = [math.fsum(per_case[key]) / len(per_case[key]) for key in matched]
    report = compute_drift(
        pooled,
        base_values,
        paired_current=case_means,
        paired_baseline=base_values,
        baseline_id=baseline.label or baseline.id,
        gate=gate,
        threshold=threshold,
        min_effect=min_effect,
        window=len(window),
        iterations=iterations,
        seed=seed,
    )
    deltas = sorted(
        (
            CaseDelta(key=key, baseline=base_cases[key].value, current=mean)
            for key, mean in zip(matched, case_means, strict=True)
        ),
        key=lambda item: (item.delta, item.key),
    )
    return GateResult(
        baseline=baseline,
        report=report,
        matched=len(matched),
        added=tuple(added),
        removed=tuple(removed),
        changed=tuple(sorted(changed)),
        deltas=tuple(deltas),
        model_change=model_change,
    )


def select_window(store: Store, current: EvalRun, size: int) -> list[EvalRun]:
    """The current run and the `size - 1` complete runs before it of the same eval sets and
    model, newest first (docs/options.md, `--verdryx-window`). Partial runs (a `-k` subset,
    an `--lf` rerun) are left out: they measured other cases than a whole run does."""
    if size < 1:
        raise UsageError(f"window {size} is not a positive number of runs")
    if size == 1:
        return [current]
    earlier = [
        summary
        for summary in store.list_runs(
            model=current.model,
            eval_set_ids=current.eval_set_ids,
            complete_only=True,
            before=iso_utc(current.started_at),
        )
        if not summary.partial
    ][: size - 1]
    runs = [current]
    for summary in earlier:
        run = store.load_run(summary.id)
        if run is not None and run.id != current.id:
            runs.append(run)
    return runs
