"""The SLO's one error: a parameter that cannot be measured against."""

from __future__ import annotations

from verdryx_core.errors import UsageError

__all__ = ["SloInputError"]


class SloInputError(UsageError, ValueError):
    """An SLO parameter is out of range or unknown; the message names it and the fix."""
