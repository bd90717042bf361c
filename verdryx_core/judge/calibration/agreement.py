"""How well the judge agrees with the humans (docs/calibrating-the-judge.md, "What each
number means"): percent agreement, Cohen's kappa with a bootstrap interval, TPR and TNR (a
human pass is the positive class), the confusion matrix, and the disagreements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from verdryx_core.judge.calibration.samples import JudgeFingerprint, Matched

__all__ = ["KAPPA_ITERATIONS", "Agreement", "Confusion", "agreement", "confusion", "kappa"]

#: Bootstrap resamples behind the kappa interval.
KAPPA_ITERATIONS: Final = 2000


@dataclass(frozen=True, slots=True)
class Confusion:
    """Counts of (human, judge) pairs; a pass is the positive class."""

    tp: int  # human pass, judge pass
    fn: int  # human pass, judge fail
    fp: int  # human fail, judge pass
    tn: int  # human fail, judge fail

    @property
    def n(self) -> int:
        return self.tp + self.fn + self.fp + self.tn

    def to_dict(self) -> dict[str, int]:
        return {"tp": self.tp, "fn": self.fn, "fp": self.fp, "tn": self.tn}


def confusion(human: Sequence[bool], judge: Sequence[bool]) -> Confusion:
    h = np.asarray(human, dtype=bool)
    j = np.asarray(judge, dtype=bool)
    return Confusion(
        tp=int(np.sum(h & j)),
        fn=int(np.sum(h & ~j)),
        fp=int(np.sum(~h & j)),
        tn=int(np.sum(~h & ~j)),
    )


def _kappa(tp: Any, fn: Any, fp: Any, tn: Any) -> Any:
    """Cohen's kappa from counts (arrays allowed); NaN where chance agreement is certain
    (both raters gave one class only), where kappa is undefined."""
    tp, fn, fp, tn = (np.asarray(count, dtype=float) for count in (tp, fn, fp, tn))
    n = tp + fn + fp + tn
    observed = (tp + tn) / n
    chance = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance < 1.0, (observed - chance) / (1.0 - chance), np.nan)


def kappa(table: Confusion) -> float | None:
    if table.n == 0:
        return None
    value = float(_kappa(table.tp, table.fn, table.fp, table.tn))
    return None if np.isnan(value) else value


def kappa_interval(
    table: Confusion, *, iterations: int = KAPPA_ITERATIONS, seed: int = 0
) -> tuple[float, float] | None:
    """The 95% percentile bootstrap interval of kappa over the labelled pairs."""
    if table.n < 2 or kappa(table) is None:
        return None
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(
        table.n, np.array([table.tp, table.fn, table.fp, table.tn]) / table.n, size=iterations
    )
    values = _kappa(counts[:, 0], counts[:, 1], counts[:, 2], counts[:, 3])
    if np.all(np.isnan(values)):
        return None
    low, high = np.nanpercentile(values, [2.5, 97.5])
    return float(low), float(high)


def _rate(hits: int, total: int) -> float | None:
    return hits / total if total else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Agreement:
    """The agreement figures of one set of labelled samples."""

    table: Confusion
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    stale: int = 0
    skipped: int = 0
    unlabelled: int = 0
    disagreements: tuple[dict[str, Any], ...] = ()
    #: The same figures per judge fingerprint (none on a per-judge figure itself).
    judges: tuple[tuple[JudgeFingerprint, Agreement], ...] = field(default=())

    @property
    def n(self) -> int:
        return self.table.n

    @property
    def agreement(self) -> float | None:
        return _rate(self.table.tp + self.table.tn, self.n)

    @property
    def tpr(self) -> float | None:
        return _rate(self.table.tp, self.table.tp + self.table.fn)

    @property
    def tnr(self) -> float | None:
        return _rate(self.table.tn, self.table.tn + self.table.fp)

    def figures(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "kappa_ci": list(self.kappa_ci) if self.kappa_ci is not None else None,
            "tpr": self.tpr,
            "tnr": self.tnr,
            "confusion": self.table.to_dict(),
        }

    def to_dict(self) -> dict[str, Any]:
        return self.figures() | {
            "stale": self.stale,
            "skipped": self.skipped,
            "unlabelled": self.unlabelled,
            "disagreements": list(self.disagreements),
            "judges": [
                {"fingerprint": fingerprint.to_dict()} | figure.figures()
                for fingerprint, figure in self.judges
            ],
        }


def _figure(human: Sequence[bool], judge: Sequence[bool], *, seed: int) -> Agreement:
    table = confusion(human, judge)
    return Agreement(table=table, kappa=kappa(table), kappa_ci=kappa_interval(table, seed=seed))


def agreement(matched: Matched, *, seed: int = 0) -> Agreement:
    """The figures of `matched`, overall and per judge fingerprint."""
    whole = _figure(matched.human, matched.judge, seed=seed)
    groups: dict[JudgeFingerprint, tuple[list[bool], list[bool]]] = {}
    disagreements = []
    for sample, human, label in matched.pairs:
        humans, verdicts = groups.setdefault(sample.fingerprint, ([], []))
        humans.append(human)
        verdicts.append(sample.judge_passed)
        if human != sample.judge_passed:
            disagreements.append(
                {
                    "eval_set_id": sample.eval_set_id,
                    "case_id": sample.case_id,
                    "judge_score": sample.score,
                    "judge_passed": sample.judge_passed,
                    "human": "pass" if human else "fail",
                    "reason": sample.reason,
                    "labeler": label.labeler,
                    "note": label.note,
                }
            )
    per_judge = tuple(
        (fingerprint, _figure(humans, judged, seed=seed))
        for fingerprint, (humans, judged) in sorted(groups.items())
    )
    return Agreement(
        table=whole.table,
        kappa=whole.kappa,
        kappa_ci=whole.kappa_ci,
        stale=matched.stale,
        skipped=matched.skipped,
        unlabelled=matched.unlabelled,
        disagreements=tuple(disagreements),
        judges=per_judge,
    )
