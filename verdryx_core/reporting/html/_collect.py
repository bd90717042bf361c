"""What a report shows, read from the store: the run series, the current run, its baseline.

Speed comes from reading little (1,000 stored runs of 500 cases in under 5 s): the
series is the runs' denormalised summary rows, and per-case scores are read for one run only;
a stored baseline already carries its own case scores.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verdryx_core.errors import UsageError
from verdryx_core.gating.comparison import Comparison, compare_to_baseline
from verdryx_core.gating.drift import DEFAULT_THRESHOLD
from verdryx_core.reporting.html._challenger import ChallengerView
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import RunSummary, Store

__all__ = ["ReportData", "collect_report", "default_baseline"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportData:
    """Everything `build_report_html` draws; builtins and core values only, no store."""

    store_path: str
    generated_at: datetime
    #: Runs of the same model and eval sets as `current`, oldest first.
    series: tuple[RunSummary, ...]
    #: The run the report is about, its scores narrowed to `eval_set_id` when one is given.
    current: EvalRun
    eval_set_id: str | None = None
    baseline: Baseline | None = None
    #: How the baseline was chosen, in words ("named", "newest for model stub", ...).
    baseline_source: str = ""
    result: Comparison | None = None
    #: Why there is no verdict, in words, when there is none.
    gate_note: str | None = None
    #: The traces add-on's cost per outcome (its `CostPerOutcomeReport`), when given.
    costs: Any = None
    traces: str | None = None
    traces_note: str | None = None
    #: The run's mean in `series` covers more eval sets than the one selected.
    mixed_sets: bool = False
    #: A challenger run beside `current` in the same session (docs/targets.md).
    challenger: ChallengerView | None = None


def default_baseline(store: Store, model: str) -> Baseline | None:
    """The newest stored baseline measured on `model`: a baseline of another model would be
    refused by the gate, so it would only draw a misleading line."""
    for baseline_id, _label, _mean, _created in store.list_baselines():
        found = store.get_baseline(baseline_id)
        if found is not None and found.model == model:
            return found
    return None


def collect_report(
    store: Store,
    *,
    run_id: str | None = None,
    baseline: Baseline | None = None,
    eval_set_id: str | None = None,
    model: str | None = None,
    traces: Path | None = None,
    traces_costs: tuple[Any, str | None] = (None, None),
    result: Comparison | None = None,
    gate: str = "significant",
    threshold: float = DEFAULT_THRESHOLD,
    min_effect: float = 0.0,
    now: datetime | None = None,
    challenger: ChallengerView | None = None,
) -> ReportData:
    """Read what the report needs. `traces` names the traces the face read into
    `traces_costs` (the cost per outcome, or None and why not). `result` is a gate verdict
    already reached (the pytest
    session's, with its window and settings); without it the current run alone is compared
    with the baseline under `gate`, `threshold` and `min_effect`."""
    current = _current_run(store, run_id=run_id, eval_set_id=eval_set_id, model=model)
    summaries = store.list_runs(model=current.model)
    if eval_set_id is not None:
        series = [run for run in summaries if eval_set_id in run.eval_set_ids]
    else:
        series = [run for run in summaries if run.eval_set_ids == current.eval_set_ids]
    # A partial run (a -k subset, an --lf rerun) measured other cases: not a point of the
    # history, unless it is the run this report is about.
    series = [run for run in series if not run.partial or run.id == current.id]
    series.reverse()
    mixed = eval_set_id is not None and any(len(run.eval_set_ids) > 1 for run in series)
    if eval_set_id is not None:
        current = dataclasses.replace(
            current,
            eval_set_ids=(eval_set_id,),
            scores=tuple(score for score in current.scores if score.eval_set_id == eval_set_id),
        )

    source = "given"
    if baseline is None:
        baseline = default_baseline(store, current.model)
        source = f"the newest baseline for model {current.model}" if baseline else ""
    note = None
    if result is None and baseline is not None:
        if not current.complete:
            note = "not compared: this run is incomplete (interrupted), so it is not gated"
        else:
            try:
                result = compare_to_baseline(
                    [current],
                    baseline,
                    gate=gate,
                    threshold=threshold,
                    min_effect=min_effect,
                    allow_model_change=True,
                )
            except UsageError as exc:
                note = f"not compared: {exc}"
    if result is not None and result.stats is None:
        note = result.note
    if baseline is None:
        note = (
            "no baseline to compare with: save one with `verdryx baseline RUN_ID --label v1` "
            "or --verdryx-save-baseline=v1"
        )

    costs, traces_note = traces_costs if traces is not None else (None, None)
    return ReportData(
        store_path=str(store.path),
        generated_at=now or datetime.now(UTC),
        series=tuple(series),
        current=current,
        eval_set_id=eval_set_id,
        baseline=baseline,
        baseline_source=source,
        result=result,
        gate_note=note,
        costs=costs,
        traces=str(traces) if traces is not None else None,
        traces_note=traces_note,
        mixed_sets=mixed,
        challenger=challenger,
    )


def _current_run(
    store: Store, *, run_id: str | None, eval_set_id: str | None, model: str | None
) -> EvalRun:
    if run_id is not None:
        found = store.find_run(run_id)
        if found is None:
            raise UsageError(f"no such eval run: {run_id!r} in {store.path} (see `verdryx runs`)")
        if eval_set_id is not None and eval_set_id not in found.eval_set_ids:
            raise UsageError(
                f"eval run {found.id!r} did not run eval set {eval_set_id!r} (it ran "
                f"{', '.join(found.eval_set_ids) or 'none'}); drop --eval-set or pick another run"
            )
        return found
    runs = store.list_runs(model=model)
    if eval_set_id is not None:
        runs = [run for run in runs if eval_set_id in run.eval_set_ids]
    if not runs:
        wanted = " and ".join(
            part
            for part in (
                f"model {model!r}" if model else "",
                f"eval set {eval_set_id!r}" if eval_set_id else "",
            )
            if part
        )
        raise UsageError(
            f"no eval run {'of ' + wanted + ' ' if wanted else ''}in {store.path}: run "
            "`pytest --verdryx-db=...` or `verdryx eval` first, or check --db"
        )
    # An interrupted run is part of a run: report on the newest whole one when there is one.
    chosen = next(
        (run for run in runs if run.complete and not run.partial),
        next((run for run in runs if run.complete), runs[0]),
    )
    found = store.load_run(chosen.id)
    assert found is not None  # listed a moment ago; runs are only ever replaced whole
    return found
