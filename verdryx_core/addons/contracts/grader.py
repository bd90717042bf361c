"""`contract`: did the agent do the work it promised? PASS 1.0, FAIL 0.0, FLAG unmeasured.

The case's `contract` field holds the promise (task_id defaults to the case id). Its paths
are checked under the base path: the case's `output` when given (relative to the eval set
file's directory), else that directory itself. Free and deterministic: no model is called.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, ClassVar, final

from verdryx_core.addons.contracts.evidence import verify_and_collect
from verdryx_core.addons.contracts.model import FAIL, FLAG, PASS, Limits
from verdryx_core.addons.contracts.validate import contract_from_data
from verdryx_core.addons.errors import ContractError
from verdryx_core.cases import EvalCase
from verdryx_core.errors import UsageError
from verdryx_core.graders.base import Grade, GradeContext

__all__ = ["ContractGrader", "contract_base_path"]


def contract_base_path(case: EvalCase, output: Any, context: GradeContext) -> Path:
    """`output` (a path, relative to the eval set file's directory) else that directory."""
    directory = context.eval_set_path.parent if context.eval_set_path is not None else Path.cwd()
    if isinstance(output, str) and output.strip():
        return directory / output
    return directory


@final
class ContractGrader:
    kind: ClassVar[str] = "contract"

    def __init__(self, *, limits: Limits | None = None) -> None:
        self.limits = limits
        #: One `history.save_verdicts` row per graded case, for whoever stores them.
        self.records: list[dict[str, Any]] = []
        self._lock = threading.Lock()

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
        try:
            verdict, _bundle = verify_and_collect(contract, base, limits=self.limits)
        except UsageError as exc:
            # No workspace to look at: nothing was checkable, which is a FLAG, never a 0.0.
            return Grade.unmeasured_because(f"{FLAG}: {exc}")
        with self._lock:
            self.records.append(verdict.to_record(run_id=context.run_id or None))
        if verdict.verdict == PASS:
            return Grade(value=1.0, reason=verdict.reason)
        if verdict.verdict == FAIL:
            return Grade(value=0.0, reason=verdict.reason)
        return Grade.unmeasured_because(verdict.reason)
