"""What CI sees: annotations, the job summary and run provenance (no pytest). Where a case
starts in its file is `verdryx_core.evalsets.lines`."""

from __future__ import annotations

from verdryx_core.reporting.ci.annotations import (
    case_annotation,
    escape_data,
    escape_property,
    gate_annotation,
    github_annotations,
)
from verdryx_core.reporting.ci.failures import CaseFailure
from verdryx_core.reporting.ci.provenance import (
    Provenance,
    ci_provenance,
    default_run_group,
    git_provenance,
)
from verdryx_core.reporting.ci.step_summary import step_summary
from verdryx_core.reporting.ci.verdict import Interval, verdict_interval, verdict_line

__all__ = [
    "CaseFailure",
    "Interval",
    "Provenance",
    "case_annotation",
    "ci_provenance",
    "default_run_group",
    "escape_data",
    "escape_property",
    "gate_annotation",
    "git_provenance",
    "github_annotations",
    "step_summary",
    "verdict_interval",
    "verdict_line",
]
