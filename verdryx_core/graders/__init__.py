"""Graders: one module per kind, one shape (`Grader.grade(case, output, context) -> Grade`).

Names are imported on first use: a run imports the module of a grader kind when a case
first uses that kind (`GraderTable`), not every kind's whenever a grader module is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from verdryx_core.lazy_names import first_use

if TYPE_CHECKING:
    from verdryx_core.errors import GraderError
    from verdryx_core.graders.base import Grade, GradeContext, Grader
    from verdryx_core.graders.checks import ChecksGrader
    from verdryx_core.graders.contains import ContainsGrader, IContainsGrader
    from verdryx_core.graders.exact import ExactGrader
    from verdryx_core.graders.f1 import F1Grader
    from verdryx_core.graders.json_output import JsonGrader
    from verdryx_core.graders.numeric import NumericGrader
    from verdryx_core.graders.outcome_tag import OutcomeTagGrader
    from verdryx_core.graders.regex import RegexGrader
    from verdryx_core.graders.registry import (
        custom_grader_names,
        default_min_score,
        is_grader,
        register_grader,
        unregister_grader,
    )
    from verdryx_core.graders.table import GraderTable, build_graders
    from verdryx_core.graders.tool_trace import ToolTraceGrader

#: Public name -> the module that defines it.
_HOMES: Final = {
    "ChecksGrader": "verdryx_core.graders.checks",
    "ContainsGrader": "verdryx_core.graders.contains",
    "ExactGrader": "verdryx_core.graders.exact",
    "F1Grader": "verdryx_core.graders.f1",
    "Grade": "verdryx_core.graders.base",
    "GradeContext": "verdryx_core.graders.base",
    "Grader": "verdryx_core.graders.base",
    "GraderError": "verdryx_core.errors",
    "GraderTable": "verdryx_core.graders.table",
    "IContainsGrader": "verdryx_core.graders.contains",
    "JsonGrader": "verdryx_core.graders.json_output",
    "NumericGrader": "verdryx_core.graders.numeric",
    "OutcomeTagGrader": "verdryx_core.graders.outcome_tag",
    "RegexGrader": "verdryx_core.graders.regex",
    "ToolTraceGrader": "verdryx_core.graders.tool_trace",
    "build_graders": "verdryx_core.graders.table",
    "custom_grader_names": "verdryx_core.graders.registry",
    "default_min_score": "verdryx_core.graders.registry",
    "is_grader": "verdryx_core.graders.registry",
    "register_grader": "verdryx_core.graders.registry",
    "unregister_grader": "verdryx_core.graders.registry",
}

__all__ = [
    "ChecksGrader",
    "ContainsGrader",
    "ExactGrader",
    "F1Grader",
    "Grade",
    "GradeContext",
    "Grader",
    "GraderError",
    "GraderTable",
    "IContainsGrader",
    "JsonGrader",
    "NumericGrader",
    "OutcomeTagGrader",
    "RegexGrader",
    "ToolTraceGrader",
    "build_graders",
    "custom_grader_names",
    "default_min_score",
    "is_grader",
    "register_grader",
    "unregister_grader",
]

__getattr__ = first_use(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(__all__)
