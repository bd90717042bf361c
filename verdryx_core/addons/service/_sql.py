"""The service tables' queries, written once for both backends (docs/verification-service.md).

As the store does (`verdryx_core/store/_sql.py`), and through the same connection layer
(`verdryx_core/store/db`): the SQL here is the common subset of SQLite and PostgreSQL, with
`?` placeholders (the PostgreSQL dialect turns them into `%s`) and `INSERT ... ON CONFLICT DO
NOTHING` for "keep the first". The connection does the transactions, the locks, the error
wrapping and how free text is kept (PostgreSQL's TEXT cannot hold a NUL character, which a
contract's task_id may contain); a backend supplies only its schema and how it opens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, ClassVar, Final, Self, cast

from verdryx_core.addons.service.storage import (
    SERVICE_SCHEMA_VERSION,
    ApiKey,
    LedgerEntry,
    LedgerPage,
    StoredContract,
    now_iso,
)
from verdryx_core.errors import StoreError
from verdryx_core.store.db import Database

__all__ = ["SqlServiceStorage"]

#: The key of the advisory lock under which one server at a time creates the tables; another
#: constant than the store's own migration lock ("verd").
_PREPARE_LOCK: Final = 0x76727376  # "vrsv"

_KEY_COLUMNS: Final = "key_id, name, prefix, created_at, revoked_at"
_VERDICTS: Final = ("PASS", "FLAG", "FAIL")


class SqlServiceStorage:
    """Everything but the schema: see the module docstring.

    One connection per process (`db`), shared by the server's threads behind its lock (a
    connection serves one transaction at a time). Several processes on one database are
    kept apart by the database's own transactions and locks, never by this lock.
    """

    #: The service tables in the dialect's types, as CREATE ... IF NOT EXISTS statements.
    _SCHEMA: ClassVar[str]

    def __init__(self, db: Database) -> None:
        self.db = db
        #: Names the store in messages: a file path, or a URL with its password redacted.
        self.path = db.name

    @classmethod
    def _start(cls, db: Database) -> Self:
        """The storage on a freshly opened connection: tuned, tables made and checked; the
        connection is closed again when that fails."""
        storage = cls(db)
        try:
            with db.errors("prepare the verification service tables"):
                db.tune_for_writing()
            storage._prepare()
        except BaseException:
            db.close()
            raise
        return storage

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def _prepare(self) -> None:
        """Create the tables when missing and check their version, in one transaction."""
        db = self.db
        with db.errors("prepare the verification service tables"), db.transaction():
            db.create_tables(self._SCHEMA, lock_key=_PREPARE_LOCK)
            rows = db.rows("SELECT version FROM service_schema")
            if not rows:
                db.execute(
                    "INSERT INTO service_schema (version) VALUES (?)", (SERVICE_SCHEMA_VERSION,)
                )
            elif rows[0][0] > SERVICE_SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: the verification service tables have schema version "
                    f"{rows[0][0]}, newer than this verdryx understands "
                    f"({SERVICE_SCHEMA_VERSION}); upgrade verdryx"
                )

    def _lock_ledger(self) -> None:
        """Inside `record_run`'s transaction, before its inserts: hold every other writer of
        the ledger until commit, so `seq` order is commit order (a reader paging with a
        cursor never finds an older verdict appear behind it)."""
        self.db.lock_table("service_verdicts")

    # -- keys --------------------------------------------------------------------------------

    def create_key(self, *, key_id: str, name: str, key_sha256: str, prefix: str) -> ApiKey:
        key = ApiKey(key_id=key_id, name=name, prefix=prefix, created_at=now_iso())
        with self.db.errors("create an API key"), self.db.transaction():
            self.db.execute(
                "INSERT INTO service_keys (key_id, name, key_sha256, prefix, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (key.key_id, key.name, key_sha256, key.prefix, key.created_at),
            )
        return key

    def list_keys(self) -> list[ApiKey]:
        with self.db.errors("list API keys"):
            rows = self.db.rows(
                f"SELECT {_KEY_COLUMNS} FROM service_keys ORDER BY created_at, key_id"
            )
        return [_key(row) for row in rows]

    def revoke_key(self, key_id: str) -> ApiKey | None:
        """Revoke (idempotently); None when no key has this id."""
        with self.db.errors("revoke an API key"), self.db.transaction():
            self.db.execute(
                "UPDATE service_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                (now_iso(), key_id),
            )
            rows = self.db.rows(
                f"SELECT {_KEY_COLUMNS} FROM service_keys WHERE key_id = ?", (key_id,)
            )
        return _key(rows[0]) if rows else None

    def active_key(self, key_sha256: str) -> ApiKey | None:
        with self.db.errors("look up an API key"):
            rows = self.db.rows(
                f"SELECT {_KEY_COLUMNS} FROM service_keys "
                "WHERE key_sha256 = ? AND revoked_at IS NULL",
                (key_sha256,),
            )
        return _key(rows[0]) if rows else None

    # -- contracts ---------------------------------------------------------------------------

    def put_contract(
        self, *, contract_id: str, key_id: str, contract_sha256: str, document: Mapping[str, Any]
    ) -> bool:
        """Store the contract; False when this key already stored it (same id, same content).

        Two servers storing the same contract at once: one inserts, the other waits for it
        to commit and then finds the id taken (the primary key decides, not a prior read)."""
        with self.db.errors("store a contract"), self.db.transaction():
            cursor = self.db.execute(
                "INSERT INTO service_contracts "
                "(contract_id, key_id, contract_sha256, task_id, agent_id, body, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (contract_id) DO NOTHING",
                (
                    contract_id,
                    key_id,
                    contract_sha256,
                    self.db.text_in(document["task_id"]),
                    self.db.text_in(document.get("agent_id")),
                    json.dumps(document, ensure_ascii=False, sort_keys=True),
                    now_iso(),
                ),
            )
            return bool(cursor.rowcount == 1)

    def get_contract(self, contract_id: str, key_id: str) -> StoredContract | None:
        """The contract when this key owns it; None otherwise (absent and foreign look alike)."""
        with self.db.errors("read a contract"):
            rows = self.db.rows(
                "SELECT contract_id, key_id, contract_sha256, body, created_at "
                "FROM service_contracts WHERE contract_id = ? AND key_id = ?",
                (contract_id, key_id),
            )
        if not rows:
            return None
        row = rows[0]
        return StoredContract(
            contract_id=row[0],
            key_id=row[1],
            contract_sha256=row[2],
            document=json.loads(row[3]),
            created_at=row[4],
        )

    # -- runs and the ledger -----------------------------------------------------------------

    def record_run(
        self, *, contract: StoredContract, document: Mapping[str, Any], bundle_text: str | None
    ) -> None:
        """Append one verdict document (with its `run_id` and `received_at`) and keep its
        bundle, in one transaction."""
        with (
            self.db.errors("record a verdict"),
            self.db.lock,
            self.db.pipelined(),
            self.db.transaction(),
        ):
            self._lock_ledger()
            if bundle_text is not None and document.get("bundle_hash"):
                # Content-addressed: the same bundle submitted twice (or by two servers at
                # once) is kept once; the primary key decides.
                self.db.execute(
                    "INSERT INTO service_bundles (bundle_hash, body, created_at) "
                    "VALUES (?, ?, ?) ON CONFLICT (bundle_hash) DO NOTHING",
                    (document["bundle_hash"], bundle_text, document["received_at"]),
                )
            # No conflict clause: a run_id is drawn at random per submission, and one taken
            # twice must fail loudly rather than lose a verdict.
            self.db.execute(
                "INSERT INTO service_verdicts (run_id, contract_id, key_id, task_id, agent_id, "
                "verdict, summary, bundle_hash, document, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    document["run_id"],
                    contract.contract_id,
                    contract.key_id,
                    self.db.text_in(document["task_id"]),
                    self.db.text_in(document.get("agent_id")),
                    document["verdict"],
                    self.db.text_in(document.get("summary") or ""),
                    document.get("bundle_hash"),
                    json.dumps(document, ensure_ascii=False, sort_keys=True),
                    document["received_at"],
                ),
            )

    def latest_verdict(self, contract_id: str, key_id: str) -> dict[str, Any] | None:
        with self.db.errors("read a verdict"):
            rows = self.db.rows(
                "SELECT document FROM service_verdicts WHERE contract_id = ? AND key_id = ? "
                "ORDER BY seq DESC LIMIT 1",
                (contract_id, key_id),
            )
        return json.loads(rows[0][0]) if rows else None

    def ledger(
        self, key_id: str, *, agent_id: str | None, limit: int, before: int | None
    ) -> LedgerPage:
        """Newest first, `limit` entries older than the cursor `before`; the counts and the
        page are read from one snapshot, so they agree even while other servers write."""
        where = "key_id = ?"
        params: list[Any] = [key_id]
        if agent_id is not None:
            where += " AND agent_id = ?"
            params.append(self.db.text_in(agent_id))
        page_where = where + (" AND seq < ?" if before is not None else "")
        page_params = [*params, *([before] if before is not None else []), limit + 1]
        with self.db.errors("read the ledger"), self.db.transaction(write=False):
            counted = self.db.rows(
                f"SELECT verdict, COUNT(*) FROM service_verdicts WHERE {where} GROUP BY verdict",
                params,
            )
            rows = self.db.rows(
                "SELECT seq, run_id, contract_id, task_id, agent_id, verdict, summary, "
                f"bundle_hash, created_at FROM service_verdicts WHERE {page_where} "
                "ORDER BY seq DESC LIMIT ?",
                page_params,
            )
        counts = dict.fromkeys(_VERDICTS, 0)
        counts.update({verdict: int(n) for verdict, n in counted})
        # task_id and summary are NOT NULL columns: their text is never None.
        entries = tuple(
            LedgerEntry(
                seq=int(row[0]),
                run_id=row[1],
                contract_id=row[2],
                task_id=cast(str, self.db.text_out(row[3])),
                agent_id=self.db.text_out(row[4]),
                verdict=row[5],
                summary=cast(str, self.db.text_out(row[6])),
                bundle_hash=row[7],
                received_at=row[8],
            )
            for row in rows[:limit]
        )
        more = len(rows) > limit
        return LedgerPage(
            entries=entries, counts=counts, next_before=entries[-1].seq if more else None
        )

    def verdict_seq(self, key_id: str, run_id: str) -> int | None:
        """Scoped to the key: another tenant's run_id resolves to nothing, as a made-up one."""
        with self.db.errors("read the ledger"):
            rows = self.db.rows(
                "SELECT seq FROM service_verdicts WHERE run_id = ? AND key_id = ?",
                (run_id, key_id),
            )
        return int(rows[0][0]) if rows else None


def _key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(key_id=row[0], name=row[1], prefix=row[2], created_at=row[3], revoked_at=row[4])
