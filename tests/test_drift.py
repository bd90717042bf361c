"""Drift statistics and verdict rules, checked against scipy and by simulation."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import tracemalloc
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from json_document_keys import DRIFT_KEYS as DOCUMENTED_DRIFT_KEYS
from json_document_keys import PAIRED_KEYS
from scipy import stats

from verdryx_core.errors import UsageError
from verdryx_core.gating.drift import (
    DEFAULT_CONFIDENCE,
    DEFAULT_ITERATIONS,
    DEFAULT_THRESHOLD,
    GATES,
    DriftStats,
    _bootstrap_means,
    compute_drift,
)

ROOT = Path(__file__).resolve().parent.parent
Z_MDE = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)

#: docs/cli.md, the stable `drift` keys, plus two extras.
DRIFT_KEYS = DOCUMENTED_DRIFT_KEYS | {"chance", "min_effect", "detect", "underpowered", "clusters"}

scores = st.floats(0, 1, allow_nan=False, allow_subnormal=False)
discrete = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])
score_lists = st.one_of(
    st.lists(scores, min_size=2, max_size=30), st.lists(discrete, min_size=2, max_size=30)
)
fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_constants_are_the_documented_defaults() -> None:
    assert (DEFAULT_THRESHOLD, DEFAULT_ITERATIONS, DEFAULT_CONFIDENCE) == (0.05, 2000, 0.95)
    assert GATES == ("significant", "threshold")


# --- the original verdryx's worked values (docs/statistics.md, "The original verdryx") ------


def test_clear_drop_gives_the_original_t_statistic_and_an_interval_below_zero() -> None:
    report = compute_drift([1, 2, 3], [4, 5, 6], baseline_id="b1")

    assert report.delta == -3.0
    assert report.t_statistic == pytest.approx(-3 / math.sqrt(2 / 3), abs=1e-12)
    # Every resample difference lies between -5 and -1; the original's RNG gave [-4.33, -1.67].
    assert -5 <= report.ci_low <= -3 <= report.ci_high < 0
    assert report.verdict == "regressed"
    assert report.n == report.baseline_n == 3
    assert report.paired is None


def test_unchanged_scores_are_on_track_with_a_zero_t_and_an_interval_around_zero() -> None:
    recent = [0.85, 0.75, 0.82, 0.88, 0.7]
    report = compute_drift(recent, [0.9, 0.7, 0.8, 0.85, 0.75], baseline_mean=0.8, seed=1234)

    assert report.delta == pytest.approx(0.0, abs=1e-12)
    assert report.t_statistic == pytest.approx(0.0, abs=1e-12)
    assert report.ci_low < 0 < report.ci_high
    assert report.verdict == "on-track"
    assert not report.inconclusive
    assert report.inconclusive_sentence() is None


# --- agreement with scipy -----------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")  # scipy, on near-ties
@fast
@given(current=score_lists, baseline=score_lists)
def test_welch_t_equals_scipy_ttest_ind_unequal_variances(
    current: list[float], baseline: list[float]
) -> None:
    report = compute_drift(current, baseline, iterations=50)
    if min(current) == max(current) and min(baseline) == max(baseline):
        assert report.t_statistic is None  # no spread at all: t is undefined, not infinite
        return
    expected = stats.ttest_ind(current, baseline, equal_var=False).statistic
    assume(math.isfinite(expected))
    assert math.isclose(report.t_statistic, expected, rel_tol=1e-9, abs_tol=1e-9)


@fast
@given(
    pairs=st.one_of(
        st.lists(st.tuples(scores, scores), min_size=2, max_size=30),
        st.lists(st.tuples(discrete, discrete), min_size=2, max_size=30),
    )
)
def test_paired_t_equals_scipy_ttest_rel(pairs: list[tuple[float, float]]) -> None:
    current, baseline = (list(side) for side in zip(*pairs, strict=True))
    report = compute_drift(
        current, baseline, paired_current=current, paired_baseline=baseline, iterations=50
    )
    diffs = np.subtract(current, baseline)
    assert report.paired is not None
    assert report.paired.n == len(pairs)
    assert report.paired.mean_diff == pytest.approx(float(np.mean(diffs)), abs=1e-12)
    if diffs.min() == diffs.max():
        assert report.paired.t_statistic is None
        return
    expected = stats.ttest_rel(current, baseline).statistic
    assume(math.isfinite(expected))
    assert math.isclose(report.paired.t_statistic, expected, rel_tol=1e-9, abs_tol=1e-9)


@fast
@given(
    current=score_lists, baseline=score_lists, gate=st.sampled_from(GATES), seed=st.integers(0, 9)
)
def test_report_is_consistent_json_safe_and_follows_its_gate(
    current: list[float], baseline: list[float], gate: str, seed: int
) -> None:
    report = compute_drift(
        current,
        baseline,
        paired_current=current[:2],
        paired_baseline=baseline[:2],
        gate=gate,
        iterations=100,
        seed=seed,
        two_sample_interval=True,
    )
    # Every resample difference is bounded by the extremes of the two samples.
    low_bound = min(current) - max(baseline) - 1e-12
    high_bound = max(current) - min(baseline) + 1e-12
    assert low_bound <= report.ci_low <= report.ci_high <= high_bound
    assert report.paired is not None and report.paired.ci_low <= report.paired.ci_high

    # The verdict is the documented rule applied to the reported numbers (paired decides).
    below_zero = report.paired.ci_high < 0
    past_threshold = report.delta <= -report.threshold + 1e-9
    expected = below_zero if gate == "significant" else (below_zero or past_threshold)
    assert report.verdict == ("regressed" if expected else "on-track")
    # Any drop the test cannot tell from chance is inconclusive (docs/statistics.md).
    assert report.inconclusive == (report.delta < -1e-9 and not below_zero)
    assert (report.inconclusive_sentence() is None) == (not report.inconclusive)

    document = report.to_dict()
    assert set(document) == DRIFT_KEYS
    assert set(document["paired"]) == PAIRED_KEYS
    assert json.loads(json.dumps(document, allow_nan=False)) == document


# --- the bootstrap ------------------------------------------------------------------------


def _coverage(draw_case: object, true_delta: float, reps: int, *, paired: bool) -> float:
    rng = np.random.default_rng(20260712)
    hits = 0
    for rep in range(reps):
        current, baseline = draw_case(rng)  # type: ignore[operator]
        report = compute_drift(
            current,
            baseline,
            paired_current=current if paired else None,
            paired_baseline=baseline if paired else None,
            iterations=500,
            seed=rep,
        )
        stats_ = report.paired if paired else report
        hits += stats_.ci_low <= true_delta <= stats_.ci_high
    return hits / reps


def test_two_sample_interval_covers_the_true_delta_at_about_95_percent() -> None:
    # Continuous skewed scores (index resampling): Beta(2, 3) now vs Beta(2, 5) before.
    true_delta = 2 / 5 - 2 / 7
    coverage = _coverage(
        lambda rng: (rng.beta(2, 3, 40), rng.beta(2, 5, 40)), true_delta, 300, paired=False
    )
    # Percentile intervals run a little narrow at n=40; 300 reps give +-1.3 points.
    assert 0.90 <= coverage <= 0.985, coverage


def test_paired_interval_covers_the_true_drop_at_about_95_percent() -> None:
    # Pass/fail cases with their own difficulty p ~ Beta(2, 1), each 0.1 harder now
    # (multinomial resampling: differences take three values). E[max(0, 0.1 - p)] = 1/3000.
    true_delta = -0.1 + 1 / 3000

    def draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        p = rng.beta(2, 1, 100)
        return (rng.random(100) < np.clip(p - 0.1, 0, 1)) * 1.0, (rng.random(100) < p) * 1.0

    coverage = _coverage(draw, true_delta, 300, paired=True)
    assert 0.90 <= coverage <= 0.985, coverage


def test_default_gate_rarely_fails_an_unchanged_agent_where_the_flat_threshold_often_does() -> None:
    # The reason the default is not the flat threshold (docs/statistics.md): one pass/fail
    # sample per case, 20 cases of mixed difficulty, the same agent twice.
    rng = np.random.default_rng(7)
    alarms = dict.fromkeys(GATES, 0)
    reps = 300
    for rep in range(reps):
        p = rng.beta(2, 1, 20)
        current, baseline = (rng.random(20) < p) * 1.0, (rng.random(20) < p) * 1.0
        for gate in GATES:
            report = compute_drift(
                current,
                baseline,
                paired_current=current,
                paired_baseline=baseline,
                gate=gate,
                iterations=500,
                seed=rep,
            )
            alarms[gate] += report.verdict == "regressed"
    assert alarms["significant"] / reps <= 0.05
    assert alarms["threshold"] / reps >= 0.25


def test_counting_distinct_values_resamples_like_drawing_indices() -> None:
    values = (np.random.default_rng(3).random(400) < 0.3) * 1.0
    # Two distinct values in 400: resampled through multinomial counts.
    by_counts = _bootstrap_means(values, 4000, np.random.default_rng(1))
    picks = np.random.default_rng(2).integers(0, values.size, size=(4000, values.size))
    by_index = values[picks].mean(axis=1)
    expected_sd = values.std() / math.sqrt(values.size)

    for means in (by_counts, by_index):
        assert means.mean() == pytest.approx(values.mean(), abs=3 * expected_sd / 60)
        assert means.std() == pytest.approx(expected_sd, rel=0.06)
    assert np.quantile(by_counts, 0.025) == pytest.approx(np.quantile(by_index, 0.025), abs=0.01)


def test_same_seed_same_report_and_another_seed_another_interval() -> None:
    rng = np.random.default_rng(5)
    current, baseline = rng.random(60), rng.random(60)
    first = compute_drift(current, baseline, paired_current=current, paired_baseline=baseline)
    again = compute_drift(current, baseline, paired_current=current, paired_baseline=baseline)
    other = compute_drift(current, baseline, seed=1)

    assert first == again
    assert (other.ci_low, other.ci_high) != (first.ci_low, first.ci_high)


def test_bootstrap_memory_stays_bounded_by_the_chunk() -> None:
    rng = np.random.default_rng(6)
    current, baseline = rng.random(20_000), rng.random(20_000)
    tracemalloc.start()
    try:
        compute_drift(current, baseline, paired_current=current, paired_baseline=baseline,
                      iterations=60)  # fmt: skip
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 60 x 20,000 int64 indices alone would be 9.6 MB; chunks keep it to a few MB.
    assert peak < 8 * 2**20, peak


# --- verdict rules --------------------------------------------------------------------------


def test_a_drop_of_exactly_the_threshold_fails_the_threshold_gate_but_is_inconclusive() -> None:
    current = [0.75, 0.25, 1.0, 1.0] * 5  # mean 0.75 against a baseline of 0.8
    baseline = [0.8, 0.3, 1.0, 1.0, 0.9, 0.8] * 3  # noisy, so the drop is not significant
    kwargs = {"baseline_mean": 0.8, "baseline_id": "nightly"}

    flat = compute_drift(current, baseline, gate="threshold", **kwargs)
    default = compute_drift(current, baseline, **kwargs)

    assert flat.delta == pytest.approx(-0.05)
    assert flat.verdict == "regressed"
    assert default.verdict == "on-track"
    for report in (flat, default):
        assert report.inconclusive
        assert report.ci_high > 0
        assert report.chance == pytest.approx(NormalDist().cdf(report.t_statistic))
        percent = round(report.chance * 100)
        assert report.inconclusive_sentence({"repeat": "--verdryx-repeat"}) == (
            f"inconclusive: a drop this size happens by chance {percent}% of the time at this "
            "size; add cases or use --verdryx-repeat"
        )
        # The command line's own words by default.
        assert (report.inconclusive_sentence() or "").endswith("add cases or use --repeat")


def test_the_sentence_never_says_zero_percent() -> None:
    report = compute_drift([0.5, 0.6], [0.7, 0.8], gate="threshold")
    rare = dataclasses.replace(report, inconclusive=True, chance=0.004)
    assert "by chance <1% of the time" in rare.inconclusive_sentence()


def test_significant_gate_uses_the_paired_interval_when_cases_match() -> None:
    # Case difficulty varies from 0.1 to 0.95 and every case lost exactly 0.05 +- 0.01:
    # the pooled samples overlap completely, the per-case differences do not.
    rng = np.random.default_rng(8)
    baseline = np.linspace(0.1, 0.95, 30)
    current = baseline - 0.05 + rng.uniform(-0.01, 0.01, 30)

    pooled = compute_drift(current, baseline)
    matched = compute_drift(current, baseline, paired_current=current, paired_baseline=baseline)

    assert pooled.ci_low < 0 < pooled.ci_high
    assert pooled.verdict == "on-track"
    assert matched.paired is not None and matched.paired.ci_high < 0
    assert matched.verdict == "regressed"
    # Welch's t is still reported next to the paired numbers; the two-sample interval, which
    # the verdict does not read, is drawn only when asked for, and asking changes nothing else.
    assert matched.t_statistic == pooled.t_statistic
    assert (matched.ci_low, matched.ci_high) == (None, None)
    asked = compute_drift(
        current, baseline, paired_current=current, paired_baseline=baseline,
        two_sample_interval=True,
    )  # fmt: skip
    assert (asked.ci_low, asked.ci_high) == (pooled.ci_low, pooled.ci_high)
    assert dataclasses.replace(asked, ci_low=None, ci_high=None) == matched
    se = float(np.std(current - baseline, ddof=1)) / math.sqrt(30)
    assert matched.mde == pytest.approx(Z_MDE * se, rel=1e-12)
    assert matched.chance == pytest.approx(NormalDist().cdf(matched.paired.t_statistic))


def test_min_effect_lets_a_significant_but_small_drop_pass() -> None:
    baseline = np.linspace(0.1, 0.95, 30)
    current = baseline - 0.02
    kwargs = {"paired_current": current, "paired_baseline": baseline}
    assert compute_drift(current, baseline, **kwargs).verdict == "regressed"
    assert compute_drift(current, baseline, min_effect=0.03, **kwargs).verdict == "on-track"
    assert compute_drift(current, baseline, min_effect=0.02, **kwargs).verdict == "regressed"


def test_deterministic_drop_on_matched_cases_is_a_regression() -> None:
    # Zero variance: every matched case went from pass to fail. t is undefined (None), the
    # interval collapses onto the drop, and a certain drop is a real one.
    report = compute_drift([0.0, 0.0], [1.0, 1.0], paired_current=[0, 0], paired_baseline=[1, 1])

    assert report.paired is not None
    assert report.paired.t_statistic is None and report.t_statistic is None
    assert report.paired.ci_low == report.paired.ci_high == -1.0
    assert report.verdict == "regressed"
    assert (report.chance, report.mde, report.inconclusive) == (0.0, 0.0, False)


def test_identical_runs_are_on_track_with_no_t_statistic() -> None:
    same = [1.0, 1.0, 0.5, 1.0]
    for gate in GATES:
        report = compute_drift(
            same, same, paired_current=same, paired_baseline=same, gate=gate,
            two_sample_interval=True,
        )  # fmt: skip
        assert report.verdict == "on-track"
        assert report.paired is not None and report.paired.t_statistic is None
        assert report.paired.ci_low == report.paired.ci_high == 0.0
        assert report.ci_low <= 0 <= report.ci_high
        assert not report.inconclusive


def test_one_score_on_a_side_has_no_interval_and_only_the_threshold_can_fail_it() -> None:
    flat = compute_drift([0.5], [0.9, 0.8, 1.0], gate="threshold", window=3)
    default = compute_drift([0.5], [0.9, 0.8, 1.0], paired_current=[0.5], paired_baseline=[0.9])

    assert flat.verdict == "regressed" and default.verdict == "on-track"
    for report in (flat, default):
        assert (report.t_statistic, report.ci_low, report.ci_high) == (None, None, None)
        assert (report.chance, report.mde) == (None, None)
        assert report.inconclusive
        assert "fewer than 2 scores" in report.inconclusive_sentence()
    assert flat.window == 3
    assert default.paired is not None
    assert (default.paired.n, default.paired.t_statistic, default.paired.ci_low) == (1, None, None)
    assert default.paired.mean_diff == pytest.approx(-0.4)


def test_two_sample_mde_and_chance_follow_the_welch_standard_error() -> None:
    rng = np.random.default_rng(10)
    current, baseline = rng.random(25), rng.random(40)
    report = compute_drift(current, baseline, confidence=0.9)

    se = math.sqrt(np.var(current, ddof=1) / 25 + np.var(baseline, ddof=1) / 40)
    z = NormalDist().inv_cdf
    assert report.mde == pytest.approx((z(0.95) + z(0.8)) * se, rel=1e-12)
    assert report.chance == pytest.approx(NormalDist().cdf(report.t_statistic), rel=1e-12)


def test_an_improvement_is_on_track_under_both_gates() -> None:
    for gate in GATES:
        report = compute_drift([0.9, 1.0, 0.95, 1.0], [0.2, 0.3, 0.25, 0.1], gate=gate)
        assert report.verdict == "on-track" and report.delta > 0 and report.ci_low > 0


# --- usage errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"current": []}, "current scores are empty"),
        ({"baseline": []}, "baseline scores are empty"),
        ({"gate": "strict"}, "unknown drift gate 'strict'; expected one of significant, threshold"),
        ({"paired_current": [1, 0], "paired_baseline": [1]}, "paired arrays have 2 and 1 values"),
        ({"paired_current": ["a"], "paired_baseline": [1]}, "paired_current scores are not"),
        ({"paired_current": [1, 0]}, "paired_baseline is missing"),
        ({"current": [0.5, float("nan")]}, "current score #1 is nan"),
        ({"baseline": [[1.0]]}, "baseline scores have shape (1, 1)"),
        ({"current": ["high"]}, "current scores are not numbers"),
        ({"confidence": 1.0}, "confidence is 1.0"),
        ({"iterations": 0}, "iterations is 0"),
        ({"threshold": -0.1}, "threshold is -0.1"),
        ({"min_effect": float("inf")}, "min_effect is inf"),
        ({"window": 0}, "window is 0"),
        ({"window": 1.5}, "window is 1.5; expected a whole number >= 1"),
        ({"seed": -1}, "seed is -1"),
        ({"baseline_mean": float("nan")}, "baseline_mean is nan"),
    ],
)
def test_bad_input_is_a_usage_error_naming_the_value(kwargs: dict, message: str) -> None:
    arguments = {"current": [0.5, 0.7], "baseline": [0.6, 0.8], **kwargs}
    with pytest.raises(UsageError) as caught:
        compute_drift(arguments.pop("current"), arguments.pop("baseline"), **arguments)
    assert message in str(caught.value)


def test_no_matched_cases_falls_back_to_the_two_sample_comparison() -> None:
    report = compute_drift([0.1, 0.2, 0.1], [0.9, 0.8, 0.9], paired_current=[], paired_baseline=[])
    assert report.paired is None
    assert report.verdict == "regressed"


def test_drift_report_is_frozen() -> None:
    report = compute_drift([0.5, 0.6], [0.5, 0.6])
    assert isinstance(report, DriftStats)
    with pytest.raises(AttributeError):
        report.verdict = "regressed"  # type: ignore[misc]


def test_drift_needs_no_scipy_at_runtime() -> None:
    code = (
        "import sys; sys.modules['scipy'] = None\n"
        "from verdryx_core.gating.drift import compute_drift\n"
        "print(compute_drift([0.1, 0.2], [0.8, 0.9]).verdict)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == "regressed"


def test_skipping_the_two_sample_draws_changes_no_paired_number() -> None:
    rng = np.random.default_rng(12)
    current, baseline = rng.random(300), rng.random(300)
    kwargs = {"paired_current": current, "paired_baseline": baseline}

    default = compute_drift(current, baseline, **kwargs)
    asked = compute_drift(current, baseline, two_sample_interval=True, **kwargs)

    assert (default.ci_low, default.ci_high) == (None, None)
    assert asked.ci_low is not None and asked.ci_high is not None
    assert asked.paired == default.paired
    assert dataclasses.replace(asked, ci_low=None, ci_high=None) == default
