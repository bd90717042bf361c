"""A run's judge checked against the human labels, as both faces show it: the agreement
figures, each judge's drift against its stored figure, and the calibration the corrected
gate rests on (docs/calibrating-the-judge.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verdryx_core.judge.calibration.agreement import Agreement, agreement
from verdryx_core.judge.calibration.correction import Calibration
from verdryx_core.judge.calibration.figures import judge_drift, latest_figure
from verdryx_core.judge.calibration.labels import Label
from verdryx_core.judge.calibration.samples import judged_samples, match_labels
from verdryx_core.runs import EvalRun
from verdryx_core.store.base import Store

__all__ = ["JudgeCheck", "check_judge", "summary_lines"]


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeCheck:
    """What the labels say about a run's judge."""

    agreement: Agreement
    calibration: Calibration
    #: One sentence per judge whose kappa fell significantly below its stored figure.
    drifts: tuple[str, ...] = ()


def check_judge(run: EvalRun, labels: Sequence[Label], store: Store | None = None) -> JudgeCheck:
    """The labels matched to `run`'s judged samples; with `store`, each judge's figure
    compared with its newest stored one from another run (the same fingerprint only)."""
    matched = match_labels(judged_samples(run), labels)
    figures = agreement(matched)
    drifts = []
    if store is not None:
        for fingerprint, figure in figures.judges:
            stored = latest_figure(store, fingerprint, other_than=run.id)
            words = judge_drift(figure, stored) if stored is not None else None
            if words is not None:
                drifts.append(words)
    calibration = Calibration(
        human=tuple(matched.human),
        judge=tuple(matched.judge),
        drift="; ".join(drifts) or None,
    )
    return JudgeCheck(agreement=figures, calibration=calibration, drifts=tuple(drifts))


def _number(value: float | None, spec: str = ".2f") -> str:
    return "n/a" if value is None else format(value, spec)


def summary_lines(check: JudgeCheck) -> list[str]:
    """The judge block of a summary: the figures in one line, then what to look at."""
    figures = check.agreement
    ci = figures.kappa_ci
    lines = [
        f"judge vs labels: n {figures.n}, agreement {_number(figures.agreement, '.0%')}, "
        f"kappa {_number(figures.kappa)}"
        + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
        + f", TPR {_number(figures.tpr)}, TNR {_number(figures.tnr)}",
        f"  confusion (human x judge): pass/pass {figures.table.tp}, pass/fail "
        f"{figures.table.fn}, fail/pass {figures.table.fp}, fail/fail {figures.table.tn}; "
        f"{len(figures.disagreements)} disagreement(s), {figures.stale} stale label(s), "
        f"{figures.unlabelled} judged sample(s) unlabelled",
    ]
    lines.extend(f"WARNING: {words}" for words in check.drifts)
    return lines
