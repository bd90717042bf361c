"""One connection to the database a verdryx store lives in, whichever the dialect.

The store's tables (`verdryx_core/store/_sql.py`) and the tables add-ons keep beside them
(the verification service's `service_` tables, the contracts add-on's verdict rows) all go
through this object, so connection handling, transactions, error wrapping, placeholders and
text encoding are written once. SQL is written with `?` placeholders; a dialect translates
them. Every driver error raised inside `errors()` becomes one `StoreError` line naming the
database (a path, or a URL with its password redacted: docs/store.md).
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, ClassVar, Protocol

from verdryx_core.errors import StoreError
from verdryx_core.store.target import redact

__all__ = ["Cursor", "Database", "error_text", "marks"]


class Cursor(Protocol):
    """What `Database.execute` returns: both drivers' cursors answer these."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Any: ...


def marks(count: int) -> str:
    """`count` placeholders for a VALUES or IN list: "?, ?, ?"."""
    return ", ".join("?" * count)


def error_text(exc: BaseException, scrub: Callable[[str], str] = redact) -> str:
    """A driver's error as one line without a password: drivers may add a DETAIL line or
    quote the URL they were given. `scrub` is the connection's own redaction (a
    `StoreUrl.redact`, which also removes that target's passwords in whatever form the
    driver quoted them)."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    return scrub(lines[0])


class Database(abc.ABC):
    """A connection shared by the threads of one process behind one lock (a connection serves
    one statement, and one transaction, at a time). Several processes on one database are
    kept apart by the database's own transactions and locks, never by this lock."""

    #: "sqlite" or "postgresql": what an add-on picks its table definitions by.
    dialect: ClassVar[str]

    def __init__(
        self, name: str, driver_error: type[Exception], scrub: Callable[[str], str] = redact
    ) -> None:
        #: How messages name the database: a file path, or a URL with its password redacted.
        self.name = name
        #: What every driver message passes through before it is shown (see `error_text`).
        self.scrub = scrub
        #: The driver's error base class: what `errors()` turns into a StoreError.
        self.driver_error = driver_error
        #: Held by every statement and transaction; reentrant, so a caller may hold it around
        #: several reads that must not interleave with another thread's write.
        self.lock = threading.RLock()
        self._depth = 0  # open transaction() blocks; only the outermost one commits

    # -- what a dialect supplies -------------------------------------------------------------

    @abc.abstractmethod
    def _execute(self, sql: str, params: Sequence[Any]) -> Any:
        """Run one statement, already in the driver's placeholder style."""

    @abc.abstractmethod
    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    @abc.abstractmethod
    def _begin(self, *, write: bool) -> None:
        """Start a transaction: a writing one, or a read of one consistent snapshot."""

    @abc.abstractmethod
    def _commit(self) -> None: ...

    @abc.abstractmethod
    def _rollback(self) -> None:
        """Roll back if a transaction is still open (a driver may have ended it already)."""

    @abc.abstractmethod
    def _close(self) -> None: ...

    @abc.abstractmethod
    def script(self, ddl: str) -> None:
        """Run several statements without parameters (table definitions, migrations), in
        the open transaction."""

    @abc.abstractmethod
    def has_table(self, table: str) -> bool:
        """Whether the database (PostgreSQL: the current schema) has this table."""

    def _translate(self, sql: str) -> str:
        """`sql` in the driver's placeholder style."""
        return sql

    @abc.abstractmethod
    def advisory_lock(self, key: int) -> None:
        """Inside a write transaction: hold every other process that asks for the same key
        until this transaction ends."""

    @abc.abstractmethod
    def lock_table(self, table: str) -> None:
        """Inside a write transaction: hold every other writer of `table` until it ends;
        readers go on."""

    @abc.abstractmethod
    def tune_for_writing(self) -> None:
        """Settings for a connection that writes, applied once the database is known to be
        a verdryx store (never to a file that is not one)."""

    def pipelined(self) -> AbstractContextManager[Any]:
        """Around a write whose statements need no answer before the commit: the dialect may
        send them in one round trip (PostgreSQL's pipeline mode)."""
        return nullcontext()

    def text_in(self, text: str | None) -> Any:
        """Free text as a column declared for it keeps it (PostgreSQL: BYTEA holding UTF-8,
        since its TEXT cannot hold a NUL character)."""
        return text

    def text_out(self, value: Any) -> str | None:
        return value

    def insert_rows(self, table: str, columns: str, rows: Sequence[Sequence[Any]]) -> None:
        """Insert plain rows (no conflict handling), in the open transaction."""
        if rows:
            values = marks(columns.count(",") + 1)
            self.executemany(f"INSERT INTO {table} ({columns}) VALUES ({values})", rows)

    # -- statements --------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement (`?` placeholders); raises the driver's error (see `errors`)."""
        with self.lock:
            cursor: Cursor = self._execute(self._translate(sql), params)
            return cursor

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.lock:
            self._executemany(self._translate(sql), rows)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row a query returns, read while the lock is held."""
        with self.lock:
            return list(self._execute(self._translate(sql), params).fetchall())

    def create_tables(self, ddl: str, *, lock_key: int) -> None:
        """Run `ddl` (CREATE ... IF NOT EXISTS statements) in a write transaction (the
        caller's, when one is open) under the advisory lock `lock_key`: processes starting
        at once on a new database create the tables one at a time, and the later ones find
        them made (CREATE ... IF NOT EXISTS alone races in PostgreSQL)."""
        with self.transaction():
            self.advisory_lock(lock_key)
            self.script(ddl)

    # -- transactions and errors -------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[None]:
        """One transaction: committed when the block ends, rolled back when it raises
        (anything, KeyboardInterrupt too). Inside another transaction() it joins that one,
        so several saves can be made all or nothing (`Store.batch`)."""
        with self.lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._begin(write=write)
            self._depth = 1
            try:
                yield
                self._commit()
            except BaseException:
                self._rollback()
                raise
            finally:
                self._depth = 0

    @contextmanager
    def errors(self, action: str) -> Iterator[None]:
        """Turn the driver's errors into `StoreError("<name>: cannot <action>: <why>")`.

        OverflowError too: sqlite3 raises it, not one of its own errors, for an integer past
        64 bits, and a value that reached the driver unchecked must still be one line (the
        transaction it was in is rolled back as for any error)."""
        try:
            yield
        except self.driver_error as exc:
            raise StoreError(
                f"{self.name}: cannot {action}: {error_text(exc, self.scrub)}"
            ) from None
        except OverflowError as exc:
            raise StoreError(
                f"{self.name}: cannot {action}: a value is too large for the store "
                f"({self.scrub(str(exc))})"
            ) from None

    def close(self) -> None:
        with self.lock:
            self._close()
