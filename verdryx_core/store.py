"""The SQLite store: runs, scores, baselines, the model response cache and contract verdicts.

Habits taken from coverage.py's sqldata: one commented schema, a version checked on open,
every `sqlite3.Error` wrapped in a `StoreError` that names the file, PRAGMAs set in one
place, and one transaction per saved run so a run is stored whole or not at all.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

from verdryx_core.errors import StoreError, UsageError
from verdryx_core.model import (
    Baseline,
    BaselineCase,
    EvalRun,
    Score,
    iso_utc,
    parse_iso,
)

__all__ = [
    "SCHEMA_VERSION",
    "RunSummary",
    "Store",
    "resolve_store_path",
]

SCHEMA_VERSION: Final = 1

# Every table is created IF NOT EXISTS on open, so an older store gains new tables in place.
_SCHEMA: Final = """
-- One row per stored run. The aggregate columns are denormalised so listing a thousand runs
-- (history, reports) never reads their scores.
CREATE TABLE IF NOT EXISTS runs (
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
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started_at);

-- One row per graded case of a run. A NULL value means unmeasured, and `unmeasured` says why.
CREATE TABLE IF NOT EXISTS scores (
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
CREATE TABLE IF NOT EXISTS baselines (
    id              TEXT PRIMARY KEY,
    label           TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    mean            REAL NOT NULL,
    created_at      TEXT NOT NULL,
    model           TEXT NOT NULL,
    judge_model     TEXT,
    plugin_version  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS baselines_by_label ON baselines (label, created_at);

CREATE TABLE IF NOT EXISTS baseline_cases (
    baseline_id     TEXT NOT NULL REFERENCES baselines (id) ON DELETE CASCADE,
    eval_set_id     TEXT NOT NULL,
    case_id         TEXT NOT NULL,
    value           REAL NOT NULL,
    fingerprint     TEXT NOT NULL DEFAULT '',
    passed          INTEGER,
    PRIMARY KEY (baseline_id, eval_set_id, case_id)
);

-- Model responses keyed by a hash of (model, system, prompt, tools, parameters, repeat).
CREATE TABLE IF NOT EXISTS model_cache (
    key             TEXT PRIMARY KEY,
    model           TEXT NOT NULL,
    response        TEXT NOT NULL,          -- JSON
    cost_usd        REAL NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL
);

-- Contract verdicts per agent, so an agent's record can be read over time.
CREATE TABLE IF NOT EXISTS contract_verdicts (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id        TEXT,
    task_id         TEXT NOT NULL,
    verdict         TEXT NOT NULL,          -- PASS, FLAG or FAIL
    reason          TEXT NOT NULL,
    bundle_hash     TEXT,
    run_id          TEXT,
    created_at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS contract_verdicts_by_agent ON contract_verdicts (agent_id, created_at);
"""

_SCORE_COLUMNS: Final = (
    "run_id, seq, eval_set_id, case_id, value, unmeasured, grader, tokens, cost_usd, "
    "judge_cost_usd, fingerprint, passed, samples, output, expected, reason"
)


def resolve_store_path(flag: str | None = None, env: Mapping[str, str] | None = None) -> Path:
    """docs/options.md: flag, then VERDRYX_DB verbatim, then $TAIPAN_HOME/verdryx.db when
    that folder exists (default ~/.taipan), then ./verdryx.db. Never creates a directory."""
    env = os.environ if env is None else env
    if flag:
        return Path(flag)
    if env.get("VERDRYX_DB"):
        return Path(env["VERDRYX_DB"])
    home = env.get("TAIPAN_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".taipan"
    )
    if os.path.isdir(home):
        return Path(home) / "verdryx.db"
    return Path("verdryx.db")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """A run's row without its scores: what listings and history need."""

    id: str
    model: str
    judge_model: str | None
    agent_id: str | None
    eval_set_ids: tuple[str, ...]
    started_at: datetime
    finished_at: datetime | None
    complete: bool
    cases: int
    unmeasured: int
    mean_score: float | None
    total_tokens: int
    model_cost_usd: float
    judge_cost_usd: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.id,
            "eval_set_ids": list(self.eval_set_ids),
            "model": self.model,
            "judge_model": self.judge_model,
            "agent_id": self.agent_id,
            "cases": self.cases,
            "unmeasured": self.unmeasured,
            "mean_score": self.mean_score,
            "started_at": iso_utc(self.started_at),
            "finished_at": iso_utc(self.finished_at) if self.finished_at else None,
            "complete": self.complete,
            "total_tokens": self.total_tokens,
            "model_cost_usd": self.model_cost_usd,
            "judge_cost_usd": self.judge_cost_usd,
        }


class Store:
    """One SQLite file. Use as `with Store.open(path) as store:`.

    Safe to share between threads (the model cache is filled from a pool): every operation
    holds one lock, so there is one writer per file in this process.
    """

    def __init__(self, connection: sqlite3.Connection, path: str) -> None:
        self._db = connection
        self.path = path
        self._lock = threading.RLock()

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ":memory:") -> Self:
        name = os.fspath(path)
        if name != ":memory:":
            parent = Path(name).parent
            if not parent.is_dir():
                raise StoreError(
                    f"{name}: cannot open the verdryx store: the directory {str(parent)!r} "
                    "does not exist (verdryx creates no directories; create it or pass another "
                    "path with --verdryx-db)"
                )
        try:
            connection = sqlite3.connect(name, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{name}: cannot open the verdryx store: {exc}") from None
        store = cls(connection, name)
        try:
            store._prepare()
        except BaseException:
            connection.close()
            raise
        return store

    def _prepare(self) -> None:
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path}: not a verdryx store (SQLite says: {exc}); "
                "point --verdryx-db or VERDRYX_DB at a verdryx database or a new file"
            ) from None
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: the store has schema version {version}, newer than this "
                f"verdryx understands ({SCHEMA_VERSION}); upgrade verdryx to read it"
            )
        try:
            # Five seconds of patience when another process holds the write lock; first, since
            # switching to WAL below needs the lock too.
            self._db.execute("PRAGMA busy_timeout = 5000")
            # Referential integrity: scores never outlive their run.
            self._db.execute("PRAGMA foreign_keys = ON")
            if self.path != ":memory:":
                # WAL: readers (a report, the CLI) never block the writer at session end.
                self._db.execute("PRAGMA journal_mode = WAL")
                # NORMAL is durable across application crashes in WAL mode, and much faster.
                self._db.execute("PRAGMA synchronous = NORMAL")
            with self._transaction():
                self._run_script(_SCHEMA)
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot prepare the verdryx store: {exc}") from None

    def _run_script(self, script: str) -> None:
        # executescript would COMMIT the open transaction; run statement by statement instead.
        for statement in script.split(";"):
            if _has_sql(statement):
                self._db.execute(statement)

    def close(self) -> None:
        with self._lock:
            self._db.close()

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
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                # SQLite rolls back by itself on some errors (disk full, I/O); a second
                # ROLLBACK would then raise and hide the original error.
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot {action}: {exc}") from None

    # -- runs -------------------------------------------------------------------------------

    def save_run(self, run: EvalRun) -> None:
        """Insert or replace a run and all its scores in one transaction."""
        mean = run.mean_score
        row = (
            run.id,
            run.model,
            run.judge_model,
            run.agent_id or None,
            json.dumps(sorted(run.eval_set_ids)),
            iso_utc(run.started_at),
            iso_utc(run.finished_at) if run.finished_at else None,
            int(run.complete),
            run.plugin_version,
            len(run.measured),
            len(run.unmeasured),
            mean,
            run.total_tokens,
            run.model_cost_usd,
            run.judge_cost_usd,
        )
        score_rows = [_score_row(run.id, seq, score) for seq, score in enumerate(run.scores)]
        with self._errors(f"save run {run.id}"), self._transaction() as db:
            db.execute("DELETE FROM scores WHERE run_id = ?", (run.id,))
            db.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            db.executemany(
                f"INSERT INTO scores ({_SCORE_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                score_rows,
            )

    def load_run(self, run_id: str) -> EvalRun | None:
        with self._errors(f"read run {run_id}"), self._lock:
            row = self._db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                return None
            scores = self._db.execute(
                f"SELECT {_SCORE_COLUMNS} FROM scores WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
        summary = _summary(row)
        return EvalRun(
            id=summary.id,
            model=summary.model,
            judge_model=summary.judge_model,
            agent_id=summary.agent_id,
            eval_set_ids=summary.eval_set_ids,
            started_at=summary.started_at,
            finished_at=summary.finished_at,
            complete=summary.complete,
            plugin_version=row[8],
            scores=tuple(_score_from_row(score) for score in scores),
        )

    def find_run(self, prefix: str) -> EvalRun | None:
        """A run by id or by a unique id prefix (as printed in short form)."""
        run = self.load_run(prefix)
        if run is not None:
            return run
        with self._errors("look up runs"), self._lock:
            # substr, not LIKE: LIKE ignores ASCII case, so 'AB' would find run 'ab...'.
            rows = self._db.execute(
                "SELECT id FROM runs WHERE substr(id, 1, ?) = ? LIMIT 2",
                (len(prefix), prefix),
            ).fetchall()
        if len(rows) > 1:
            raise UsageError(f"run id prefix {prefix!r} is ambiguous; give more characters")
        return self.load_run(rows[0][0]) if rows else None

    def list_runs(
        self,
        *,
        model: str | None = None,
        eval_set_ids: Sequence[str] | None = None,
        agent_id: str | None = None,
        complete_only: bool = False,
        limit: int | None = None,
        before: str | None = None,
    ) -> list[RunSummary]:
        """Runs newest first, filtered; `eval_set_ids` matches the exact set of eval sets."""
        clauses: list[str] = []
        params: list[Any] = []
        if model is not None:
            clauses.append("model = ?")
            params.append(model)
        if eval_set_ids is not None:
            clauses.append("eval_set_ids = ?")
            params.append(json.dumps(sorted(eval_set_ids)))
        if agent_id is not None:
            clauses.append("agent_id = ?")
            params.append(agent_id)
        if complete_only:
            clauses.append("complete = 1")
        if before is not None:
            clauses.append("started_at < ?")
            params.append(before)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = f"SELECT * FROM runs {where} ORDER BY started_at DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._errors("list runs"), self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [_summary(row) for row in rows]

    def case_scores(self, run_ids: Sequence[str]) -> list[Score]:
        """Scores of many runs in one query (history and reports)."""
        if not run_ids:
            return []
        marks = ",".join("?" * len(run_ids))
        with self._errors("read scores"), self._lock:
            rows = self._db.execute(
                f"SELECT {_SCORE_COLUMNS} FROM scores WHERE run_id IN ({marks}) "
                "ORDER BY run_id, seq",
                list(run_ids),
            ).fetchall()
        return [_score_from_row(row) for row in rows]

    def score_records(self) -> list[dict[str, Any]]:
        """One dict per measured case score: agent_id ("" when none), score, last_ts_millis.
        The SLO quality_floor indicator joins these by agent id."""
        with self._errors("read score records"), self._lock:
            rows = self._db.execute(
                "SELECT r.agent_id, s.value, COALESCE(r.finished_at, r.started_at), r.id, "
                "s.eval_set_id, s.case_id FROM scores s JOIN runs r ON r.id = s.run_id "
                "WHERE s.value IS NOT NULL ORDER BY r.started_at, s.run_id, s.seq"
            ).fetchall()
        return [
            {
                "agent_id": agent or "",
                "score": value,
                "last_ts_millis": int(parse_iso(ts).timestamp() * 1000),
                "run_id": run_id,
                "eval_set_id": eval_set_id,
                "case_id": case_id,
            }
            for agent, value, ts, run_id, eval_set_id, case_id in rows
        ]

    # -- baselines --------------------------------------------------------------------------

    def save_baseline(self, baseline: Baseline) -> None:
        with (
            self._errors(f"save baseline {baseline.label or baseline.id}"),
            self._transaction() as db,
        ):
            db.execute("DELETE FROM baseline_cases WHERE baseline_id = ?", (baseline.id,))
            db.execute(
                "INSERT OR REPLACE INTO baselines VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    baseline.id,
                    baseline.label,
                    baseline.run_id,
                    baseline.mean,
                    iso_utc(baseline.created_at),
                    baseline.model,
                    baseline.judge_model,
                    baseline.plugin_version,
                ),
            )
            db.executemany(
                "INSERT INTO baseline_cases VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        baseline.id,
                        case.eval_set_id,
                        case.case_id,
                        case.value,
                        case.fingerprint,
                        None if case.passed is None else int(case.passed),
                    )
                    for case in baseline.cases
                ],
            )

    def get_baseline(self, id_or_label: str) -> Baseline | None:
        """A baseline by id, else the newest with that label."""
        with self._errors(f"read baseline {id_or_label}"), self._lock:
            row = self._db.execute(
                "SELECT * FROM baselines WHERE id = ? OR label = ? "
                "ORDER BY id = ? DESC, created_at DESC LIMIT 1",
                (id_or_label, id_or_label, id_or_label),
            ).fetchone()
            if row is None:
                return None
            cases = self._db.execute(
                "SELECT eval_set_id, case_id, value, fingerprint, passed FROM baseline_cases "
                "WHERE baseline_id = ? ORDER BY rowid",
                (row[0],),
            ).fetchall()
        return Baseline(
            id=row[0],
            label=row[1],
            run_id=row[2],
            mean=row[3],
            created_at=parse_iso(row[4]),
            model=row[5],
            judge_model=row[6],
            plugin_version=row[7],
            cases=tuple(
                BaselineCase(
                    eval_set_id=eval_set_id,
                    case_id=case_id,
                    value=value,
                    fingerprint=fingerprint,
                    passed=None if passed is None else bool(passed),
                )
                for eval_set_id, case_id, value, fingerprint, passed in cases
            ),
        )

    def list_baselines(self) -> list[tuple[str, str, float, datetime]]:
        """(id, label, mean, created_at), newest first."""
        with self._errors("list baselines"), self._lock:
            rows = self._db.execute(
                "SELECT id, label, mean, created_at FROM baselines ORDER BY created_at DESC"
            ).fetchall()
        return [(id_, label, mean, parse_iso(created)) for id_, label, mean, created in rows]

    # -- model response cache ---------------------------------------------------------------

    def cache_get_many(self, keys: Iterable[str]) -> dict[str, tuple[dict[str, Any], float]]:
        """Cached responses for the keys that have one: key -> (response, cost_usd)."""
        keys = list(keys)
        found: dict[str, tuple[dict[str, Any], float]] = {}
        with self._errors("read the model cache"), self._lock:
            for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, response, cost in self._db.execute(
                    f"SELECT key, response, cost_usd FROM model_cache WHERE key IN ({marks})",
                    chunk,
                ):
                    found[key] = (json.loads(response), cost)
        return found

    def cache_put_many(self, entries: Iterable[tuple[str, str, Mapping[str, Any], float]]) -> None:
        """Store (key, model, response, cost_usd) entries in one transaction."""
        now = iso_utc(datetime.now(UTC))
        rows = [
            (key, model, json.dumps(response, ensure_ascii=False), cost, now)
            for key, model, response, cost in entries
        ]
        if not rows:
            return
        with self._errors("write the model cache"), self._transaction() as db:
            db.executemany("INSERT OR REPLACE INTO model_cache VALUES (?, ?, ?, ?, ?)", rows)

    # -- contract verdicts ------------------------------------------------------------------

    def save_contract_verdicts(self, verdicts: Iterable[Mapping[str, Any]]) -> None:
        """Store verdicts (keys: agent_id, task_id, verdict, reason, bundle_hash, run_id)."""
        now = iso_utc(datetime.now(UTC))
        rows = [
            (
                item.get("agent_id") or None,
                item["task_id"],
                item["verdict"],
                item["reason"],
                item.get("bundle_hash"),
                item.get("run_id"),
                item.get("created_at") or now,
            )
            for item in verdicts
        ]
        with self._errors("save contract verdicts"), self._transaction() as db:
            db.executemany(
                "INSERT INTO contract_verdicts "
                "(agent_id, task_id, verdict, reason, bundle_hash, run_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def contract_verdicts(self, agent_id: str | None = None) -> list[dict[str, Any]]:
        """Stored verdicts newest first, optionally for one agent."""
        sql = (
            "SELECT agent_id, task_id, verdict, reason, bundle_hash, run_id, created_at "
            "FROM contract_verdicts"
        )
        params: tuple[Any, ...] = ()
        if agent_id is not None:
            sql += " WHERE agent_id = ?"
            params = (agent_id,)
        sql += " ORDER BY created_at DESC, id DESC"
        with self._errors("read contract verdicts"), self._lock:
            rows = self._db.execute(sql, params).fetchall()
        keys = ("agent_id", "task_id", "verdict", "reason", "bundle_hash", "run_id", "created_at")
        return [dict(zip(keys, row, strict=True)) for row in rows]


def _has_sql(statement: str) -> bool:
    return any(
        line.strip() and not line.strip().startswith("--") for line in statement.splitlines()
    )


def _score_row(run_id: str, seq: int, score: Score) -> tuple[Any, ...]:
    return (
        run_id,
        seq,
        score.eval_set_id,
        score.case_id,
        score.value,
        score.unmeasured,
        score.grader,
        score.tokens,
        score.cost_usd,
        score.judge_cost_usd,
        score.fingerprint,
        None if score.passed is None else int(score.passed),
        json.dumps(list(score.samples)) if score.samples else None,
        score.output,
        score.expected,
        score.reason,
    )


def _score_from_row(row: Sequence[Any]) -> Score:
    return Score(
        eval_set_id=row[2],
        case_id=row[3],
        value=row[4],
        unmeasured=row[5],
        grader=row[6],
        tokens=row[7],
        cost_usd=row[8],
        judge_cost_usd=row[9],
        fingerprint=row[10],
        passed=None if row[11] is None else bool(row[11]),
        samples=tuple(json.loads(row[12])) if row[12] else (),
        output=row[13],
        expected=row[14],
        reason=row[15],
    )


def _summary(row: Sequence[Any]) -> RunSummary:
    return RunSummary(
        id=row[0],
        model=row[1],
        judge_model=row[2],
        agent_id=row[3],
        eval_set_ids=tuple(json.loads(row[4])),
        started_at=parse_iso(row[5]),
        finished_at=parse_iso(row[6]) if row[6] else None,
        complete=bool(row[7]),
        cases=row[9],
        unmeasured=row[10],
        mean_score=row[11],
        total_tokens=row[12],
        model_cost_usd=row[13],
        judge_cost_usd=row[14],
    )
