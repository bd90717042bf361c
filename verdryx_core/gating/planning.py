"""Planning power: what it takes for the paired gate to see a drop (docs/statistics.md,
"Planning a run").

The model. A case's score in a run is the mean of its r samples. One sample varies around
the case's own mean by three parts (`Noise`): a shock its cluster's cases share in that
session (c), a shock of the case in that session (w), and the sample's own noise (e, the
within-case variance `v` of repeats). Repeats average e alone, more cases w, more clusters
c: a case's mean adds c m + w + e / r to the run's variance of the mean (times n), m the
mean cluster size. The gated run and its baseline are measured alike (n cases x r samples
each), and the dropped run varies by a factor 1 + k (D (2 mu - 1) - D^2) / (c + w + e) more
(`Noise.dropped_factor`: a pass/fail case's variance p (1 - p) moves by D (2p - 1) - D^2).
With SE the standard error of the mean paired difference, the gate, which calls a drop when
its interval lies below zero, sees a drop D with power Phi(D / SE - z(1 - alpha/2)); the
cases (in more clusters of the same size) and repeats needed follow, and repeats are not
offered when the parts they cannot average already exceed the variance the drop allows.

Where the parts come from (`Noise.source`, `Noise.shocks`): a run's repeats (e), a gate's
paired differences (the plugin's summary: c from the clusters' design effect, e and w from
the rest), or, from single samples, the spread between cases, an upper bound (a hard case
and a flaky one look alike with one sample each). One session's clusters give c with their
shared difficulty in it (`BASELINE_ALONE`). The same `plan()` computes the numbers of
`verdryx plan` and of the plugin's `plan:` line.
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
from verdryx_core.gating.drift import DEFAULT_CONFIDENCE, DriftStats
from verdryx_core.runs import Baseline, EvalRun, Score
from verdryx_core.settings_table import default_of

__all__ = [
    "DEFAULT_DETECT",
    "DEFAULT_POWER",
    "Noise",
    "Plan",
    "noise_of_baseline",
    "noise_of_gate",
    "noise_of_pair",
    "noise_of_scores",
    "noise_of_values",
    "plan",
    "plan_for_gate",
    "power_apart",
    "power_at",
    "samples_per_case",
]

DEFAULT_DETECT: Final[float] = default_of("verdryx_detect")
DEFAULT_POWER: Final = 0.8
#: The power the drift statistics' `mde` is quoted at (verdryx_core/gating/drift.py).
_MDE_POWER: Final = 0.8
#: The paired test needs at least two matched cases.
_MIN_CASES: Final = 2

Source = Literal["repeats", "paired", "bound"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Noise:
    """How noisy one case's score is, in parts that repeats do and do not average out, and
    the size it was measured at (docs/statistics.md, "Clustered cases in a plan").

    One sample of case i, of cluster g, in session t (a run) varies around the case's own
    mean by three parts: a shock of its cluster in that session, shared by every case and
    sample of the cluster in the run (`cluster_shock`, c); a shock of the case in that
    session, shared by its samples (`case_shock`, w); and the sample's own noise
    (`variance`, e). Repeats average out e alone; more cases average w; only more clusters
    average c. A case's mean over r samples then contributes c m + w + e / r to a run's
    variance of the mean (times n), m the mean cluster size."""

    #: `e`: the variance of one sample's score around its case's mean in a session,
    #: averaged over cases (the within-case variance of repeats).
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
    #: `c`: the variance of a cluster's shock in one session (0: none, or no clusters).
    cluster_shock: float = 0.0
    #: `w`: the variance of a case's own shock in one session (0: none measured).
    case_shock: float = 0.0
    #: The mean cluster size (1: independent cases).
    cluster_size: float = 1.0
    #: Where `cluster_shock` came from: `none` (no shared cluster), `baseline` (one session:
    #: a cluster's shared difficulty counts in it too, an upper bound), `paired` (the
    #: paired differences of two sessions, where difficulty cancels).
    shocks: Literal["none", "baseline", "paired"] = "none"
    #: The clusters it was measured on (None: no case named a shared cluster).
    clusters: ClusterStats | None = None

    @property
    def bound(self) -> bool:
        return self.source == "bound"

    @property
    def total(self) -> float:
        """One sample's variance across sessions: c + w + e."""
        return self.cluster_shock + self.case_shock + self.variance

    @property
    def session_variance(self) -> float:
        """What a case adds to a run's variance (times n) that repeats cannot average out:
        c m + w."""
        return self.cluster_shock * self.cluster_size + self.case_shock

    def side_variance(self, samples: float) -> float:
        """A case's variance of its mean over `samples` samples, its cluster's share counted
        m times: c m + w + e / r."""
        return self.session_variance + self.variance / samples

    @property
    def design_effect(self) -> float:
        """What the clusters multiply the variance of the mean by at the current size,
        (c m + w + e / r) / (c + w + e / r); 1: independent cases."""
        independent = self.cluster_shock + self.case_shock + self.variance / self.samples
        return self.side_variance(self.samples) / independent if independent > 0 else 1.0

    @property
    def growth(self) -> float:
        """`k`: the share of m (1 - m), the most a score in [0, 1] with mean m can vary, that
        the cases' variance (c + w + e) is: 1 for pass/fail cases of one difficulty, 0 for
        scores that never vary. A drop moves a pass/fail case's variance by D (2m - 1) - D^2;
        a score's is taken to move by `k` times that."""
        top = self.mean * (1 - self.mean)
        return 0.0 if top <= 0 else min(1.0, self.total / top)

    def dropped_factor(self, drop: float) -> float:
        """How much the run that dropped by `drop` varies, as a multiple of the baseline's:
        each part of the noise moves in proportion."""
        drop = min(drop, self.mean)  # a score cannot drop below 0
        total = self.total
        if total <= 0:
            return 1.0
        return max(0.0, 1 + self.growth * (drop * (2 * self.mean - 1) - drop**2) / total)

    def pair_variance(self, drop: float, samples: float = 1.0) -> float:
        """The variance of one case's paired difference at `samples` samples a side (its
        cluster's share counted m times), when the agent dropped by `drop`: the baseline's
        plus the dropped run's."""
        return self.side_variance(samples) * (1 + self.dropped_factor(drop))

    def dropped_variance(self, drop: float) -> float:
        """One sample's variance in the run that dropped by `drop`, v(D) = v + k (D (2m - 1)
        - D^2): the second term of `pair_variance`."""
        return self.pair_variance(drop) - self.variance

    def se(self, cases: float, samples: float, drop: float) -> float:
        """The standard error of the mean paired difference at this size and drop (more
        cases come in more clusters of the same mean size)."""
        return math.sqrt(self.pair_variance(drop, samples) / cases)

    def components(self) -> dict[str, Any]:
        """`variance_components` of `verdryx plan --json` (docs/cli.md)."""
        return {
            "per_sample": self.variance,
            "case_shock": self.case_shock,
            "cluster_shock": self.cluster_shock,
            "cluster_size": self.cluster_size,
            "shocks": self.shocks,
        }


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
    #: Cases needed at one sample each (in clusters of the current mean size), and samples
    #: per case needed at the current cases: None when no number of repeats gets there
    #: (the shocks repeats cannot average out are too large at these cases).
    cases_needed: int
    repeats_needed: int | None
    #: The smallest drop the current cases see at `power` however many the repeats.
    mde_floor: float = 0.0

    @property
    def clusters_needed(self) -> int | None:
        """The clusters `cases_needed` come in (None: no shared cluster)."""
        if self.noise.cluster_size <= 1:
            return None
        return max(2, _ceil(self.cases_needed / self.noise.cluster_size))

    @property
    def calls_now(self) -> int:
        """Samples graded by one run at the current size (a model or target call each)."""
        return round(self.noise.cases * self.noise.samples)

    @property
    def calls_needed(self) -> dict[str, int | None]:
        """Calls of one run for each way to get there: more cases, or more repeats (None:
        repeats cannot get there)."""
        return {
            "cases": self.cases_needed,
            "repeats": None
            if self.repeats_needed is None
            else self.noise.cases * self.repeats_needed,
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
            "variance_components": self.noise.components(),
            "mde": self.mde,
            "mde_floor": self.mde_floor,
            "power_now": self.power_now,
            "cases_needed": self.cases_needed,
            "clusters_needed": self.clusters_needed,
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
    # The variance of the mean paired difference the drop needs: SE <= D / z_sum.
    target = (detect / z_sum) ** 2
    both = 1 + noise.dropped_factor(detect)
    # Cases at one sample each (n >= P(D, 1) / target), more clusters of the same size.
    cases_needed = max(_MIN_CASES, _ceil(noise.pair_variance(detect, 1.0) / target))
    # Repeats at the current cases: (F + S / r) / n <= target, F what they cannot average.
    room = noise.cases * target - noise.session_variance * both
    per_sample = noise.variance * both
    repeats_needed: int | None
    if room <= 1e-15 * max(1.0, per_sample):
        repeats_needed = None
    else:
        repeats_needed = max(1, _ceil(per_sample / room))
    return Plan(
        detect=float(detect),
        power=float(power),
        alpha=round(1 - confidence, 12),
        noise=noise,
        mde=_mde(noise, noise.side_variance(noise.samples), z_sum),
        mde_floor=_mde(noise, noise.session_variance, z_sum),
        power_now=power_at(noise, noise.cases, noise.samples, detect, confidence=confidence),
        cases_needed=cases_needed,
        repeats_needed=repeats_needed,
    )


def _mde(noise: Noise, side: float, z_sum: float) -> float:
    """The drop D that solves D = z_sum sqrt(B (1 + f(D)) / n), B the side variance at the
    size and f(D) = 1 + rho (D (2m - 1) - D^2), rho = k / (c + w + e): the root of
    (1 + b rho) D^2 - b rho (2m - 1) D - 2 b = 0, b = z_sum^2 B / n."""
    b = z_sum**2 * side / noise.cases
    total = noise.total
    rho = noise.growth / total if total > 0 else 0.0
    slope = 2 * noise.mean - 1
    a, linear = 1 + b * rho, b * rho * slope
    return (linear + math.sqrt(linear * linear + 8 * b * a)) / (2 * a)


def plan_for_gate(
    report: DriftStats,
    run: EvalRun,
    baseline_run: EvalRun | None,
    *,
    power: float = DEFAULT_POWER,
) -> Plan | None:
    """The plan a summary shows for an on-track verdict that could not see the drop asked
    for (`DriftStats.underpowered`), from the noise the gate measured; None otherwise.
    `baseline_run`: the baseline's run when the store holds it (its samples per case), else
    the baseline is taken to have been measured as this run was."""
    if not report.underpowered or report.detect is None:
        return None
    keys = {score.key for score in run.scores}
    baseline = (
        None
        if baseline_run is None
        else samples_per_case([score for score in baseline_run.scores if score.key in keys])
    )
    noise = noise_of_pair(report, run, baseline_samples=baseline)
    return None if noise is None else plan(noise, detect=report.detect, power=power)


def noise_of_pair(
    report: DriftStats, run: EvalRun, *, baseline_samples: float | None
) -> Noise | None:
    """The noise of a run's paired comparison with its baseline (`noise_of_gate`), the
    run's own repeats splitting a case's session shock from its per-sample noise;
    `baseline_samples` None: measured as this run was."""
    current = samples_per_case(run.scores) * report.window
    # A window's samples come from several sessions, so its repeats split nothing.
    repeated = [score.samples for score in run.scores if len(score.samples) >= 2]
    sample_variance = (
        math.fsum(_variance(samples) for samples in repeated) / len(repeated)
        if repeated and report.window == 1
        else None
    )
    return noise_of_gate(
        report,
        current_samples=current,
        baseline_samples=current if baseline_samples is None else baseline_samples,
        sample_variance=sample_variance,
        sample_dof=sum(len(samples) - 1 for samples in repeated),
    )


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


#: What a plan from one session cannot see of its clusters (docs/statistics.md, "Clustered
#: cases in a plan").
BASELINE_ALONE: Final = (
    "the clusters' shock is estimated from one session alone: it cannot tell a cluster's "
    "shared difficulty (which the paired gate cancels) from a shock its cases share in one "
    "session (which the gate counts on both sides and repeats do not average out); all of it "
    "is planned as shock, so the clusters asked for are an upper bound; a gated run's plan "
    "line, or `verdryx plan --baseline LABEL --run ID`, measures it from paired differences"
)


def with_clusters(
    values: Sequence[float], labels: Sequence[str | None]
) -> Callable[[Noise], Noise]:
    """What sets a noise's cluster shock from the clustered cases of one session: c = ICC x
    the variance of the case scores, the between-cluster part by the one-way ANOVA ICC, m
    the mean cluster size. One session counts a cluster's shared difficulty in it too (the
    paired test cancels that): at least the shock, in expectation (`BASELINE_ALONE`). From
    single samples that part is taken out of the per-sample variance, which held it."""
    if not any(label is not None for label in labels):
        return lambda noise: noise
    import numpy as np

    clusters = Clusters.of(list(labels))
    if not clusters.shared:
        return lambda noise: noise
    array = np.asarray(values, dtype=np.float64)
    found = icc(array, clusters)
    size = array.size / clusters.count
    spread = _variance(list(values)) if len(values) >= 2 else 0.0

    def apply(noise: Noise) -> Noise:
        # A bound's variance is the case scores' whole (their spread, or m (1 - m)): the
        # cluster's share of it is the shock, the rest per sample. With repeats, the share
        # of the case means' spread; the per-sample noise is the repeats' own.
        shock = (found or 0.0) * (noise.variance if noise.bound else spread)
        per_sample = max(0.0, noise.variance - shock) if noise.bound else noise.variance
        note = "; ".join(part for part in (noise.note, BASELINE_ALONE) if part)
        shocked = dataclasses.replace(
            noise,
            variance=per_sample,
            cluster_shock=shock,
            cluster_size=size,
            shocks="baseline",
            note=note,
        )
        stats = ClusterStats(
            count=clusters.count,
            mean_size=size,
            icc=found,
            design_effect=shocked.design_effect,
        )
        return dataclasses.replace(shocked, clusters=stats)

    return apply


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
    report: DriftStats,
    *,
    current_samples: float,
    baseline_samples: float,
    sample_variance: float | None = None,
    sample_dof: int = 0,
) -> Noise | None:
    """The noise a paired gate measured (None when it was not paired): its standard error,
    read back from its `mde`, with each side's samples per case. The paired differences of
    two sessions split it: the clusters' design effect gives the shock a cluster's cases
    share in a session (c), the rest is per case; `sample_variance` (the repeats' within-case
    variance, when measured, on `sample_dof` degrees of freedom) splits that into the case's
    own session shock (w) and the per-sample noise (e), else all of it is taken as
    per-sample. w is counted only when the differences vary more than their samples do by
    two standard errors: a noisy w would take repeats off the plan on luck alone."""
    paired = report.paired
    if paired is None or paired.n < _MIN_CASES or report.mde is None:
        return None
    z = NormalDist().inv_cdf
    se = report.mde / (z(1 - (1 - DEFAULT_CONFIDENCE) / 2) + z(_MDE_POWER))
    # The SE is the cluster-robust one when cases cluster: its design effect is set apart.
    deff = report.clusters.design_effect if report.clusters is not None else 1.0
    deff = deff if deff > 0 else 1.0
    spread = paired.n * se**2 / deff  # one case's difference, as if independent
    size = report.clusters.mean_size if report.clusters is not None else 1.0
    # Var(mean) = (2 c m + spread - 2 c) / n = deff spread / n: c = (deff - 1) spread / 2(m - 1).
    shock = min(spread / 2, max(0.0, (deff - 1) * spread / (2 * (size - 1)))) if size > 1 else 0.0
    within = spread - 2 * shock  # 2 w + e (1 / r_current + 1 / r_baseline)
    inverse = 1 / current_samples + 1 / baseline_samples
    per_sample = within / inverse
    case_shock = 0.0
    if sample_variance is not None and sample_dof > 0 and paired.n > 1:
        excess = within - sample_variance * inverse
        # Standard errors of two variance estimates: s^2 sqrt(2 / dof).
        error = math.hypot(
            within * math.sqrt(2 / (paired.n - 1)),
            sample_variance * inverse * math.sqrt(2 / sample_dof),
        )
        if excess > 2 * error:
            per_sample = max(0.0, sample_variance)
            case_shock = excess / 2
    clustered = report.clusters is not None and size > 1
    return Noise(
        variance=per_sample,
        cases=paired.n,
        samples=current_samples,
        source="paired",
        mean=min(1.0, max(0.0, report.baseline_mean)),
        cluster_shock=shock,
        case_shock=case_shock,
        cluster_size=size if clustered else 1.0,
        shocks="paired" if clustered else "none",
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
