"""The SQLite store: one file, WAL mode, a schema version in `PRAGMA user_version`.

Habits taken from coverage.py's sqldata: one commented schema, a version checked on open,
every `sqlite3.Error` wrapped in a `StoreError` that names the file, PRAGMAs set in one
place (the connection's, `verdryx_core/store/db/sqlite.py`), one transaction per saved run.
A file that is not a verdryx store is refused before anything is written to it (no WAL
switch, no table, no version stamp): see docs/store.md.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import ClassVar, Final, Self

from verdryx_core.errors import StoreError
from verdryx_core.store._sql import SqlStore
from verdryx_core.store.base import SCHEMA_VERSION
from verdryx_core.store.db import SqliteDb
from verdryx_core.store.db.sqlite import writable
from verdryx_core.store.target import StoreTarget, StoreUrl

__all__ = ["SqliteStore"]

#: What an error names as being opened.
_PURPOSE: Final = "the verdryx store"

# Version 1, as every store before provenance was created, less its contract verdicts table,
# which the contracts add-on now creates when it first saves one (a version-1 store keeps
# its table and rows). A new store is built from this and then migrated, so a new store and
# a migrated one can never differ in the store's own tables.
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
    3: """
-- What produced the outputs (docs/targets.md): the agent under test and its declared
-- version, on the run and on the baseline frozen from it, and a shard run's share of the
-- cases at collection, so a shard narrowed below its share is never assembled as whole.
ALTER TABLE runs ADD COLUMN target TEXT;
ALTER TABLE runs ADD COLUMN target_version TEXT;
ALTER TABLE runs ADD COLUMN shard_share INTEGER;
ALTER TABLE baselines ADD COLUMN target TEXT;
ALTER TABLE baselines ADD COLUMN target_version TEXT;
""",
    4: """
-- A multi-check case's checks, each with its grader, weight, what it read, score and reason
-- (docs/store.md): a JSON array, NULL for a case of one grader and for every older row.
ALTER TABLE scores ADD COLUMN checks TEXT;
""",
    5: """
-- Clustered cases and per-case samples (docs/statistics.md): a score's cluster, and a
-- baseline case's samples and cluster, so a later gate resamples whole clusters, allocates
-- repeats by the baseline's per-case variance, and tests each case's drop.
ALTER TABLE scores ADD COLUMN cluster TEXT;
ALTER TABLE baseline_cases ADD COLUMN samples TEXT;
ALTER TABLE baseline_cases ADD COLUMN cluster TEXT;
""",
    6: """
-- The agent under test per eval set (docs/targets.md, "One target per eval set"): a JSON
-- object of eval set id -> module:callable, or null for the model alone, on the run and on
-- the baseline frozen from it, so one file or one shard of a project whose eval sets name
-- their own targets is compared on its own sets. NULL for every older row: those runs and
-- baselines are compared by `target` alone, as before.
ALTER TABLE runs ADD COLUMN set_targets TEXT;
ALTER TABLE baselines ADD COLUMN set_targets TEXT;
""",
    7: """
-- An output that could not be graded (docs/outcomes.md, "What counts as unmeasured"): the
-- case scored 0 and this says why (NULL for every other score and every older row).
ALTER TABLE scores ADD COLUMN failed_by_output TEXT;
""",
    8: """
-- The pass metric's share of passing samples (docs/statistics.md, "What the gate compares"):
-- whether each sample reached its bar, a JSON array of booleans beside `samples`, on a score
-- and on a baseline case, so a stored run and a baseline gate on the pass metric as the run
-- did live. NULL for one sample and for every older row: those cases gate on `passed`.
ALTER TABLE scores ADD COLUMN passes TEXT;
ALTER TABLE baseline_cases ADD COLUMN passes TEXT;
""",
}
assert max(_MIGRATIONS) == SCHEMA_VERSION

#: The tables (and columns of `runs`) a version-1 store has: how one is recognised without
#: the marker table, which version 1 did not have. Version 1 created `contract_verdicts`
#: too (the contracts add-on's table since).
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


def _read_only(name: str, path: Path) -> StoreError:
    what = "the file" if path.exists() and not os.access(path, os.W_OK) else "its folder"
    return StoreError(
        f"{name}: the verdryx store is read-only ({what} cannot be written by this process, "
        "and a store is written with its -wal and -shm files beside it); nothing was written "
        "to it",
        hint="make the file and its folder writable, or name another store with {db}",
    )


class SqliteStore(SqlStore):
    """One SQLite file (or `:memory:`)."""

    backend = "sqlite"
    #: The connection's class (a test may hand in a subclass that fails on purpose).
    database: ClassVar[type[SqliteDb]] = SqliteDb

    db: SqliteDb

    @classmethod
    def _open(cls, target: StoreTarget | str | os.PathLike[str], *, read_only: bool) -> Self:
        if isinstance(target, StoreUrl):
            raise StoreError(f"{target}: a PostgreSQL URL is not a SQLite file")
        name = os.fspath(target)
        if name == ":memory:":
            store = cls(cls.database.open(name, purpose=_PURPOSE))
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
        if not read_only and not writable(path):
            # Said before SQLite is asked: it would answer "unable to open database file",
            # and a store that merely cannot be written is no reason to replace it.
            raise _read_only(name, path)
        db = cls.database.open(name, purpose=_PURPOSE, read_only=read_only)
        store = cls(db)
        try:
            store._prepare(read_only=read_only, can_write=writable(path))
        except BaseException:
            db.close()
            raise
        return store

    # -- opening: recognise, then (only for a verdryx store or an empty file) prepare ---------

    def _inspect(self) -> tuple[int, set[str]]:
        try:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            tables = {
                row[0]
                for row in self.db.rows(
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
            rows = self.db.rows("SELECT value FROM verdryx_meta WHERE key = 'store'")
            return rows == [("verdryx",)]
        if version != 1 or not tables <= _V1_TABLES or "runs" not in tables:
            return False
        columns = tuple(row[1] for row in self.db.rows("PRAGMA table_info(runs)"))
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
        with self.db.errors("prepare the verdryx store"):
            self.db.tune_for_writing()
            if version < SCHEMA_VERSION:
                self._migrate()

    def _migrate(self) -> None:
        """All pending migrations in one transaction: the file is at its old version or the
        new one, never between. Another process may have migrated meanwhile: re-read."""
        with self.db.transaction():
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            for target in range(version + 1, SCHEMA_VERSION + 1):
                self.db.script(_MIGRATIONS[target])
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
