"""The service tables in the verdryx store's PostgreSQL database: several `verdryx serve`
processes, on one host or many, sharing keys, contracts, bundles and one ledger
(docs/verification-service.md).

Same queries as SQLite (`_sql.py`), through the store's PostgreSQL connection
(`verdryx_core/store/db/postgres.py`: tables created under an advisory lock as servers start
at once, the ledger's writers queued by a table lock so `seq` order is commit order, pipeline
mode, a dropped connection reopened on the next call, the URL's password kept out of every
message). What is the service's own is here: the schema in PostgreSQL types, and opening.
"""

from __future__ import annotations

from typing import Final, Self

from verdryx_core.addons.service._sql import SqlServiceStorage
from verdryx_core.store import Store
from verdryx_core.store.db import PostgresDb
from verdryx_core.store.target import StoreUrl

__all__ = ["PostgresServiceStorage"]

# As the SQLite schema (storage_sqlite.py), in PostgreSQL types. A tenant's free text
# (task_id, agent_id, summary) is BYTEA holding UTF-8: TEXT cannot hold a NUL character, and
# a contract's task_id may contain one. Bodies and documents are JSON text, which escapes
# NUL, so they stay TEXT. `seq` is an identity column: the ledger's order and its cursor.
_TABLES: Final = """
CREATE TABLE IF NOT EXISTS service_schema (
    version      INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS service_keys (
    key_id       TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    key_sha256   TEXT NOT NULL UNIQUE,
    prefix       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    revoked_at   TEXT
);

CREATE TABLE IF NOT EXISTS service_contracts (
    contract_id      TEXT PRIMARY KEY,
    key_id           TEXT NOT NULL REFERENCES service_keys (key_id),
    contract_sha256  TEXT NOT NULL,
    task_id          BYTEA NOT NULL,
    agent_id         BYTEA,
    body             TEXT NOT NULL,
    created_at       TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS service_bundles (
    bundle_hash  TEXT PRIMARY KEY,
    body         TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS service_verdicts (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id       TEXT NOT NULL UNIQUE,
    contract_id  TEXT NOT NULL REFERENCES service_contracts (contract_id),
    key_id       TEXT NOT NULL REFERENCES service_keys (key_id),
    task_id      BYTEA NOT NULL,
    agent_id     BYTEA,
    verdict      TEXT NOT NULL CHECK (verdict IN ('PASS', 'FAIL', 'FLAG')),
    summary      BYTEA NOT NULL,
    bundle_hash  TEXT,
    document     TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS service_verdicts_by_agent
    ON service_verdicts (key_id, agent_id, seq);
CREATE INDEX IF NOT EXISTS service_verdicts_by_contract
    ON service_verdicts (contract_id, seq);
"""


class PostgresServiceStorage(SqlServiceStorage):
    """The service tables in one PostgreSQL database (the first schema of its search_path,
    where the store's own tables are)."""

    _SCHEMA = _TABLES

    @classmethod
    def open(cls, target: StoreUrl | str) -> Self:
        url = target if isinstance(target, StoreUrl) else StoreUrl(target)
        # The store first: it names the missing driver, refuses a schema holding another
        # application's tables, and creates (or migrates) the store the tables join.
        Store.open(url).close()
        # reconnect: a server outlives a lost connection (the database restarted, a proxy
        # dropped it): the request that saw it fail gets a 503, the next one works again.
        db = PostgresDb.open(url, purpose="the verification service tables", reconnect=True)
        return cls._start(db)
