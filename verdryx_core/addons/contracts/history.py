"""Contract verdicts kept in the store: an agent's record over time.

The verdict rows are the contracts add-on's own table, `contract_verdicts`, kept in the
verdryx store beside the store's tables (as the verification service keeps its `service_`
tables) through the store's connection (`Store.db`, verdryx_core/store/db). The table is
created the first time a verdict is saved; stores made before it moved here (schema
version 1 and 2 created it with the store) keep theirs, with the same name and columns, so
their rows read on. Reading a store without the table finds no verdicts and creates
nothing, so the read-only commands stay read-only (docs/contracts.md).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from verdryx_core.runs import EvalRun, iso_utc
from verdryx_core.store.base import Store
from verdryx_core.store.db import marks

__all__ = ["VERDICT_ROWS", "save_verdicts", "verdict_rows", "verdicts"]

#: A row's keys, in the table's column order.
_KEYS: Final = ("agent_id", "task_id", "verdict", "reason", "bundle_hash", "run_id", "created_at")

#: The key of the advisory lock under which one process at a time creates the table; other
#: constants than the store's ("verd") and the service's ("vrsv").
_CREATE_LOCK: Final = 0x76726374  # "vrct"

# The table exactly as the store used to create it in each dialect, so a store that has it
# from then and one that gets it now cannot differ.
_TABLE: Final[dict[str, str]] = {
    "sqlite": """
-- Contract verdicts per agent, so an agent's record can be read over time.
CREATE TABLE IF NOT EXISTS contract_verdicts (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id        TEXT,
    task_id         TEXT NOT NULL,
    verdict         TEXT NOT NULL,          -- PASS, FLAG or FAIL
    reason          TEXT NOT NULL,
    bundle_hash     TEXT,
    run_id          TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS contract_verdicts_by_agent ON contract_verdicts (agent_id, created_at);
""",
    "postgresql": """
CREATE TABLE IF NOT EXISTS contract_verdicts (
    id              BIGSERIAL PRIMARY KEY,
    agent_id        TEXT,
    task_id         TEXT NOT NULL,
    verdict         TEXT NOT NULL,
    reason          TEXT NOT NULL,
    bundle_hash     TEXT,
    run_id          TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS contract_verdicts_by_agent ON contract_verdicts (agent_id, created_at);
""",
}

#: A contract score is 1.0 (PASS), 0.0 (FAIL) or unmeasured (FLAG); a FLAG the agent caused
#: scores 0.0 for the gate, and is still a FLAG here (`Score.failed_by_output`).
_VERDICTS: dict[bool | None, str] = {True: "PASS", False: "FAIL", None: "FLAG"}


def verdict_rows(run: EvalRun) -> list[dict[str, Any]]:
    """One row per contract case of `run` for `save_verdicts`: the run's agent wins, else the
    contract's own (`Score.notes`, kept by the grader); the task is the contract's, else the
    case id."""
    rows = []
    for score in run.scores:
        if score.grader != "contract":
            continue
        notes = score.notes or {}
        value = score.value
        verdict = _VERDICTS[None if value is None or score.failed_by_output else value >= 1.0]
        rows.append(
            {
                "agent_id": run.agent_id or notes.get("agent_id"),
                "task_id": notes.get("task_id") or score.case_id,
                "verdict": verdict,
                "reason": score.reason or score.unmeasured or "",
                "run_id": run.id,
            }
        )
    return rows


def save_verdicts(store: Store, rows: Iterable[Mapping[str, Any]]) -> None:
    """Store verdict rows (keys: agent_id, task_id, verdict, reason, and optionally
    bundle_hash, run_id, created_at) in one transaction, which joins the caller's
    (`store.batch()`); creates the table when the store has none yet."""
    now = iso_utc(datetime.now(UTC))
    values = [
        (
            item.get("agent_id") or None,
            item["task_id"],
            item["verdict"],
            item["reason"],
            item.get("bundle_hash"),
            item.get("run_id"),
            item.get("created_at") or now,
        )
        for item in rows
    ]
    if not values:
        return
    db = store.db
    with db.errors("save contract verdicts"), db.transaction():
        if not db.has_table("contract_verdicts"):
            db.create_tables(_TABLE[db.dialect], lock_key=_CREATE_LOCK)
        db.executemany(
            f"INSERT INTO contract_verdicts ({', '.join(_KEYS)}) VALUES ({marks(len(_KEYS))})",
            values,
        )


def verdicts(store: Store, agent_id: str | None = None) -> list[dict[str, Any]]:
    """Stored verdicts newest first, optionally of one agent; none when the store has never
    kept one (and then nothing is created)."""
    sql = f"SELECT {', '.join(_KEYS)} FROM contract_verdicts"
    params: tuple[Any, ...] = ()
    if agent_id is not None:
        sql += " WHERE agent_id = ?"
        params = (agent_id,)
    sql += " ORDER BY created_at DESC, id DESC"
    db = store.db
    with db.errors("read contract verdicts"), db.lock:
        if not db.has_table("contract_verdicts"):
            return []
        rows = db.rows(sql, params)
    return [dict(zip(_KEYS, row, strict=True)) for row in rows]


class _VerdictRows:
    """The verdict rows as `verdryx merge` copies them (verdryx_core.store.merge.AddonRows)."""

    name = "verdicts"

    def rows(self, store: Store) -> list[dict[str, Any]]:
        return verdicts(store)

    def identity(self, row: Mapping[str, Any]) -> tuple[Any, ...]:
        """The same task of the same agent in the same run at the same moment is one
        verdict; its content is the rest."""
        return (row["agent_id"], row["task_id"], row["run_id"], row["created_at"])

    def describe(self, identity: Hashable) -> str:
        parts: tuple[Any, ...] = tuple(identity)  # type: ignore[arg-type]
        agent, task, run_id, created = parts
        return f"contract verdict {task} of agent {agent or '-'} (run {run_id or '-'}, {created})"

    def save(self, store: Store, rows: Iterable[Mapping[str, Any]]) -> None:
        save_verdicts(store, rows)


VERDICT_ROWS: Final = _VerdictRows()
