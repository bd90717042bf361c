"""`contract`: did the agent do the work it promised? PASS 1.0, FAIL 0.0, FLAG unmeasured,
unless the agent caused it.

A FLAG because a check could not run on what the agent left (a link out of the workspace, an
unreadable or binary file, a locked database, a pattern that runs out of time on a file), or
because the folder the output names is not there, is the output's failure: 0, the contract's
verdict still FLAG. A FLAG the contract itself decides (a claim it declares unverifiable,
nothing to check) stays unmeasured (docs/outcomes.md, "What counts as unmeasured").

The case's `contract` field holds the promise (task_id defaults to the case id). Its paths
are checked under the base path: the case's workspace as the agent left it, when the case has
one (then the evidence bundle of what the checks saw is kept beside it); else the case's
`output` (relative to the eval set file's directory), else that directory itself. Free and
deterministic: no model is called (docs/workspaces-and-execution.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Final, final

from verdryx_core.addons.contracts.evidence import check_workspace, verify_and_collect, write_bundle
from verdryx_core.addons.contracts.history import save_verdicts, verdict_rows
from verdryx_core.addons.contracts.model import (
    ERROR,
    FAIL,
    FLAG,
    PASS,
    Contract,
    ContractVerdict,
    Limits,
)
from verdryx_core.addons.contracts.validate import contract_from_data
from verdryx_core.addons.errors import ContractError
from verdryx_core.cases import EvalCase
from verdryx_core.errors import UsageError, VerdryxError
from verdryx_core.graders.base import Grade, GradeContext
from verdryx_core.graders.plugins import CaseProblem
from verdryx_core.runs import EvalRun
from verdryx_core.store import Store

__all__ = ["ContractGrader", "contract_base_path"]

_SAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")


def contract_base_path(case: EvalCase, output: Any, context: GradeContext) -> Path:
    """The case's workspace as the agent left it; else `output` (a path, relative to the
    eval set file's directory), else that directory."""
    if context.workspace is not None:
        return context.workspace
    directory = context.eval_set_path.parent if context.eval_set_path is not None else Path.cwd()
    if isinstance(output, str) and output.strip():
        return directory / output
    return directory


@final
class ContractGrader:
    """Plugs in by entry point (verdryx_core.graders.plugins): it reads its output from the
    world, owns the `contract` field, checks it at load, and keeps each verdict in the
    contracts' own table once the run is stored."""

    kind: ClassVar[str] = "contract"
    model_free: ClassVar[bool] = True
    #: A contract checks a workspace, not the one text output the checks of a case share:
    #: it is a check only of a case that has a workspace.
    in_checks: ClassVar[bool] = False
    in_workspace_checks: ClassVar[bool] = True
    fields: ClassVar[tuple[str, ...]] = ("contract",)

    def __init__(self, *, limits: Limits | None = None) -> None:
        self.limits = limits

    @staticmethod
    def check_case(case: Mapping[str, Any]) -> None:
        """A bad contract is a collection error now, not an error at grading time."""
        if "contract" not in case:
            raise CaseProblem("contract", "grader 'contract' requires the field 'contract'")
        try:
            contract_from_data(case["contract"], source="contract", default_task_id=case["id"])
        except VerdryxError as exc:
            raise CaseProblem("contract", str(exc)) from None

    @staticmethod
    def after_save(store: Store, run: EvalRun) -> None:
        """The run's contract verdicts, in the contracts' table (an agent's record)."""
        save_verdicts(store, verdict_rows(run))

    def grade(self, case: EvalCase, output: Any, context: GradeContext) -> Grade:
        if case.contract is None:
            raise ContractError(
                f"case {case.id!r}", "grader 'contract' requires the field 'contract'"
            )
        contract = contract_from_data(
            case.contract,
            source=f"{context.eval_set_path or context.eval_set_id}: case {case.id!r}: contract",
            default_task_id=case.id,
        )
        base = contract_base_path(case, output, context)
        # What the verdict row keeps of the case: its own task and agent ids.
        notes = {
            name: str(value)
            for name in ("task_id", "agent_id")
            if (value := case.contract.get(name)) is not None
        }
        try:
            verdict = self._verdict(contract, base, context)
        except UsageError as exc:
            # No folder where the output (or the workspace the agent left) should be: nothing
            # was checkable, a FLAG, and the agent's doing, so it scores 0.
            return replace(Grade.output_failure(f"{FLAG}: {exc}"), notes=notes or None)
        if verdict.verdict == PASS:
            grade = Grade(value=1.0, reason=verdict.reason)
        elif verdict.verdict == FAIL:
            grade = Grade(value=0.0, reason=verdict.reason)
        elif any(result.status == ERROR for result in verdict.check_results):
            # A check could not run on what the agent left: never unmeasured.
            grade = Grade.output_failure(verdict.reason)
        else:
            grade = Grade.unmeasured_because(verdict.reason)
        return replace(grade, notes=notes or None)

    def _verdict(self, contract: Contract, base: Path, context: GradeContext) -> ContractVerdict:
        if context.evidence is None:
            return check_workspace(contract, base, limits=self.limits)
        # A workspace case: what the checks saw is kept beside the workspace, one bundle per
        # contract, re-checkable with `verdryx verify --bundle` once the workspace is gone.
        verdict, bundle = verify_and_collect(contract, base, limits=self.limits)
        name = _SAFE.sub("_", contract.task_id)[:60] or "contract"
        write_bundle(bundle, context.evidence / f"{name}-{contract.sha256()[:12]}.evidence.json")
        return verdict
