"""The PostgreSQL store: many CI jobs writing one store at once, through the `psycopg` driver.

Same queries as the SQLite store (see `_sql.py`), through the PostgreSQL connection of
`verdryx_core/store/db/postgres.py` (the driver, placeholders, BYTEA text, COPY, passwords
kept out of messages). What is the store's own is here: the schema in PostgreSQL types, a
`verdryx_meta` table holding the schema version, and migrations serialised between
processes by an advisory lock.
"""

from __future__ import annotations

import os
from typing import ClassVar, Final, Self

from verdryx_core.errors import StoreError
from verdryx_core.store._sql import SqlStore
from verdryx_core.store.base import SCHEMA_VERSION
from verdryx_core.store.db import PostgresDb
from verdryx_core.store.target import StoreTarget, StoreUrl

__all__ = ["PostgresStore"]

#: Any constant shared by every verdryx process: the key of the advisory lock that makes one
#: process at a time create or migrate the schema while eight CI jobs open the store at once.
_MIGRATION_LOCK: Final = 0x76657264  # "verd"

# PostgreSQL has no implicit rowid: `rowid BIGSERIAL` columns keep save order under the same
# name, so the shared queries read alike. Free text of a score is BYTEA (UTF-8): TEXT cannot
# hold a NUL character, which a model's output may contain. Scores are DOUBLE PRECISION
# (PostgreSQL's REAL is single precision; a stored score must read back exactly).
_MIGRATIONS: Final[dict[int, str]] = {
    2: """
CREATE TABLE verdryx_meta (
    key             TEXT PRIMARY KEY,
    value           TEXT NOT NULL
);
INSERT INTO verdryx_meta (key, value) VALUES ('store', 'verdryx');
INSERT INTO verdryx_meta (key, value) VALUES ('schema_version', '0');

CREATE TABLE runs (
    rowid           BIGSERIAL,
    id              TEXT PRIMARY KEY,
    model           TEXT NOT NULL,
    judge_model     TEXT,
    agent_id        TEXT,
    eval_set_ids    TEXT NOT NULL,
    started_at      TEXT NOT NULL,
    finished_at     TEXT,
    complete        INTEGER NOT NULL,
    plugin_version  TEXT NOT NULL DEFAULT '',
    cases           INTEGER NOT NULL,
    unmeasured      INTEGER NOT NULL,
    mean_score      DOUBLE PRECISION,
    total_tokens    BIGINT NOT NULL DEFAULT 0,
    model_cost_usd  DOUBLE PRECISION NOT NULL DEFAULT 0,
    judge_cost_usd  DOUBLE PRECISION NOT NULL DEFAULT 0,
    label           TEXT,
    vcs_commit      TEXT,
    vcs_branch      TEXT,
    ci_url          TEXT,
    run_group       TEXT,
    shard           TEXT,
    is_partial      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_by_start ON runs (started_at);
CREATE INDEX runs_by_group ON runs (run_group, started_at);

CREATE TABLE scores (
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    eval_set_id     TEXT NOT NULL,
    case_id         TEXT NOT NULL,
    value           DOUBLE PRECISION,
    unmeasured      TEXT,
    grader          TEXT NOT NULL,
    tokens          BIGINT NOT NULL DEFAULT 0,
    cost_usd        DOUBLE PRECISION NOT NULL DEFAULT 0,
    judge_cost_usd  DOUBLE PRECISION NOT NULL DEFAULT 0,
    fingerprint     TEXT NOT NULL DEFAULT '',
    passed          INTEGER,
    samples         TEXT,
    output          BYTEA,
    expected        BYTEA,
    reason          BYTEA,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE baselines (
    rowid           BIGSERIAL,
    id              TEXT PRIMARY KEY,
    label           TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    mean            DOUBLE PRECISION NOT NULL,
    created_at      TEXT NOT NULL,
    model           TEXT NOT NULL,
    judge_model     TEXT,
    plugin_version  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX baselines_by_label ON baselines (label, created_at);

CREATE TABLE baseline_cases (
    rowid           BIGSERIAL,
    baseline_id     TEXT NOT NULL REFERENCES baselines (id) ON DELETE CASCADE,
    eval_set_id     TEXT NOT NULL,
    case_id         TEXT NOT NULL,
    value           DOUBLE PRECISION NOT NULL,
    fingerprint     TEXT NOT NULL DEFAULT '',
    passed          INTEGER,
    PRIMARY KEY (baseline_id, eval_set_id, case_id)
);

CREATE TABLE model_cache (
    key             TEXT PRIMARY KEY,
    model           TEXT NOT NULL,
    response        TEXT NOT NULL,
    cost_usd        DOUBLE PRECISION NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL
);

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


class PostgresStore(SqlStore):
    """One PostgreSQL database (the tables go to the first schema of its search_path)."""

    backend = "postgresql"
    #: The connection's class (a test may hand in a subclass that fails on purpose).
    database: ClassVar[type[PostgresDb]] = PostgresDb

    db: PostgresDb

    @classmethod
    def _open(cls, target: StoreTarget | str | os.PathLike[str], *, read_only: bool) -> Self:
        url = target if isinstance(target, StoreUrl) else StoreUrl(os.fspath(target))
        db = cls.database.open(url, purpose="the verdryx store")
        store = cls(db)
        try:
            with db.errors("prepare the verdryx store"):
                store._prepare(read_only=read_only)
        except BaseException:
            db.close()
            raise
        return store

    def _version(self) -> int | None:
        """The schema version, None when the schema holds no verdryx store; refuses a schema
        that holds other tables. The marker and the other tables are read in one statement
        (one snapshot): a store another job is creating is seen whole or not at all."""
        tables: list[str] = self.db.execute(
            "SELECT ARRAY(SELECT table_name::text FROM information_schema.tables "
            "WHERE table_schema = current_schema() ORDER BY table_name)"
        ).fetchone()[0]
        if "verdryx_meta" not in tables:
            if tables:
                shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
                raise StoreError(
                    f"{self.path}: not a verdryx store (its schema has tables {shown} and no "
                    "verdryx schema marker); verdryx left it unchanged: use another database "
                    "or schema"
                )
            return None
        rows = self.db.rows("SELECT value FROM verdryx_meta WHERE key = 'schema_version'")
        return int(rows[0][0]) if rows else 0

    def _prepare(self, *, read_only: bool) -> None:
        version = self._version()
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: the store has schema version {version}, newer than this "
                f"verdryx understands ({SCHEMA_VERSION}); upgrade verdryx to read it"
            )
        if version == SCHEMA_VERSION:
            if read_only:
                # A read command cannot write by mistake, and a role with SELECT only will do.
                self.db.execute("SET default_transaction_read_only = on")
            return
        if read_only:
            if version is None:
                raise StoreError(f"{self.path}: there is no verdryx store here (no verdryx tables)")
            raise StoreError(
                f"{self.path}: the store has schema version {version}, older than this verdryx "
                f"({SCHEMA_VERSION}), and cannot be migrated read-only"
            )
        with self.db.transaction():
            # Eight jobs opening a new store at once: one creates it, the others wait here
            # and then find it made.
            self.db.advisory_lock(_MIGRATION_LOCK)
            current = self._version() or 0
            for target in range(current + 1, SCHEMA_VERSION + 1):
                if target in _MIGRATIONS:
                    self.db.script(_MIGRATIONS[target])
            self.db.execute(
                "UPDATE verdryx_meta SET value = ? WHERE key = 'schema_version'",
                (str(SCHEMA_VERSION),),
            )
