"""A challenger gated against its champion: two agents run on the same cases in one session,
compared by the gate's own paired rule (docs/targets.md, "A challenger").

The champion's run of the cases the challenger answered is the baseline, in memory, and the
challenger's run is the run judged against it: `compare`, the same code a stored baseline
goes through, so coverage, the interval, power and the per-case drop tests mean what they
mean there. Only the agent under test differs, on purpose; every other difference (model,
judge) is refused as against a baseline. The window is the challenger's run alone: earlier
runs of either agent never pool in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from verdryx_core.errors import CLI_FLAGS
from verdryx_core.gating.compare import GateOutcome, compare, refused
from verdryx_core.gating.policy import GatePolicy
from verdryx_core.runs import Baseline, EvalRun

__all__ = ["challenger_name", "champion_baseline", "gate_challenger"]


def challenger_name(run: EvalRun) -> str:
    """The agent a run measured, for the challenger's words (`agents:v2`)."""
    return run.target or "the model alone"


def champion_baseline(champion: EvalRun, challenger: EvalRun) -> Baseline:
    """The champion's scores of the cases the challenger was given, as a baseline whose agent
    under test is the challenger's (the one difference the comparison is for). Raises
    ValueError when the champion measured none of them."""
    keys = {score.key for score in challenger.scores}
    paired = dataclasses.replace(
        champion, scores=tuple(score for score in champion.scores if score.key in keys)
    )
    baseline = Baseline.from_run(paired, id=champion.id, label=challenger_name(champion))
    return dataclasses.replace(
        baseline,
        target=challenger.target,
        target_version=challenger.target_version,
        set_targets=challenger.set_targets,
    )


def gate_challenger(
    champion: EvalRun,
    challenger: EvalRun,
    *,
    gate: GatePolicy | None = None,
    flags: Mapping[str, str] = CLI_FLAGS,
) -> GateOutcome:
    """The challenger's run judged against the champion's, case by case; `GateOutcome.baseline`
    names the champion. Not gated when either run is incomplete (an errored case has no
    pair); refused when the champion measured none of the cases."""
    gate = GatePolicy() if gate is None else gate
    name = challenger_name(champion)
    if not champion.complete:
        return GateOutcome(baseline=name, not_gated="the target's run is incomplete")
    if not challenger.complete:
        return GateOutcome(baseline=name, not_gated="the challenger's run is incomplete")
    try:
        baseline = champion_baseline(champion, challenger)
    except ValueError as exc:
        return refused(name, f"nothing compared: {exc}")
    # One measurement of each, side by side: no window, and the judge correction (which
    # rests on a baseline's own labelled judge) is the champion gate's alone.
    paired = dataclasses.replace(gate, window=1, judge_correction=False)
    return compare(challenger, baseline, gate=paired, history=None, flags=flags)
