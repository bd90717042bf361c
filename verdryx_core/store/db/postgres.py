"""The PostgreSQL dialect of `Database`, through the `psycopg` driver.

What differs from SQLite is here: `%s` placeholders, free text kept as BYTEA (TEXT cannot
hold a NUL character), COPY for plain inserts, advisory and table locks between processes,
snapshot reads, pipeline mode, an optional reconnect after a lost connection, and the URL's
password kept out of every message. The driver is the optional extra `verdryx[postgres]`,
imported only when a URL is opened.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, Self

from verdryx_core.errors import StoreError
from verdryx_core.store.db.database import Database, error_text
from verdryx_core.store.target import StoreUrl

if TYPE_CHECKING:
    import psycopg

__all__ = ["INSTALL_HINT", "PostgresDb"]

INSTALL_HINT: Final = "pip install 'verdryx[postgres]'"


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        return None
    return psycopg


class PostgresDb(Database):
    """One `psycopg` connection in autocommit mode: transactions are the explicit BEGIN and
    COMMIT of `Database.transaction`, so a lookup outside one holds no snapshot open."""

    dialect = "postgresql"

    def __init__(
        self,
        connection: psycopg.Connection[Any],
        url: StoreUrl,
        *,
        purpose: str,
        reconnect: bool,
        driver_error: type[Exception],
    ) -> None:
        super().__init__(str(url), driver_error, url.redact)
        self._url = url
        self._purpose = purpose
        self._reconnect = reconnect
        self._conn = connection
        self._sql: dict[str, str] = {}

    @classmethod
    def open(cls, url: StoreUrl, *, purpose: str, reconnect: bool = False) -> Self:
        """Connect to `url`; `purpose` says in an error what was being opened. With
        `reconnect`, a connection found lost is opened again before the next statement
        outside a transaction (a long-running server outlives a database restart)."""
        refusal = url.refusal()
        if refusal is not None:  # a URL of another scheme: no driver is asked to read it
            raise StoreError(refusal)
        psycopg = _driver()
        if psycopg is None:
            raise StoreError(
                f"{url}: a PostgreSQL store needs the psycopg driver, which is not installed: "
                f"{INSTALL_HINT}"
            )
        return cls(
            cls._connect(url, purpose),
            url,
            purpose=purpose,
            reconnect=reconnect,
            driver_error=psycopg.Error,
        )

    @staticmethod
    def _connect(url: StoreUrl, purpose: str) -> psycopg.Connection[Any]:
        import psycopg

        try:
            return psycopg.connect(url.url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            # The driver may quote what it was given (a key/value string it could not
            # parse): scrubbed of this target's own passwords, not only of URL patterns.
            raise StoreError(
                f"{url}: cannot open {purpose}: {error_text(exc, url.redact)}"
            ) from None

    @property
    def connection(self) -> psycopg.Connection[Any]:
        """The connection, reopened first when it was lost and `reconnect` was asked for:
        the call that saw it fail got a StoreError, the next one works again. Never inside a
        transaction: its earlier statements died with the connection, and that error must
        reach the caller."""
        if self._reconnect and not self._depth and self._conn.closed:
            self._conn = self._connect(self._url, self._purpose)
        return self._conn

    def _translate(self, sql: str) -> str:
        # The shared queries use `?` and never a literal `?` or `%`.
        translated = self._sql.get(sql)
        if translated is None:
            translated = self._sql[sql] = sql.replace("?", "%s")
        return translated

    def _execute(self, sql: str, params: Sequence[Any]) -> Any:
        return self.connection.execute(sql, params)

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.connection.cursor() as cursor:
            cursor.executemany(sql, rows)

    def insert_rows(self, table: str, columns: str, rows: Sequence[Sequence[Any]]) -> None:
        # COPY: a run of a thousand cases in one stream instead of a thousand INSERTs.
        if not rows:
            return
        with (
            self.lock,
            self.connection.cursor() as cursor,
            cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)

    def script(self, ddl: str) -> None:
        # Without parameters, one execute runs every statement of the script.
        with self.lock:
            self.connection.execute(ddl)

    def has_table(self, table: str) -> bool:
        return bool(
            self.rows(
                "SELECT 1 FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_name = ?",
                (table,),
            )
        )

    def tune_for_writing(self) -> None:
        # Nothing to tune: durability and concurrency are the server's settings.
        pass

    def advisory_lock(self, key: int) -> None:
        self.execute("SELECT pg_advisory_xact_lock(?)", (key,))

    def lock_table(self, table: str) -> None:
        # EXCLUSIVE: other writers wait until this transaction ends; readers (ACCESS SHARE)
        # do not. So a row's identity value is drawn and committed before the next writer
        # draws one: the table grows in commit order, which cursors paging by it rely on.
        self.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")

    @contextmanager
    def pipelined(self) -> Iterator[None]:
        # One round trip for BEGIN, the locks, the inserts and COMMIT. A statement that
        # fails surfaces only at the pipeline's end, after the COMMIT was queued (and
        # skipped): the transaction is still open, aborted, and is rolled back here.
        try:
            with self.lock, self.connection.pipeline():
                yield
        except self.driver_error:
            self._rollback()
            raise

    def text_in(self, text: str | None) -> Any:
        # surrogatepass: a lone surrogate (a model's broken output) is kept as it was given.
        return None if text is None else text.encode("utf-8", "surrogatepass")

    def text_out(self, value: Any) -> str | None:
        return None if value is None else bytes(value).decode("utf-8", "surrogatepass")

    def _begin(self, *, write: bool) -> None:
        # A read is one snapshot (REPEATABLE READ): several queries (a count and a page)
        # agree even while other processes write.
        self.connection.execute(
            "BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        )

    def _commit(self) -> None:
        self._conn.execute("COMMIT")

    def _rollback(self) -> None:
        if self._conn.closed:
            return
        # A broken connection: the server rolled back already; keep the first error.
        with contextlib.suppress(self.driver_error):
            self._conn.execute("ROLLBACK")

    def _close(self) -> None:
        self._conn.close()
