"""The SQLite store: one file, WAL mode, a schema version in `PRAGMA user_version`.

Habits taken from coverage.py's sqldata: one commented schema, a version checked on open,
every `sqlite3.Error` wrapped in a `StoreError` that names the file, PRAGMAs set in one
place, one transaction per saved run. A file that is not a verdryx store is refused before
anything is written to it (no WAL switch, no table, no version stamp): see docs/store.md.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, Final, Self
from urllib.parse import quote

from verdryx_core.errors import StoreError
from verdryx_core.store._sql import SqlStore
from verdryx_core.store.base import SCHEMA_VERSION
from verdryx_core.store.target import StoreTarget, StoreUrl

__all__ = ["SqliteStore"]

# Version 1, as every store before provenance was created. A new store is built from this
# and then migrated, so a new store and a migrated one can never differ.
_SCHEMA_V1: Final = """
-- One row per stored run. The aggregate columns are denormalised so listing a thousand runs
-- (history, reports) never reads their scores.
CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    model           TEXT NOT NULL,
    judge_model     TEXT,
    agent_id        TEXT,
    eval_set_ids    TEXT NOT NULL,          -- JSON array, sorted
    started_at      TEXT NOT NULL,          -- ISO-8601 UTC
    finished_at     TEXT,
    complete        INTEGER NOT NULL,       -- 0: interrupted, never gated on as if whole
    plugin_version  TEXT NOT NULL DEFAULT '',
    cases           INTEGER NOT NULL,       -- measured cases
    unmeasured      INTEGER NOT NULL,
    mean_score      REAL,                   -- NULL when nothing was measured
    total_tokens    INTEGER NOT NULL DEFAULT 0,
    model_cost_usd  REAL NOT NULL DEFAULT 0,
    judge_cost_usd  REAL NOT NULL DEFAULT 0
);
CREATE INDEX runs_by_start ON runs (started_at);

-- One row per graded case of a run. A NULL value means unmeasured, and `unmeasured` says why.
CREATE TABLE scores (
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,       -- collection order
    eval_set_id     TEXT NOT NULL,
    case_id         TEXT NOT NULL,
    value           REAL,
    unmeasured      TEXT,
    grader          TEXT NOT NULL,
    tokens          INTEGER NOT NULL DEFAULT 0,
    cost_usd        REAL NOT NULL DEFAULT 0,
    judge_cost_usd  REAL NOT NULL DEFAULT 0,
    fingerprint     TEXT NOT NULL DEFAULT '',
    passed          INTEGER,
    samples         TEXT,                   -- JSON array when the case was sampled repeatedly
    output          TEXT,
    expected        TEXT,
    reason          TEXT,
    PRIMARY KEY (run_id, seq)
);

-- A baseline is a snapshot of its run's measured cases (it may come from a committed file,
-- so its run need not be in this store).
CREATE TABLE baselines (
    id              TEXT PRIMARY KEY,
    label           TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    mean            REAL NOT NULL,
    created_at      TEXT NOT NULL,
    model           TEXT NOT NULL,
    judge_model     TEXT,
    plugin_version  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX baselines_by_label ON baselines (label, created_at);

CREATE TABLE baseline_cases (
    baseline_id     TEXT NOT NULL REFERENCES baselines (id) ON DELETE CASCADE,
    eval_set_id     TEXT NOT NULL,
    case_id         TEXT NOT NULL,
    value           REAL NOT NULL,
    fingerprint     TEXT NOT NULL DEFAULT '',
    passed          INTEGER,
    PRIMARY KEY (baseline_id, eval_set_id, case_id)
);

-- Model responses keyed by a hash of (model, system, prompt, tools, parameters, repeat).
CREATE TABLE model_cache (
    key             TEXT PRIMARY KEY,
    model           TEXT NOT NULL,
    response        TEXT NOT NULL,          -- JSON
    cost_usd        REAL NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL
);

-- Contract verdicts per agent, so an agent's record can be read over time.
CREATE TABLE contract_verdicts (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id        TEXT,
    task_id         TEXT NOT NULL,
    verdict         TEXT NOT NULL,          -- PASS, FLAG or FAIL
    reason          TEXT NOT NULL,
    bundle_hash     TEXT,
    run_id          TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX contract_verdicts_by_agent ON contract_verdicts (agent_id, created_at);
"""

# Each migration takes the store from the version before to its key, inside the one
# transaction that also stamps the new version.
_MIGRATIONS: Final[dict[int, str]] = {
    1: _SCHEMA_V1,
    2: """
-- The marker: a SQLite file with tables but without this one is not a verdryx store.
CREATE TABLE verdryx_meta (
    key             TEXT PRIMARY KEY,
    value           TEXT NOT NULL
);
INSERT INTO verdryx_meta (key, value) VALUES ('store', 'verdryx');
-- Run provenance (EvalRun): where a run came from (is_partial: a subset of the cases).
ALTER TABLE runs ADD COLUMN label TEXT;
ALTER TABLE runs ADD COLUMN vcs_commit TEXT;
ALTER TABLE runs ADD COLUMN vcs_branch TEXT;
ALTER TABLE runs ADD COLUMN ci_url TEXT;
ALTER TABLE runs ADD COLUMN run_group TEXT;
ALTER TABLE runs ADD COLUMN shard TEXT;
ALTER TABLE runs ADD COLUMN is_partial INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_by_group ON runs (run_group, started_at);
""",
}
assert max(_MIGRATIONS) == SCHEMA_VERSION

#: The tables (and columns of `runs`) a version-1 store has: how one is recognised without
#: the marker table, which version 1 did not have.
_V1_TABLES: Final = frozenset(
    {"runs", "scores", "baselines", "baseline_cases", "model_cache", "contract_verdicts"}
)
_V1_RUN_COLUMNS: Final = (
    "id",
    "model",
    "judge_model",
    "agent_id",
    "eval_set_ids",
    "started_at",
    "finished_at",
    "complete",
    "plugin_version",
    "cases",
    "unmeasured",
    "mean_score",
    "total_tokens",
    "model_cost_usd",
    "judge_cost_usd",
)


def _statements(script: str) -> list[str]:
    # executescript would COMMIT the open transaction; run statement by statement instead.
    return [
        statement
        for statement in script.split(";")
        if any(
            line.strip() and not line.strip().startswith("--") for line in statement.splitlines()
        )
    ]


class SqliteStore(SqlStore):
    """One SQLite file (or `:memory:`)."""

    backend = "sqlite"

    _driver_error = sqlite3.Error

    def __init__(self, connection: sqlite3.Connection, path: str) -> None:
        super().__init__(path)
        self._db = connection

    @classmethod
    def _open(cls, target: StoreTarget | str | os.PathLike[str], *, read_only: bool) -> Self:
        if isinstance(target, StoreUrl):
            raise StoreError(f"{target}: a PostgreSQL URL is not a SQLite file")
        name = os.fspath(target)
        if name == ":memory:":
            connection = sqlite3.connect(name, check_same_thread=False, isolation_level=None)
            store = cls(connection, name)
            store._prepare(read_only=False, can_write=True)
            return store
        path = Path(name)
        if path.is_dir():
            raise StoreError(f"{name}: cannot open the verdryx store: it is a directory")
        if not path.exists():
            if read_only:
                raise StoreError(f"{name}: there is no verdryx store here (no such file)")
            if not path.parent.is_dir():
                raise StoreError(
                    f"{name}: cannot create the verdryx store: the directory "
                    f"{str(path.parent)!r} does not exist (verdryx creates no directories)"
                )
        connection = cls._connect(path, read_only=read_only)
        store = cls(connection, name)
        try:
            store._prepare(read_only=read_only, can_write=_writable(path))
        except BaseException:
            connection.close()
            raise
        return store

    @staticmethod
    def _connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
        name = os.fspath(path)
        try:
            if read_only and not _writable(path):
                # A store we cannot write (an archived CI artifact, a read-only mount): read
                # the file as it is (immutable), which creates no -wal/-shm beside it. A
                # non-empty -wal left beside it holds committed runs: then read through it.
                wal = Path(f"{name}-wal")
                frozen = not (wal.exists() and wal.stat().st_size)
                flag = "immutable=1" if frozen else "mode=ro"
                uri = f"file:{quote(os.path.abspath(name))}?{flag}"
                return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
            return sqlite3.connect(name, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{name}: cannot open the verdryx store: {exc}") from None

    # -- opening: recognise, then (only for a verdryx store or an empty file) prepare ---------

    def _inspect(self) -> tuple[int, set[str]]:
        try:
            # Five seconds of patience when another process holds the write lock.
            self._db.execute("PRAGMA busy_timeout = 5000")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            tables = {
                row[0]
                for row in self._db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
                )
            }
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path}: not a verdryx store (SQLite says: {exc}); use a verdryx "
                "store file or a new file"
            ) from None
        return version, tables

    def _is_verdryx(self, version: int, tables: set[str]) -> bool:
        if "verdryx_meta" in tables:
            rows = self._db.execute("SELECT value FROM verdryx_meta WHERE key = 'store'").fetchall()
            return rows == [("verdryx",)]
        if version != 1 or not tables <= _V1_TABLES or "runs" not in tables:
            return False
        columns = tuple(row[1] for row in self._db.execute("PRAGMA table_info(runs)"))
        return columns == _V1_RUN_COLUMNS

    def _prepare(self, *, read_only: bool, can_write: bool) -> None:
        """`read_only`: a command that only reads (never creates a store); `can_write`: the
        file can be written (a read command still migrates an older store it can write)."""
        version, tables = self._inspect()
        if tables and not self._is_verdryx(version, tables):
            if version > SCHEMA_VERSION and "verdryx_meta" in tables:
                pass  # a newer verdryx store: the version message below says so
            else:
                shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
                raise StoreError(
                    f"{self.path}: not a verdryx store (it has tables {shown} and no verdryx "
                    "schema marker); verdryx left it unchanged: use a verdryx store file or "
                    "a new file"
                )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: the store has schema version {version}, newer than this "
                f"verdryx understands ({SCHEMA_VERSION}); upgrade verdryx to read it"
            )
        if not tables and version:
            raise StoreError(
                f"{self.path}: not a verdryx store (schema version {version} but no tables); "
                "verdryx left it unchanged"
            )
        try:
            # Referential integrity: scores never outlive their run.
            self._db.execute("PRAGMA foreign_keys = ON")
            if read_only and not tables:
                raise StoreError(f"{self.path}: there is no verdryx store here (empty file)")
            if read_only and (version == SCHEMA_VERSION or not can_write):
                if version < SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path}: the store has schema version {version}, older than this "
                        f"verdryx ({SCHEMA_VERSION}), and cannot be migrated read-only; open it "
                        "once with write access (e.g. `verdryx baseline` or a pytest run)"
                    )
                return
            if self.path != ":memory:":
                # WAL: readers (a report, the CLI) never block the writer at session end.
                self._db.execute("PRAGMA journal_mode = WAL")
                # NORMAL is durable across application crashes in WAL mode, and much faster.
                self._db.execute("PRAGMA synchronous = NORMAL")
            if version < SCHEMA_VERSION:
                self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot prepare the verdryx store: {exc}") from None

    def _migrate(self) -> None:
        """All pending migrations in one transaction: the file is at its old version or the
        new one, never between. Another process may have migrated meanwhile: re-read."""
        with self._transaction():
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _statements(_MIGRATIONS[target]):
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # -- the SqlStore hooks --------------------------------------------------------------------

    def _execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, params)

    def _executemany(self, sql: str, rows: Any) -> None:
        self._db.executemany(sql, rows)

    def _begin(self) -> None:
        # IMMEDIATE: take the write lock now, so busy_timeout applies here and not at COMMIT.
        self._db.execute("BEGIN IMMEDIATE")

    def _commit(self) -> None:
        self._db.execute("COMMIT")

    def _rollback(self) -> None:
        # SQLite rolls back by itself on some errors (disk full, I/O); a second ROLLBACK
        # would then raise and hide the original error.
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _writable(path: Path) -> bool:
    """Can this process write the store file and create its -wal/-shm beside it?"""
    return os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))
