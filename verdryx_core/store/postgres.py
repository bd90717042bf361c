"""The PostgreSQL store: many CI jobs writing one store at once, through the `psycopg` driver.

Same queries as the SQLite store (see `_sql.py`); what differs is here: the schema in
PostgreSQL types, a `verdryx_meta` table holding the schema version, migrations serialised
between processes by an advisory lock, and the URL's password kept out of every message.
The driver is the optional extra `verdryx[postgres]`, imported only when a URL is used.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self

from verdryx_core.errors import StoreError
from verdryx_core.store._sql import SqlStore
from verdryx_core.store.base import SCHEMA_VERSION
from verdryx_core.store.target import StoreTarget, StoreUrl, redact

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStore"]

_INSTALL_HINT: Final = "pip install 'verdryx[postgres]'"

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

CREATE TABLE contract_verdicts (
    id              BIGSERIAL PRIMARY KEY,
    agent_id        TEXT,
    task_id         TEXT NOT NULL,
    verdict         TEXT NOT NULL,
    reason          TEXT NOT NULL,
    bundle_hash     TEXT,
    run_id          TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX contract_verdicts_by_agent ON contract_verdicts (agent_id, created_at);
""",
}
assert max(_MIGRATIONS) == SCHEMA_VERSION


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        return None
    return psycopg


class PostgresStore(SqlStore):
    """One PostgreSQL database (the tables go to the first schema of its search_path)."""

    backend = "postgresql"

    _driver_error: ClassVar[type[Exception]] = Exception  # replaced by psycopg.Error on open

    def __init__(self, connection: psycopg.Connection[Any], url: StoreUrl) -> None:
        super().__init__(str(url))
        self._conn = connection
        self._sql: dict[str, str] = {}

    @classmethod
    def _open(cls, target: StoreTarget | str | os.PathLike[str], *, read_only: bool) -> Self:
        url = target if isinstance(target, StoreUrl) else StoreUrl(os.fspath(target))
        psycopg = _driver()
        if psycopg is None:
            raise StoreError(
                f"{url}: a PostgreSQL store needs the psycopg driver, which is not installed: "
                f"{_INSTALL_HINT}"
            )
        PostgresStore._driver_error = psycopg.Error
        try:
            connection = psycopg.connect(url.url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise StoreError(f"{url}: cannot open the verdryx store: {redact(first)}") from None
        store = cls(connection, url)
        try:
            with store._errors("prepare the verdryx store"):
                store._prepare(read_only=read_only)
        except BaseException:
            connection.close()
            raise
        return store

    def _version(self) -> int | None:
        """The schema version, None when the schema holds no verdryx store; refuses a schema
        that holds other tables. The marker and the other tables are read in one statement
        (one snapshot): a store another job is creating is seen whole or not at all."""
        tables: list[str] = self._execute(
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
        rows = self._execute(
            "SELECT value FROM verdryx_meta WHERE key = 'schema_version'"
        ).fetchall()
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
                self._execute("SET default_transaction_read_only = on")
            return
        if read_only:
            if version is None:
                raise StoreError(f"{self.path}: there is no verdryx store here (no verdryx tables)")
            raise StoreError(
                f"{self.path}: the store has schema version {version}, older than this verdryx "
                f"({SCHEMA_VERSION}), and cannot be migrated read-only"
            )
        with self._transaction():
            # Eight jobs opening a new store at once: one creates it, the others wait here
            # and then find it made.
            self._execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
            current = self._version() or 0
            for target in range(current + 1, SCHEMA_VERSION + 1):
                if target in _MIGRATIONS:
                    self._conn.execute(_MIGRATIONS[target])
            self._execute(
                "UPDATE verdryx_meta SET value = ? WHERE key = 'schema_version'",
                (str(SCHEMA_VERSION),),
            )

    # -- the SqlStore hooks --------------------------------------------------------------------

    def _translate(self, sql: str) -> str:
        # The shared queries use `?` and never a literal `?` or `%`.
        translated = self._sql.get(sql)
        if translated is None:
            translated = self._sql[sql] = sql.replace("?", "%s")
        return translated

    def _execute(self, sql: str, params: Any = ()) -> Any:
        return self._conn.execute(self._translate(sql), params)

    def _executemany(self, sql: str, rows: Any) -> None:
        with self._conn.cursor() as cursor:
            cursor.executemany(self._translate(sql), rows)

    def _insert_many(self, table: str, columns: str, rows: Sequence[Sequence[Any]]) -> None:
        # COPY: a run of a thousand cases in one stream instead of a thousand INSERTs.
        if not rows:
            return
        with (
            self._conn.cursor() as cursor,
            cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)

    def _begin(self) -> None:
        self._conn.execute("BEGIN")

    def _commit(self) -> None:
        self._conn.execute("COMMIT")

    def _rollback(self) -> None:
        if self._conn.closed:
            return
        # A broken connection: the server rolled back already; keep the first error.
        with contextlib.suppress(self._driver_error):
            self._conn.execute("ROLLBACK")

    def _text_in(self, text: str | None) -> Any:
        return None if text is None else text.encode("utf-8", "surrogatepass")

    def _text_out(self, value: Any) -> str | None:
        return None if value is None else bytes(value).decode("utf-8", "surrogatepass")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
