"""The service tables in the verdryx store's PostgreSQL database: several `verdryx serve`
processes, on one host or many, sharing keys, contracts, bundles and one ledger
(docs/verification-service.md).

Same queries as SQLite (`_sql.py`); what differs is here: the schema in PostgreSQL types,
tables created under an advisory lock (servers starting at once), the ledger's writers queued
by a table lock so `seq` order is commit order, a dropped connection reopened on the next
call, and the URL's password kept out of every message. The driver is the optional extra
`verdryx[postgres]`, imported only when a URL is used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self

from verdryx_core.addons.service._sql import SqlServiceStorage
from verdryx_core.errors import StoreError
from verdryx_core.store import Store
from verdryx_core.store.target import StoreUrl, redact

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresServiceStorage"]

_INSTALL_HINT: Final = "pip install 'verdryx[postgres]'"

#: The key of the advisory lock under which one server at a time creates the tables; another
#: constant than the store's own migration lock ("verd").
_PREPARE_LOCK: Final = 0x76727376  # "vrsv"

# As the SQLite schema (storage_sqlite.py), in PostgreSQL types. A tenant's free text
# (task_id, agent_id, summary) is BYTEA holding UTF-8: TEXT cannot hold a NUL character, and
# a contract's task_id may contain one. Bodies and documents are JSON text, which escapes
# NUL, so they stay TEXT. `seq` is an identity column: the ledger's order and its cursor.
_SCHEMA: Final = """
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


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        return None
    return psycopg


class PostgresServiceStorage(SqlServiceStorage):
    """The service tables in one PostgreSQL database (the first schema of its search_path,
    where the store's own tables are)."""

    _driver_error: ClassVar[type[Exception]] = Exception  # replaced by psycopg.Error on open

    def __init__(self, connection: psycopg.Connection[Any], url: StoreUrl) -> None:
        super().__init__(str(url))
        self._url = url
        self._conn = connection
        self._sql: dict[str, str] = {}

    @classmethod
    def open(cls, target: StoreUrl | str) -> Self:
        url = target if isinstance(target, StoreUrl) else StoreUrl(target)
        # The store first: it names the missing driver, refuses a schema holding another
        # application's tables, and creates (or migrates) the store the tables join.
        Store.open(url).close()
        psycopg = _driver()
        if psycopg is None:  # pragma: no cover - Store.open has refused already
            raise StoreError(f"{url}: the service tables need psycopg: {_INSTALL_HINT}")
        PostgresServiceStorage._driver_error = psycopg.Error
        storage = cls(cls._connect(url), url)
        try:
            storage._prepare()
        except BaseException:
            storage._conn.close()
            raise
        return storage

    @staticmethod
    def _connect(url: StoreUrl) -> psycopg.Connection[Any]:
        import psycopg

        try:
            # Autocommit: transactions are the explicit BEGIN/COMMIT of `_transaction`; a
            # lookup outside one holds no snapshot open between requests.
            return psycopg.connect(url.url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise StoreError(
                f"{url}: cannot open the verification service tables: {redact(first)}"
            ) from None

    def _live(self) -> psycopg.Connection[Any]:
        """The connection, reopened when the last one was lost (the server restarted, a
        proxy dropped it): the request that saw it fail got a StoreError (503), the next
        one gets a working connection again."""
        if self._conn.closed:
            self._conn = self._connect(self._url)
        return self._conn

    def _create_tables(self) -> None:
        # Two servers starting on a new database at once: one creates the tables, the other
        # waits here and finds them made (CREATE ... IF NOT EXISTS alone races in PostgreSQL).
        self._execute("SELECT pg_advisory_xact_lock(?)", (_PREPARE_LOCK,))
        self._conn.execute(_SCHEMA)

    def _lock_ledger(self) -> None:
        # EXCLUSIVE: other writers of the ledger wait until this transaction ends; readers
        # (ACCESS SHARE) do not. So a verdict's seq is drawn and committed before the next
        # writer draws one: the ledger grows in seq order, which is what cursors rely on.
        self._execute("LOCK TABLE service_verdicts IN EXCLUSIVE MODE")

    @contextmanager
    def _pipelined(self) -> Iterator[None]:
        # One round trip for BEGIN, the lock, the inserts and COMMIT. A statement that fails
        # surfaces only at the pipeline's end, after the COMMIT was queued (and skipped): the
        # transaction is still open, aborted, and is rolled back here.
        try:
            with self._live().pipeline():
                yield
        except self._driver_error:
            self._rollback()
            raise

    def _text_in(self, text: str | None) -> Any:
        return None if text is None else text.encode("utf-8")

    def _text_out(self, value: Any) -> Any:
        return None if value is None else bytes(value).decode("utf-8")

    def _translate(self, sql: str) -> str:
        # The shared queries use `?` and never a literal `?` or `%`.
        translated = self._sql.get(sql)
        if translated is None:
            translated = self._sql[sql] = sql.replace("?", "%s")
        return translated

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        # Never reconnect inside a transaction: its earlier statements died with the
        # connection, and the error must reach the caller.
        connection = self._conn if self._in_transaction else self._live()
        return connection.execute(self._translate(sql), params)

    def _begin(self, *, write: bool) -> None:
        # A read is one snapshot (REPEATABLE READ): the ledger's counts and its page agree
        # even while other servers append.
        self._live().execute(
            "BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        )

    def _commit(self) -> None:
        self._conn.execute("COMMIT")

    def _rollback(self) -> None:
        if self._conn.closed:
            return
        # A broken connection: the server rolled back already; keep the first error.
        with contextlib.suppress(self._driver_error):
            self._conn.execute("ROLLBACK")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
