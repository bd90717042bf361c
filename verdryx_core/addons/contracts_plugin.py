"""The contracts add-on's hooks (verdryx_core.hooks): `verdryx verify`, its verdicts' table
in the store (for `verdryx merge`) and an agent's verdicts (for `verdryx runs --agent`).
The `contract` grader plugs in by its own entry point (`verdryx.graders`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from verdryx_core.hooks import AddonCommand, AgentHistory, hookimpl

if TYPE_CHECKING:
    from verdryx_core.store import Store
    from verdryx_core.store.merge import AddonRows

__all__ = ["verdryx_agent_history", "verdryx_cli_commands", "verdryx_store_tables"]


@hookimpl
def verdryx_cli_commands() -> Sequence[AddonCommand]:
    return (AddonCommand("verify", "verdryx_core.addons.contracts.verify_command"),)


@hookimpl
def verdryx_store_tables() -> Sequence[AddonRows]:
    from verdryx_core.addons.contracts.history import VERDICT_ROWS

    return (VERDICT_ROWS,)


@hookimpl
def verdryx_agent_history(store: Store, agent_id: str) -> AgentHistory:
    from verdryx_core.addons.contracts.history import verdicts
    from verdryx_core.cli.commands._table import render_table, short_id, when

    rows = verdicts(store, agent_id)
    if not rows:
        return AgentHistory(
            "contract_verdicts", rows, (f"no contract verdicts stored for agent {agent_id!r}",)
        )
    table = [
        [
            when(item["created_at"]),
            item["task_id"],
            item["verdict"],
            short_id(item["run_id"] or "") or "-",
            item["reason"],
        ]
        for item in rows
    ]
    lines = (
        f"contract verdicts of agent {agent_id}:",
        *render_table(["WHEN (UTC)", "TASK", "VERDICT", "RUN", "REASON"], table),
    )
    return AgentHistory("contract_verdicts", rows, lines)
