"""What one evaluation is asked to do, whichever face asked: `EvalSettings`, and the one rule
for the judge in effect.

Both faces build an `EvalSettings` from their own flags (`verdryx eval --repeat 3`,
`pytest --verdryx-repeat=3`) and hand it to the pipeline; nothing below this line knows
which face it serves. Messages that point the user at a setting use the face's `flags`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verdryx_core.defaults import DEFAULT_MIN_SCORE
from verdryx_core.errors import PYTHON_FLAGS
from verdryx_core.settings_table import default_of

if TYPE_CHECKING:
    from verdryx_core.targets import Target

__all__ = ["DEFAULT_MIN_SCORE", "EvalSettings", "judge_in_effect"]


def judge_in_effect(judge: str | None) -> str | None:
    """The judge model that grades llm_judge cases: the one named (`stub` names the stub
    judge), else none, whatever the model. Without a judge those cases are unmeasured: a
    score nobody measured (the stub judge's constant) must never look measured."""
    return judge or None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalSettings:
    """Everything that decides how cases are evaluated (not where the run goes afterwards)."""

    model: str = default_of("verdryx_model")
    judge: str | None = default_of("verdryx_judge")
    #: Response cache mode: on, off or replay (`verdryx_core.llm.cache`).
    cache: str = default_of("verdryx_cache")
    concurrency: int = default_of("verdryx_concurrency")
    #: Samples per case whose output comes from a model; the score is their mean.
    repeat: int = default_of("verdryx_repeat")
    #: A price file overriding the built-in price book, already resolved by the face.
    prices: Path | None = None
    #: Options of graders that plug in, by grader name (the typed grader's service URL, key
    #: file and template); a grader named here is built at start (`Evaluation.check_graders`).
    grader_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Seconds one call may take: target, model, judge (docs/targets.md, "Timeouts").
    call_timeout: float = default_of("verdryx_timeout")
    #: The agent under test, `module:callable` (an eval set's own `target` wins).
    target: str | None = default_of("verdryx_target")
    #: The run's target when a face built it in code (the pytest hook), not by name:
    #: `target` is then its name in messages and cache keys.
    built_target: Target | None = None
    #: Target results are cached only under a declared version.
    target_version: str | None = default_of("verdryx_target_version")
    #: A second agent, `module:callable`, called on every case a target answers, in place of
    #: that target, and gated against it (docs/targets.md, "A challenger").
    challenger: str | None = default_of("verdryx_challenger")
    #: The challenger's results are cached only under its own declared version.
    challenger_version: str | None = default_of("verdryx_challenger_version")
    #: Who plays a case's simulated user given a persona: `stub` (offline) or a model id
    #: (docs/scenarios.md, "Simulated users").
    user_model: str = default_of("verdryx_user_model")
    #: `auto`: a target call's OpenTelemetry spans give its result the tool calls and usage
    #: it did not return, when opentelemetry-sdk is installed; `off`: never read
    #: (docs/targets.md, "Frameworks").
    otel: str = default_of("verdryx_otel")
    #: Where `module:callable` targets are imported from first (the rootdir).
    target_root: Path | None = None
    #: The pass bar of cases without their own `min_score` (None: each grader's own bar).
    min_score: float | None = default_of("verdryx_min_score")
    agent_id: str | None = default_of("verdryx_agent_id")
    #: Run exec cases without kernel isolation where the machine offers none
    #: (docs/workspaces-and-execution.md); otherwise they are refused there.
    unsafe_exec: bool = default_of("verdryx_unsafe_exec")
    #: The work folder's total size of an exec case, MiB (docs/workspaces-and-execution.md).
    exec_disk_mib: int = default_of("verdryx_exec_disk")
    #: Send the model and judge calls as Message Batches before scoring (docs/sharding.md).
    batch: bool = default_of("verdryx_batch")
    #: Leave every case's workspace folder in place after grading (the scores name them).
    keep_workspaces: bool = default_of("verdryx_keep_workspaces")
    #: The model answers are expected from the response cache (an xdist worker grading from
    #: the controller's prefetched calls): a model SDK is imported by the first call, if one
    #: is made, not when the adapter is built (docs/models-and-judges.md, "Concurrency and
    #: progress").
    answers_prefetched: bool = False
    #: How the face spells each setting, for messages that point at one
    #: (`verdryx_core.errors.word_hint`).
    flags: Mapping[str, str] = field(default_factory=lambda: PYTHON_FLAGS)

    @property
    def judge_model(self) -> str | None:
        return judge_in_effect(self.judge)
