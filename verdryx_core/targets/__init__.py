"""Targets: the agent under test, called once per case and repeat (docs/targets.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from verdryx_core.lazy_names import first_use, renamed

if TYPE_CHECKING:
    from verdryx_core.errors import TargetLoadError, TargetResultError
    from verdryx_core.targets.cache import TargetCache
    from verdryx_core.targets.case import TargetCase
    from verdryx_core.targets.loader import load_target, parse_spec
    from verdryx_core.targets.result import TargetResult, TargetUsage, normalise_result
    from verdryx_core.targets.runner import ERROR_KINDS, TargetCall, TargetRunner
    from verdryx_core.targets.target import Target

#: Public name -> the module that defines it: a run without a target imports none of them.
_HOMES: Final = {
    "ERROR_KINDS": "verdryx_core.targets.runner",
    "Target": "verdryx_core.targets.target",
    "TargetCache": "verdryx_core.targets.cache",
    "TargetCall": "verdryx_core.targets.runner",
    "TargetCase": "verdryx_core.targets.case",
    "TargetLoadError": "verdryx_core.errors",
    "TargetResult": "verdryx_core.targets.result",
    "TargetResultError": "verdryx_core.errors",
    "TargetRunner": "verdryx_core.targets.runner",
    "TargetUsage": "verdryx_core.targets.result",
    "load_target": "verdryx_core.targets.loader",
    "normalise_result": "verdryx_core.targets.result",
    "parse_spec": "verdryx_core.targets.loader",
}

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
__getattr__ = renamed(__name__, {"TargetAnswer": "TargetCall"}, first_use(__name__, _HOMES))


def __dir__() -> list[str]:
    return sorted(__all__)
