"""Planning power: what it takes for the paired gate to see a drop (docs/statistics.md,
"Planning a run").

The model. A case's score in a run is the mean of its r samples; one sample's score varies
around the case's own mean, and `v` is that within-case variance averaged over the cases (`m`
their mean score). The gated run and its baseline are measured alike (n cases x r samples
each), so a case's paired difference has variance W(D)/r, W(D) = v + v(D): the baseline's
variance plus that of the run that dropped by D, v(D) = v + k (D (2m - 1) - D^2) (`Noise.
pair_variance`, `Noise.growth`). With SE = sqrt(W(D) / (n r)) the gate, which calls a drop
when its interval lies below zero, sees a drop D with power Phi(D / SE - z(1 - alpha/2)); it
needs n r >= (z(1 - alpha/2) + z(P))^2 W(D) / D^2 to reach power P, and the MDE is the D at
which the current size reaches it.

Where `v` comes from (`Noise.source`): a run's repeats (the per-case sample variances), a
gate's paired differences (the plugin's summary: the spread it measured), or, from single
samples, the spread between cases, an upper bound (a hard case and a flaky one look alike
with one sample each). The same `plan()` computes the numbers of `verdryx plan` and of the
plugin's `plan:` line.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Final, Literal

from verdryx_core.errors import UsageError
from verdryx_core.gating.clusters import Clusters, ClusterStats, icc
from verdryx_core.gating.drift import DEFAULT_CONFIDENCE, DriftReport
from verdryx_core.runs import Baseline, EvalRun, Score

__all__ = [
    "DEFAULT_DETECT",
    "DEFAULT_POWER",
    "Noise",
    "Plan",
    "noise_of_baseline",
    "noise_of_gate",
    "noise_of_scores",
    "noise_of_values",
    "plan",
    "plan_for_gate",
    "power_apart",
    "power_at",
    "samples_per_case",
]

DEFAULT_DETECT: Final = 0.05
DEFAULT_POWER: Final = 0.8
#: The power the drift report's `mde` is quoted at (verdryx_core/gating/drift.py).
_MDE_POWER: Final = 0.8
#: The paired test needs at least two matched cases.
_MIN_CASES: Final = 2

Source = Literal["repeats", "paired", "bound"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Noise:
    """How noisy one case's score is, and the size it was measured at."""

    #: `v`: the variance of one sample's score around its case's mean, averaged over cases.
    variance: float
    #: Cases measured (matched cases, for a gate).
    cases: int
    #: Samples per case now (a mean, when cases differ).
    samples: float
    #: `repeats`, `paired`, or `bound` (single samples: an upper bound on `v`).
    source: Source
    #: `m`: the mean score of the cases.
    mean: float
    #: What the planner had to assume, in words (None: nothing).
    note: str | None = None
    #: What clustered cases multiply the variance of the mean by, 1 + (m - 1) ICC at mean
    #: cluster size m (docs/statistics.md, "Clustered cases"); 1: independent cases.
    design_effect: float = 1.0
    #: The clusters it was measured on (None: no case named a shared cluster).
    clusters: ClusterStats | None = None

    @property
    def bound(self) -> bool:
        return self.source == "bound"

    @property
    def growth(self) -> float:
        """`k`: the share of m (1 - m), the most a score in [0, 1] with mean m can vary, that
        the cases' variance `v` is: 1 for pass/fail cases of one difficulty, 0 for scores
        that never vary. A drop moves a pass/fail case's variance by D (2m - 1) - D^2; a
        score's is taken to move by `k` times that."""
        top = self.mean * (1 - self.mean)
        return 0.0 if top <= 0 else min(1.0, self.variance / top)

    def pair_variance(self, drop: float) -> float:
        """The variance of one case's paired difference at one sample a side, when the agent
        dropped by `drop`: the baseline's `v` plus the dropped run's."""
        drop = min(drop, self.mean)  # a score cannot drop below 0
        dropped = self.variance + self.growth * (drop * (2 * self.mean - 1) - drop**2)
        return self.variance + max(0.0, dropped)

    def dropped_variance(self, drop: float) -> float:
        """One sample's variance in the run that dropped by `drop`, v(D) = v + k (D (2m - 1)
        - D^2): the second term of `pair_variance`."""
        return self.pair_variance(drop) - self.variance

    def se(self, cases: float, samples: float, drop: float) -> float:
        """The standard error of the mean paired difference at this size and drop."""
        return math.sqrt(self.design_effect * self.pair_variance(drop) / (cases * samples))


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """What it takes to see a drop of `detect` at `power` (docs/statistics.md)."""

    detect: float
    power: float
    #: The gate's two-sided alpha: it calls a drop when the (1 - alpha) interval is below 0.
    alpha: float
    noise: Noise
    #: The smallest drop the current size sees at `power`.
    mde: float
    #: The power the current size has against a drop of `detect`.
    power_now: float
    #: Cases needed at one sample each, and samples per case needed at the current cases.
    cases_needed: int
    repeats_needed: int

    @property
    def calls_now(self) -> int:
        """Samples graded by one run at the current size (a model or target call each)."""
        return round(self.noise.cases * self.noise.samples)

    @property
    def calls_needed(self) -> dict[str, int]:
        """Calls of one run for each way to get there: more cases, or more repeats."""
        return {
            "cases": self.cases_needed,
            "repeats": self.noise.cases * self.repeats_needed,
        }

    @property
    def enough(self) -> bool:
        """The current size already sees the drop at the power asked for."""
        return self.mde <= self.detect + 1e-12

    def to_dict(self) -> dict[str, Any]:
        """The `verdryx plan --json` document (docs/cli.md)."""
        return {
            "detect": self.detect,
            "power": self.power,
            "alpha": self.alpha,
            "cases": self.noise.cases,
            "samples": self.noise.samples,
            "variance": self.noise.variance,
            "variance_source": self.noise.source,
            "design_effect": self.noise.design_effect,
            "mde": self.mde,
            "power_now": self.power_now,
            "cases_needed": self.cases_needed,
            "repeats_needed": self.repeats_needed,
            "calls_now": self.calls_now,
            "calls_needed": self.calls_needed,
        }


def power_at(
    noise: Noise,
    cases: float,
    samples: float,
    detect: float,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> float:
    """The chance the gate calls a true drop of `detect` regressed, at this size:
    Phi(D / SE - z(1 - alpha/2)), the SE counting the noise the drop adds."""
    se = noise.se(cases, samples, detect)
    if se == 0:
        return 1.0 if detect > 0 else 0.0
    z_alpha = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    return NormalDist().cdf(detect / se - z_alpha)


@dataclass(frozen=True, slots=True, kw_only=True)
class Apart:
    """The power and MDE of a gate whose baseline holds another number of samples per case
    than each gated run (a baseline pooled from several runs)."""

    power: float
    mde: float


def power_apart(
    noise: Noise,
    *,
    baseline_samples: float,
    detect: float,
    samples: float | None = None,
    power: float = DEFAULT_POWER,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Apart:
    """`power_at` and the MDE when the baseline holds `baseline_samples` per case and each
    gated run `samples` (None: the noise's own): a case's paired difference then has variance
    v / r_baseline + v(D) / r_run, which is `pair_variance(D) / r` when both are r."""
    cases, samples = noise.cases, noise.samples if samples is None else samples
    z = NormalDist().inv_cdf
    z_alpha = z(1 - (1 - confidence) / 2)

    def se(drop: float) -> float:
        variance = noise.variance / baseline_samples + noise.dropped_variance(drop) / samples
        return math.sqrt(noise.design_effect * variance / cases)

    now = se(detect)
    power_now = (
        (1.0 if detect > 0 else 0.0) if now == 0 else NormalDist().cdf(detect / now - z_alpha)
    )
    # The MDE solves D = (z(1 - alpha/2) + z(P)) SE(D); SE(D) is bounded, so D - z_sum SE(D)
    # turns positive by D = z_sum SE(0) + ... and bisection finds the root.
    z_sum = z_alpha + z(power)
    low, high = 0.0, 1.0
    while high - z_sum * se(high) < 0 and high < 64:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        if middle - z_sum * se(middle) < 0:
            low = middle
        else:
            high = middle
    return Apart(power=power_now, mde=high)


def plan(
    noise: Noise,
    *,
    detect: float = DEFAULT_DETECT,
    power: float = DEFAULT_POWER,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Plan:
    """The plan for seeing a drop of `detect` at `power` with this much noise."""
    if not (isinstance(detect, int | float) and 0 < detect <= 1):
        raise UsageError(f"detect {detect!r} is not a drop in (0, 1]; pass one such as 0.05")
    if not (isinstance(power, int | float) and 0.5 <= power < 1):
        raise UsageError(f"power {power!r} is not in [0.5, 1); pass one such as 0.8")
    z = NormalDist().inv_cdf
    z_sum = z(1 - (1 - confidence) / 2) + z(power)
    # Samples per run (n r) the drop needs: n r >= z_sum^2 W(D) / D^2, W the pair variance.
    samples_needed = z_sum**2 * noise.design_effect * noise.pair_variance(detect) / detect**2
    return Plan(
        detect=float(detect),
        power=float(power),
        alpha=round(1 - confidence, 12),
        noise=noise,
        mde=_mde(noise, z_sum),
        power_now=power_at(noise, noise.cases, noise.samples, detect, confidence=confidence),
        cases_needed=max(_MIN_CASES, _ceil(samples_needed)),
        repeats_needed=max(1, _ceil(samples_needed / noise.cases)),
    )


def _mde(noise: Noise, z_sum: float) -> float:
    """The drop D that solves D = z_sum sqrt(deff W(D) / (n r)), W(D) = 2v + k (D (2m - 1) -
    D^2): the root of (1 + c k) D^2 - c k (2m - 1) D - 2 v c = 0, c = z_sum^2 deff / (n r)."""
    c = z_sum**2 * noise.design_effect / (noise.cases * noise.samples)
    k, slope = noise.growth, 2 * noise.mean - 1
    a, b = 1 + c * k, c * k * slope
    return (b + math.sqrt(b * b + 8 * noise.variance * c * a)) / (2 * a)


def plan_for_gate(
    report: DriftReport,
    run: EvalRun,
    baseline_run: EvalRun | None,
    *,
    power: float = DEFAULT_POWER,
) -> Plan | None:
    """The plan a summary shows for an on-track verdict that could not see the drop asked
    for (`DriftReport.underpowered`), from the noise the gate measured; None otherwise.
    `baseline_run`: the baseline's run when the store holds it (its samples per case), else
    the baseline is taken to have been measured as this run was."""
    if not report.underpowered or report.detect is None:
        return None
    keys = {score.key for score in run.scores}
    current = samples_per_case(run.scores) * report.window
    baseline = (
        current
        if baseline_run is None
        else samples_per_case([score for score in baseline_run.scores if score.key in keys])
    )
    noise = noise_of_gate(report, current_samples=current, baseline_samples=baseline)
    return None if noise is None else plan(noise, detect=report.detect, power=power)


def noise_of_scores(scores: Sequence[Score], *, keys: Collection[str] | None = None) -> Noise:
    """The noise of one run's measured scores (only those of `keys`, when given): from the
    per-case sample variances where cases were sampled more than once, else the bound."""
    measured = [
        score for score in scores if score.value is not None and (keys is None or score.key in keys)
    ]
    if not measured:
        raise UsageError("nothing measured: no case has a score to plan from")
    values = [score.value for score in measured if score.value is not None]
    clustered = with_clusters(values, [score.cluster for score in measured])
    repeated = [score.samples for score in measured if len(score.samples) >= 2]
    if repeated:
        variance = math.fsum(_variance(samples) for samples in repeated) / len(repeated)
        noise = Noise(
            variance=variance,
            cases=len(measured),
            samples=samples_per_case(measured),
            source="repeats",
            mean=math.fsum(values) / len(measured),
        )
    else:
        noise = noise_of_values(values, one_sample=True)
    return clustered(noise)


def noise_of_baseline(baseline: Baseline, run: EvalRun | None) -> Noise:
    """The noise of a baseline's cases: from its run's samples when the store still has the
    run, else from the frozen case scores alone (a bound). A baseline pooled over several
    runs (docs/statistics.md, "Baselines from several runs") holds the samples its run alone
    lacks: their variance is measured, not bounded, and each gated run is planned at its
    run's samples per case."""
    if run is not None:
        noise = noise_of_scores(run.scores, keys={case.key for case in baseline.cases})
        pooled = [case.samples for case in baseline.cases if len(case.samples) >= 2]
        if noise.bound and pooled:
            variance = math.fsum(_variance(samples) for samples in pooled) / len(pooled)
            noise = dataclasses.replace(noise, variance=variance, source="repeats")
        return noise
    values = [case.value for case in baseline.cases]
    clustered = with_clusters(values, [case.cluster for case in baseline.cases])
    repeated = [case.samples for case in baseline.cases if len(case.samples) >= 2]
    if repeated:  # the baseline file keeps its samples (docs/statistics.md)
        counts = [max(1, len(case.samples)) for case in baseline.cases]
        return clustered(
            Noise(
                variance=math.fsum(_variance(samples) for samples in repeated) / len(repeated),
                cases=len(values),
                samples=math.fsum(counts) / len(counts),
                source="repeats",
                mean=math.fsum(values) / len(values),
            )
        )
    return clustered(
        noise_of_values(
            values,
            one_sample=False,
            note="the baseline's run is not in this store: its samples per case are unknown, "
            "planned as 1",
        )
    )


def with_clusters(
    values: Sequence[float], labels: Sequence[str | None]
) -> Callable[[Noise], Noise]:
    """What sets a noise's design effect from clustered cases: 1 + (m - 1) ICC, the ICC of
    the case scores within clusters and m the mean cluster size. Shared difficulty counts in
    that ICC, which the paired test cancels: an upper bound, as the noise from one sample is
    (the gate's own figure, `noise_of_gate`, measures the paired differences)."""
    if not any(label is not None for label in labels):
        return lambda noise: noise
    import numpy as np

    clusters = Clusters.of(list(labels))
    if not clusters.shared:
        return lambda noise: noise
    array = np.asarray(values, dtype=np.float64)
    found = icc(array, clusters)
    size = array.size / clusters.count
    deff = 1 + (size - 1) * (found or 0.0)
    stats = ClusterStats(count=clusters.count, mean_size=size, icc=found, design_effect=deff)
    return lambda noise: dataclasses.replace(noise, design_effect=deff, clusters=stats)


def noise_of_values(values: Sequence[float], *, one_sample: bool, note: str | None = None) -> Noise:
    """The bound from per-case scores alone. Of single samples (`one_sample`): their spread
    between cases, which is the within-case variance plus the spread of the cases' own
    means. Of scores that may be means of several samples: m (1 - m) for their mean m, the
    most a score in [0, 1] with that mean can vary."""
    if not values:
        raise UsageError("nothing measured: no case has a score to plan from")
    mean = math.fsum(values) / len(values)
    spread = one_sample and len(values) >= 2
    variance = _variance(values) if spread else max(0.0, mean * (1 - mean))
    return Noise(
        variance=variance, cases=len(values), samples=1.0, source="bound", mean=mean, note=note
    )


def noise_of_gate(
    report: DriftReport, *, current_samples: float, baseline_samples: float
) -> Noise | None:
    """The noise a paired gate measured (None when it was not paired): its standard error,
    read back from its `mde`, with each side's samples per case."""
    paired = report.paired
    if paired is None or paired.n < _MIN_CASES or report.mde is None:
        return None
    z = NormalDist().inv_cdf
    se = report.mde / (z(1 - (1 - DEFAULT_CONFIDENCE) / 2) + z(_MDE_POWER))
    # The SE is the cluster-robust one when cases cluster: its design effect is set apart.
    deff = report.clusters.design_effect if report.clusters is not None else 1.0
    deff = deff if deff > 0 else 1.0
    # Var(one case's difference) = v / r_current + v / r_baseline.
    variance = paired.n * se**2 / deff / (1 / current_samples + 1 / baseline_samples)
    return Noise(
        variance=variance,
        cases=paired.n,
        samples=current_samples,
        source="paired",
        mean=min(1.0, max(0.0, report.baseline_mean)),
        design_effect=deff,
        clusters=report.clusters,
    )


def samples_per_case(scores: Sequence[Score]) -> float:
    """The mean number of samples behind each measured score (1 for a single sample)."""
    counts = [max(1, len(score.samples)) for score in scores if score.value is not None]
    return math.fsum(counts) / len(counts) if counts else 1.0


def _variance(values: Sequence[float]) -> float:
    if min(values) == max(values):
        return 0.0
    mean = math.fsum(values) / len(values)
    return math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1)


def _ceil(value: float) -> int:
    # A product of floats one ulp above a whole number is that number, not the next.
    return math.ceil(value - 1e-9)
