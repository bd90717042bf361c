"""The pass metric (docs/statistics.md, "What the gate compares") is the same quantity on both
sides: each side's share of a case's samples that reached its bar, or its pass or fail with
one sample. A case that passes two samples of three, unchanged, moves by nothing, in a live
session, in `verdryx drift` from the store, and against a baseline pooled over runs."""

from __future__ import annotations

import random
import statistics
from datetime import UTC, datetime
from pathlib import Path

import pytest
from plugin_support import write_evalset
from store_support import store_target

from verdryx_core.cli import main as cli_main
from verdryx_core.gating.comparison import Window, compare_to_baseline
from verdryx_core.gating.pass_metric import baseline_pass_value, pass_value
from verdryx_core.gating.pooled_baseline import pooled_cases
from verdryx_core.runs import Baseline, BaselineCase, EvalRun, Score
from verdryx_core.store import Store

#: Right on its first two samples of each case, wrong on the third: every case 2 of 3.
AGENT = """
def answer(case):
    return "yes" if case.repeat < 2 else "no"
"""


def _score(case_id: str, samples: tuple[float, ...], bar: float = 0.5) -> Score:
    value = sum(samples) / len(samples)
    return Score(
        case_id=case_id,
        eval_set_id="e",
        value=value,
        grader="exact",
        passed=value >= bar,
        bar=bar,
        samples=samples if len(samples) > 1 else (),
    )


def _run(run_id: str, scores: list[Score]) -> EvalRun:
    return EvalRun(
        id=run_id, model="stub", scores=tuple(scores), eval_set_ids=("e",), started_at=_NOW
    )


_NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_each_side_is_its_share_of_passing_samples_or_its_pass() -> None:
    two_of_three = _score("c", (1.0, 1.0, 0.0))
    assert pass_value(two_of_three) == pytest.approx(2 / 3)
    assert pass_value(_score("c", (1.0,))) == 1.0
    [case] = Baseline.from_run(_run("b", [two_of_three]), id="b", label="v1").cases
    assert case.passes == (True, True, False)
    assert baseline_pass_value(case) == pytest.approx(2 / 3)
    # Kept before each sample's pass was: each sample against the default bar.
    old = BaselineCase(eval_set_id="e", case_id="c", value=0.667, samples=(1.0, 1.0, 0.0))
    assert baseline_pass_value(old) == pytest.approx(2 / 3)
    assert baseline_pass_value(BaselineCase(eval_set_id="e", case_id="c", value=0.4)) == 0.0


def test_an_unchanged_sampled_agent_is_not_moved_by_the_pass_metric() -> None:
    """40 baselines and runs of one agent (each case right with chance 0.7, 3 samples): the
    pass metric's mean delta is the score metric's, about zero (it was -0.09: each baseline
    case decided by its mean, 1.0, against the run's share)."""
    rng = random.Random(3)

    def draw(run_id: str) -> EvalRun:
        scores = [
            _score(f"c{i}", tuple(float(rng.random() < 0.7) for _ in range(3))) for i in range(40)
        ]
        return _run(run_id, scores)

    deltas: dict[str, list[float]] = {"score": [], "pass": []}
    for trial in range(40):
        baseline = Baseline.from_run(draw(f"b{trial}"), id=f"b{trial}", label="v1")
        now = draw(f"r{trial}")
        for metric, found in deltas.items():
            report = compare_to_baseline([now], baseline, metric=metric, iterations=200).stats
            assert report is not None
            found.append(report.delta)
    assert abs(statistics.fmean(deltas["pass"])) < 0.03
    assert statistics.fmean(deltas["pass"]) == pytest.approx(statistics.fmean(deltas["score"]))


def test_a_pooled_baseline_pools_each_samples_pass() -> None:
    own = _run("r3", [_score("c", (1.0,))])
    earlier = [_run("r2", [_score("c", (0.0,))]), _run("r1", [_score("c", (1.0, 0.0, 1.0))])]
    baseline = Baseline.from_run(own, id="b", label="v1")
    [case] = pooled_cases(baseline, Window(runs=(own, *earlier))).cases
    assert case.passes == (True, False, True, False, True)
    assert baseline_pass_value(case) == pytest.approx(3 / 5)


def test_a_session_and_verdryx_drift_see_no_drop_in_an_unchanged_two_of_three(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(agents=AGENT)
    write_evalset(
        pytester.path,
        "s",
        "s",
        [{"id": f"c{i}", "prompt": f"q{i}", "expected": "yes"} for i in range(20)],
    )
    db = pytester.path / "v.db"
    common = (f"--verdryx-db={db}", "--verdryx-target=agents:answer", "--verdryx-repeat=3")
    saved = pytester.runpytest(*common, "--verdryx-save-baseline=v1")
    assert saved.ret == 0, saved.stdout.str()
    gated = pytester.runpytest(*common, "--verdryx-baseline=v1", "--verdryx-gate-metric=pass")
    assert gated.ret == pytest.ExitCode.OK, gated.stdout.str()
    gated.stdout.fnmatch_lines(["delta: +0.000*", "verdict: ON-TRACK*metric: pass)"])
    # The stored run and baseline gate as the session did.
    where = ["--db", str(db), "--root", str(pytester.path)]
    code = cli_main(["drift", "--baseline", "v1", *where, "--gate-metric", "pass"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "delta: +0.000" in out


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_stored_score_and_baseline_keep_each_samples_pass(backend: str, tmp_path: Path) -> None:
    run = _run("r", [_score("c", (1.0, 1.0, 0.0)), _score("d", (1.0,))])
    with store_target(backend, tmp_path) as target, Store.open(target) as store:
        store.save_run(run)
        back = store.load_run("r")
        store.save_baseline(Baseline.from_run(run, id="b", label="v1"))
        kept = store.get_baseline("v1")
    assert back is not None
    assert [score.sample_passes() for score in back.scores] == [(True, True, False), ()]
    assert kept is not None and [case.passes for case in kept.cases] == [(True, True, False), ()]
