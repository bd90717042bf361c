"""The service tables' queries, written once for both backends (docs/verification-service.md).

As the store does (`verdryx_core/store/_sql.py`): the SQL here is the common subset of SQLite
and PostgreSQL, with `?` placeholders (the PostgreSQL backend turns them into `%s`) and
`INSERT ... ON CONFLICT DO NOTHING` for "keep the first". A backend supplies the connection,
its schema, the transaction statements, its driver's error class, and how free text is kept
(PostgreSQL's TEXT cannot hold a NUL character, which a contract's task_id may contain).
"""

from __future__ import annotations

import abc
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import TracebackType
from typing import Any, ClassVar, Final, Self

from verdryx_core.addons.service.storage import (
    SERVICE_SCHEMA_VERSION,
    ApiKey,
    LedgerEntry,
    LedgerPage,
    StoredContract,
    now_iso,
)
from verdryx_core.errors import StoreError
from verdryx_core.store.target import redact

__all__ = ["SqlServiceStorage"]

_KEY_COLUMNS: Final = "key_id, name, prefix, created_at, revoked_at"
_VERDICTS: Final = ("PASS", "FLAG", "FAIL")


class SqlServiceStorage(abc.ABC):
    """Everything but the connection: see the module docstring.

    One connection per process, shared by the server's threads behind one lock (a connection
    serves one transaction at a time). Several processes on one database are kept apart by
    the database's own transactions and locks, never by this lock.
    """

    #: The driver's error base class; every one becomes a StoreError naming the store.
    _driver_error: ClassVar[type[Exception]]

    def __init__(self, path: str) -> None:
        #: Names the store in messages: a file path, or a URL with its password redacted.
        self.path = path
        self._lock = threading.RLock()
        self._in_transaction = False

    # -- what a backend supplies -------------------------------------------------------------

    @abc.abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement (`?` placeholders); returns a cursor."""

    @abc.abstractmethod
    def _begin(self, *, write: bool) -> None:
        """Start a transaction: a writing one, or a read of one consistent snapshot."""

    @abc.abstractmethod
    def _commit(self) -> None: ...

    @abc.abstractmethod
    def _rollback(self) -> None:
        """Roll back if a transaction is still open (a driver may have ended it already)."""

    @abc.abstractmethod
    def _create_tables(self) -> None:
        """Create the service tables that are missing, inside the preparing transaction."""

    @abc.abstractmethod
    def _lock_ledger(self) -> None:
        """Inside `record_run`'s transaction, before its inserts: hold every other writer of
        the ledger until commit, so `seq` order is commit order (a reader paging with a
        cursor never finds an older verdict appear behind it)."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def _pipelined(self) -> AbstractContextManager[Any]:
        """Around a write whose statements need no answer before the commit: the backend may
        send them in one round trip (PostgreSQL's pipeline mode)."""
        return nullcontext()

    def _text_in(self, text: str | None) -> Any:
        """A tenant's free text (task_id, agent_id, summary) as the backend keeps it."""
        return text

    def _text_out(self, value: Any) -> Any:
        return value

    # -- transactions and errors -------------------------------------------------------------

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
    def _transaction(self, *, write: bool = True) -> Iterator[None]:
        with self._lock:
            self._begin(write=write)
            self._in_transaction = True
            try:
                yield
                self._commit()
            except BaseException:
                self._rollback()
                raise
            finally:
                self._in_transaction = False

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except self._driver_error as exc:
            # A driver may put a DETAIL line or the URL in its message: first line, redacted.
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise StoreError(f"{self.path}: cannot {action}: {redact(first)}") from None

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return list(self._execute(sql, params).fetchall())

    def _prepare(self) -> None:
        """Create the tables when missing and check their version, in one transaction."""
        with self._errors("prepare the verification service tables"), self._transaction():
            self._create_tables()
            rows = self._rows("SELECT version FROM service_schema")
            if not rows:
                self._execute(
                    "INSERT INTO service_schema (version) VALUES (?)", (SERVICE_SCHEMA_VERSION,)
                )
            elif rows[0][0] > SERVICE_SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: the verification service tables have schema version "
                    f"{rows[0][0]}, newer than this verdryx understands "
                    f"({SERVICE_SCHEMA_VERSION}); upgrade verdryx"
                )

    # -- keys --------------------------------------------------------------------------------

    def create_key(self, *, key_id: str, name: str, key_sha256: str, prefix: str) -> ApiKey:
        key = ApiKey(key_id=key_id, name=name, prefix=prefix, created_at=now_iso())
        with self._errors("create an API key"), self._transaction():
            self._execute(
                "INSERT INTO service_keys (key_id, name, key_sha256, prefix, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (key.key_id, key.name, key_sha256, key.prefix, key.created_at),
            )
        return key

    def list_keys(self) -> list[ApiKey]:
        with self._errors("list API keys"):
            rows = self._rows(
                f"SELECT {_KEY_COLUMNS} FROM service_keys ORDER BY created_at, key_id"
            )
        return [_key(row) for row in rows]

    def revoke_key(self, key_id: str) -> ApiKey | None:
        """Revoke (idempotently); None when no key has this id."""
        with self._errors("revoke an API key"), self._transaction():
            self._execute(
                "UPDATE service_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                (now_iso(), key_id),
            )
            rows = self._rows(
                f"SELECT {_KEY_COLUMNS} FROM service_keys WHERE key_id = ?", (key_id,)
            )
        return _key(rows[0]) if rows else None

    def active_key(self, key_sha256: str) -> ApiKey | None:
        with self._errors("look up an API key"):
            rows = self._rows(
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
        with self._errors("store a contract"), self._transaction():
            cursor = self._execute(
                "INSERT INTO service_contracts "
                "(contract_id, key_id, contract_sha256, task_id, agent_id, body, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (contract_id) DO NOTHING",
                (
                    contract_id,
                    key_id,
                    contract_sha256,
                    self._text_in(document["task_id"]),
                    self._text_in(document.get("agent_id")),
                    json.dumps(document, ensure_ascii=False, sort_keys=True),
                    now_iso(),
                ),
            )
            return bool(cursor.rowcount == 1)

    def get_contract(self, contract_id: str, key_id: str) -> StoredContract | None:
        """The contract when this key owns it; None otherwise (absent and foreign look alike)."""
        with self._errors("read a contract"):
            rows = self._rows(
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
        with self._errors("record a verdict"), self._lock, self._pipelined(), self._transaction():
            self._lock_ledger()
            if bundle_text is not None and document.get("bundle_hash"):
                # Content-addressed: the same bundle submitted twice (or by two servers at
                # once) is kept once; the primary key decides.
                self._execute(
                    "INSERT INTO service_bundles (bundle_hash, body, created_at) "
                    "VALUES (?, ?, ?) ON CONFLICT (bundle_hash) DO NOTHING",
                    (document["bundle_hash"], bundle_text, document["received_at"]),
                )
            # No conflict clause: a run_id is drawn at random per submission, and one taken
            # twice must fail loudly rather than lose a verdict.
            self._execute(
                "INSERT INTO service_verdicts (run_id, contract_id, key_id, task_id, agent_id, "
                "verdict, summary, bundle_hash, document, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    document["run_id"],
                    contract.contract_id,
                    contract.key_id,
                    self._text_in(document["task_id"]),
                    self._text_in(document.get("agent_id")),
                    document["verdict"],
                    self._text_in(document.get("summary") or ""),
                    document.get("bundle_hash"),
                    json.dumps(document, ensure_ascii=False, sort_keys=True),
                    document["received_at"],
                ),
            )

    def latest_verdict(self, contract_id: str, key_id: str) -> dict[str, Any] | None:
        with self._errors("read a verdict"):
            rows = self._rows(
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
            params.append(self._text_in(agent_id))
        page_where = where + (" AND seq < ?" if before is not None else "")
        page_params = [*params, *([before] if before is not None else []), limit + 1]
        with self._errors("read the ledger"), self._transaction(write=False):
            counted = self._rows(
                f"SELECT verdict, COUNT(*) FROM service_verdicts WHERE {where} GROUP BY verdict",
                params,
            )
            rows = self._rows(
                "SELECT seq, run_id, contract_id, task_id, agent_id, verdict, summary, "
                f"bundle_hash, created_at FROM service_verdicts WHERE {page_where} "
                "ORDER BY seq DESC LIMIT ?",
                page_params,
            )
        counts = dict.fromkeys(_VERDICTS, 0)
        counts.update({verdict: int(n) for verdict, n in counted})
        entries = tuple(
            LedgerEntry(
                seq=int(row[0]),
                run_id=row[1],
                contract_id=row[2],
                task_id=self._text_out(row[3]),
                agent_id=self._text_out(row[4]),
                verdict=row[5],
                summary=self._text_out(row[6]),
                bundle_hash=row[7],
                received_at=row[8],
            )
            for row in rows[:limit]
        )
        more = len(rows) > limit
        return LedgerPage(
            entries=entries, counts=counts, next_before=entries[-1].seq if more else None
        )


def _key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(key_id=row[0], name=row[1], prefix=row[2], created_at=row[3], revoked_at=row[4])
