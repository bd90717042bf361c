"""The errors of the target machinery: a target that cannot be loaded (a usage error, before
any case runs) and a target's bad return value (that case's error)."""

from __future__ import annotations

from verdryx_core.errors import VerdryxError

__all__ = ["TargetLoadError", "TargetResultError"]


class TargetLoadError(VerdryxError):
    """`module:callable` does not name a callable; the message names the spec and why."""


class TargetResultError(VerdryxError):
    """A target returned something that is not a result; one line, naming the field."""
