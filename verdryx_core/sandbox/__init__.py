"""Running untrusted code: kernel-namespace isolation, resource limits, a wall clock."""

from __future__ import annotations

from verdryx_core.sandbox.isolation import ISOLATION_ENV, Isolation, detect_isolation
from verdryx_core.sandbox.limits import Limits
from verdryx_core.sandbox.run import Finished, run_sandboxed

__all__ = [
    "ISOLATION_ENV",
    "Finished",
    "Isolation",
    "Limits",
    "detect_isolation",
    "run_sandboxed",
]
