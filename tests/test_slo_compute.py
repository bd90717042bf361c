"""The four indicators per subject, the recent-slice burn, the blind spots and what reaches
the bus."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdryx_core.addons.slo import (
    SLIS,
    RunTable,
    SloInputError,
    SloMeasurement,
    SloReport,
    burn_events,
    compute_slo,
    subject_is_emittable,
)

DAY = 86_400_000
A = "agent://acme/support"
B = "agent://acme/billing"


def runs(
    subject: str,
    count: int,
    *,
    outcome: str = "case_resolved",
    start: int = 0,
    spacing: int = DAY,
    **fields: Any,
) -> list[dict[str, Any]]:
    return [
        {
            "agent_id": subject,
            "outcome": outcome,
            "refused_calls": 0,
            "cost_usd": 1.0,
            "last_ts_millis": start + i * spacing,
            **fields,
        }
        for i in range(count)
    ]


def by_sli(report: SloReport, subject: str) -> dict[str, Any]:
    return {m.sli: m for m in report.subjects[subject]}


def test_task_success_56_of_60_is_exhausted_but_not_established() -> None:
    records = runs(A, 56) + runs(A, 4, outcome="escalated", start=56 * DAY)
    report = compute_slo(records)
    task = by_sli(report, A)["task_success"]
    assert (task.events, task.good) == (60, 56)
    assert round(task.ci_low, 4) == 0.8407 and round(task.ci_high, 4) == 0.9738
    assert task.trigger == "exhausted"  # 0.933 < 0.95 spends more than the budget
    assert not task.breach_is_established
    assert burn_events(report) == []


def test_20_of_40_is_an_established_breach_with_the_exact_payload() -> None:
    records = runs(A, 20) + runs(A, 20, outcome="abandoned", start=20 * DAY)
    report = compute_slo(records, window="7d")
    (payload,) = burn_events(report)
    assert set(payload) == {
        "sli",
        "target",
        "observed",
        "ci_low",
        "ci_high",
        "events",
        "window",
        "budget_remaining",
        "burn_rate",
        "trigger",
        "identity_field",
        "_subject",
    }
    assert payload["sli"] == "task_success" and payload["_subject"] == A
    assert payload["observed"] == 0.5 and payload["events"] == 40
    assert payload["budget_remaining"] == -9.0 and payload["trigger"] == "exhausted"
    assert payload["window"] == "7d" and payload["identity_field"] == "agent_id"


def test_recent_slice_catches_a_fast_burn_the_budget_still_covers() -> None:
    """27 good days then a bad last day: the budget is not spent, the recent rate is."""
    old = runs(A, 1000, spacing=DAY * 27 // 1000)
    new = runs(A, 10, outcome="escalated", start=27 * DAY, spacing=DAY // 10)
    task = by_sli(compute_slo(old + new), A)["task_success"]
    assert task.remaining > 0
    stamps = [r["last_ts_millis"] for r in old + new]
    cutoff = max(stamps) - (max(stamps) - min(stamps)) / 28
    recent = [r for r in old + new if r["last_ts_millis"] >= cutoff]
    failed = sum(r["outcome"] == "escalated" for r in recent)
    assert failed == 10 and task.burn_events_seen == len(recent) == 13
    assert task.burn_rate == round((failed / len(recent)) / 0.05, 9)  # 15.38x
    assert task.trigger == "fast_burn"
    assert task.breach_is_established is False  # ci_high of 1000/1010 is above 0.95


def test_unmeasured_reasons_and_blind_spots() -> None:
    records = runs(A, 25) + runs(B, 3) + [{"agent_id": A, "outcome": ""}]
    scores = [{"agent_id": "agent://acme/ghost", "score": 1.0, "last_ts_millis": 1}] * 4
    scores += [{"agent_id": "", "score": 0.2, "last_ts_millis": 1}]
    report = compute_slo(records, scores=scores)
    assert list(report.subjects) == [B, "agent://acme/ghost", A]
    assert (report.total_scores, report.unattributed_scores) == (5, 1)
    a = by_sli(report, A)
    assert a["task_success"].measured and a["task_success"].events == 25
    assert "--scores-db" in a["quality_floor"].unmeasured_reason
    assert "eval --agent-id" in a["quality_floor"].unmeasured_reason
    assert not a["quality_floor"].measured and a["quality_floor"].observed == 0.0
    b = by_sli(report, B)
    assert "3 eligible run(s), below the 20" in b["task_success"].unmeasured_reason
    ghost = by_sli(report, "agent://acme/ghost")
    assert "no runs at all" in ghost["task_success"].unmeasured_reason
    assert "below the 20" in ghost["quality_floor"].unmeasured_reason
    assert any(line.startswith(f"{A}: quality_floor not computed") for line in report.blind_spots)
    # 25 runs a day apart: the newest 1/28 of the span holds one run, too few for a rate.
    assert f"{A}: burn rate not measurable for task_success" in " ".join(report.blind_spots)
    none = compute_slo([{"agent_id": A, "cost_usd": None}] * 30)
    reasons = {m.sli: m.unmeasured_reason for m in none.subjects[A]}
    assert "no run carried an outcome tag" in reasons["task_success"]
    assert "no run carried a call count" in reasons["containment"]
    assert "no cost reference" in reasons["cost_discipline"]


def test_no_timestamps_means_no_burn_rate_and_says_so() -> None:
    records = [{**r, "last_ts_millis": None} for r in runs(A, 30)]
    report = compute_slo(records)
    assert all(m.burn_events_seen == 0 for m in report.subjects[A] if m.measured)
    assert any("so a fast burn there can never fire" in line for line in report.blind_spots)


def test_cost_reference_is_the_fleet_median_not_the_subjects() -> None:
    """B's runs all cost the same, so against its own median none would be expensive; the
    fleet's median is A's price and B runs at ten times it."""
    cheap = runs(A, 40, cost_usd=1.0)
    dear = runs(B, 20, cost_usd=10.0) + runs(B, 1, cost_usd=0.0)
    report = compute_slo(cheap + dear)
    assert report.cost_reference_usd == 1.0  # zero costs are left out of the median
    assert by_sli(report, A)["cost_discipline"].observed == 1.0
    b = by_sli(report, B)["cost_discipline"]
    assert (b.events, b.good) == (21, 1)  # only the free run is within 3 x $1.00


def test_quality_floor_joins_scores_by_agent_and_unattributed_runs_are_counted() -> None:
    records = runs(A, 5) + runs("", 5)
    scores = [
        {"agent_id": A, "score": 0.9 if i % 2 else 0.5, "last_ts_millis": i} for i in range(40)
    ]
    report = compute_slo(records, scores=scores)
    quality = by_sli(report, A)["quality_floor"]
    assert (quality.events, quality.good) == (40, 20)
    assert report.unattributed_runs == 5 and report.total_runs == 10
    keyed = compute_slo(records, scores=scores, identity_field="key_id")
    assert keyed.unattributed_scores == 40 and keyed.subjects == {}


def test_key_subjects_are_reported_never_emittable() -> None:
    assert subject_is_emittable(A)
    assert not subject_is_emittable("k-ops")
    assert not subject_is_emittable("")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"identity_field": "user"}, "identity_field"),
        ({"targets": {"latency": 0.9}}, "unknown SLI"),
        ({"targets": {"containment": 1.5}}, "within 0..1"),
        ({"confidence": 1.0}, "strictly between 0 and 1"),
    ],
)
def test_bad_parameters(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SloInputError, match=message):
        compute_slo([], **kwargs)
    assert issubclass(SloInputError, ValueError)


# -- agreement with a plain loop -----------------------------------------------------------

record = st.fixed_dictionaries(
    {
        "agent_id": st.sampled_from(["", A, B]),
        "outcome": st.sampled_from(["", "(untagged)", "case_resolved", "escalated"]),
        "score": st.none() | st.sampled_from([0.0, 0.5, 0.8, 1.0]),
        "refused_calls": st.none() | st.integers(0, 2),
        "cost_usd": st.none() | st.sampled_from([0.0, 1.0, 2.0, 9.0]),
        "last_ts_millis": st.none() | st.integers(0, 100),
    }
)


def slow_verdicts(rows: list[dict[str, Any]], sli: str, reference: float | None) -> list[bool]:
    out = []
    for row in rows:
        if sli == "task_success" and row["outcome"] not in ("", "(untagged)"):
            out.append(row["outcome"] == "case_resolved")
        elif sli == "quality_floor" and row["score"] is not None:
            out.append(row["score"] >= 0.8)
        elif sli == "containment" and row["refused_calls"] is not None:
            out.append(row["refused_calls"] == 0)
        elif sli == "cost_discipline" and reference and row["cost_usd"] is not None:
            out.append(row["cost_usd"] <= 3.0 * reference)
    return out


@settings(max_examples=80, deadline=None)
@given(st.lists(record, max_size=60), st.integers(1, 6))
def test_counts_agree_with_a_plain_loop(rows: list[dict[str, Any]], min_events: int) -> None:
    report = compute_slo(rows, min_events=min_events, min_burn_events=1)
    positive = sorted(r["cost_usd"] for r in rows if r["cost_usd"])
    reference = None
    if positive:
        mid = len(positive) // 2
        reference = positive[mid] if len(positive) % 2 else (positive[mid - 1] + positive[mid]) / 2
    assert report.cost_reference_usd == reference
    assert report.unattributed_runs == sum(1 for r in rows if not r["agent_id"])
    for subject in {r["agent_id"] for r in rows} - {""}:
        mine = [r for r in rows if r["agent_id"] == subject]
        for m in report.subjects[subject]:
            verdicts = slow_verdicts(mine, m.sli, reference)
            assert m.events == len(verdicts) and m.good == sum(verdicts)
            assert m.measured == (len(verdicts) >= min_events)
            if m.measured:
                assert m.observed == sum(verdicts) / len(verdicts)
    assert set(report.subjects) == {r["agent_id"] for r in rows} - {""}
    assert [m.sli for rows_ in report.subjects.values() for m in rows_] == list(SLIS) * len(
        report.subjects
    )


def test_run_table_input_equals_records_input() -> None:
    records = runs(A, 25) + runs(B, 30, outcome="escalated")
    table = RunTable.from_records(records, "agent_id")
    assert compute_slo(table) == compute_slo(records)


def test_the_recent_slice_is_cut_before_judging() -> None:
    """240 scoreless trace runs newer than 40 scores. They fill the newest 1/28 of the span,
    so quality_floor is measured over the 40 scores but its burn rate is not (a blind spot
    docs/slo.md, "What it is blind to", names; not a zero)."""
    trace = runs(A, 240, start=40 * DAY, spacing=DAY // 10)
    scores = [{"agent_id": A, "score": 1.0, "last_ts_millis": i * DAY} for i in range(40)]
    report = compute_slo(trace, scores=scores)
    quality = by_sli(report, A)["quality_floor"]
    assert quality.measured and (quality.events, quality.good) == (40, 40)
    assert quality.burn_events_seen == 0 and quality.burn_rate == 0.0
    assert f"{A}: burn rate not measurable for quality_floor" in " ".join(report.blind_spots)
    assert by_sli(report, A)["task_success"].burn_events_seen > 0


def _measurement(**fields: Any) -> SloMeasurement:
    base: dict[str, Any] = {
        "sli": "containment",
        "subject": A,
        "observed": 0.5,
        "target": 0.95,
        "events": 40,
        "good": 20,
        "ci_low": 0.352,
        "ci_high": 0.648,
        "remaining": 0.5,
        "burn_rate": 3.0,
        "burn_events_seen": 10,
        "trigger": "slow_burn",
    }
    return SloMeasurement(**{**base, **fields})


def test_only_established_exhausted_and_fast_burns_reach_the_bus() -> None:
    """Whatever the interval says, a slow burn is reported and never sent, and an
    unmeasured indicator never emits."""
    rows = [
        _measurement(),
        _measurement(sli="task_success", trigger="fast_burn", burn_rate=8.0),
        _measurement(sli="cost_discipline", trigger="exhausted", measured=False),
        _measurement(sli="quality_floor", trigger="exhausted", ci_high=0.97),
    ]
    report = SloReport(
        window="28d",
        identity_field="agent_id",
        subjects={A: rows},
        unattributed_runs=0,
        total_runs=40,
        blind_spots=[],
        cost_reference_usd=None,
    )
    assert [payload["sli"] for payload in burn_events(report)] == ["task_success"]
