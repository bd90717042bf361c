"""Targets: the agent under test, called once per case and repeat (docs/targets.md)."""

from __future__ import annotations

from verdryx_core.errors import TargetLoadError, TargetResultError
from verdryx_core.lazy_names import renamed
from verdryx_core.targets.cache import TargetCache
from verdryx_core.targets.case import TargetCase
from verdryx_core.targets.loader import load_target, parse_spec
from verdryx_core.targets.result import TargetResult, TargetUsage, normalise_result
from verdryx_core.targets.runner import ERROR_KINDS, TargetCall, TargetRunner
from verdryx_core.targets.target import Target

__all__ = [
    "ERROR_KINDS",
    "Target",
    "TargetCache",
    "TargetCall",
    "TargetCase",
    "TargetLoadError",
    "TargetResult",
    "TargetResultError",
    "TargetRunner",
    "TargetUsage",
    "load_target",
    "normalise_result",
    "parse_spec",
]


#: Old names, kept resolvable with a DeprecationWarning (docs/python-api.md, "Renamed").
__getattr__ = renamed(__name__, {"TargetAnswer": "TargetCall"})
