"""The gate, decided once for every face: a run compared with its baseline, the verdict, and
whether the run fails for it and why (docs/statistics.md, docs/cli.md "Exit codes").

`compare` is what the pytest plugin, `verdryx drift`, `verdryx gate` and the Python API call;
each face only maps the `GateOutcome` to its own exit status and words.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from verdryx_core.errors import CLI_FLAGS, VerdryxError
from verdryx_core.gating.comparison import GateResult, compare_to_baseline, select_window
from verdryx_core.gating.drift import DEFAULT_ITERATIONS, DEFAULT_THRESHOLD, DriftReport
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import Store

__all__ = ["VERDICTS", "Exit", "GateOutcome", "GatePolicy", "compare"]

#: Every verdict a gate can reach, as JUnit, `--json` and the summary spell them.
VERDICTS: Final = ("regressed", "on-track", "refused", "not-compared")

#: What the gate does to the run's exit status: nothing, fail it (a regression), or refuse
#: it as a usage error (the comparison could not be made as asked).
Exit = Literal["ok", "regressed", "refused"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GatePolicy:
    """How a run is judged against its baseline (docs/options.md, `--verdryx-gate` etc.)."""

    #: `significant` (the interval of the paired difference lies below zero) or `threshold`.
    rule: str = "significant"
    threshold: float = DEFAULT_THRESHOLD
    min_effect: float = 0.0
    #: Pool the run with this many runs in all (the current one and earlier complete ones).
    window: int = 1
    allow_model_change: bool = False
    iterations: int = DEFAULT_ITERATIONS
    seed: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class GateOutcome:
    """What the gate did against baseline `baseline` (its label, else its id): judged
    (`result`), refused (why), or not gated at all (`not_gated`: why)."""

    baseline: str
    result: GateResult | None = None
    refused: str | None = None
    #: Why the run was not compared (an incomplete run is never gated); None when it was.
    not_gated: str | None = None

    @property
    def drift(self) -> DriftReport | None:
        """The statistics of the comparison; None when nothing was compared."""
        return self.result.report if self.result is not None else None

    @property
    def regressed(self) -> bool:
        return self.verdict == "regressed"

    @property
    def verdict(self) -> str:
        """One of `VERDICTS`."""
        if self.refused is not None:
            return "refused"
        drift = self.drift
        if drift is None:
            return "not-compared"
        return drift.verdict

    @property
    def exit(self) -> Exit:
        if self.refused is not None:
            return "refused"
        return "regressed" if self.regressed else "ok"

    @property
    def exit_reason(self) -> str | None:
        """Why this outcome fails the run, in one sentence; None when it does not."""
        if self.refused is not None:
            return f"the gate was refused against baseline {self.baseline}: {self.refused}"
        if self.regressed:
            drift = self.drift
            assert drift is not None
            return (
                f"quality regressed against baseline {self.baseline}: delta "
                f"{drift.delta:+.3f} (gate: {drift.gate})"
            )
        return None


def refused(baseline: str, why: str) -> GateOutcome:
    """A gate that could not be judged as asked (an unknown baseline, a model change...)."""
    return GateOutcome(baseline=baseline, refused=why)


def compare(
    run: EvalRun,
    baseline: Baseline,
    *,
    gate: GatePolicy | None = None,
    history: Store | None = None,
    known_keys: Collection[str] | None = None,
    flags: Mapping[str, str] = CLI_FLAGS,
) -> GateOutcome:
    """Judge `run` against `baseline`. `history` holds the earlier runs a window pools (none:
    the run alone); `known_keys` are the cases collected before selection, so a case left
    out by `-k` is "not selected", not "removed"; `flags` word a refusal for the face."""
    gate = GatePolicy() if gate is None else gate
    name = baseline.label or baseline.id
    if not run.complete:
        return GateOutcome(baseline=name, not_gated="the run is incomplete")
    try:
        window = [run] if history is None else select_window(history, run, gate.window)
        result = compare_to_baseline(
            window,
            baseline,
            known_keys=known_keys or None,
            gate=gate.rule,
            threshold=gate.threshold,
            min_effect=gate.min_effect,
            allow_model_change=gate.allow_model_change,
            iterations=gate.iterations,
            seed=gate.seed,
        )
    except VerdryxError as exc:
        return refused(name, exc.worded(flags))
    return GateOutcome(baseline=name, result=result)
