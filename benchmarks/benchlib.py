"""What every benchmark prints beside its figures: the machine's load and a verdict line.

A figure measured on a shared machine means little without the load it was measured under,
and a target means little without a line saying whether it held: each script prints
`load average ...` beside its figures and ends with `PASS: ...` or `MISSED: ...`.
"""

from __future__ import annotations

import os
import resource

__all__ = ["children_cpu", "load", "own_cpu", "verdict"]


def load() -> str:
    """The 1/5/15-minute load average and the core count, as one phrase."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} on {os.cpu_count()} cores"


def own_cpu() -> float:
    """CPU seconds (user + system) this process has used so far, all its threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def verdict(met: bool, target: str) -> str:
    """The closing line: `PASS: <target>` or `MISSED: <target>`, with the load beside it."""
    return f"{'PASS' if met else 'MISSED'}: {target} ({load()})"
