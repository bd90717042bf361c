"""Planning power (docs/statistics.md, "Planning a run"): the formulas against scipy, and the
predictions against a simulation of the paired gate.

The simulation: an eval set of n cases, case i passing with its own probability p_i ~
Beta(4, 1) (mean 0.8). The baseline and the gated run each sample every case r times and
score it by the mean; a dropped agent passes with max(p_i - D, 0). The plan is made the way
a user makes it, from one pilot run of the same cases (`noise_of_scores` on its `Score`s),
and its predicted power is compared with the share of simulated gates that call the drop.

Thousands of gates per cell are decided at once, in numpy, by the normal form of the gate's
bootstrap interval (mean + z(0.975) x sd / sqrt(n) below zero, sd with ddof 0 as a
bootstrap's is); one test checks that form against `compute_drift` itself on the same data.
Every draw is seeded: the numbers are the same on every run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from verdryx_core.errors import UsageError
from verdryx_core.gating.drift import compute_drift
from verdryx_core.gating.planning import (
    Noise,
    noise_of_gate,
    noise_of_scores,
    noise_of_values,
    plan,
    power_at,
)
from verdryx_core.runs import Score

Z = float(stats.norm.ppf(0.975))
TRIALS = 2000
SIZES = (50, 200, 800)
REPEATS = (1, 3, 5)
DROPS = (0.03, 0.05, 0.1)
#: The promise of docs/statistics.md: predicted power within 5 points of the gate's.
TOLERANCE = 0.05


def gates(p: np.ndarray, r: int, drop: float, trials: int, rng: np.random.Generator) -> tuple:
    """`trials` paired gates of n = len(p) cases x r samples against a drop: (regressed per
    trial, baseline case scores, current case scores)."""
    base = rng.binomial(r, p, size=(trials, p.size)) / r
    current = rng.binomial(r, np.clip(p - drop, 0, 1), size=(trials, p.size)) / r
    diffs = current - base
    upper = diffs.mean(axis=1) + Z * diffs.std(axis=1) / math.sqrt(p.size)
    return upper < 0, base, current


def pilot(p: np.ndarray, r: int, rng: np.random.Generator) -> list[Score]:
    """One stored-run's worth of scores: every case sampled r times."""
    draws = (rng.random((p.size, r)) < p[:, None]).astype(float)
    return [
        Score(
            case_id=f"c{i}",
            eval_set_id="s",
            value=float(row.mean()),
            grader="exact",
            samples=tuple(row.tolist()) if r > 1 else (),
        )
        for i, row in enumerate(draws)
    ]


def noise(variance: float, *, cases: int = 200, samples: float = 1, mean: float = 0.8) -> Noise:
    return Noise(variance=variance, cases=cases, samples=samples, source="repeats", mean=mean)


# -- the formulas ------------------------------------------------------------------------------


@pytest.mark.parametrize("growth_free", [True, False])
def test_power_and_sizes_agree_with_scipy(growth_free: bool) -> None:
    # mean 0.5: a drop does not move a pass/fail's variance at first order; 0.8: it does.
    mean = 0.5 if growth_free else 0.8
    n0 = noise(0.13, cases=120, samples=2, mean=mean)
    for detect in (0.02, 0.05, 0.1):
        for power in (0.5, 0.8, 0.95):
            result = plan(n0, detect=detect, power=power)
            z_sum = Z + float(stats.norm.ppf(power))
            k = min(1.0, 0.13 / (mean * (1 - mean)))
            w = 0.13 + 0.13 + k * (detect * (2 * mean - 1) - detect**2)

            def scipy_power(n: float, r: float, w: float = w, detect: float = detect) -> float:
                return float(stats.norm.cdf(detect / math.sqrt(w / (n * r)) - Z))

            assert power_at(n0, 120, 2, detect) == pytest.approx(scipy_power(120, 2), abs=1e-12)
            assert result.power_now == pytest.approx(scipy_power(120, 2), abs=1e-12)
            # The smallest sizes that reach the power asked for, and no smaller.
            assert result.cases_needed == math.ceil(z_sum**2 * w / detect**2)
            assert scipy_power(result.cases_needed, 1) >= power - 1e-12
            assert scipy_power(result.cases_needed - 1, 1) < power
            assert scipy_power(120, result.repeats_needed) >= power - 1e-12
            if result.repeats_needed > 1:
                assert scipy_power(120, result.repeats_needed - 1) < power
            assert result.calls_needed == {
                "cases": result.cases_needed,
                "repeats": 120 * result.repeats_needed,
            }
            # The MDE is the drop seen at exactly the power asked for, at the current size.
            seen = stats.norm.cdf(result.mde / math.sqrt(_w(result.mde, mean) / 240) - Z)
            assert seen == pytest.approx(power, abs=1e-9)


def _w(drop: float, mean: float, v: float = 0.13) -> float:
    k = min(1.0, v / (mean * (1 - mean)))
    return 2 * v + k * (drop * (2 * mean - 1) - drop**2)


def test_the_normal_power_is_the_noncentral_t_power_at_these_sizes() -> None:
    """The gate is close to a paired t-test; the normal form used here is within 2 points of
    the exact t power (scipy's noncentral t) at 50 cases and within 1 from 200 (the gate's
    bootstrap interval is, if anything, a little narrower than t's)."""
    n0 = noise(0.13, mean=0.5)
    for n, within in ((50, 0.02), (200, 0.01), (800, 0.01)):
        for detect in (0.05, 0.1):
            se = math.sqrt(_w(detect, 0.5) / n)
            exact = float(stats.nct.sf(stats.t.ppf(0.975, n - 1), n - 1, detect / se))
            assert power_at(n0, n, 1, detect) == pytest.approx(exact, abs=within)


def test_noise_of_repeats_is_the_mean_sample_variance() -> None:
    rng = np.random.default_rng(3)
    scores = pilot(rng.beta(4, 1, 60), 4, rng)
    measured = noise_of_scores(scores)
    samples = np.array([score.samples for score in scores])
    assert measured.source == "repeats" and measured.samples == 4 and measured.cases == 60
    assert measured.variance == pytest.approx(float(np.var(samples, axis=1, ddof=1).mean()))
    assert measured.mean == pytest.approx(float(samples.mean()))


def test_single_samples_give_the_spread_between_cases_as_a_bound() -> None:
    values = [1.0] * 15 + [0.0] * 5
    measured = noise_of_scores(
        [
            Score(case_id=f"c{i}", eval_set_id="s", value=v, grader="exact")
            for i, v in enumerate(values)
        ]
    )
    assert measured.bound and measured.variance == pytest.approx(np.var(values, ddof=1))
    # Scores that may be means of several samples: m (1 - m), the most such scores vary.
    assert noise_of_values([0.5, 0.9], one_sample=False).variance == pytest.approx(0.7 * 0.3)


def test_nothing_measured_and_bad_settings_are_usage_errors() -> None:
    unmeasured = Score(case_id="c", eval_set_id="s", value=None, grader="exact", unmeasured="x")
    with pytest.raises(UsageError, match="nothing measured"):
        noise_of_scores([unmeasured])
    for detect in (0, -0.1, 1.5, float("nan")):
        with pytest.raises(UsageError, match="detect"):
            plan(noise(0.1), detect=detect)
    for power in (0.2, 1.0, float("nan")):
        with pytest.raises(UsageError, match="power"):
            plan(noise(0.1), power=power)


def test_the_gate_s_noise_reproduces_its_own_mde() -> None:
    """From drift statistics, the plan's MDE at a mean of 0.5 (where a drop moves a pass/fail's
    variance only by -D^2) is the report's `mde` within 1%: one standard error, read two
    ways."""
    rng = np.random.default_rng(11)
    base = rng.binomial(3, 0.5, 300) / 3
    current = rng.binomial(3, 0.5, 300) / 3
    report = compute_drift(current, base, paired_current=current, paired_baseline=base, detect=0.01)
    assert report.underpowered and report.mde is not None
    measured = noise_of_gate(report, current_samples=3, baseline_samples=3)
    assert measured is not None and measured.source == "paired"
    assert measured.variance == pytest.approx(float(np.var(current - base, ddof=1)) * 3 / 2)
    flat = Noise(variance=measured.variance, cases=300, samples=3, source="paired", mean=0.5)
    assert plan(flat).mde == pytest.approx(report.mde, rel=0.01)
    assert plan(flat).mde < report.mde


# -- the predictions against the gate ------------------------------------------------------------


def test_predicted_power_is_the_simulated_gate_s_with_repeats() -> None:
    """A plan from a pilot with 10 samples per case predicts the gate's power at every size,
    repeat count and drop of the grid within 5 points. (From 5 samples the pilot's own noise
    adds a point or two in the worst cell: docs/statistics.md, "Planning a run".)"""
    rng = np.random.default_rng(2026)
    gaps = []
    for n in SIZES:
        p = rng.beta(4, 1, n)
        measured = noise_of_scores(pilot(p, 10, rng))
        for r in REPEATS:
            for drop in DROPS:
                simulated = gates(p, r, drop, TRIALS, rng)[0].mean()
                predicted = power_at(measured, n, r, drop)
                gaps.append((abs(predicted - simulated), n, r, drop, predicted, simulated))
    worst = max(gaps)
    assert worst[0] <= TOLERANCE, f"worst cell (gap, n, r, drop, predicted, simulated): {worst}"


def test_predicted_power_without_repeats() -> None:
    """Single samples: from a gate's paired differences (the plugin's `plan:` line) the
    prediction is within 5 points; from one single-sample run alone it is the bound, never
    above the gate's power by more than the simulation's noise."""
    rng = np.random.default_rng(7)
    for n in (400, 800):
        p = rng.beta(4, 1, n)
        bound = noise_of_scores(pilot(p, 1, rng))
        base, current = rng.binomial(1, p).astype(float), rng.binomial(1, p).astype(float)
        report = compute_drift(current, base, paired_current=current, paired_baseline=base)
        paired = noise_of_gate(report, current_samples=1, baseline_samples=1)
        assert paired is not None and bound.bound
        for drop in DROPS:
            simulated = gates(p, 1, drop, TRIALS, rng)[0].mean()
            assert abs(power_at(paired, n, 1, drop) - simulated) <= TOLERANCE
            assert power_at(bound, n, 1, drop) <= simulated + 0.03


def test_the_vectorised_gate_is_the_real_gate() -> None:
    """The simulation's gate agrees with `compute_drift`'s verdict on the same data in at
    least 95% of trials (they differ only for intervals ending next to zero), and the real
    gate's detection rate is within 5 points of the plan's prediction."""
    rng = np.random.default_rng(5)
    for n, r, drop in ((200, 1, 0.05), (60, 5, 0.1)):
        p = rng.beta(4, 1, n)
        fast, base, current = gates(p, r, drop, 300, rng)
        real = np.array(
            [
                compute_drift(
                    current[t], base[t], paired_current=current[t], paired_baseline=base[t], seed=t
                ).verdict
                == "regressed"
                for t in range(300)
            ]
        )
        assert (real == fast).mean() >= 0.95
        measured = noise_of_scores(pilot(p, 10, rng))
        assert abs(real.mean() - power_at(measured, n, r, drop)) <= TOLERANCE
