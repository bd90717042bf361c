"""The service tables in the verdryx store's SQLite file (docs/verification-service.md).

Habits of the store (docs/store.md): one commented schema, a version checked on open, WAL,
one transaction per write, every `sqlite3.Error` a `StoreError` naming the file. The queries
are shared with PostgreSQL (`_sql.py`); the schema, the PRAGMAs and the transactions are here.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Self

from verdryx_core.addons.service._sql import SqlServiceStorage
from verdryx_core.errors import StoreError
from verdryx_core.store import Store

__all__ = ["SqliteServiceStorage"]

_SCHEMA: Final = """
-- One row: the version of the tables below (the store's PRAGMA user_version is not ours).
CREATE TABLE IF NOT EXISTS service_schema (
    version INTEGER NOT NULL
);

-- API keys. Only the sha256 of a key is kept: keys are 256 random bits, so a fast hash is
-- as safe as a slow one and keeps each request's lookup cheap. `prefix` is what `keys list`
-- shows so a person can tell keys apart. A revoked key stays, so its contracts keep an owner.
CREATE TABLE IF NOT EXISTS service_keys (
    key_id      TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    key_sha256  TEXT NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);

-- Contracts, each owned by the key (the tenant) that posted it. `body` is the validated
-- contract's canonical document: runs are verified against exactly what was accepted.
CREATE TABLE IF NOT EXISTS service_contracts (
    contract_id      TEXT PRIMARY KEY,
    key_id           TEXT NOT NULL REFERENCES service_keys (key_id),
    contract_sha256  TEXT NOT NULL,
    task_id          TEXT NOT NULL,
    agent_id         TEXT,
    body             TEXT NOT NULL,
    created_at       TEXT NOT NULL
);

-- Evidence bundles as received, content-addressed by their bundle_hash (kept for re-audit).
-- Only a bundle whose recorded hash matched its content is kept under that hash.
CREATE TABLE IF NOT EXISTS service_bundles (
    bundle_hash  TEXT PRIMARY KEY,
    body         TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

-- The ledger: one row per submitted run, append-only. `seq` orders it (newest = largest)
-- and is the pagination cursor. `document` is the verdict exactly as it was returned.
CREATE TABLE IF NOT EXISTS service_verdicts (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       TEXT NOT NULL UNIQUE,
    contract_id  TEXT NOT NULL REFERENCES service_contracts (contract_id),
    key_id       TEXT NOT NULL REFERENCES service_keys (key_id),
    task_id      TEXT NOT NULL,
    agent_id     TEXT,
    verdict      TEXT NOT NULL CHECK (verdict IN ('PASS', 'FAIL', 'FLAG')),
    summary      TEXT NOT NULL,
    bundle_hash  TEXT,
    document     TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS service_verdicts_by_agent
    ON service_verdicts (key_id, agent_id, seq);
CREATE INDEX IF NOT EXISTS service_verdicts_by_contract
    ON service_verdicts (contract_id, seq);
"""


class SqliteServiceStorage(SqlServiceStorage):
    """The service tables in one SQLite file (the verdryx store's, or any path).

    One connection shared by the server's threads behind one lock: SQLite has one writer per
    file anyway, and the verification work (the checks) runs outside the lock.
    """

    _driver_error = sqlite3.Error

    def __init__(self, connection: sqlite3.Connection, path: str) -> None:
        super().__init__(path)
        self._db = connection

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Self:
        name = os.fspath(path)
        if name != ":memory:" and not Path(name).parent.is_dir():
            raise StoreError(
                f"{name}: cannot open the verification service tables: the directory "
                f"{str(Path(name).parent)!r} does not exist (create it or pass another --db)"
            )
        if name != ":memory:":
            # The service's tables live inside a verdryx store: opening the store first
            # creates it (with its schema marker) or refuses a file that is not one, so the
            # store's own commands keep reading the same file.
            Store.open(Path(name)).close()
        try:
            connection = sqlite3.connect(name, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(
                f"{name}: cannot open the verification service tables: {exc}"
            ) from None
        storage = cls(connection, name)
        try:
            storage._pragmas()
            storage._prepare()
        except BaseException:
            connection.close()
            raise
        return storage

    def _pragmas(self) -> None:
        with self._errors("prepare the verification service tables"):
            # Patience when `verdryx keys` or the store writes the same file; first, since the
            # switch to WAL needs the lock too.
            self._db.execute("PRAGMA busy_timeout = 5000")
            self._db.execute("PRAGMA foreign_keys = ON")
            if self.path != ":memory:":
                # WAL: ledger reads never wait for a run being recorded.
                self._db.execute("PRAGMA journal_mode = WAL")
                # NORMAL is durable across application crashes in WAL mode, and much faster.
                self._db.execute("PRAGMA synchronous = NORMAL")

    def _create_tables(self) -> None:
        for statement in _SCHEMA.split(";"):
            if any(
                line.strip() and not line.strip().startswith("--")
                for line in statement.splitlines()
            ):
                self._db.execute(statement)

    def _lock_ledger(self) -> None:
        # Nothing to add: BEGIN IMMEDIATE holds the whole file's write lock already.
        pass

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, params)

    def _begin(self, *, write: bool) -> None:
        # IMMEDIATE: a writer takes the file's write lock now (waiting up to busy_timeout),
        # not at its first write, where it could only fail. A read is a plain (deferred)
        # transaction: one WAL snapshot for all its statements.
        self._db.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def _commit(self) -> None:
        self._db.execute("COMMIT")

    def _rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def close(self) -> None:
        with self._lock:
            self._db.close()
