"""Clustered cases, per-case drop tests and repeats where the noise is (docs/statistics.md,
"Clustered cases", "Which cases regressed", "Repeats where the noise is"): each formula
against scipy or a numpy simulation written here, and the gate's error rates through the
core's `compare()` on simulated runs."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from verdryx_core.evaluation.allocation import allocate
from verdryx_core.gating.case_drops import (
    bh_adjust,
    case_drop_tests,
    fisher_drop_p,
    permutation_drop_p,
)
from verdryx_core.gating.clusters import Clusters, cluster_bootstrap_means, cluster_se, icc
from verdryx_core.gating.compare import GatePolicy, compare
from verdryx_core.gating.drift import compute_drift
from verdryx_core.gating.planning import noise_of_baseline, plan
from verdryx_core.runs import Baseline, BaselineCase, EvalRun, Score

# -- Benjamini-Hochberg, Fisher, permutation ---------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=40))
def test_bh_matches_scipy(p_values: list[float]) -> None:
    ours = bh_adjust(p_values)
    theirs = stats.false_discovery_control(np.asarray(p_values), method="bh")
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 12).flatmap(
        lambda n_base: st.tuples(
            st.just(n_base),
            st.integers(0, n_base),
            st.integers(2, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
        )
    )
)
def test_fisher_drop_matches_scipy(case: tuple[int, int, tuple[int, int]]) -> None:
    n_base, base_passes, (n_cur, cur_passes) = case
    table = [[cur_passes, n_cur - cur_passes], [base_passes, n_base - base_passes]]
    expected = stats.fisher_exact(table, alternative="less").pvalue
    assert fisher_drop_p(base_passes, n_base, cur_passes, n_cur) == pytest.approx(expected)


def test_permutation_drop_matches_scipy_exactly_and_by_monte_carlo() -> None:
    rng = np.random.default_rng(4)
    for _ in range(5):
        base = rng.uniform(0.3, 1.0, 5).round(2)
        cur = rng.uniform(0.0, 0.9, 4).round(2)
        expected = stats.permutation_test(
            (cur, base),
            lambda x, y: np.mean(x) - np.mean(y),
            alternative="less",
            permutation_type="independent",
            n_resamples=np.inf,
        ).pvalue
        assert permutation_drop_p(base, cur) == pytest.approx(expected)
    # Too many splits to enumerate (C(30, 15)): a seeded Monte Carlo, near the exact value.
    base, cur = rng.uniform(0.4, 1.0, 15), rng.uniform(0.3, 0.9, 15)
    exact = stats.permutation_test(
        (cur, base),
        lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        alternative="less",
        permutation_type="independent",
        n_resamples=20_000,
        vectorized=True,
        random_state=1,
    ).pvalue
    assert abs(permutation_drop_p(base, cur, seed=3) - exact) < 0.015


def test_case_drop_tests_skip_single_samples_and_mark_only_corrected_drops() -> None:
    samples = {
        "s::broken": ((1.0,) * 8, (0.0,) * 8),
        "s::same": ((1.0, 0.0) * 4, (0.0, 1.0) * 4),
        "s::once": ((1.0,), (0.0,)),
        "s::score": ((0.9, 0.8, 0.85), (0.2, 0.3, 0.25)),
    }
    drops = case_drop_tests(samples, fdr=0.1)
    assert set(drops) == {"s::broken", "s::same", "s::score"}  # one sample: never tested
    assert drops["s::broken"].test == "fisher" and drops["s::score"].test == "permutation"
    assert drops["s::broken"].significant and not drops["s::same"].significant
    p = [drops[key].p_value for key in ("s::broken", "s::same", "s::score")]
    q = stats.false_discovery_control(p)
    assert [drops[key].q_value for key in ("s::broken", "s::same", "s::score")] == (
        pytest.approx(q.tolist())
    )
    # 3 of 6 splits of the score case are as low as observed (exact): p = 1/20, q = 3/40.
    assert drops["s::score"].p_value == pytest.approx(1 / 20)
    assert drops["s::score"].significant


# -- clusters ----------------------------------------------------------------------------------


def _clustered(rng: np.random.Generator, clusters: int, size: int, rho: float) -> np.ndarray:
    """One run's pass/fail of clusters x size cases, a shock per cluster (latent ICC rho)."""
    shock = rng.normal(0, math.sqrt(rho), (clusters, 1))
    own = rng.normal(0, math.sqrt(1 - rho), (clusters, size))
    return ((shock + own) < stats.norm.ppf(0.8)).astype(float).ravel()


def test_cluster_se_and_icc_match_direct_formulas() -> None:
    rng = np.random.default_rng(8)
    labels = [f"g{rng.integers(0, 12)}" for _ in range(90)] + [None] * 10
    values = rng.normal(0, 1, 100)
    clusters = Clusters.of(labels)
    assert clusters.count == len({label for label in labels if label is not None}) + 10
    # CR1 by a loop over the clusters' residual sums.
    groups: dict[object, list[float]] = {}
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        groups.setdefault(label if label is not None else ("own", index), []).append(value)
    mean = values.mean()
    g = len(groups)
    direct = math.sqrt(g / (g - 1) * sum((sum(v) - len(v) * mean) ** 2 for v in groups.values()))
    assert cluster_se(values, clusters) == pytest.approx(direct / values.size)
    # Clusters of one: the ordinary standard error.
    alone = Clusters.of([None] * 100)
    assert cluster_se(values, alone) == pytest.approx(values.std(ddof=1) / 10)
    # ICC, equal sizes: (MSB - MSW) / (MSB + (m - 1) MSW) from scipy's one-way ANOVA parts.
    equal = rng.normal(0, 1, (30, 6)) + rng.normal(0, 1, (30, 1))
    flat = equal.ravel()
    msw = equal.var(axis=1, ddof=1).mean()
    msb = 6 * equal.mean(axis=1).var(ddof=1)
    assert stats.f_oneway(*equal).statistic == pytest.approx(msb / msw)
    expected = (msb - msw) / (msb + 5 * msw)
    assert icc(flat, Clusters.of([f"g{i // 6}" for i in range(180)])) == pytest.approx(expected)


def test_cluster_bootstrap_covers_at_nominal_and_the_independent_one_does_not() -> None:
    """A smaller run of the coverage benchmark (benchmarks/cluster_coverage.py: within 2
    points of 95% at 50 clusters, 4,000 data sets): 300 data sets of paired differences of
    50 clusters x 10 cases, latent ICC 0.7; the true mean difference is 0."""
    rng = np.random.default_rng(2026)
    clusters = Clusters.of([f"g{i // 10}" for i in range(500)])
    covered = independent = 0
    trials = 300
    for _ in range(trials):
        diffs = _clustered(rng, 50, 10, 0.7) - _clustered(rng, 50, 10, 0.7)
        low, high = np.quantile(cluster_bootstrap_means(diffs, clusters, 1000, rng), [0.025, 0.975])
        covered += low <= 0 <= high
        se = diffs.std(ddof=1) / math.sqrt(diffs.size)
        independent += abs(diffs.mean()) <= 1.96 * se
    assert covered / trials >= 0.95 - 0.035  # 300 sets: 1.3 points of Monte Carlo error
    assert independent / trials < 0.75  # ignoring the clusters: far too narrow


def test_gate_false_alarms_on_clustered_null_data() -> None:
    """The gate on clustered null data (50 x 10, ICC ~0.7) through compute_drift: with the
    clusters at most 6% regressed, without them far more (the benchmark has the figures)."""
    rng = np.random.default_rng(11)
    labels = [f"g{i // 10}" for i in range(500)]
    alarms = {"with": 0, "without": 0}
    trials = 100
    for trial in range(trials):
        base, cur = _clustered(rng, 50, 10, 0.7), _clustered(rng, 50, 10, 0.7)
        for name, given_labels in (("with", labels), ("without", None)):
            report = compute_drift(
                cur,
                base,
                paired_current=cur,
                paired_baseline=base,
                paired_clusters=given_labels,
                iterations=500,
                seed=trial,
            )
            alarms[name] += report.verdict == "regressed"
    assert alarms["with"] / trials <= 0.06
    assert alarms["without"] / trials >= 0.12
    assert report.clusters is None  # the last report: without labels
    with_labels = compute_drift(
        cur, base, paired_current=cur, paired_baseline=base, paired_clusters=labels
    )
    assert with_labels.clusters is not None and with_labels.clusters.count == 50
    assert with_labels.clusters.words().startswith("clusters: 50 (mean size 10, ICC ")


def test_the_mde_carries_the_design_effect() -> None:
    """The plan of a clustered baseline: variance x (1 + (m - 1) ICC), so the MDE grows by
    the square root of the design effect, within the small-D terms of the MDE formula."""
    rng = np.random.default_rng(5)
    values = _clustered(rng, 50, 10, 0.7)
    cases = tuple(
        BaselineCase(eval_set_id="s", case_id=f"c{i}", value=float(v), cluster=f"g{i // 10}")
        for i, v in enumerate(values)
    )
    flat = tuple(BaselineCase(eval_set_id="s", case_id=c.case_id, value=c.value) for c in cases)
    clustered_noise = noise_of_baseline(_baseline(cases), None)
    flat_noise = noise_of_baseline(_baseline(flat), None)
    found = icc(values, Clusters.of([c.cluster for c in cases]))
    assert found is not None
    assert clustered_noise.design_effect == pytest.approx(1 + 9 * found)
    clustered_plan, flat_plan = plan(clustered_noise), plan(flat_noise)
    assert clustered_plan.cases_needed == pytest.approx(
        flat_plan.cases_needed * clustered_noise.design_effect, abs=clustered_noise.design_effect
    )
    assert clustered_plan.mde / flat_plan.mde == pytest.approx(
        math.sqrt(clustered_noise.design_effect), rel=0.1
    )


# -- allocation ----------------------------------------------------------------------------


def _baseline(cases: tuple[BaselineCase, ...]) -> Baseline:
    return Baseline(
        id="b",
        label="main",
        run_id="r0",
        mean=float(np.mean([case.value for case in cases])),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        model="m",
        cases=cases,
    )


def _mostly_stable(rng: np.random.Generator, n: int = 200) -> np.ndarray:
    p = np.ones(n)
    flaky = int(n * 0.15)
    p[:flaky] = rng.uniform(0.2, 0.8, flaky)
    return p


def _baseline_of(p: np.ndarray, samples: np.ndarray) -> Baseline:
    return _baseline(
        tuple(
            BaselineCase(
                eval_set_id="s", case_id=f"c{i}", value=sum(row) / len(row), samples=tuple(row)
            )
            for i, row in enumerate(samples.tolist())
        )
    )


def test_allocation_cuts_the_variance_of_the_mean_against_uniform() -> None:
    """On a simulated baseline (3 samples a case, mostly stable cases), the allocation's
    variance of the mean, sum p(1 - p) / n_i / N^2 at the true p, is below uniform x3's;
    never-flipped cases of a set that is mostly stable get about one sample."""
    rng = np.random.default_rng(3)
    p = _mostly_stable(rng)
    samples = (rng.random((200, 3)) < p[:, None]).astype(float)
    keys = [f"s::c{i}" for i in range(200)]
    allocation = allocate(keys, _baseline_of(p, samples).case_map(), 600)
    assert allocation.total == 600 and allocation.fallback is None
    repeats = np.array([allocation(key) for key in keys])
    variance = p * (1 - p)
    auto = float(np.sum(variance / repeats)) / 200**2
    uniform = float(np.sum(variance / 3)) / 200**2
    assert auto < 0.75 * uniform
    stable = samples.min(axis=1) == samples.max(axis=1)
    assert np.median(repeats[stable & (p == 1)]) <= 2
    assert repeats[~stable].min() > repeats[stable & (p == 1)].max()
    assert allocation.words().startswith("samples: ")
    assert (
        sum(
            int(samples) * int(count.split(" ")[0])
            for samples, count in (
                part.split(" x ")
                for part in allocation.words().removeprefix("samples: ").split(", ")
            )
        )
        == 600
    )


def test_allocation_without_baseline_samples_is_uniform_and_says_why() -> None:
    cases = tuple(BaselineCase(eval_set_id="s", case_id=f"c{i}", value=1.0) for i in range(10))
    allocation = allocate([f"s::c{i}" for i in range(10)], _baseline(cases).case_map(), 30)
    assert set(allocation.repeats.values()) == {3}
    assert allocation.fallback is not None and "no per-case variance" in allocation.fallback
    assert allocation.words() == "samples: 3 x 10 cases"


def test_a_pass_at_k_case_gets_its_k_samples_first_with_or_without_baseline_samples() -> None:
    """A `pass@K` case needs K samples whatever its variance: given first, out of the budget."""
    rng = np.random.default_rng(5)
    p = _mostly_stable(rng, 50)
    samples = (rng.random((50, 3)) < p[:, None]).astype(float)
    keys = [f"s::c{i}" for i in range(50)]
    stable = next(
        key for key, row in zip(keys, samples.tolist(), strict=True) if len(set(row)) == 1
    )
    floors = {stable: 5, "s::c0": 4}
    allocation = allocate(keys, _baseline_of(p, samples).case_map(), 150, floors=floors)
    assert allocation.total == 150
    assert all(allocation(key) >= floor for key, floor in floors.items())
    assert all(allocation(key) >= 1 for key in keys)
    cases = tuple(BaselineCase(eval_set_id="s", case_id=f"c{i}", value=1.0) for i in range(10))
    uniform = allocate(
        [f"s::c{i}" for i in range(10)], _baseline(cases).case_map(), 20, floors={"s::c1": 6}
    )
    assert uniform("s::c1") == 6 and uniform("s::c2") == 2 and uniform.fallback is not None


def _run(values: dict[str, tuple[float, ...]]) -> EvalRun:
    scores = tuple(
        Score(
            eval_set_id="s",
            case_id=key,
            value=float(np.mean(samples)),
            grader="exact",
            samples=samples if len(samples) > 1 else (),
        )
        for key, samples in values.items()
    )
    return EvalRun(
        id="r1",
        model="m",
        eval_set_ids=("s",),
        started_at=datetime(2026, 1, 2, tzinfo=UTC),
        scores=scores,
        complete=True,
    )


def _shifted(theta: np.ndarray, drop: float) -> np.ndarray:
    """Pass rates after a shift of the latent ability that lowers their mean by `drop`."""
    mean = stats.norm.cdf(theta).mean()
    shift = optimize.brentq(lambda d: mean - stats.norm.cdf(theta - d).mean() - drop, 0, 10)
    return stats.norm.cdf(theta - shift)


def test_auto_detects_more_often_than_uniform_at_the_same_samples() -> None:
    """The paired gate (compute_drift, as `compare()` calls it) on simulated runs: the same
    agents and baseline of 200 x 3, 85% of the cases far from their bar (they never flip),
    the current run at 600 samples, uniform or allocated; a 3-point drop as a shift of the
    cases' latent ability (a case far from its bar stays put), and no change. The benchmark
    measures the 5-point drop through pytest sessions."""
    rng = np.random.default_rng(2026)
    keys = [f"s::c{i}" for i in range(200)]

    def rates(trials: int, drop: float, iterations: int) -> dict[str, float]:
        regressed = {"uniform": 0, "auto": 0}
        for trial in range(trials):
            theta = np.full(200, 4.0)
            theta[:30] = rng.normal(0, 0.6, 30)
            p = stats.norm.cdf(theta)
            q = _shifted(theta, drop) if drop else p
            base = (rng.random((200, 3)) < p[:, None]).astype(float)
            allocation = allocate(keys, _baseline_of(p, base).case_map(), 600)
            auto = np.array([allocation(key) for key in keys])
            for name, repeats in (("uniform", np.full(200, 3)), ("auto", auto)):
                cur = rng.binomial(repeats, q) / repeats
                report = compute_drift(
                    cur,
                    base.mean(axis=1),
                    paired_current=cur,
                    paired_baseline=base.mean(axis=1),
                    iterations=iterations,
                    seed=trial,
                )
                regressed[name] += report.verdict == "regressed"
        return {name: count / trials for name, count in regressed.items()}

    detected = rates(60, 0.03, 400)
    assert detected["auto"] > detected["uniform"], detected
    alarms = rates(240, 0.0, 200)
    assert max(alarms.values()) <= 0.05, alarms


def test_compare_tests_each_case_and_lists_significant_drops_first() -> None:
    """Through `compare()`: a run sampled as allocated with two flaky cases broken; their
    drops are the significant ones and are listed first."""
    rng = np.random.default_rng(9)
    p = _mostly_stable(rng, 60)
    base = (rng.random((60, 8)) < p[:, None]).astype(float)
    base[:2] = [1, 1, 0, 1, 1, 0, 1, 1]  # 6 of 8
    baseline = _baseline_of(p, base)
    keys = [f"c{i}" for i in range(60)]
    allocation = allocate([f"s::{key}" for key in keys], baseline.case_map(), 480)
    q = p.copy()
    q[:2] = 0.0
    run = _run(
        {
            key: tuple(float(x) for x in rng.random(allocation(f"s::{key}")) < q[i])
            for i, key in enumerate(keys)
        }
    )
    outcome = compare(run, baseline, gate=GatePolicy(iterations=500, fdr=0.1))
    result = outcome.result
    assert result is not None
    significant = {key for key, drop in result.case_drops.items() if drop.significant}
    assert significant == {"s::c0", "s::c1"}, result.case_drops
    dropped = result.dropped_cases()
    assert {item.key for item in dropped[:2]} == significant
    assert result.drop_words("s::c0").startswith("significant drop (q ")
    assert all(
        result.drop_words(item.key).startswith(("within noise", "not tested", "cannot show"))
        for item in dropped[2:]
    )
