"""The verification service's tables: API keys, contracts, the bundles and the verdict ledger.

They live in the verdryx store's SQLite file beside the store's own tables, under their own
`service_` names and their own schema version (in `service_schema`, never the store's
`user_version`), so the service and the store evolve apart. `ServiceStorage` is the
interface the app uses; `SqliteServiceStorage` is its one implementation today, written so
another backend is one more class with the same methods.

Habits of the store (docs/report-and-history.md): one commented schema, a version checked on
open, WAL, one transaction per write, every `sqlite3.Error` a `StoreError` naming the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, Self

from verdryx_core.errors import StoreError

__all__ = [
    "SERVICE_SCHEMA_VERSION",
    "ApiKey",
    "LedgerEntry",
    "LedgerPage",
    "ServiceStorage",
    "SqliteServiceStorage",
    "StoredContract",
    "now_iso",
]

SERVICE_SCHEMA_VERSION: Final = 1

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


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKey:
    key_id: str
    name: str
    prefix: str
    created_at: str
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key_id": self.key_id,
            "name": self.name,
            "prefix": self.prefix,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredContract:
    contract_id: str
    key_id: str
    contract_sha256: str
    document: dict[str, Any]
    created_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerEntry:
    """One verdict in the ledger, as `GET /v1/verdicts` lists it."""

    seq: int
    run_id: str
    contract_id: str
    task_id: str
    agent_id: str | None
    verdict: str
    summary: str
    bundle_hash: str | None
    received_at: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "contract_id": self.contract_id,
            "task_id": self.task_id,
            "agent_id": self.agent_id,
            "verdict": self.verdict,
            "summary": self.summary,
            "bundle_hash": self.bundle_hash,
            "received_at": self.received_at,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerPage:
    entries: tuple[LedgerEntry, ...]
    #: PASS / FLAG / FAIL over every verdict the query matches, not just this page.
    counts: dict[str, int]
    #: The `seq` to continue before, or None when this page is the last.
    next_before: int | None


class ServiceStorage(Protocol):
    """What the service keeps. Every method is one transaction; all are thread-safe."""

    def create_key(self, *, key_id: str, name: str, key_sha256: str, prefix: str) -> ApiKey: ...

    def list_keys(self) -> list[ApiKey]: ...

    def revoke_key(self, key_id: str) -> ApiKey | None: ...

    def active_key(self, key_sha256: str) -> ApiKey | None: ...

    def put_contract(
        self, *, contract_id: str, key_id: str, contract_sha256: str, document: Mapping[str, Any]
    ) -> bool: ...

    def get_contract(self, contract_id: str, key_id: str) -> StoredContract | None: ...

    def record_run(
        self, *, contract: StoredContract, document: Mapping[str, Any], bundle_text: str | None
    ) -> None: ...

    def latest_verdict(self, contract_id: str, key_id: str) -> dict[str, Any] | None: ...

    def ledger(
        self, key_id: str, *, agent_id: str | None, limit: int, before: int | None
    ) -> LedgerPage: ...

    def close(self) -> None: ...


class SqliteServiceStorage:
    """The service tables in one SQLite file (the verdryx store's, or any path).

    One connection shared by the server's threads behind one lock: SQLite has one writer per
    file anyway, and the verification work (the checks) runs outside the lock.
    """

    def __init__(self, connection: sqlite3.Connection, path: str) -> None:
        self._db = connection
        self.path = path
        self._lock = threading.RLock()

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
            from verdryx_core.store import Store

            Store.open(Path(name)).close()
        try:
            connection = sqlite3.connect(name, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(
                f"{name}: cannot open the verification service tables: {exc}"
            ) from None
        storage = cls(connection, name)
        try:
            storage._prepare()
        except BaseException:
            connection.close()
            raise
        return storage

    def _prepare(self) -> None:
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
            with self._transaction() as db:
                for statement in _SCHEMA.split(";"):
                    if any(
                        line.strip() and not line.strip().startswith("--")
                        for line in statement.splitlines()
                    ):
                        db.execute(statement)
                row = db.execute("SELECT version FROM service_schema").fetchone()
                if row is None:
                    db.execute(
                        "INSERT INTO service_schema (version) VALUES (?)", (SERVICE_SCHEMA_VERSION,)
                    )
                elif row[0] > SERVICE_SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path}: the verification service tables have schema version "
                        f"{row[0]}, newer than this verdryx understands "
                        f"({SERVICE_SCHEMA_VERSION}); upgrade verdryx"
                    )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot {action}: {exc}") from None

    # -- keys -------------------------------------------------------------------------------

    def create_key(self, *, key_id: str, name: str, key_sha256: str, prefix: str) -> ApiKey:
        key = ApiKey(key_id=key_id, name=name, prefix=prefix, created_at=now_iso())
        with self._errors("create an API key"), self._transaction() as db:
            db.execute(
                "INSERT INTO service_keys (key_id, name, key_sha256, prefix, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (key.key_id, key.name, key_sha256, key.prefix, key.created_at),
            )
        return key

    def list_keys(self) -> list[ApiKey]:
        with self._errors("list API keys"), self._lock:
            rows = self._db.execute(
                "SELECT key_id, name, prefix, created_at, revoked_at FROM service_keys "
                "ORDER BY created_at, key_id"
            ).fetchall()
        return [_key(row) for row in rows]

    def revoke_key(self, key_id: str) -> ApiKey | None:
        """Revoke (idempotently); None when no key has this id."""
        with self._errors("revoke an API key"), self._transaction() as db:
            db.execute(
                "UPDATE service_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                (now_iso(), key_id),
            )
            row = db.execute(
                "SELECT key_id, name, prefix, created_at, revoked_at FROM service_keys "
                "WHERE key_id = ?",
                (key_id,),
            ).fetchone()
        return None if row is None else _key(row)

    def active_key(self, key_sha256: str) -> ApiKey | None:
        with self._errors("look up an API key"), self._lock:
            row = self._db.execute(
                "SELECT key_id, name, prefix, created_at, revoked_at FROM service_keys "
                "WHERE key_sha256 = ? AND revoked_at IS NULL",
                (key_sha256,),
            ).fetchone()
        return None if row is None else _key(row)

    # -- contracts --------------------------------------------------------------------------

    def put_contract(
        self, *, contract_id: str, key_id: str, contract_sha256: str, document: Mapping[str, Any]
    ) -> bool:
        """Store the contract; False when this key already stored it (same id, same content)."""
        with self._errors("store a contract"), self._transaction() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO service_contracts "
                "(contract_id, key_id, contract_sha256, task_id, agent_id, body, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    contract_id,
                    key_id,
                    contract_sha256,
                    document["task_id"],
                    document.get("agent_id"),
                    json.dumps(document, ensure_ascii=False, sort_keys=True),
                    now_iso(),
                ),
            )
            return cursor.rowcount == 1

    def get_contract(self, contract_id: str, key_id: str) -> StoredContract | None:
        """The contract when this key owns it; None otherwise (absent and foreign look alike)."""
        with self._errors("read a contract"), self._lock:
            row = self._db.execute(
                "SELECT contract_id, key_id, contract_sha256, body, created_at "
                "FROM service_contracts WHERE contract_id = ? AND key_id = ?",
                (contract_id, key_id),
            ).fetchone()
        if row is None:
            return None
        return StoredContract(
            contract_id=row[0],
            key_id=row[1],
            contract_sha256=row[2],
            document=json.loads(row[3]),
            created_at=row[4],
        )

    # -- runs and the ledger ----------------------------------------------------------------

    def record_run(
        self, *, contract: StoredContract, document: Mapping[str, Any], bundle_text: str | None
    ) -> None:
        """Append one verdict document (with its `run_id` and `received_at`) and keep its
        bundle, in one transaction."""
        with self._errors("record a verdict"), self._transaction() as db:
            if bundle_text is not None and document.get("bundle_hash"):
                db.execute(
                    "INSERT OR IGNORE INTO service_bundles (bundle_hash, body, created_at) "
                    "VALUES (?, ?, ?)",
                    (document["bundle_hash"], bundle_text, document["received_at"]),
                )
            db.execute(
                "INSERT INTO service_verdicts (run_id, contract_id, key_id, task_id, agent_id, "
                "verdict, summary, bundle_hash, document, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    document["run_id"],
                    contract.contract_id,
                    contract.key_id,
                    document["task_id"],
                    document.get("agent_id"),
                    document["verdict"],
                    document.get("summary") or "",
                    document.get("bundle_hash"),
                    json.dumps(document, ensure_ascii=False, sort_keys=True),
                    document["received_at"],
                ),
            )

    def latest_verdict(self, contract_id: str, key_id: str) -> dict[str, Any] | None:
        with self._errors("read a verdict"), self._lock:
            row = self._db.execute(
                "SELECT document FROM service_verdicts WHERE contract_id = ? AND key_id = ? "
                "ORDER BY seq DESC LIMIT 1",
                (contract_id, key_id),
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def ledger(
        self, key_id: str, *, agent_id: str | None, limit: int, before: int | None
    ) -> LedgerPage:
        where = "key_id = ?"
        params: list[Any] = [key_id]
        if agent_id is not None:
            where += " AND agent_id = ?"
            params.append(agent_id)
        with self._errors("read the ledger"), self._lock:
            counts = dict.fromkeys(("PASS", "FLAG", "FAIL"), 0)
            for verdict, n in self._db.execute(
                f"SELECT verdict, COUNT(*) FROM service_verdicts WHERE {where} GROUP BY verdict",
                params,
            ):
                counts[verdict] = n
            page_where = where + (" AND seq < ?" if before is not None else "")
            page_params = [*params, *([before] if before is not None else []), limit + 1]
            rows = self._db.execute(
                "SELECT seq, run_id, contract_id, task_id, agent_id, verdict, summary, "
                f"bundle_hash, created_at FROM service_verdicts WHERE {page_where} "
                "ORDER BY seq DESC LIMIT ?",
                page_params,
            ).fetchall()
        entries = tuple(
            LedgerEntry(
                seq=row[0],
                run_id=row[1],
                contract_id=row[2],
                task_id=row[3],
                agent_id=row[4],
                verdict=row[5],
                summary=row[6],
                bundle_hash=row[7],
                received_at=row[8],
            )
            for row in rows[:limit]
        )
        more = len(rows) > limit
        return LedgerPage(
            entries=entries, counts=counts, next_before=entries[-1].seq if more else None
        )


def _key(row: tuple[Any, ...]) -> ApiKey:
    return ApiKey(key_id=row[0], name=row[1], prefix=row[2], created_at=row[3], revoked_at=row[4])
