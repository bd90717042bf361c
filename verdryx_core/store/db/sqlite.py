"""The SQLite dialect of `Database`: one file (or `:memory:`), its PRAGMAs set here only.

One wrapper around the `sqlite3` connection, the PRAGMAs in one place with the reason for
each, every `sqlite3.Error` a StoreError naming the file (docs/store.md). The connection is
in autocommit mode (`isolation_level=None`): transactions are the explicit
BEGIN/COMMIT of `Database.transaction`, never the driver's implicit ones.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self
from urllib.parse import quote

from verdryx_core.errors import StoreError
from verdryx_core.store.db.database import Database, error_text

__all__ = ["SqliteDb", "writable"]


def writable(path: Path) -> bool:
    """Can this process write the file and create its -wal/-shm beside it?"""
    return os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


class SqliteDb(Database):
    """One `sqlite3` connection, shared between threads behind the lock."""

    dialect = "sqlite"

    def __init__(self, connection: sqlite3.Connection, name: str) -> None:
        super().__init__(name, sqlite3.Error)
        self.connection = connection

    @classmethod
    def open(cls, name: str, *, purpose: str, read_only: bool = False) -> Self:
        """Connect to the file `name` (created when missing, unless `read_only`); `purpose`
        says in an error what was being opened ("the verdryx store")."""
        try:
            if read_only and name != ":memory:" and not writable(Path(name)):
                # A file we cannot write (an archived CI artifact, a read-only mount): read it
                # as it is (immutable), which creates no -wal/-shm beside it. A non-empty -wal
                # left beside it holds committed transactions: then read through it.
                wal = Path(f"{name}-wal")
                frozen = not (wal.exists() and wal.stat().st_size)
                flag = "immutable=1" if frozen else "mode=ro"
                uri = f"file:{quote(os.path.abspath(name))}?{flag}"
                connection = sqlite3.connect(
                    uri, uri=True, check_same_thread=False, isolation_level=None
                )
            else:
                connection = sqlite3.connect(name, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{name}: cannot open {purpose}: {error_text(exc)}") from None
        db = cls(connection, name)
        try:
            # Neither PRAGMA reads or writes the file, so a file that is no verdryx store (or
            # not SQLite at all) is still untouched, and refused by whoever reads it next.
            # Five seconds of patience when another process (a session saving its run, the
            # service, `verdryx keys`) holds the write lock.
            connection.execute("PRAGMA busy_timeout = 5000")
            # Referential integrity: scores never outlive their run, verdicts their contract.
            connection.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            connection.close()
            raise StoreError(f"{name}: cannot open {purpose}: {error_text(exc)}") from None
        return db

    def tune_for_writing(self) -> None:
        if self.name == ":memory:":
            return  # no file, no journal
        with self.lock:
            # WAL: readers (a report, the CLI, the service's ledger) never block the writer,
            # nor it them.
            self.connection.execute("PRAGMA journal_mode = WAL")
            # NORMAL is durable across application crashes in WAL mode, and much faster.
            self.connection.execute("PRAGMA synchronous = NORMAL")

    def advisory_lock(self, key: int) -> None:
        # Nothing to add: a write transaction (BEGIN IMMEDIATE) holds the whole file already.
        pass

    def lock_table(self, table: str) -> None:
        # Nothing to add: a write transaction (BEGIN IMMEDIATE) holds the whole file already.
        pass

    def _execute(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        return self.connection.execute(sql, params)

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.connection.executemany(sql, rows)

    def script(self, ddl: str) -> None:
        # executescript would COMMIT the open transaction: statement by statement instead,
        # skipping what holds only comments.
        with self.lock:
            for statement in ddl.split(";"):
                if any(
                    line.strip() and not line.strip().startswith("--")
                    for line in statement.splitlines()
                ):
                    self.connection.execute(statement)

    def has_table(self, table: str) -> bool:
        return bool(
            self.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        )

    def _begin(self, *, write: bool) -> None:
        # IMMEDIATE: a writer takes the file's write lock now (waiting up to busy_timeout),
        # not at its first write or at COMMIT, where it could only fail. A read is a plain
        # (deferred) transaction: one WAL snapshot for all its statements.
        self.connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def _commit(self) -> None:
        self.connection.execute("COMMIT")

    def _rollback(self) -> None:
        # SQLite rolls back by itself on some errors (disk full, I/O); a second ROLLBACK
        # would then raise and hide the original error.
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")

    def _close(self) -> None:
        self.connection.close()
