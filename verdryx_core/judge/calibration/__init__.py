"""Calibrating the judge against human labels: labels files, agreement (kappa, TPR, TNR),
the corrected pass rate, and the judge's stored figures (docs/calibrating-the-judge.md)."""

from verdryx_core.judge.calibration.agreement import Agreement, agreement
from verdryx_core.judge.calibration.correction import (
    MIN_LABELS_PER_CLASS,
    Calibration,
    CorrectedDelta,
    CorrectedRate,
    corrected_delta,
    corrected_rate,
    rogan_gladen,
)
from verdryx_core.judge.calibration.figures import (
    JudgeFigure,
    judge_drift,
    latest_figure,
    save_figures,
)
from verdryx_core.judge.calibration.labels import (
    Label,
    LabelError,
    append_label,
    case_labels,
    output_sha256,
    read_labels,
)
from verdryx_core.judge.calibration.samples import (
    JudgedSample,
    JudgeFingerprint,
    Matched,
    judged_samples,
    match_labels,
)

__all__ = [
    "MIN_LABELS_PER_CLASS",
    "Agreement",
    "Calibration",
    "CorrectedDelta",
    "CorrectedRate",
    "JudgeFigure",
    "JudgeFingerprint",
    "JudgedSample",
    "Label",
    "LabelError",
    "Matched",
    "agreement",
    "append_label",
    "case_labels",
    "corrected_delta",
    "corrected_rate",
    "judge_drift",
    "judged_samples",
    "latest_figure",
    "match_labels",
    "output_sha256",
    "read_labels",
    "rogan_gladen",
    "save_figures",
]
