"""What CI sees: annotations, the job summary and run provenance (no pytest). Where a case
starts in its file is `verdryx_core.evalsets.lines`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from verdryx_core.lazy_names import first_use

# Imported now: the function has its module's name, which importing the module would
# otherwise leave here in its place.
from verdryx_core.reporting.ci.step_summary import step_summary

if TYPE_CHECKING:
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
    from verdryx_core.reporting.ci.verdict import Interval, verdict_interval, verdict_line

#: Public name -> the module that defines it: a run's provenance imports no annotation.
_HOMES: Final = {
    "CaseFailure": "verdryx_core.reporting.ci.failures",
    "Interval": "verdryx_core.reporting.ci.verdict",
    "Provenance": "verdryx_core.reporting.ci.provenance",
    "case_annotation": "verdryx_core.reporting.ci.annotations",
    "ci_provenance": "verdryx_core.reporting.ci.provenance",
    "default_run_group": "verdryx_core.reporting.ci.provenance",
    "escape_data": "verdryx_core.reporting.ci.annotations",
    "escape_property": "verdryx_core.reporting.ci.annotations",
    "gate_annotation": "verdryx_core.reporting.ci.annotations",
    "git_provenance": "verdryx_core.reporting.ci.provenance",
    "github_annotations": "verdryx_core.reporting.ci.annotations",
    "verdict_interval": "verdryx_core.reporting.ci.verdict",
    "verdict_line": "verdryx_core.reporting.ci.verdict",
}

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

__getattr__ = first_use(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(__all__)
