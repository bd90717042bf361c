"""Drift: did the agent get worse than its baseline? Statistics and the two verdict rules.

Everything here is signed like the delta, current minus baseline: negative when quality
dropped. The two-sample comparison (Welch t, bootstrap interval) pools every score of the
window; the paired comparison works on per-case differences over the cases both runs share.
Which interval decides, and why the default rule is not the original verdryx's flat
threshold, is explained in docs/statistics.md.

numpy only at runtime: normal quantiles come from `statistics.NormalDist`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Final

import numpy as np

from verdryx_core.defaults import DEFAULT_ITERATIONS, DEFAULT_THRESHOLD, GATES
from verdryx_core.errors import CLI_FLAGS, UsageError, word_hint
from verdryx_core.gating.clusters import (
    Clusters,
    ClusterStats,
    cluster_bootstrap_means,
    cluster_se,
    cluster_stats,
)
from verdryx_core.lazy_names import renamed

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_ITERATIONS",
    "DEFAULT_THRESHOLD",
    "GATES",
    "DriftStats",
    "PairedStats",
    "compute_drift",
    "power_words",
]

DEFAULT_CONFIDENCE: Final = 0.95

#: Power the minimum detectable drop is quoted at.
_POWER: Final = 0.8
#: A drop of exactly the threshold is regressed; 0.75 - 0.8 must not escape by one ulp.
_THRESHOLD_TOLERANCE: Final = 1e-9
#: Resampled indices held in memory at once (with the values they gather: ~4 MB).
_CHUNK_ELEMENTS: Final = 1 << 18
#: Resample through multinomial counts of the distinct values when there are at most
#: n / this many of them: a binomial draw costs about as much as this many index draws.
_DISTINCT_RATIO: Final = 16

Scores = Sequence[float] | np.ndarray


def power_words(mde: float, detect: float) -> str:
    """`the smallest drop this run can see is 0.120, more than the 0.050 asked for`. Digits
    are added until the two numbers differ as printed: an mde of 0.0504 beside 0.050 asked
    for is never shown as `0.050 ... 0.050`."""
    digits = 3
    while digits < 6 and f"{mde:.{digits}f}" == f"{detect:.{digits}f}":
        digits += 1
    return (
        f"the smallest drop this run can see is {mde:.{digits}f}, "
        f"more than the {detect:.{digits}f} asked for"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PairedStats:
    """The comparison over matched cases: per-case differences, current minus baseline."""

    n: int
    mean_diff: float
    t_statistic: float | None
    ci_low: float | None
    ci_high: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean_diff": _json_float(self.mean_diff),
            "t_statistic": _json_float(self.t_statistic),
            "ci_low": _json_float(self.ci_low),
            "ci_high": _json_float(self.ci_high),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class DriftStats:
    """The drift statistics of one comparison's matched cases, and the verdict the gate's
    rule reads off them. `t_statistic`/`ci_*` are two-sample (Welch, bootstrap; `ci_*` None
    when cases pair and the interval was not asked for); `paired` is the matched-case
    comparison. `chance` is the one-sided probability, under no change and
    the normal approximation of the test the verdict used, of a delta at most this low."""

    verdict: str
    gate: str
    inconclusive: bool
    chance: float | None
    mde: float | None
    baseline_id: str
    baseline_mean: float
    mean_score: float
    delta: float
    threshold: float
    min_effect: float
    window: int
    n: int
    baseline_n: int
    t_statistic: float | None
    ci_low: float | None
    ci_high: float | None
    paired: PairedStats | None
    #: The smallest drop the user needs to see (`--verdryx-detect`); None: not asked.
    detect: float | None = None
    #: How the matched cases cluster, when some case names a cluster shared with another
    #: (the paired numbers are then the cluster-robust ones); None: independent cases.
    clusters: ClusterStats | None = None

    @property
    def underpowered(self) -> bool:
        """On track, but the smallest drop this run could detect is bigger than the one the
        user needs to see: "on track" then says little (docs/statistics.md)."""
        return (
            self.verdict == "on-track"
            and self.detect is not None
            and self.mde is not None
            and self.mde > self.detect + _THRESHOLD_TOLERANCE
        )

    def verdict_label(self) -> str:
        """The verdict as the summaries print it, power included: `ON-TRACK (underpowered:
        the smallest drop this run can see is 0.120, more than the 0.050 asked for)`."""
        label = self.verdict.upper()
        if self.underpowered:
            assert self.mde is not None and self.detect is not None
            label += f" (underpowered: {power_words(self.mde, self.detect)})"
        return label

    def to_dict(self) -> dict[str, Any]:
        """The docs/cli.md `drift` document plus `chance` and `min_effect`."""
        return {
            "verdict": self.verdict,
            "gate": self.gate,
            "inconclusive": self.inconclusive,
            "chance": _json_float(self.chance),
            "mde": _json_float(self.mde),
            "baseline_id": self.baseline_id,
            "baseline_mean": _json_float(self.baseline_mean),
            "mean_score": _json_float(self.mean_score),
            "delta": _json_float(self.delta),
            "threshold": _json_float(self.threshold),
            "min_effect": _json_float(self.min_effect),
            "window": self.window,
            "n": self.n,
            "baseline_n": self.baseline_n,
            "t_statistic": _json_float(self.t_statistic),
            "ci_low": _json_float(self.ci_low),
            "ci_high": _json_float(self.ci_high),
            "paired": None if self.paired is None else self.paired.to_dict(),
            "detect": _json_float(self.detect),
            "underpowered": self.underpowered,
            "clusters": None if self.clusters is None else self.clusters.to_dict(),
        }

    def inconclusive_sentence(
        self, flags: Mapping[str, str] = CLI_FLAGS, *, repeats_help: bool = True
    ) -> str | None:
        """The words a summary prints when the delta is a drop but not significant;
        `flags`: how the face printing it spells its settings; `repeats_help`: whether some
        case's output is live (repeats sample it again), else only more cases can help."""
        if not self.inconclusive:
            return None
        advice = word_hint("add cases or use {repeat}", flags) if repeats_help else "add cases"
        if self.chance is None:
            return (
                f"inconclusive: a drop of {-self.delta:.3f} cannot be told from chance with fewer "
                f"than 2 scores on a side; {advice}"
            )
        percent = round(self.chance * 100)
        shown = "<1" if percent < 1 else str(percent)
        return (
            f"inconclusive: a drop this size happens by chance {shown}% of the time at this "
            f"size; {advice}"
        )


@dataclass(frozen=True, slots=True)
class _Test:
    """The comparison the verdict rests on: its point estimate, standard error and interval."""

    estimate: float
    se: float | None
    ci_high: float | None


def compute_drift(
    current: Scores,
    baseline: Scores,
    *,
    paired_current: Scores | None = None,
    paired_baseline: Scores | None = None,
    baseline_id: str = "",
    baseline_mean: float | None = None,
    gate: str = "significant",
    threshold: float = DEFAULT_THRESHOLD,
    min_effect: float = 0.0,
    window: int = 1,
    iterations: int = DEFAULT_ITERATIONS,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    detect: float | None = None,
    two_sample_interval: bool = False,
    paired_clusters: Sequence[str | None] | None = None,
) -> DriftStats:
    """Compare the pooled `current` scores with `baseline` and decide a verdict by `gate`.

    `paired_current[i]` and `paired_baseline[i]` are the same case in both runs (matched by
    eval set id and case id). `baseline_mean` defaults to the mean of `baseline`; pass the
    mean frozen with the baseline to measure the delta against that. The same `seed` gives
    the same intervals.

    When at least two cases pair, the verdict rests on the paired interval, and the two
    bootstraps of the two-sample interval (two thirds of the work) are skipped: `ci_low` and
    `ci_high` are then None unless `two_sample_interval` asks for them. Welch's t is always
    computed (docs/statistics.md, "What is computed").

    `paired_clusters[i]` is the cluster of matched case i (None: a cluster of its own). When
    some cluster holds two cases, the paired interval resamples whole clusters and its t and
    MDE use the cluster-robust standard error (docs/statistics.md, "Clustered cases").
    """
    cur = _scores("current", current)
    base = _scores("baseline", baseline)
    if gate not in GATES:
        raise UsageError(f"unknown drift gate {gate!r}; expected one of {', '.join(GATES)}")
    _check_settings(threshold, min_effect, window, iterations, confidence, seed)
    if detect is not None and not (isinstance(detect, int | float) and 0 < detect <= 1):
        raise UsageError(f"detect {detect!r} is not a drop in (0, 1]")
    base_mean = float(np.mean(base)) if baseline_mean is None else float(baseline_mean)
    if not math.isfinite(base_mean):
        raise UsageError(f"baseline_mean is {baseline_mean!r}; expected a finite number")
    diffs = _paired_diffs(paired_current, paired_baseline)
    clusters = _clusters(paired_clusters, diffs)

    mean_score = float(np.mean(cur))
    delta = mean_score - base_mean
    two_sided = cur.size >= 2 and base.size >= 2
    with_pairs = diffs is not None and diffs.size >= 2
    # The two-sample interval decides only when cases do not pair; otherwise it is drawn
    # only when asked for, since no verdict, summary or report line reads it.
    two_sample_drawn = two_sided and (two_sample_interval or not with_pairs)
    # One independent stream per sample: skipping the two-sample draws leaves the paired
    # interval as it was.
    current_stream, baseline_stream, paired_stream = np.random.SeedSequence(seed).spawn(3)
    resampled: list[np.ndarray] = []
    if two_sample_drawn:
        resampled = [
            _bootstrap_means(cur, iterations, _generator(current_stream)),
            _bootstrap_means(base, iterations, _generator(baseline_stream)),
        ]
    if with_pairs and diffs is not None:
        rng = _generator(paired_stream)
        if clusters is None:
            resampled.append(_bootstrap_means(diffs, iterations, rng))
        else:
            resampled.append(cluster_bootstrap_means(diffs, clusters, iterations, rng))

    two_sample = _Test(estimate=mean_score - float(np.mean(base)), se=None, ci_high=None)
    t_statistic = ci_low = ci_high = None
    if two_sided:
        se = math.sqrt(_variance(cur) / cur.size + _variance(base) / base.size)
        t_statistic = _t(two_sample.estimate, se)
        if two_sample_drawn:
            ci_low, ci_high = _percentile_interval(resampled[0] - resampled[1], confidence)
        two_sample = _Test(estimate=two_sample.estimate, se=se, ci_high=ci_high)

    paired = None
    test = two_sample
    if diffs is not None:
        paired, paired_test = _paired(
            diffs, resampled[-1] if with_pairs else None, confidence, clusters
        )
        # Matched cases cancel case difficulty, the largest source of noise between runs.
        if with_pairs:
            test = paired_test

    below_zero = test.ci_high is not None and test.ci_high < 0
    past_threshold = delta <= -threshold + _THRESHOLD_TOLERANCE
    if gate == "significant":
        regressed = below_zero and -test.estimate >= min_effect - _THRESHOLD_TOLERANCE
    else:
        regressed = past_threshold or below_zero

    return DriftStats(
        verdict="regressed" if regressed else "on-track",
        gate=gate,
        # Any drop the test cannot tell from chance is said so, past the threshold or not.
        inconclusive=delta < -_THRESHOLD_TOLERANCE and not below_zero,
        chance=_chance(test),
        mde=_mde(test, confidence),
        baseline_id=baseline_id,
        baseline_mean=base_mean,
        mean_score=mean_score,
        delta=delta,
        threshold=float(threshold),
        min_effect=float(min_effect),
        window=int(window),
        n=int(cur.size),
        baseline_n=int(base.size),
        t_statistic=t_statistic,
        ci_low=ci_low,
        ci_high=ci_high,
        paired=paired,
        detect=None if detect is None else float(detect),
        clusters=None if clusters is None or diffs is None else cluster_stats(diffs, clusters),
    )


def _clusters(labels: Sequence[str | None] | None, diffs: np.ndarray | None) -> Clusters | None:
    """The matched cases' clusters, when some cluster holds two of them; else None."""
    if labels is None or diffs is None:
        return None
    if len(labels) != diffs.size:
        raise UsageError(
            f"paired_clusters has {len(labels)} labels for {diffs.size} matched cases; "
            "expected one per matched case, in the same order"
        )
    clusters = Clusters.of(list(labels))
    return clusters if clusters.shared else None


def _paired(
    diffs: np.ndarray,
    resampled: np.ndarray | None,
    confidence: float,
    clusters: Clusters | None = None,
) -> tuple[PairedStats, _Test]:
    mean_diff = float(np.mean(diffs))
    if clusters is not None and clusters.count < 2:
        resampled = None  # one cluster: one independent unit, no spread to judge it by
    if resampled is None:  # a single matched case: a difference, but no spread to judge it by
        stats = PairedStats(
            n=int(diffs.size), mean_diff=mean_diff, t_statistic=None, ci_low=None, ci_high=None
        )
        return stats, _Test(estimate=mean_diff, se=None, ci_high=None)
    if clusters is None:
        se = math.sqrt(_variance(diffs) / diffs.size)
    else:  # cases of one cluster move together: their information is the cluster's
        se = cluster_se(diffs, clusters)
    low, high = _percentile_interval(resampled, confidence)
    stats = PairedStats(
        n=int(diffs.size),
        mean_diff=mean_diff,
        t_statistic=_t(mean_diff, se),
        ci_low=low,
        ci_high=high,
    )
    return stats, _Test(estimate=mean_diff, se=se, ci_high=high)


def _bootstrap_means(values: np.ndarray, iterations: int, rng: np.random.Generator) -> np.ndarray:
    """Means of `iterations` resamples of `values`, each n draws with replacement.

    With few distinct values (pass/fail, judge scales) the counts of each value in a
    resample are Multinomial(n, share of each): one draw per distinct value instead of one
    per score, the same distribution exactly. Otherwise indices are drawn a bounded number of
    resamples at a time, so memory stays bounded whatever n is.
    """
    n = values.size
    if values.min() == values.max():
        # Zero variance: every resample is the sample; np.mean could be an ulp off.
        return np.full(iterations, float(values[0]))
    distinct, counts = np.unique(values, return_counts=True)
    if distinct.size * _DISTINCT_RATIO <= n:
        return (rng.multinomial(n, counts / n, size=iterations) @ distinct) / n
    rows = max(1, _CHUNK_ELEMENTS // n)
    means = np.empty(iterations)
    for start in range(0, iterations, rows):
        stop = min(iterations, start + rows)
        means[start:stop] = values[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    return means


def _generator(stream: np.random.SeedSequence) -> np.random.Generator:
    # SFC64, as sound for simulation as numpy's default PCG64 (it passes PractRand and
    # BigCrush), and the generator every earlier interval was drawn with: another would move
    # each interval by its Monte Carlo error.
    return np.random.Generator(np.random.SFC64(stream))


def _percentile_interval(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    """sorted[int(tail*B)] and sorted[min(int((1-tail)*B), B-1)], as the original verdryx read
    its interval (docs/statistics.md, "The original verdryx")."""
    count = draws.size
    tail = (1 - confidence) / 2
    low = int(tail * count)
    high = min(int((1 - tail) * count), count - 1)
    ordered = np.partition(draws, (low, high))
    return float(ordered[low]), float(ordered[high])


def _variance(values: np.ndarray) -> float:
    # Identical values have variance 0 exactly; np.var can leave ~1e-33 from an ulp-off mean.
    if values.min() == values.max():
        return 0.0
    return float(np.var(values, ddof=1))


def _t(estimate: float, se: float) -> float | None:
    return estimate / se if se > 0 else None


def _chance(test: _Test) -> float | None:
    if test.se is None:
        return None
    if test.se == 0:
        # No noise at all: a drop is certain, not chance; no change or a rise always happens.
        return 0.0 if test.estimate < 0 else 1.0
    return NormalDist().cdf(test.estimate / test.se)


def _mde(test: _Test, confidence: float) -> float | None:
    if test.se is None:
        return None
    z = NormalDist().inv_cdf
    return (z(1 - (1 - confidence) / 2) + z(_POWER)) * test.se


def _scores(name: str, values: Scores, *, allow_empty: bool = False) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{name} scores are not numbers ({exc}); pass a list of floats") from exc
    if array.ndim != 1:
        raise UsageError(f"{name} scores have shape {array.shape}; expected a flat list of floats")
    if array.size == 0 and not allow_empty:
        raise UsageError(
            f"{name} scores are empty; drift needs at least one score on each side "
            "(run the eval set, or name a baseline whose run has scores)"
        )
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise UsageError(
            f"{name} score #{bad[0]} is {float(array[bad[0]])!r}; expected a finite number "
            "(leave unmeasured cases out instead of scoring them NaN)"
        )
    return array


def _paired_diffs(current: Scores | None, baseline: Scores | None) -> np.ndarray | None:
    if current is None and baseline is None:
        return None
    if current is None or baseline is None:
        missing = "paired_current" if current is None else "paired_baseline"
        raise UsageError(f"{missing} is missing; pass both paired arrays or neither")
    cur = _scores("paired_current", current, allow_empty=True)
    base = _scores("paired_baseline", baseline, allow_empty=True)
    if cur.size != base.size:
        raise UsageError(
            f"paired arrays have {cur.size} and {base.size} values; expected one value per "
            "matched case on each side, in the same case order"
        )
    if cur.size == 0:
        return None  # no case in common: the two-sample comparison is all there is
    return cur - base


def _check_settings(
    threshold: float, min_effect: float, window: int, iterations: int, confidence: float, seed: int
) -> None:
    if not (math.isfinite(threshold) and threshold >= 0):
        raise UsageError(f"threshold is {threshold!r}; expected a number >= 0 such as 0.05")
    if not (math.isfinite(min_effect) and min_effect >= 0):
        raise UsageError(f"min_effect is {min_effect!r}; expected a number >= 0 such as 0.02")
    if not (0 < confidence < 1):
        raise UsageError(f"confidence is {confidence!r}; expected a level between 0 and 1 (0.95)")
    _whole("window", window, minimum=1, example="1")
    _whole("iterations", iterations, minimum=1, example=str(DEFAULT_ITERATIONS))
    _whole("seed", seed, minimum=0, example="0")


def _whole(name: str, value: int, *, minimum: int, example: str) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise UsageError(
            f"{name} is {value!r}; expected a whole number >= {minimum} such as {example}"
        )


def _json_float(value: float | None) -> float | None:
    """JSON has no NaN or infinity; a statistic that is not a finite number is not computed."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


#: Old names, kept resolvable with a DeprecationWarning (docs/python-api.md, "Renamed").
__getattr__ = renamed(__name__, {"DriftReport": "DriftStats"})
