"""Stores with a history of runs, built through the real `Store`, for the report and the
history commands."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def make_score(
    case_id: str,
    value: float | None,
    *,
    eval_set_id: str = "support",
    grader: str = "exact",
    output: str | None = "the answer",
    expected: str | None = "the answer",
    reason: str | None = None,
    cost_usd: float = 0.0,
    judge_cost_usd: float = 0.0,
    tokens: int = 0,
    fingerprint: str = "",
) -> Score:
    return Score(
        case_id=case_id,
        eval_set_id=eval_set_id,
        value=value,
        unmeasured="the judge answered 'maybe', not a number" if value is None else None,
        grader=grader,
        passed=None if value is None else value >= 0.5,
        output=output,
        expected=expected,
        reason=reason,
        cost_usd=cost_usd,
        judge_cost_usd=judge_cost_usd,
        tokens=tokens,
        fingerprint=fingerprint,
    )


def make_run(
    run_id: str,
    values: Mapping[str, float | None],
    *,
    day: int,
    model: str = "stub",
    eval_set_id: str = "support",
    graders: Mapping[str, str] | None = None,
    agent_id: str | None = None,
    complete: bool = True,
    extra: Sequence[Score] = (),
    cost_usd: float = 0.0,
    judge_cost_usd: float = 0.0,
) -> EvalRun:
    graders = graders or {}
    scores = [
        make_score(
            case_id,
            value,
            eval_set_id=eval_set_id,
            grader=graders.get(case_id, "exact"),
            cost_usd=cost_usd,
            judge_cost_usd=judge_cost_usd,
            tokens=100 if cost_usd else 0,
        )
        for case_id, value in values.items()
    ]
    return EvalRun(
        id=run_id,
        model=model,
        started_at=T0 + timedelta(days=day),
        finished_at=T0 + timedelta(days=day, minutes=1),
        eval_set_ids=tuple({eval_set_id, *(score.eval_set_id for score in extra)}),
        scores=(*scores, *extra),
        agent_id=agent_id,
        complete=complete,
    )


GOOD = {f"case-{index:02d}": 1.0 for index in range(12)}


def worse(drops: Mapping[str, float]) -> dict[str, float | None]:
    values: dict[str, float | None] = dict(GOOD)
    values.update(drops)
    return values


def history_store(path: Path) -> tuple[Path, list[EvalRun], Baseline]:
    """Five runs of one eval set: three good ones (the first saved as baseline `v1`), then a
    small dip and a clear regression. Plain data: no URL anywhere in it."""
    runs = [
        make_run("a1111111-run", GOOD, day=0, cost_usd=0.01),
        make_run("a2222222-run", GOOD, day=1, cost_usd=0.01),
        make_run("b3333333-run", GOOD, day=2, cost_usd=0.012, judge_cost_usd=0.002),
        make_run("b4444444-run", worse({"case-03": 0.5}), day=3, cost_usd=0.01),
        make_run(
            "c5555555-run",
            worse({"case-01": 0.0, "case-02": 0.0, "case-05": 0.0, "case-07": 0.25}),
            day=4,
            cost_usd=0.02,
            judge_cost_usd=0.004,
        ),
    ]
    baseline = Baseline.from_run(
        runs[0], id="base-1", label="v1", created_at=T0 + timedelta(days=0, hours=1)
    )
    with Store.open(path) as store:
        for run in runs:
            store.save_run(run)
        store.save_baseline(baseline)
    return path, runs, baseline
