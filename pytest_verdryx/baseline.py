"""The baseline this session is gated against: found at configure time (an unknown label is
exit 4 before anything is paid for), and asked whether a failing case was below its bar in
the baseline too (then the item xfails instead of failing)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from verdryx_core.evaluation import EvalSettings
from verdryx_core.gating.baselines import find_baseline
from verdryx_core.gating.comparison import check_models
from verdryx_core.runs import Baseline, BaselineCase, EvalRun, Score
from verdryx_core.store import Store

__all__ = ["BaselineView", "find_session_baseline"]


class BaselineView:
    def __init__(self, baseline: Baseline | None = None) -> None:
        self.baseline = baseline
        self._cases = baseline.case_map() if baseline is not None else {}

    @property
    def name(self) -> str:
        if self.baseline is None:
            return ""
        return self.baseline.label or self.baseline.id

    def excuse(self, score: Score) -> BaselineCase | None:
        """The baseline case when the same case was below this score's bar there too. An
        edited case is a new measurement (the gate reports it as changed): its old score
        cannot excuse a failure today."""
        if score.value is None or score.passed is not False or score.bar is None:
            return None
        base = self._cases.get(score.key)
        if base is None or base.value >= score.bar:
            return None
        if base.fingerprint and score.fingerprint and base.fingerprint != score.fingerprint:
            return None
        return base


def find_session_baseline(
    label: str,
    *,
    store: Store | None,
    root: Path,
    settings: EvalSettings,
    allow_model_change: bool,
    started_at: datetime,
) -> tuple[Baseline, str | None]:
    """The baseline named `label` and a warning when it measured another model or judge
    (None when it did not). Raises VerdryxError for an unknown label or a refused change."""
    baseline = find_baseline(label, store=store, root=root)
    probe = EvalRun(
        id="-", model=settings.model, judge_model=settings.judge_model, started_at=started_at
    )
    return baseline, check_models(probe, baseline, allow=allow_model_change)
