"""Running untrusted code: kernel-namespace isolation, resource limits, a wall clock."""

from __future__ import annotations

from verdryx_core.sandbox.isolation import (
    ISOLATION_ENV,
    Isolation,
    Mount,
    View,
    detect_isolation,
    sandbox_user,
)
from verdryx_core.sandbox.limits import Limits
from verdryx_core.sandbox.run import Finished, Started, give, run_sandboxed

__all__ = [
    "ISOLATION_ENV",
    "Finished",
    "Isolation",
    "Limits",
    "Mount",
    "Started",
    "View",
    "detect_isolation",
    "give",
    "run_sandboxed",
    "sandbox_user",
]
