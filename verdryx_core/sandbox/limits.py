"""The resource limits of one sandboxed run, set in the child before it executes anything
(docs/workspaces-and-execution.md, "Limits").

util-linux's `prlimit` sets them when it is installed: it execs the command with the limits
in place, and nothing runs in the forked child of this (threaded) process. Without it, the
child sets them itself (setrlimit before exec).
"""

from __future__ import annotations

import resource
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

__all__ = ["Limits"]


@cache
def _prlimit() -> str | None:
    return shutil.which("prlimit")


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """What one run may use. `wall_s` is enforced by the parent (a kill of the whole group);
    the rest by the kernel, per process."""

    wall_s: float = 30.0
    cpu_s: int = 30
    memory_bytes: int = 1 << 30
    file_bytes: int = 16 << 20
    processes: int = 64
    #: The work folder's total size (and its /tmp's): an in-memory file system of this size.
    disk_bytes: int = 256 << 20
    #: Of its combined stdout and stderr, what is kept (the rest is cut, and says so).
    output_bytes: int = 64 << 10

    def _values(self, processes: bool) -> list[tuple[int, str, int, int]]:
        cpu = max(1, int(self.cpu_s))
        values = [
            (resource.RLIMIT_CPU, "cpu", cpu, cpu + 1),
            (resource.RLIMIT_AS, "as", self.memory_bytes, self.memory_bytes),
            (resource.RLIMIT_FSIZE, "fsize", self.file_bytes, self.file_bytes),
            (resource.RLIMIT_CORE, "core", 0, 0),
        ]
        if processes:
            values.append((resource.RLIMIT_NPROC, "nproc", self.processes, self.processes))
        return values

    def prefix(self, *, processes: bool) -> list[str] | None:
        """`prlimit ... --` to put before the command, or None when prlimit is missing.
        `processes`: whether the process limit is set (it counts every process of the
        child's user, so only a user of its own gets it)."""
        binary = _prlimit()
        if binary is None:
            return None
        flags = [f"--{name}={soft}:{hard}" for _, name, soft, hard in self._values(processes)]
        return [binary, *flags, "--"]

    def setter(self, *, processes: bool) -> Callable[[], None]:
        """The function the child runs before exec, where prlimit is missing."""
        values = self._values(processes)

        def apply() -> None:
            for kind, _, soft, hard in values:
                resource.setrlimit(kind, (soft, hard))

        return apply
