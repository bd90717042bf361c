"""The challenger's gate in the core (docs/targets.md, "A challenger"): the champion's run of
the challenged cases as the baseline, the gate's own compare, and what `conclude` makes of
it: a regression fails the run, a refusal refuses it, an errored challenger fails it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from verdryx_core.conclusion import conclude
from verdryx_core.gating.challenger import champion_baseline, gate_challenger
from verdryx_core.runs import EvalRun, Score

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _run(values: dict[str, float], target: str, **extra: object) -> EvalRun:
    scores = tuple(
        Score(
            case_id=case_id,
            eval_set_id="s",
            value=value,
            grader="exact",
            passed=value >= 0.5,
            fingerprint=f"f-{case_id}",
        )
        for case_id, value in values.items()
    )
    run = EvalRun(id=f"run-{target}", model="stub", started_at=NOW, scores=scores, complete=True)
    return dataclasses.replace(run, target=target, set_targets={"s": target}, **extra)


def _values(n: int, wrong: set[int] = frozenset()) -> dict[str, float]:  # type: ignore[assignment]
    return {f"c{i}": 0.0 if i in wrong else 1.0 for i in range(n)}


def test_the_baseline_is_the_champion_on_the_challenged_cases_only() -> None:
    champion = _run({**_values(10), "recorded": 1.0}, "a:v1")
    challenger = _run(_values(10), "a:v2")
    baseline = champion_baseline(champion, challenger)
    assert sorted(case.case_id for case in baseline.cases) == sorted(_values(10))
    assert baseline.label == "a:v1" and baseline.target == "a:v2"
    assert gate_challenger(champion, challenger).verdict == "on-track"


def test_a_worse_challenger_fails_the_run_and_says_whom() -> None:
    champion = _run(_values(30), "a:v1")
    challenger = _run(_values(30, wrong=set(range(0, 30, 2))), "a:v2")
    done = conclude(champion, store=None, challenger=challenger)
    assert done.challenger is not None and done.challenger.verdict == "regressed"
    assert done.exit == "failed"
    assert done.exit_reason is not None
    assert done.exit_reason.startswith("the challenger a:v2 regressed against the champion a:v1")
    assert "challenger a:v2 vs champion a:v1: regressed" in done.render()


def test_an_errored_challenger_is_not_gated_and_fails_the_run() -> None:
    champion = _run(_values(5), "a:v1")
    challenger = _run(_values(4), "a:v2", complete=False, errors=("case s::c4: boom",))
    done = conclude(champion, store=None, challenger=challenger)
    assert done.challenger is not None and done.challenger.not_gated is not None
    assert done.exit == "failed"
    assert done.exit_reason == "the challenger a:v2's run is incomplete: case s::c4: boom"


def test_another_model_is_refused_as_against_a_baseline() -> None:
    champion = _run(_values(5), "a:v1")
    challenger = dataclasses.replace(_run(_values(5), "a:v2"), model="other")
    done = conclude(champion, store=None, challenger=challenger)
    assert done.challenger is not None and done.challenger.verdict == "refused"
    assert done.exit == "refused"
