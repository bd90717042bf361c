"""The per-case drop tests leave out of the false discovery count the cases that cannot show
a drop (docs/statistics.md, "Which cases regressed"): which cases are left out, against
each test's smallest p-value computed here with scipy; q and the significant cases against
statsmodels' Benjamini-Hochberg on the same p-values; and by simulation, that the false
discovery rate stays at or below the rate asked for when nothing or part of a set dropped."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from verdryx_core.cli import main
from verdryx_core.evaluation.sharding import shard_of
from verdryx_core.gating.case_drops import CaseDrop, case_drop_tests
from verdryx_core.gating.comparison import Comparison
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store

Samples = dict[str, tuple[tuple[float, ...], tuple[float, ...]]]


def _min_p_by_scipy(base: tuple[float, ...], cur: tuple[float, ...]) -> float:
    """The smallest p-value of the case's test, whatever the split: the test's p of the split
    that puts the lowest samples on the current side, by scipy."""
    pooled = sorted((*base, *cur))
    low, high = pooled[: len(cur)], pooled[len(cur) :]
    if all(value in (0.0, 1.0) for value in pooled):
        table = [[sum(low), len(low) - sum(low)], [sum(high), len(high) - sum(high)]]
        return float(stats.fisher_exact(table, alternative="less").pvalue)
    return float(
        stats.permutation_test(
            (low, high),
            lambda x, y: np.mean(x) - np.mean(y),
            alternative="less",
            permutation_type="independent",
            n_resamples=np.inf,
        ).pvalue
    )


def _sides(draw: st.DrawFn, scores: bool) -> tuple[tuple[float, ...], tuple[float, ...]]:
    values = st.sampled_from((0.0, 0.5, 1.0)) if scores else st.sampled_from((0.0, 1.0))
    base = tuple(draw(st.lists(values, min_size=2, max_size=5)))
    cur = tuple(draw(st.lists(values, min_size=2, max_size=5)))
    return base, cur


@st.composite
def _sample_sets(draw: st.DrawFn) -> Samples:
    count = draw(st.integers(1, 25))
    return {f"s::c{i}": _sides(draw, draw(st.booleans()) and i % 4 == 0) for i in range(count)}


@settings(max_examples=20, deadline=None)
@given(_sample_sets(), st.sampled_from((0.05, 0.1, 0.2)))
def test_left_out_cases_and_q_match_scipy_and_statsmodels(samples: Samples, fdr: float) -> None:
    drops = case_drop_tests(samples, fdr=fdr)
    assert set(drops) == set(samples)
    smallest = {key: _min_p_by_scipy(*sides) for key, sides in samples.items()}
    for key, drop in drops.items():
        assert drop.min_p == pytest.approx(smallest[key], rel=1e-9)
        assert drop.min_p <= drop.p_value + 1e-12
        assert drop.counted == (smallest[key] <= fdr + 1e-12), (key, smallest[key])
    counted = [key for key in samples if drops[key].counted]
    if counted:
        reject, q, _, _ = multipletests(
            [drops[key].p_value for key in counted], alpha=fdr, method="fdr_bh"
        )
        assert [drops[key].q_value for key in counted] == pytest.approx(q.tolist(), rel=1e-9)
        assert [drops[key].significant for key in counted] == reject.tolist()
    assert not any(drops[key].significant for key in samples if key not in counted)
    # Never fewer flagged than plain Benjamini-Hochberg over every tested case.
    plain, _, _, _ = multipletests(
        [drops[key].p_value for key in samples], alpha=fdr, method="fdr_bh"
    )
    flagged = {key for key, drop in drops.items() if drop.significant}
    assert flagged >= {key for key, hit in zip(samples, plain, strict=True) if hit}


def test_a_case_that_fell_from_three_of_three_to_none_is_flagged_among_fifty_stable() -> None:
    samples: Samples = {f"s::c{i}": ((1.0,) * 3, (1.0,) * 3) for i in range(50)}
    samples["s::broken"] = ((1.0,) * 3, (0.0,) * 3)
    drops = case_drop_tests(samples, fdr=0.1)
    broken = drops["s::broken"]
    assert broken.p_value == pytest.approx(1 / 20) and broken.min_p == pytest.approx(1 / 20)
    assert broken.q_value == pytest.approx(1 / 20) and broken.significant
    # Plain Benjamini-Hochberg over all 51 p-values never flags it: q = 51 / 20.
    reject, q, _, _ = multipletests([d.p_value for d in drops.values()], alpha=0.1, method="fdr_bh")
    assert not reject.any() and q[-1] == pytest.approx(1.0)
    stable = drops["s::c0"]
    assert not stable.counted and stable.q_value is None and stable.min_p == 1.0
    result = Comparison(
        baseline=Baseline(
            id="b", label="v1", run_id="r", mean=1.0, created_at=datetime.now(UTC), model="m"
        ),
        stats=None,
        matched=51,
        added=(),
        removed=(),
        changed=(),
        deltas=(),
        case_drops=drops,
    )
    assert result.drop_words("s::c0") == "cannot show a drop with 3 samples a side (smallest p 1)"
    assert result.drop_words("s::broken") == "significant drop (q 0.05)"
    assert result.cannot_show() == 50


def test_the_words_name_both_sides_when_they_differ() -> None:
    drop = CaseDrop(
        key="s::c",
        p_value=1.0,
        q_value=None,
        significant=False,
        test="fisher",
        min_p=0.5,
        baseline_n=3,
        current_n=2,
    )
    assert drop.samples_words() == "3 baseline and 2 current samples"


# -- the false discovery rate, by simulation ---------------------------------------------------


def _rates(
    rng: np.random.Generator,
    passing: np.ndarray,
    dropped: np.ndarray,
    sizes: tuple[int, int],
    fdr: float,
    trials: int,
    *,
    select_on_p: bool = False,
) -> tuple[list[float], int]:
    """Each trial's false discovery proportion (false flags / flags, 0 without flags) and the
    trials with any false flag. Case i passes with `passing[i]` in the baseline and now too,
    except the `dropped` cases, which fail every current sample. `select_on_p`: an invalid
    filter (keep the cases whose observed p is at most the rate), to show the check can fail."""
    n_base, n_cur = sizes
    proportions, any_false = [], 0
    for _ in range(trials):
        base = rng.random((passing.size, n_base)) < passing[:, None]
        cur = (rng.random((passing.size, n_cur)) < passing[:, None]) & ~dropped[:, None]
        samples = {
            f"s::c{i}": (tuple(base[i].astype(float)), tuple(cur[i].astype(float)))
            for i in range(passing.size)
        }
        drops = case_drop_tests(samples, fdr=fdr)
        if select_on_p:
            keys = [key for key, drop in drops.items() if drop.p_value <= fdr]
            hits = multipletests([drops[k].p_value for k in keys], alpha=fdr, method="fdr_bh")[0]
            flagged = [int(k[4:]) for k, hit in zip(keys, hits, strict=True) if hit] if keys else []
        else:
            flagged = [int(key[4:]) for key, drop in drops.items() if drop.significant]
        false = sum(1 for index in flagged if not dropped[index])
        proportions.append(false / len(flagged) if flagged else 0.0)
        any_false += false > 0
    return proportions, any_false


@st.composite
def _designs(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, int], float, int]:
    """Pass rates of a set of cases (many stable, as agents' sets are), sides' sizes, rate."""
    count = draw(st.integers(5, 40))
    kinds = draw(
        st.lists(st.sampled_from(("pass", "fail", "flaky")), min_size=count, max_size=count)
    )
    flaky = draw(st.lists(st.floats(0.2, 0.9), min_size=count, max_size=count))
    passing = np.array(
        [
            1.0 if k == "pass" else 0.0 if k == "fail" else p
            for k, p in zip(kinds, flaky, strict=True)
        ]
    )
    sizes = (draw(st.integers(2, 6)), draw(st.integers(2, 6)))
    return passing, sizes, draw(st.sampled_from((0.05, 0.1, 0.2))), draw(st.integers(0, 2**31))


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(_designs())
def test_nothing_dropped_false_flags_stay_within_the_rate(
    design: tuple[np.ndarray, tuple[int, int], float, int],
) -> None:
    """With every case unchanged, any flag is false: the rate of trials with a flag is the
    false discovery rate; its Wilson 99.9% interval must reach down to the rate asked for."""
    passing, sizes, fdr, seed = design
    trials = 300
    _, any_false = _rates(
        np.random.default_rng(seed), passing, np.zeros(passing.size, bool), sizes, fdr, trials
    )
    low, _ = proportion_confint(any_false, trials, alpha=0.001, method="wilson")
    assert low <= fdr, (any_false, trials, fdr)


def test_some_dropped_the_false_discovery_rate_holds_and_an_invalid_filter_breaks_it() -> None:
    """Half the cases flaky at 0.5, ten broken outright, 3 samples a side, FDR 0.1: the mean
    false discovery proportion stays at or below 0.1 (within 3 standard errors); a filter on
    the observed p-values, which no valid procedure may use, goes far above it under the null."""
    rng = np.random.default_rng(11)
    passing = np.concatenate([np.full(20, 0.5), np.full(20, 1.0), np.full(10, 0.9)])
    dropped = np.zeros(passing.size, bool)
    dropped[-10:] = True
    trials = 300
    proportions, _ = _rates(rng, passing, dropped, (3, 3), 0.1, trials)
    mean, spread = float(np.mean(proportions)), float(np.std(proportions, ddof=1))
    assert mean - 3 * spread / math.sqrt(trials) <= 0.1, mean
    null = np.zeros(passing.size, bool)
    _, any_false = _rates(rng, passing, null, (3, 3), 0.1, 200, select_on_p=True)
    low, _ = proportion_confint(any_false, 200, alpha=0.001, method="wilson")
    assert low > 0.1, any_false


# -- the record: drift --json, gate --json ------------------------------------------------------

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _sampled_run(run_id: str, broken: bool, **extra: object) -> EvalRun:
    """51 cases sampled 3 times: all pass, except `c50`'s samples fail when `broken`."""

    def score(i: int) -> Score:
        samples = (0.0,) * 3 if broken and i == 50 else (1.0,) * 3
        return Score(
            case_id=f"c{i:02d}",
            eval_set_id="support",
            value=sum(samples) / 3,
            grader="exact",
            samples=samples,
        )

    return EvalRun(
        id=run_id,
        model="stub",
        started_at=extra.pop("started_at", T0),  # type: ignore[arg-type]
        finished_at=T0 + timedelta(minutes=1),
        eval_set_ids=("support",),
        scores=tuple(score(i) for i in range(51)),
        **extra,  # type: ignore[arg-type]
    )


def test_drift_and_gate_json_carry_each_cases_drop_test(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "v.db"
    now = _sampled_run("now", broken=True)
    shards = [
        replace(
            now,
            id=f"now-{k}",
            scores=tuple(s for s in now.scores if shard_of(s.eval_set_id, s.case_id, 2) == k),
            started_at=T0 + timedelta(seconds=k),
            run_group="g",
            shard=f"{k}/2",
            partial=True,
        )
        for k in (1, 2)
    ]
    with Store.open(db) as store:
        before = _sampled_run("before", broken=False, started_at=T0 - timedelta(days=1))
        store.save_run(before)
        store.save_baseline(Baseline.from_run(before, id="b-1", label="v1"))
        for run in (now, *shards):
            store.save_run(run)
    for argv in (
        ("drift", "--run", "now"),
        ("gate", "--group", "g"),
    ):
        code = main([*argv, "--baseline", "v1", "--db", str(db), "--json"])
        out, err = capsys.readouterr()
        rows = json.loads(out)["case_drops"]
        assert len(rows) == 51, (argv, err)
        by_case = {row["case_id"]: row for row in rows}
        broken = by_case.pop("c50")
        assert broken == {
            "eval_set_id": "support",
            "case_id": "c50",
            "p": pytest.approx(0.05),
            "q": pytest.approx(0.05),
            "significant": True,
            "min_p": pytest.approx(0.05),
            "can_show_drop": True,
            "test": "fisher",
            "baseline_samples": 3,
            "current_samples": 3,
        }
        assert {
            (r["p"], r["q"], r["significant"], r["can_show_drop"]) for r in by_case.values()
        } == {(1.0, None, False, False)}
        assert code in (0, 1)
    # The words: the significant drop, and how many cannot show one.
    main(["drift", "--run", "now", "--baseline", "v1", "--db", str(db)])
    out = capsys.readouterr().out
    assert "regressed cases (1 of 51 tested significant at FDR 0.1; 50 cannot show a drop " in out
    assert "support::c50: 1.000 -> 0.000 (-1.000)  significant drop (q 0.05)" in out
    # A stricter rate leaves c50 out of the count too (its smallest p, 0.05, is above it).
    main(["drift", "--run", "now", "--baseline", "v1", "--db", str(db), "--json", "--fdr", "0.01"])
    rows = json.loads(capsys.readouterr().out)["case_drops"]
    assert not any(row["can_show_drop"] or row["significant"] for row in rows)


def test_a_monte_carlo_case_can_show_a_drop_unless_its_scores_are_all_alike() -> None:
    """Past 20,000 splits the permutation test draws 10,000: its smallest p is 1 / 10,001,
    except when every score is the same (every split ties: p is 1 whatever the draw)."""
    alike = ((0.5,) * 15, (0.5,) * 15)
    varied = (tuple(0.5 + i / 100 for i in range(15)), tuple(0.2 + i / 100 for i in range(15)))
    drops = case_drop_tests({"s::alike": alike, "s::varied": varied}, fdr=0.1)
    assert drops["s::alike"].p_value == 1.0 and drops["s::alike"].min_p == 1.0
    assert not drops["s::alike"].counted
    assert drops["s::varied"].min_p == pytest.approx(1 / 10_001)
    assert drops["s::varied"].p_value == pytest.approx(1 / 10_001)  # every draw is above it
    assert drops["s::varied"].significant and drops["s::varied"].q_value == pytest.approx(
        1 / 10_001
    )
