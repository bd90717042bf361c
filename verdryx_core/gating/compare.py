"""The gate, decided once for every face: a run compared with its baseline, the verdict, and
whether the run fails for it and why (docs/statistics.md, docs/cli.md "Exit codes").

`compare` is what the pytest plugin, `verdryx drift`, `verdryx gate` and the Python API call;
each face only maps the `GateOutcome` to its own exit status and words.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final, Literal

from verdryx_core.errors import (
    CLI_FLAGS,
    PYTHON_FLAGS,
    ModelChangeError,
    VerdryxError,
    word_hint,
)
from verdryx_core.gating.comparison import Comparison, Window, compare_to_baseline, window_runs
from verdryx_core.gating.drift import DriftStats, power_words
from verdryx_core.gating.policy import GatePolicy
from verdryx_core.gating.verdict_footing import footing_problem
from verdryx_core.runs import Baseline, EvalRun
from verdryx_core.store import Store

if TYPE_CHECKING:
    # The judge correction's module brings the judge's (its prompts, the model clients): a
    # gate that does not correct for the judge, as most do not, never imports it.
    from verdryx_core.gating.sequential import SequentialVerdict
    from verdryx_core.judge.calibration.correction import Calibration, CorrectedDelta

__all__ = ["VERDICTS", "Exit", "GateOutcome", "GatePolicy", "compare"]

#: Every verdict a gate can reach, as JUnit, `--json` and the summary spell them.
VERDICTS: Final = ("regressed", "on-track", "refused", "not-compared")

#: What the gate does to the run's exit status: nothing, fail it (a regression), or refuse
#: it as a usage error (the comparison could not be made as asked).
Exit = Literal["ok", "regressed", "refused"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GateOutcome:
    """What the gate did against baseline `baseline` (its label, else its id): judged
    (`result`), refused (why), or not gated at all (`not_gated`: why)."""

    baseline: str
    result: Comparison | None = None
    refused: str | None = None
    #: Why the run was not compared (an incomplete run is never gated); None when it was.
    not_gated: str | None = None
    #: The judged cases' corrected pass rates against the baseline's, under
    #: `GatePolicy.judge_correction`.
    corrected: CorrectedDelta | None = None
    #: The sequential gate's verdict, when it settled (`--verdryx-sequential`): the gate's.
    sequential: SequentialVerdict | None = None

    @property
    def drift(self) -> DriftStats | None:
        """The statistics of the comparison; None when nothing was compared."""
        return self.result.stats if self.result is not None else None

    @property
    def regressed(self) -> bool:
        return self.verdict == "regressed"

    @property
    def verdict(self) -> str:
        """One of `VERDICTS`."""
        if self.refused is not None:
            return "refused"
        if self.sequential is not None and self.sequential.verdict is not None:
            return self.sequential.verdict
        drift = self.drift
        if drift is None:
            return "not-compared"
        if self.corrected is not None and self.corrected.regressed:
            return "regressed"
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
        if self.regressed and self.sequential is not None and self.sequential.settled:
            sequential = self.sequential
            return (
                f"quality regressed against baseline {self.baseline}: the sequential gate's "
                f"confidence sequence [{sequential.lower:+.3f}, {sequential.upper:+.3f}] lies "
                f"below zero after {sequential.n} matched case(s)"
            )
        if self.regressed:
            drift = self.drift
            assert drift is not None
            if (
                self.corrected is not None
                and self.corrected.regressed
                and drift.verdict != "regressed"
            ):
                return (
                    f"the judged pass rate, corrected for the judge's errors, regressed against "
                    f"baseline {self.baseline}: delta {self.corrected.delta:+.3f}"
                )
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
    flags: Mapping[str, str] = PYTHON_FLAGS,
    calibration: Calibration | None = None,
) -> GateOutcome:
    """Judge `run` against `baseline`. `history` holds the earlier runs a window pools (none:
    the run alone); `known_keys` are the cases collected before selection, so a case left
    out by `-k` is "not selected", not "removed"; `flags` word a refusal for the face (by
    default for a Python caller: `GatePolicy(allow_model_change=True)`, not a flag);
    `calibration` is the run's labelled judged samples (docs/calibrating-the-judge.md)."""
    gate = GatePolicy() if gate is None else gate
    name = baseline.label or baseline.id
    if not run.complete:
        return GateOutcome(baseline=name, not_gated="the run is incomplete")
    try:
        _check_judge(run, baseline, allow=gate.allow_model_change)
        window = Window(runs=(run,)) if history is None else window_runs(history, run, gate.window)
        result = compare_to_baseline(
            window.runs,
            baseline,
            known_keys=known_keys or None,
            gate=gate.rule,
            threshold=gate.threshold,
            min_effect=gate.min_effect,
            allow_model_change=gate.allow_model_change,
            iterations=gate.iterations,
            seed=gate.seed,
            detect=gate.detect,
            metric=gate.metric,
            two_sample_interval=gate.two_sample_interval,
            fdr=gate.fdr,
        )
    except VerdryxError as exc:
        return refused(name, exc.worded(flags))
    if len(window.runs) > 1 or window.skipped:
        result = replace(
            result,
            pooled=tuple(earlier.id for earlier in window.runs[1:]),
            window_skipped=window.skipped,
        )
    if gate.sequential is not None and gate.sequential.settled:
        # The confidence sequence settled the verdict on the cases it saw; the rest were not
        # needed, so the coverage floor and the fixed-sample power check do not apply
        # (docs/statistics.md, "The sequential gate").
        return GateOutcome(baseline=name, result=result, sequential=gate.sequential)
    outcome = checked(name, result, gate, flags=flags, calibration=calibration)
    if outcome.refused is None and gate.judge_correction:
        return _corrected(name, result, run, baseline, calibration, gate, flags)
    return outcome


def checked(
    name: str,
    result: Comparison,
    gate: GatePolicy,
    *,
    flags: Mapping[str, str] = CLI_FLAGS,
    calibration: Calibration | None = None,
) -> GateOutcome:
    """The outcome of `result` against baseline `name` (its label, else its id): refused
    when it compared nothing or too little, could not see a drop of `gate.detect` under
    `require_power`, or the judge drifted under `require_calibrated_judge`; else judged
    (the judge correction, when asked, is `compare`'s)."""
    # Nothing unmeasured passes: a gate that compared nothing, or too little of the
    # baseline, refuses to call the run on track (docs/statistics.md, "Coverage").
    if result.stats is None:
        words = (
            result.coverage_words()
            if result.expected
            else "the baseline has no case of this run's eval sets"
        )
        return GateOutcome(baseline=name, result=result, refused=f"nothing compared: {words}")
    if below_floor(result.coverage, gate.min_coverage):
        return GateOutcome(
            baseline=name,
            result=result,
            refused=(
                f"too little compared: {result.coverage_words()}, "
                f"{result.coverage:.0%}, not above the {gate.min_coverage:.0%} floor"
                + word_hint(" ({min_coverage} sets it)", flags)
            ),
        )
    report = result.stats
    footing = footing_problem(report)
    if footing is not None:  # no interval, or too few clusters to draw one from
        return GateOutcome(baseline=name, result=result, refused=footing)
    if gate.require_power and report is not None and report.underpowered:
        assert report.mde is not None
        return GateOutcome(
            baseline=name,
            result=result,
            refused=(
                f"underpowered: {power_words(report.mde, gate.detect)}: add cases or "
                "samples, or drop " + word_hint("{require_power}", flags)
            ),
        )
    if gate.require_calibrated_judge and calibration is not None and calibration.drift:
        return GateOutcome(
            baseline=name,
            result=result,
            refused=f"{calibration.drift}; re-label, or fix the judge",
        )
    return GateOutcome(baseline=name, result=result)


def below_floor(coverage: float, floor: float) -> bool:
    """Whether a comparison of this share of the baseline is refused: a floor reached
    exactly is not passed (a floor of 1 asks for every case, and every case passes it)."""
    return coverage < 1.0 and coverage <= floor + 1e-12


def _corrected(
    name: str,
    result: Comparison,
    run: EvalRun,
    baseline: Baseline,
    calibration: Calibration | None,
    gate: GatePolicy,
    flags: Mapping[str, str],
) -> GateOutcome:
    """The gate with the judged cases' pass rates corrected for the judge's errors: refused
    without enough labels, since an uncalibrated correction would be made up."""
    from verdryx_core.judge.calibration.correction import Calibration, corrected_delta

    calibration = calibration or Calibration(human=(), judge=())
    shortfall = calibration.shortfall()
    if shortfall is not None:
        return GateOutcome(
            baseline=name,
            result=result,
            refused=shortfall + word_hint(" (labels: {labels})", flags),
        )
    before = baseline.case_map()
    pairs = [
        (bool(score.passed), bool(before[score.key].passed))
        for score in run.scores
        if score.grader == "llm_judge"
        and score.passed is not None
        and score.key in before
        and before[score.key].passed is not None
    ]
    if not pairs:
        return GateOutcome(
            baseline=name,
            result=result,
            refused="the judge correction found no judged case in both the run and the baseline",
        )
    corrected = corrected_delta(
        [now for now, _ in pairs],
        [then for _, then in pairs],
        calibration,
        min_effect=gate.min_effect,
        seed=gate.seed,
    )
    return GateOutcome(baseline=name, result=result, corrected=corrected)


def _check_judge(run: EvalRun, baseline: Baseline, *, allow: bool) -> None:
    """A baseline graded by a judge, and a run whose judged cases had none: refused like a
    judge change (their scores would all be missing), unless the change is allowed."""
    if allow or not baseline.judge_model or run.judge_model:
        return
    # A case judged inside its `checks` counts as an llm_judge case does.
    unjudged = [score for score in run.scores if score.uses_judge and not score.judged]
    if unjudged:
        raise ModelChangeError(
            f"baseline {baseline.label or baseline.id!r} was judged by "
            f"{baseline.judge_model!r}, and this run's {len(unjudged)} llm_judge case(s) had "
            "no judge (a case with an llm_judge check counts): comparing them would compare "
            "nothing",
            hint=f"pass {{judge}} {baseline.judge_model}, or {{allow_model_change}} to compare "
            "the other cases anyway",
        )
