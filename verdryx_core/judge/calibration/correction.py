"""The judged pass rate corrected for the judge's errors (docs/calibrating-the-judge.md,
"The corrected pass rate").

A judge with true-positive rate TPR and true-negative rate TNR passes a share
q = p * TPR + (1 - p) * (1 - TNR) of outputs whose true pass rate is p; the Rogan-Gladen
estimator inverts it: p = (q + TNR - 1) / (TPR + TNR - 1). TPR and TNR are themselves
estimates from a few dozen labels, so the interval is a bootstrap over both the labels
(resampled within each human class) and the cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from verdryx_core.judge.calibration.agreement import KAPPA_ITERATIONS

__all__ = [
    "MIN_LABELS_PER_CLASS",
    "Calibration",
    "CorrectedDelta",
    "CorrectedRate",
    "corrected_delta",
    "corrected_rate",
    "rogan_gladen",
]

#: Labels needed where the human said pass, and again where the human said fail, before the
#: correction is used: below it TPR or TNR rests on too few labels to correct anything.
MIN_LABELS_PER_CLASS: Final = 20


def rogan_gladen(observed: Any, tpr: Any, tnr: Any) -> Any:
    """The true pass rate behind an observed judged pass rate, clipped to [0, 1] (arrays
    allowed); NaN where the judge is no better than chance (TPR + TNR <= 1)."""
    youden = np.asarray(tpr, dtype=float) + np.asarray(tnr, dtype=float) - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (np.asarray(observed, dtype=float) + tnr - 1.0) / youden
    return np.where(youden > 0, np.clip(value, 0.0, 1.0), np.nan)


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """The labelled samples a correction rests on: the human's verdict and the judge's."""

    human: tuple[bool, ...]
    judge: tuple[bool, ...]
    #: Why the judge is no longer the one the stored figure measured (a significant kappa
    #: drop on re-judged samples); None when it is not known to have drifted.
    drift: str | None = None

    @property
    def positives(self) -> int:
        return sum(self.human)

    @property
    def negatives(self) -> int:
        return len(self.human) - self.positives

    @property
    def tpr(self) -> float:
        hits = sum(1 for h, j in zip(self.human, self.judge, strict=True) if h and j)
        return hits / self.positives if self.positives else float("nan")

    @property
    def tnr(self) -> float:
        hits = sum(1 for h, j in zip(self.human, self.judge, strict=True) if not h and not j)
        return hits / self.negatives if self.negatives else float("nan")

    def shortfall(self, minimum: int = MIN_LABELS_PER_CLASS) -> str | None:
        """Why these labels cannot correct a pass rate yet, with what to add; None when they can."""
        more_pass = max(0, minimum - self.positives)
        more_fail = max(0, minimum - self.negatives)
        if more_pass or more_fail:
            return (
                f"the judge correction needs at least {minimum} labelled samples the humans "
                f"passed and {minimum} they failed; it has {self.positives} and "
                f"{self.negatives}: label {more_pass} more pass and {more_fail} more fail"
            )
        if self.tpr + self.tnr <= 1.0:
            return (
                f"the judge is no better than chance on the labels (TPR {self.tpr:.2f} + TNR "
                f"{self.tnr:.2f} <= 1): its pass rate cannot be corrected, fix the judge"
            )
        return None

    def draws(self, rng: np.random.Generator, iterations: int) -> tuple[Any, Any]:
        """Bootstrap draws of (TPR, TNR): the labels resampled within each human class."""
        tpr = rng.binomial(self.positives, self.tpr, size=iterations) / self.positives
        tnr = rng.binomial(self.negatives, self.tnr, size=iterations) / self.negatives
        return tpr, tnr


def _interval(values: Any) -> tuple[float, float] | None:
    if np.all(np.isnan(values)):
        return None
    low, high = np.nanpercentile(values, [2.5, 97.5])
    return float(low), float(high)


@dataclass(frozen=True, slots=True, kw_only=True)
class CorrectedRate:
    """A judged pass rate and the rate it corrects to, with the 95% interval."""

    n: int
    observed: float
    corrected: float
    ci: tuple[float, float] | None
    tpr: float
    tnr: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "observed": self.observed,
            "corrected": self.corrected,
            "ci": list(self.ci) if self.ci is not None else None,
            "tpr": self.tpr,
            "tnr": self.tnr,
        }


def corrected_rate(
    passed: Sequence[bool],
    calibration: Calibration,
    *,
    iterations: int = KAPPA_ITERATIONS,
    seed: int = 0,
) -> CorrectedRate:
    """The corrected pass rate of judged cases whose judge verdicts are `passed`."""
    n = len(passed)
    observed = sum(passed) / n
    rng = np.random.default_rng(seed)
    tpr, tnr = calibration.draws(rng, iterations)
    q = rng.binomial(n, observed, size=iterations) / n
    return CorrectedRate(
        n=n,
        observed=observed,
        corrected=float(rogan_gladen(observed, calibration.tpr, calibration.tnr)),
        ci=_interval(rogan_gladen(q, tpr, tnr)),
        tpr=calibration.tpr,
        tnr=calibration.tnr,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CorrectedDelta:
    """The corrected pass rate of a run's judged cases against its baseline's, on the cases
    both judged: the delta is current minus baseline, negative when quality dropped."""

    n: int
    current: float
    baseline: float
    delta: float
    ci: tuple[float, float] | None
    min_effect: float = 0.0

    @property
    def regressed(self) -> bool:
        return self.ci is not None and self.ci[1] < 0 and -self.delta >= self.min_effect

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "current": self.current,
            "baseline": self.baseline,
            "delta": self.delta,
            "ci_low": self.ci[0] if self.ci is not None else None,
            "ci_high": self.ci[1] if self.ci is not None else None,
            "regressed": self.regressed,
        }


def corrected_delta(
    current: Sequence[bool],
    baseline: Sequence[bool],
    calibration: Calibration,
    *,
    min_effect: float = 0.0,
    iterations: int = KAPPA_ITERATIONS,
    seed: int = 0,
) -> CorrectedDelta:
    """`current[i]` and `baseline[i]` are the judge's verdicts on the same case: the cases are
    resampled in pairs, the labels within each class, together."""
    now = np.asarray(current, dtype=float)
    before = np.asarray(baseline, dtype=float)
    n = len(now)
    rng = np.random.default_rng(seed)
    tpr, tnr = calibration.draws(rng, iterations)
    picks = rng.integers(0, n, size=(iterations, n))
    drawn = rogan_gladen(now[picks].mean(axis=1), tpr, tnr) - rogan_gladen(
        before[picks].mean(axis=1), tpr, tnr
    )
    run_rate = float(rogan_gladen(now.mean(), calibration.tpr, calibration.tnr))
    base_rate = float(rogan_gladen(before.mean(), calibration.tpr, calibration.tnr))
    return CorrectedDelta(
        n=n,
        current=run_rate,
        baseline=base_rate,
        delta=run_rate - base_rate,
        ci=_interval(drawn),
        min_effect=min_effect,
    )
