"""What a face tells the conclusion of a run: the policy it is concluded by, what the run was
asked to measure, and the one rule for what each case's score means for the run (its
standing: docs/outcomes.md, "Who decides the exit status").

Nothing here imports the statistics (numpy): the pytest plugin decides each item's standing
as it runs, and a session that names no baseline never loads them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from verdryx_core.gating.baselines import excuse
from verdryx_core.runs import BaselineCase, Score
from verdryx_core.settings_table import default_of, setting

if TYPE_CHECKING:
    from verdryx_core.gating.policy import GatePolicy

__all__ = [
    "FAIL_ON",
    "MissingBaseline",
    "RunPolicy",
    "Selection",
    "Standing",
    "edited",
    "standing",
]

#: What fails a run with a baseline (`--verdryx-fail-on`, `verdryx eval --fail-on`).
FAIL_ON: Final = setting("verdryx_fail_on").choices

#: What one case's score means for the run:
#: `passed`; `failed` (it fails the run); `excused` (below its bar, as in the baseline);
#: `dropped` (below its bar, reported, the verdict decides); `unmeasured` (counted apart).
Standing = Literal["passed", "failed", "excused", "dropped", "unmeasured"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunPolicy:
    """How a finished run is concluded, passed whole from a face to `conclude`."""

    #: How the run is judged against its baseline (None: `GatePolicy()`'s defaults).
    gate: GatePolicy | None = None
    #: `verdict`: with a baseline, a case below its bar fails the run only when it is
    #: `required` or new since the baseline, and the verdict decides the rest; `cases`:
    #: every case below its bar fails it, as without a baseline.
    fail_on: str = default_of("verdryx_fail_on")
    #: Save the run as a baseline under this label (None: save none).
    save_baseline: str | None = default_of("verdryx_save_baseline")
    #: The runs a saved baseline pools per case: this one and the `baseline_runs - 1` newest
    #: earlier comparable ones (docs/statistics.md, "Baselines from several runs").
    baseline_runs: int = default_of("verdryx_baseline_runs")
    #: Save a baseline of a run that measured a selection of the cases anyway.
    allow_partial_baseline: bool = default_of("verdryx_allow_partial_baseline")
    #: Files of human labels the run's judge is checked against (docs/calibrating-the-judge.md).
    labels: tuple[Path, ...] = field(default=())

    @property
    def judge_correction(self) -> bool:
        return self.gate is not None and self.gate.judge_correction

    @property
    def require_calibrated_judge(self) -> bool:
        return self.gate is not None and self.gate.require_calibrated_judge


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """Which cases the run was asked to measure, as the face knows it."""

    #: Every case collected before selection (`-k`, `--deselect`, node ids), by key, so a
    #: case left out on purpose is "not selected", not "missing"; None: the run's own cases.
    known_keys: Collection[str] | None = None
    #: Why the run measured a selection of the cases (file arguments, `-k`, `--lf`, a shard),
    #: in words; None: every case. A narrowed run is stored as partial, is compared on its
    #: own eval sets only, and is no baseline (docs/statistics.md, "Coverage").
    narrowed: str | None = None
    #: Why the run is not a whole measurement (an error, a stop); None: it is, as far as
    #: the face knows (an incomplete run says so itself: `EvalRun.complete`).
    incomplete: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingBaseline:
    """A baseline the face was told to gate against that does not exist: refused, unless
    this run saves that label (a first baseline)."""

    label: str
    #: Why, in words (the unknown label and the known ones).
    why: str
    #: Where the label was named, for the words (`verdryx_baseline in the ini`).
    named_in: str


def edited(base: BaselineCase, score: Score) -> bool:
    """Whether the case changed since the baseline (both fingerprints known and different):
    its old score is of another measurement."""
    return bool(base.fingerprint and score.fingerprint and base.fingerprint != score.fingerprint)


def standing(score: Score, base: BaselineCase | None, *, fail_on: str, gated: bool) -> Standing:
    """What `score` means for the run, `base` its baseline case (None: none), `gated`
    whether a baseline is named. The one rule both faces and every item apply."""
    if score.value is None:
        # A case that must never fail cannot escape by not being measured.
        return "failed" if score.required else "unmeasured"
    if score.passed is not False:
        return "passed"
    if score.required:
        return "failed"
    if base is not None and excuse(base, score) is not None:
        return "excused"
    if not gated or fail_on == "cases":
        return "failed"
    if base is None:
        # No baseline score: a case new since the baseline cannot have dropped, and a rename
        # must not turn its failure into a report.
        return "failed"
    return "dropped"
