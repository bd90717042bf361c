"""How a run is judged against its baseline: the gate's settings, one value a face passes
whole (docs/options.md, `--verdryx-gate` and the others). Defined apart from the gate, so a
face can hold one without loading the statistics (numpy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from verdryx_core.defaults import DEFAULT_ITERATIONS
from verdryx_core.settings_table import default_of

if TYPE_CHECKING:
    from verdryx_core.gating.sequential import SequentialVerdict

__all__ = ["GatePolicy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GatePolicy:
    """How a run is judged against its baseline (docs/options.md, `--verdryx-gate` etc.)."""

    #: `significant` (the interval of the paired difference lies below zero) or `threshold`.
    rule: str = default_of("verdryx_gate")
    threshold: float = default_of("verdryx_threshold")
    min_effect: float = default_of("verdryx_min_effect")
    #: Pool the run with this many runs in all (the current one and earlier complete ones).
    window: int = default_of("verdryx_window")
    allow_model_change: bool = default_of("verdryx_allow_model_change")
    iterations: int = DEFAULT_ITERATIONS
    seed: int = 0
    #: Refuse a comparison of fewer than this share of the baseline's cases (matched and
    #: measured, on the same fingerprint): a gate that compared little says little.
    min_coverage: float = default_of("verdryx_min_coverage")
    #: The smallest drop the user needs to see; an on-track verdict that could not see it
    #: is labelled underpowered, or refused under `require_power`.
    detect: float = default_of("verdryx_detect")
    require_power: bool = default_of("verdryx_require_power")
    #: `score` (mean scores) or `pass` (pass rates per case).
    metric: str = default_of("verdryx_gate_metric")
    #: Also bootstrap the two-sample interval when cases pair (the verdict uses the paired
    #: one; docs/statistics.md, "What is computed").
    two_sample_interval: bool = False
    #: The false discovery rate of the per-case drop tests (`--verdryx-fdr`).
    fdr: float = default_of("verdryx_fdr")
    #: Also gate the judged cases' pass rate corrected for the judge's TPR / TNR, measured
    #: on human labels (docs/calibrating-the-judge.md); refused without enough labels.
    judge_correction: bool = default_of("verdryx_judge_correction")
    #: Refuse the gate when the judge's kappa fell significantly below its stored figure.
    require_calibrated_judge: bool = default_of("verdryx_require_calibrated_judge")
    #: Where the sequential gate stood when the run ended (`--verdryx-sequential`): when it
    #: settled, its verdict is the gate's, and the cases it made unnecessary are not held
    #: against the coverage floor (docs/statistics.md, "The sequential gate").
    sequential: SequentialVerdict | None = None
