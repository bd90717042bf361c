"""The challenger's lines in a summary (docs/targets.md, "A challenger"): what it answered,
its verdict against the champion in the gate's own words, and its worst cases."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verdryx_core.reporting.ci.verdict import verdict_line
from verdryx_core.runs import EvalRun

if TYPE_CHECKING:
    from verdryx_core.gating.compare import GateOutcome

__all__ = ["challenger_lines", "challenger_subject"]


def challenger_subject(run: EvalRun) -> str:
    """`verdryx challenger agents:v2`: how its verdict line begins."""
    return f"verdryx challenger {run.target or '(none)'}"


def challenger_lines(run: EvalRun, gate: GateOutcome, *, worst: int = 3) -> list[str]:
    """A few lines: the challenger's cases and errors, the verdict, its worst cases."""
    mean = "n/a" if run.mean_score is None else f"{run.mean_score:.3f}"
    lines = [
        f"challenger {run.target}: {len(run.measured)} case(s) measured, mean {mean}"
        + (f", {len(run.unmeasured)} unmeasured" if run.unmeasured else "")
        + (f"; {len(run.errors)} errored, first: {run.errors[0]}" if run.errors else "")
    ]
    lines.append(verdict_line(gate, subject=challenger_subject(run), against="champion"))
    result = gate.result
    if result is not None and result.stats is not None:
        dropped = [delta for delta in result.deltas if delta.delta < 0][:worst]
        if dropped:
            shown = ", ".join(
                f"{delta.key} {delta.baseline:.3f} -> {delta.current:.3f}" for delta in dropped
            )
            lines.append(f"challenger's worst cases against the champion: {shown}")
    return lines
