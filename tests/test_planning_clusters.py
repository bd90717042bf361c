"""Plans of clustered cases (docs/statistics.md, "Clustered cases in a plan"): a cluster's
shock shared by its cases in one session is not averaged out by repeats, so a plan offers
repeats only where they get there, and the design it recommends reaches its stated power in
a simulation of the paired gate (Wilson intervals).

The simulation is the power table's clustered agent: G clusters of m cases; in each session
a cluster draws one shock z shared by its cases and samples, and a sample passes when
sqrt(rho) z + sqrt(1 - rho) e < Phi^-1(p - drop), e its own. The gate is decided in numpy by
the normal form of its cluster interval (the mean paired difference plus z(0.975) times the
cluster-robust standard error below zero); one test checks that form against
`compute_drift`'s cluster bootstrap on the same data. Every draw is seeded.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from verdryx_core.cli import main
from verdryx_core.gating.drift import compute_drift
from verdryx_core.gating.planning import Noise, noise_of_gate, noise_of_scores, plan, power_at
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.store import Store

Z = float(stats.norm.ppf(0.975))
SIZE = 10
DROP = 0.05


def _sessions(
    p: np.ndarray, rho: float, r: int, drop: float, trials: int, rng: np.random.Generator
) -> np.ndarray:
    """Case scores (trials, G, m): the mean of r samples, one cluster shock per session."""
    shock = rng.standard_normal((trials, p.shape[0], 1, 1))
    own = rng.standard_normal((trials, *p.shape, r))
    bar = stats.norm.ppf(np.clip(p - drop, 1e-9, 1 - 1e-9))[None, :, :, None]
    passed = math.sqrt(rho) * shock + math.sqrt(1 - rho) * own < bar
    return passed.mean(axis=3)


def _regressed(diffs: np.ndarray) -> np.ndarray:
    """The gate's verdict per trial on paired differences (trials, G, m): the cluster-robust
    (CR1) normal interval below zero."""
    _, clusters, size = diffs.shape
    mean = diffs.mean(axis=(1, 2))
    residuals = diffs.sum(axis=2) - size * mean[:, None]
    se = np.sqrt(clusters / (clusters - 1) * (residuals**2).sum(axis=1)) / (clusters * size)
    return mean + Z * se < 0


def _power(p: np.ndarray, rho: float, r: int, trials: int, rng: np.random.Generator) -> int:
    """How many of `trials` gates call a drop of DROP regressed."""
    hits = 0
    for start in range(0, trials, 100):  # in chunks: a large design is millions of draws
        count = min(100, trials - start)
        base = _sessions(p, rho, r, 0.0, count, rng)
        cur = _sessions(p, rho, r, DROP, count, rng)
        hits += int(_regressed(cur - base).sum())
    return hits


def _true_noise(rho: float, p: float, clusters: int, samples: int) -> Noise:
    """The model's parts of this agent, by Gauss-Hermite quadrature over the shock: a
    cluster's pass rate in a session is q(z) = Phi((Phi^-1(p) - sqrt(rho) z) / sqrt(1 - rho));
    c = Var q, e = E q (1 - q), no case shock."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(120)
    weights = weights / weights.sum()
    q = stats.norm.cdf((stats.norm.ppf(p) - math.sqrt(rho) * nodes) / math.sqrt(1 - rho))
    mean = float(weights @ q)
    return Noise(
        variance=float(weights @ (q * (1 - q))),
        cases=clusters * SIZE,
        samples=samples,
        source="repeats",
        mean=mean,
        cluster_shock=float(weights @ (q - mean) ** 2),
        cluster_size=SIZE,
        shocks="paired",
    )


def _wilson(hits: int, trials: int) -> tuple[float, float]:
    low, high = proportion_confint(hits, trials, alpha=0.01, method="wilson")
    return float(low), float(high)


def _sampled_pilot(p: np.ndarray, rho: float, r: int, rng: np.random.Generator) -> list[Score]:
    """One stored run's worth of scores of one session: every case sampled r times (its
    cluster's shock shared by its cases and samples), the samples kept."""
    shock = rng.standard_normal((p.shape[0], 1, 1))
    own = rng.standard_normal((*p.shape, r))
    bar = stats.norm.ppf(p)[:, :, None]
    samples = (math.sqrt(rho) * shock + math.sqrt(1 - rho) * own < bar).astype(float)
    return [
        Score(
            case_id=f"c{g}-{i}",
            eval_set_id="s",
            value=float(samples[g, i].mean()),
            grader="exact",
            samples=tuple(samples[g, i].tolist()),
            cluster=f"g{g}",
        )
        for g in range(p.shape[0])
        for i in range(p.shape[1])
    ]


# -- the model ---------------------------------------------------------------------------------


@pytest.mark.parametrize("rho", [0.7, 0.3])
def test_repeats_are_not_offered_where_a_session_shock_leaves_them_short(rho: float) -> None:
    """50 clusters x 10 cases x 3 samples: per-session shocks leave repeats short of a
    5-point drop at any count (the plan says so), and 10 samples a case simulate far below
    80% power, as the model predicts; the cases it asks for instead (more clusters of 10, one
    sample each) reach 80%."""
    rng = np.random.default_rng(int(rho * 100))
    noise = _true_noise(rho, 0.8, 50, 3)
    result = plan(noise, detect=DROP)
    assert result.repeats_needed is None and result.calls_needed["repeats"] is None
    assert result.mde_floor > DROP
    p = np.full((50, SIZE), 0.8)
    trials = 400
    ten = _power(p, rho, 10, trials, rng)
    low, high = _wilson(ten, trials)
    assert high < 0.5
    assert low <= power_at(noise, 500, 10, DROP) <= high + 0.03
    clusters = result.clusters_needed
    assert clusters is not None and clusters * SIZE >= result.cases_needed
    hits = _power(np.full((clusters, SIZE), 0.8), rho, 1, trials, rng)
    low, high = _wilson(hits, trials)
    assert high >= 0.8 - 1e-9, (hits, trials, clusters)
    assert low <= 0.8 + 0.03, (hits, trials, clusters)  # and not far more than it needs


def test_repeats_are_offered_where_they_get_there_and_reach_the_power() -> None:
    """A weak shock (latent 0.05): repeats at the current cases can reach a 5-point drop;
    the repeats the plan asks for reach 80% in the simulation."""
    rng = np.random.default_rng(5)
    noise = _true_noise(0.05, 0.8, 50, 3)
    result = plan(noise, detect=DROP)
    assert result.repeats_needed is not None and result.repeats_needed > 1
    trials = 600
    hits = _power(np.full((50, SIZE), 0.8), 0.05, result.repeats_needed, trials, rng)
    low, high = _wilson(hits, trials)
    assert high >= 0.8 and low <= 0.8 + 0.06, (hits, result.repeats_needed)
    # One repeat fewer would not get there (the plan asks no more than needed).
    assert power_at(noise, 500, result.repeats_needed - 1, DROP) < 0.8


def test_a_plan_from_one_session_reaches_its_power_within_the_pilot_s_noise() -> None:
    """As a user plans: one pilot session (50 x 10 x 3), no pair. Over 6 pilots, each plan's
    recommended design simulated 200 times: together at least 70% (80% less the 5 to 10 points a
    pilot's own noise moves a plan by, docs/statistics.md)."""
    rng = np.random.default_rng(8)
    rho, hits, trials = 0.3, 0, 0
    for _ in range(6):
        noise = noise_of_scores(_sampled_pilot(np.full((50, SIZE), 0.8), rho, 3, rng))
        assert noise.shocks == "baseline" and noise.note and "one session alone" in noise.note
        result = plan(noise, detect=DROP)
        assert result.repeats_needed is None
        clusters = result.clusters_needed
        assert clusters is not None
        hits += _power(np.full((clusters, SIZE), 0.8), rho, 1, 200, rng)
        trials += 200
    _, high = _wilson(hits, trials)
    assert high >= 0.70, hits / trials


def test_paired_differences_cancel_shared_difficulty_that_one_session_counts() -> None:
    """Clusters of unequal difficulty (a cluster's p from Beta(4, 1)) and a shock: one
    session counts the difficulty as shock and asks for more clusters than gates' paired
    differences do on average (an upper bound); theirs reach the power."""
    rng = np.random.default_rng(3)
    rho = 0.3
    p = np.repeat(rng.beta(4, 1, 50)[:, None], SIZE, axis=1)
    alone = plan(noise_of_scores(_sampled_pilot(p, rho, 3, rng)), detect=DROP)
    asked, hits, trials = [], 0, 0
    for seed in range(4):
        base, cur = _sessions(p, rho, 3, 0.0, 1, rng)[0], _sessions(p, rho, 3, 0.0, 1, rng)[0]
        labels = [f"g{g}" for g in range(50) for _ in range(SIZE)]
        report = compute_drift(
            cur.ravel(),
            base.ravel(),
            paired_current=cur.ravel(),
            paired_baseline=base.ravel(),
            paired_clusters=labels,
            iterations=200,
            seed=seed,
        )
        noise = noise_of_gate(report, current_samples=3, baseline_samples=3)
        assert noise is not None and noise.shocks == "paired" and noise.cluster_shock > 0
        result = plan(noise, detect=DROP)
        assert result.clusters_needed is not None
        asked.append(result.clusters_needed)
        # The recommended design: more clusters drawn from the same difficulties.
        bigger = np.repeat(rng.beta(4, 1, result.clusters_needed)[:, None], SIZE, axis=1)
        hits += _power(bigger, rho, 1, 200, rng)
        trials += 200
    assert alone.clusters_needed is not None and alone.clusters_needed > np.mean(asked), asked
    _, high = _wilson(hits, trials)
    assert high >= 0.70, (hits / trials, asked)


def test_the_normal_cluster_gate_is_the_real_gate() -> None:
    """The numpy verdict agrees with `compute_drift`'s cluster bootstrap on the same data."""
    rng = np.random.default_rng(2)
    p = np.full((30, SIZE), 0.8)
    base, cur = _sessions(p, 0.3, 1, 0.0, 60, rng), _sessions(p, 0.3, 1, 0.08, 60, rng)
    ours = _regressed(cur - base)
    labels = [f"g{g}" for g in range(30) for _ in range(SIZE)]
    real = [
        compute_drift(
            c.ravel(),
            b.ravel(),
            paired_current=c.ravel(),
            paired_baseline=b.ravel(),
            paired_clusters=labels,
            iterations=500,
            seed=i,
        ).verdict
        == "regressed"
        for i, (b, c) in enumerate(zip(base, cur, strict=True))
    ]
    assert 0.1 < ours.mean() < 0.95  # a mix of verdicts, so agreement means something
    assert np.mean(np.asarray(real) == ours) >= 0.9


# -- the record: verdryx plan --json -----------------------------------------------------------

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_plan_from_a_baseline_and_a_run_measures_the_shock_from_their_pairs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(12)
    p = np.full((50, SIZE), 0.8)
    db = tmp_path / "v.db"
    runs = []
    for index in range(2):
        runs.append(
            EvalRun(
                id=f"run-{index}",
                model="stub",
                started_at=T0 + timedelta(hours=index),
                finished_at=T0 + timedelta(hours=index, minutes=1),
                eval_set_ids=("s",),
                scores=tuple(_sampled_pilot(p, 0.7, 3, rng)),
            )
        )
    with Store.open(db) as store:
        for run in runs:
            store.save_run(run)
        store.save_baseline(Baseline.from_run(runs[0], id="b-1", label="v1"))
    documents = {}
    for name, argv in (
        ("alone", ["--baseline", "v1"]),
        ("paired", ["--baseline", "v1", "--run", "run-1"]),
    ):
        assert main(["plan", *argv, "--db", str(db), "--json"]) == 0
        documents[name] = json.loads(capsys.readouterr().out)
    for name, document in documents.items():
        parts = document["variance_components"]
        assert parts["shocks"] == ("baseline" if name == "alone" else "paired")
        assert parts["cluster_size"] == SIZE and parts["cluster_shock"] > 0
        # A latent shock of 0.7: repeats cannot get to a 5-point drop at 500 cases.
        assert document["repeats_needed"] is None and document["calls_needed"]["repeats"] is None
        assert document["clusters_needed"] * SIZE >= document["cases_needed"]
        assert document["mde_floor"] > 0.05
    assert "one session alone" in documents["alone"]["note"]
    assert documents["paired"]["note"] is None
    assert main(["plan", "--baseline", "v1", "--run", "run-1", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "more repeats: cannot get there: at 500 cases the shock a cluster" in out, out
    assert "from paired differences, not averaged by repeats" in out
    assert main(["plan", "--db", str(db)]) == 2
    assert "pass --baseline LABEL, --run ID, or both" in capsys.readouterr().err
