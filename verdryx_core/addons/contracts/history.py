"""Contract verdicts of an eval run as store rows: an agent's record over time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verdryx_core.cases import EvalCase
from verdryx_core.runs import EvalRun

__all__ = ["promise_of", "verdict_rows"]

#: A contract score is 1.0 (PASS), 0.0 (FAIL) or unmeasured (FLAG).
_VERDICTS: dict[bool | None, str] = {True: "PASS", False: "FAIL", None: "FLAG"}


def promise_of(case: EvalCase) -> dict[str, str | None]:
    """The task and agent a contract case names for itself (either may be absent)."""
    contract = case.contract or {}
    return {"task_id": contract.get("task_id"), "agent_id": contract.get("agent_id")}


def verdict_rows(
    run: EvalRun, promises: Mapping[str, Mapping[str, str | None]]
) -> list[dict[str, Any]]:
    """One row per contract case of `run` for `Store.save_contract_verdicts`. `promises` maps
    a case key to `promise_of(case)`: the run's agent wins, else the contract's own."""
    rows = []
    for score in run.scores:
        if score.grader != "contract":
            continue
        promise = promises.get(score.key, {})
        verdict = _VERDICTS[None if score.value is None else score.value >= 1.0]
        rows.append(
            {
                "agent_id": run.agent_id or promise.get("agent_id"),
                "task_id": promise.get("task_id") or score.case_id,
                "verdict": verdict,
                "reason": score.reason or score.unmeasured or "",
                "run_id": run.id,
            }
        )
    return rows
