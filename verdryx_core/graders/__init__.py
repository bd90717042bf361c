"""Graders: one module per kind, one shape (`Grader.grade(case, output, context) -> Grade`)."""

from __future__ import annotations

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
