"""The summary lines of a run with exec cases or aggregated repeats, in both faces' words:
which isolation ran the code, and how samples were aggregated
(docs/workspaces-and-execution.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from verdryx_core.cases import EvalCase
from verdryx_core.errors import word_hint

__all__ = ["run_notes"]


def _uses_exec(case: EvalCase) -> bool:
    return case.grader == "exec" or any(check.grader == "exec" for check in case.checks or ())


def run_notes(
    cases: Iterable[EvalCase], *, repeat: int, unsafe_exec: bool, flags: Mapping[str, str]
) -> list[str]:
    """One line on how exec cases run (when there are some), one on aggregation (when a
    case sets a rule other than the mean)."""
    listed = list(cases)
    lines: list[str] = []
    executed = sum(1 for case in listed if _uses_exec(case))
    if executed:
        from verdryx_core.sandbox import detect_isolation

        isolation = detect_isolation()
        if isolation.isolated:
            how = f"isolated by {isolation.name} (no host files, no network, limits)"
        elif unsafe_exec:
            how = word_hint(
                "UNISOLATED: no isolation on this machine, allowed by {unsafe_exec}", flags
            )
        else:
            how = word_hint("refused: no isolation on this machine (see {unsafe_exec})", flags)
        lines.append(f"exec: {executed} case(s) {how}")
    rules = Counter(case.aggregate or "mean" for case in listed)
    if set(rules) - {"mean"}:
        shown = ", ".join(f"{rule} {count}" for rule, count in sorted(rules.items()))
        lines.append(f"aggregate over {repeat} sample(s) per case: {shown} case(s)")
    return lines
