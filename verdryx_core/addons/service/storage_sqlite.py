"""The service tables in the verdryx store's SQLite file (docs/verification-service.md).

Habits of the store (docs/store.md): one commented schema, a version checked on open, WAL,
one transaction per write, every `sqlite3.Error` a `StoreError` naming the file. The queries
are shared with PostgreSQL (`_sql.py`), the connection (PRAGMAs, transactions) with the store
(`verdryx_core/store/db/sqlite.py`); the schema and how the file is opened are here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Self

from verdryx_core.addons.service._sql import SqlServiceStorage
from verdryx_core.errors import StoreError
from verdryx_core.store import Store
from verdryx_core.store.db import SqliteDb

__all__ = ["SqliteServiceStorage"]

_TABLES: Final = """
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

    _SCHEMA = _TABLES

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
        return cls._start(SqliteDb.open(name, purpose="the verification service tables"))
