"""The one shape every grader has: `grade(case, output, context) -> Grade`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from verdryx_core.cases import EvalCase
from verdryx_core.runs import CheckResult

__all__ = ["Grade", "GradeContext", "Grader"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Grade:
    """A grader's answer. `value` None means unmeasured, and `unmeasured` then says why."""

    value: float | None
    unmeasured: str | None = None
    #: Why this value: a judge's reason, a contract's evidence; shown in failure reports.
    reason: str | None = None
    tokens: int = 0
    #: Spend on grading itself (judge, verdict service), kept apart from model spend.
    cost_usd: float = 0.0
    #: A multi-check case's per-check results (see `verdryx_core.graders.checks`).
    checks: tuple[CheckResult, ...] = ()
    #: What the grader keeps of this case for its own tables (`Score.notes`).
    notes: Mapping[str, str] | None = None
    #: Why what the agent produced could not be graded; the value is then 0.0
    #: (`output_failure`, `Score.failed_by_output`).
    failed_by_output: str | None = None

    @classmethod
    def unmeasured_because(cls, reason: str, *, tokens: int = 0, cost_usd: float = 0.0) -> Grade:
        """Not measured for a reason the agent does not control (no judge configured, no
        isolation, a service that failed): counted apart, never a score."""
        return cls(value=None, unmeasured=reason, tokens=tokens, cost_usd=cost_usd)

    @classmethod
    def output_failure(cls, reason: str, *, tokens: int = 0, cost_usd: float = 0.0) -> Grade:
        """What the agent produced (its output, its calls, the workspace it left) could not be
        graded: a 0, never unmeasured, so nothing the agent writes decides what is measured
        (docs/outcomes.md, "What counts as unmeasured")."""
        return cls(
            value=0.0,
            reason=reason,
            failed_by_output=reason,
            tokens=tokens,
            cost_usd=cost_usd,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class GradeContext:
    """Where a case comes from and which run grades it (the typed and contract graders need it)."""

    eval_set_id: str
    eval_set_path: Path | None = None
    run_id: str = ""
    #: The sample index under `--verdryx-repeat`: a paid grader caches each sample apart.
    repeat: int = 0
    #: Seconds one call may take (`--verdryx-timeout`): custom graders are held to it.
    timeout_s: float | None = None
    #: The case's workspace as the agent left it (a per-case, per-repeat temporary folder),
    #: or None when the case has none: the execution and contract graders read it.
    workspace: Path | None = None
    #: A folder beside the workspace (never inside it) where graders leave what they
    #: collected, such as evidence bundles; kept and removed with the workspace.
    evidence: Path | None = None


@runtime_checkable
class Grader(Protocol):
    kind: ClassVar[str]

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade: ...
