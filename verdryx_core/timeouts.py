"""The one per-call time bound: every target, model, judge and typed call gets at most this
long (docs/targets.md, "Timeouts")."""

from __future__ import annotations

import math
from typing import Final

from verdryx_core.errors import UsageError
from verdryx_core.settings_table import default_of

__all__ = ["DEFAULT_TIMEOUT_S", "check_timeout"]

#: Seconds one call may take before it is that case's error (`--verdryx-timeout`).
DEFAULT_TIMEOUT_S: Final[float] = default_of("verdryx_timeout")


def check_timeout(value: object, *, what: str = "timeout") -> float:
    """`value` as a positive, finite number of seconds, or a UsageError naming it."""
    hint = f"pass {{timeout}} SECONDS, a positive number (default {DEFAULT_TIMEOUT_S:g})"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{what} {value!r} is not a number of seconds", hint=hint)
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{what} {value!r} is not a positive, finite number of seconds", hint=hint)
    return float(value)
