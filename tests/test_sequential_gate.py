"""The sequential gate's core (docs/statistics.md, "The sequential gate"): which cases pair,
when the verdict settles, and the gate taking the sequence's verdict past the coverage
floor, on real runs and baselines."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from verdryx_core.gating.compare import GatePolicy, compare
from verdryx_core.gating.sequential import SequentialGate, SequentialVerdict, seeded_order
from verdryx_core.runs import Baseline, EvalRun, Score

START = datetime(2026, 1, 1, tzinfo=UTC)


def _score(i: int, value: float | None, **extra: object) -> Score:
    passed = None if value is None else value >= 0.5
    return Score(
        case_id=f"c{i}", eval_set_id="s", value=value, grader="exact", passed=passed, **extra
    )


def _run(values: list[float | None], run_id: str = "r") -> EvalRun:
    scores = tuple(_score(i, value) for i, value in enumerate(values))
    return EvalRun(id=run_id, model="stub", started_at=START, eval_set_ids=("s",), scores=scores)


def _baseline(values: list[float]) -> Baseline:
    return Baseline.from_run(_run(list(values), "base"), id="b", label="v1")


def test_only_what_the_fixed_gate_compares_pairs() -> None:
    base = _baseline([1.0, 1.0, 1.0]).case_map()
    gate = SequentialGate(base, detect=0.05)
    assert gate.difference(_score(0, 0.25)) == -0.75
    assert gate.difference(_score(1, None, unmeasured="judge said nothing")) is None
    assert gate.difference(_score(7, 0.0)) is None  # new since the baseline
    edited = replace(base["s::c2"], fingerprint="old")
    gate = SequentialGate({**base, "s::c2": edited}, detect=0.05)
    assert gate.difference(_score(2, 0.0, fingerprint="new")) is None
    passing = SequentialGate(base, detect=0.05, metric="pass")
    assert passing.difference(_score(0, 0.25)) == -1.0


def test_a_clear_drop_settles_regressed_and_stays_settled() -> None:
    gate = SequentialGate(_baseline([1.0] * 40).case_map(), detect=0.05)
    verdicts = [gate.observe(_score(i, 0.0)) for i in range(40)]
    first = verdicts.index("regressed")
    assert 5 <= first <= 15 and set(verdicts[first:]) == {"regressed"}
    assert set(verdicts[:first]) == {None}
    verdict = gate.verdict()
    assert verdict.upper < 0 and verdict.n == 40 and verdict.called == 40
    assert SequentialVerdict.from_dict(verdict.to_dict()) == verdict


def test_no_change_settles_on_track_once_narrower_than_detect() -> None:
    gate = SequentialGate(_baseline([1.0] * 300).case_map(), detect=0.2)
    verdicts = [gate.observe(_score(i, 1.0)) for i in range(300)]
    assert verdicts.index("on-track") < 60
    assert gate.verdict().lower > -0.2


def test_the_gate_takes_a_settled_verdict_past_the_coverage_floor() -> None:
    baseline = _baseline([1.0] * 100)
    # Twelve cases graded, the rest never scored: 12% of the baseline, far below the floor.
    run = _run([0.0] * 12)
    plain = compare(run, baseline, gate=GatePolicy())
    assert plain.verdict == "refused" and "too little compared" in (plain.refused or "")
    gate = SequentialGate(baseline.case_map(), detect=0.05)
    gate.observe_all(run.scores)
    settled = compare(run, baseline, gate=GatePolicy(sequential=gate.verdict()))
    assert settled.verdict == "regressed" and settled.exit == "regressed"
    assert settled.sequential == gate.verdict()
    assert "sequential gate" in (settled.exit_reason or "")
    # As the plugin stores it (partial, every case collected) it is gated on the sequence.
    stored = compare(
        replace(run, partial=True),
        baseline,
        gate=GatePolicy(sequential=gate.verdict()),
        known_keys=[f"s::c{i}" for i in range(100)],
    )
    assert stored.verdict == "regressed" and stored.sequential is not None
    # Unsettled, the fixed-sample gate (and its floor) decides.
    unsettled = SequentialGate(baseline.case_map(), detect=0.05)
    unsettled.observe_all(run.scores[:2])
    assert not unsettled.settled
    again = compare(run, baseline, gate=GatePolicy(sequential=unsettled.verdict()))
    assert again.verdict == "refused"


def test_the_order_is_a_seeded_permutation() -> None:
    order = seeded_order(50, 3)
    assert sorted(order) == list(range(50)) and order != list(range(50))
    assert order == seeded_order(50, 3) != seeded_order(50, 4)
