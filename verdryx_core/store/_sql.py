"""The store's queries, written once for both dialects.

The SQL here is the common subset of SQLite and PostgreSQL: `?` placeholders (the
PostgreSQL dialect turns them into `%s`), upserts as `ON CONFLICT ... DO UPDATE`,
replacements as DELETE then INSERT, and a `rowid` column for save order (SQLite's own; a
BIGSERIAL column of that name in PostgreSQL). The connection, transactions, error wrapping
and free-text encoding are the `Database`'s (`verdryx_core/store/db/`); a backend supplies
its schema and how it recognises and migrates a store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Final

from verdryx_core.errors import StoreError, UsageError
from verdryx_core.limits import cost_problem
from verdryx_core.runs import Baseline, BaselineCase, EvalRun, Score, iso_utc, parse_iso
from verdryx_core.store.base import CacheEntry, RunSummary, Store
from verdryx_core.store.db import Database, marks
from verdryx_core.store.rows import (
    RUN_FIELDS,
    SCORE_FIELDS,
    StoreRowError,
    checks_from_text,
    checks_text,
    essential,
    passes_from_text,
    passes_problem,
    passes_text,
    repair_command,
    repaired_run,
    repaired_score,
    run_problem,
    samples_problem,
    score_problem,
    set_targets_column_problem,
    set_targets_from_text,
    set_targets_text,
    stored_json,
    unit_problem,
)

__all__ = ["RUN_COLUMNS", "SCORE_COLUMNS", "SqlStore"]

# The provenance fields are named vcs_* in SQL: COMMIT is a keyword in both dialects.
RUN_COLUMNS: Final = (
    "id, model, judge_model, agent_id, eval_set_ids, started_at, finished_at, complete, "
    "plugin_version, cases, unmeasured, mean_score, total_tokens, model_cost_usd, "
    "judge_cost_usd, label, vcs_commit, vcs_branch, ci_url, run_group, shard, is_partial, "
    "target, target_version, shard_share, set_targets"
)
SCORE_COLUMNS: Final = (
    "run_id, seq, eval_set_id, case_id, value, unmeasured, grader, tokens, cost_usd, "
    "judge_cost_usd, fingerprint, passed, samples, output, expected, reason, checks, cluster, "
    "failed_by_output, passes"
)
#: Keys per IN (...) query: under SQLite's bound-parameter limit.
_CHUNK: Final = 500


class SqlStore(Store):
    """Everything but the schema and how it is recognised: see the module docstring."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.path = db.name

    @contextmanager
    def batch(self) -> Iterator[None]:
        with self.db.errors("write the store"), self.db.transaction():
            yield

    def close(self) -> None:
        self.db.close()

    # -- runs ----------------------------------------------------------------------------------

    def save_run(self, run: EvalRun) -> None:
        row, score_rows = self._run_rows(run)
        with self.db.errors(f"save run {run.id}"), self.db.transaction():
            # DELETE then INSERT, not an upsert: a replaced run is also the newest saved.
            self.db.execute("DELETE FROM scores WHERE run_id = ?", (run.id,))
            self.db.execute("DELETE FROM runs WHERE id = ?", (run.id,))
            self.db.execute(f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ({marks(26)})", row)
            self.db.insert_rows("scores", SCORE_COLUMNS, score_rows)

    def insert_run(self, run: EvalRun) -> bool:
        row, score_rows = self._run_rows(run)
        with self.db.errors(f"save run {run.id}"), self.db.transaction():
            # ON CONFLICT DO NOTHING: a writer that inserted this id first (and has not yet
            # committed) is waited for, then this insert does nothing: no duplicate-key error.
            inserted = self.db.execute(
                f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ({marks(26)}) "
                "ON CONFLICT (id) DO NOTHING",
                row,
            ).rowcount
            if inserted:
                self.db.insert_rows("scores", SCORE_COLUMNS, score_rows)
        return bool(inserted)

    def _run_rows(self, run: EvalRun) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
        """The run's row and its score rows, its totals checked first."""
        # Refused before anything is written: a sum past what the 64-bit columns keep would
        # otherwise fail inside the driver (an OverflowError) or wrap in a reader's int64.
        problem = run.totals_problem()
        if problem is not None:
            raise StoreError(f"{self.path}: cannot save run {run.id}: {problem} (docs/store.md)")
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
            run.mean_score,
            run.total_tokens,
            run.model_cost_usd,
            run.judge_cost_usd,
            run.label,
            run.commit,
            run.branch,
            run.ci_url,
            run.run_group,
            run.shard,
            int(run.partial),
            run.target,
            run.target_version,
            run.shard_share,
            set_targets_text(run.set_targets),
        )
        return row, [self._score_row(run.id, seq, score) for seq, score in enumerate(run.scores)]

    def load_run(self, run_id: str) -> EvalRun | None:
        with self.db.errors(f"read run {run_id}"), self.db.lock:
            rows = self.db.rows(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
            if not rows:
                return None
            scores = self.db.rows(
                f"SELECT {SCORE_COLUMNS} FROM scores WHERE run_id = ? ORDER BY seq", (run_id,)
            )
        row = rows[0]
        summary = self._summary(row)
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
            scores=tuple(self._score_from_row(score) for score in scores),
            label=summary.label,
            commit=summary.commit,
            branch=summary.branch,
            ci_url=summary.ci_url,
            run_group=summary.run_group,
            shard=summary.shard,
            partial=summary.partial,
            target=summary.target,
            target_version=summary.target_version,
            shard_share=summary.shard_share,
            set_targets=summary.set_targets,
        )

    def find_run(self, prefix: str) -> EvalRun | None:
        run_id = self.run_id_for(prefix)
        return None if run_id is None else self.load_run(run_id)

    def run_id_for(self, prefix: str) -> str | None:
        with self.db.errors("look up runs"):
            if self.db.rows("SELECT 1 FROM runs WHERE id = ?", (prefix,)):
                return prefix
            # substr, not LIKE: LIKE ignores ASCII case (SQLite), so 'AB' would find 'ab...'.
            rows = self.db.rows(
                "SELECT id FROM runs WHERE substr(id, 1, CAST(? AS INTEGER)) = ? LIMIT 2",
                (len(prefix), prefix),
            )
        if len(rows) > 1:
            raise UsageError(f"run id prefix {prefix!r} is ambiguous; give more characters")
        return str(rows[0][0]) if rows else None

    def list_runs(
        self,
        *,
        model: str | None = None,
        eval_set_ids: Sequence[str] | None = None,
        agent_id: str | None = None,
        complete_only: bool = False,
        limit: int | None = None,
        before: str | None = None,
        broken: MutableSequence[StoreRowError] | None = None,
    ) -> list[RunSummary]:
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
        sql = f"SELECT {RUN_COLUMNS} FROM runs {where} ORDER BY started_at DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self.db.errors("list runs"):
            rows = self.db.rows(sql, params)
        summaries = []
        for row in rows:
            try:
                summaries.append(self._summary(row))
            except StoreRowError as exc:
                if broken is None:
                    raise
                broken.append(exc)  # the caller lists the others and names this one
        return summaries

    def list_group_runs(self, run_group: str) -> list[RunSummary]:
        with self.db.errors(f"list the runs of group {run_group}"):
            rows = self.db.rows(
                f"SELECT {RUN_COLUMNS} FROM runs WHERE run_group = ? ORDER BY started_at, rowid",
                (run_group,),
            )
        return [self._summary(row) for row in rows]

    def run_ids(self) -> list[str]:
        with self.db.errors("list runs"):
            return [str(row[0]) for row in self.db.rows("SELECT id FROM runs ORDER BY rowid")]

    def case_scores(self, run_ids: Sequence[str]) -> list[Score]:
        ids = list(run_ids)
        rows: list[Any] = []
        with self.db.errors("read scores"):
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                rows += self.db.rows(
                    f"SELECT {SCORE_COLUMNS} FROM scores WHERE run_id IN ({marks(len(chunk))})",
                    chunk,
                )
        rows.sort(key=lambda row: (row[0], row[1]))
        return [self._score_from_row(row) for row in rows]

    def score_records(self) -> list[dict[str, Any]]:
        with self.db.errors("read score records"):
            rows = self.db.rows(
                "SELECT r.agent_id, s.value, COALESCE(r.finished_at, r.started_at), r.id, "
                "s.eval_set_id, s.case_id FROM scores s JOIN runs r ON r.id = s.run_id "
                "WHERE s.value IS NOT NULL ORDER BY r.started_at, s.run_id, s.seq"
            )
        records = []
        for agent, value, ts, run_id, eval_set_id, case_id in rows:
            problem = unit_problem(value)
            column = "scores.value"
            if problem is None:
                try:
                    millis = int(parse_iso(ts).timestamp() * 1000)
                except (TypeError, ValueError):
                    column, problem = "runs.started_at", f"holds {ts!r}, expected an ISO time"
            if problem is not None:
                raise StoreRowError(
                    self.path,
                    run_id=str(run_id),
                    case=f"{eval_set_id}::{case_id}",
                    column=column,
                    problem=problem,
                    repair=repair_command(
                        self.path, run_id=str(run_id), delete=column == "runs.started_at"
                    ),
                )
            records.append(
                {
                    "agent_id": agent or "",
                    "score": value,
                    "last_ts_millis": millis,
                    "run_id": run_id,
                    "eval_set_id": eval_set_id,
                    "case_id": case_id,
                }
            )
        return records

    # -- baselines -----------------------------------------------------------------------------

    def save_baseline(self, baseline: Baseline) -> None:
        with (
            self.db.errors(f"save baseline {baseline.label or baseline.id}"),
            self.db.transaction(),
        ):
            self.db.execute("DELETE FROM baseline_cases WHERE baseline_id = ?", (baseline.id,))
            self.db.execute("DELETE FROM baselines WHERE id = ?", (baseline.id,))
            self._insert_baseline(baseline, "")

    def insert_baseline(self, baseline: Baseline) -> bool:
        with (
            self.db.errors(f"save baseline {baseline.label or baseline.id}"),
            self.db.transaction(),
        ):
            # As `insert_run`: a concurrent writer of the same id is waited for, not raced.
            return self._insert_baseline(baseline, " ON CONFLICT (id) DO NOTHING")

    def _insert_baseline(self, baseline: Baseline, conflict: str) -> bool:
        inserted = self.db.execute(
            "INSERT INTO baselines (id, label, run_id, mean, created_at, model, judge_model, "
            f"plugin_version, target, target_version, set_targets) VALUES ({marks(11)}){conflict}",
            (
                baseline.id,
                baseline.label,
                baseline.run_id,
                baseline.mean,
                iso_utc(baseline.created_at),
                baseline.model,
                baseline.judge_model,
                baseline.plugin_version,
                baseline.target,
                baseline.target_version,
                set_targets_text(baseline.set_targets),
            ),
        ).rowcount
        if not inserted:
            return False
        rows = [
            (
                baseline.id,
                case.eval_set_id,
                case.case_id,
                case.value,
                case.fingerprint,
                None if case.passed is None else int(case.passed),
                json.dumps(list(case.samples)) if case.samples else None,
                case.cluster,
                passes_text(case.samples, case.passes),
            )
            for case in baseline.cases
        ]
        self.db.insert_rows(
            "baseline_cases",
            "baseline_id, eval_set_id, case_id, value, fingerprint, passed, samples, cluster, "
            "passes",
            rows,
        )
        return True

    def get_baseline(self, id_or_label: str, *, cases: bool = True) -> Baseline | None:
        with self.db.errors(f"read baseline {id_or_label}"), self.db.lock:
            rows = self.db.rows(
                "SELECT id, label, run_id, mean, created_at, model, judge_model, plugin_version, "
                "target, target_version, set_targets FROM baselines WHERE id = ? OR label = ? "
                "ORDER BY CASE WHEN id = ? THEN 0 ELSE 1 END, created_at DESC LIMIT 1",
                (id_or_label, id_or_label, id_or_label),
            )
            if not rows:
                return None
            row = rows[0]
            case_rows = (
                self.db.rows(
                    "SELECT eval_set_id, case_id, value, fingerprint, passed, samples, cluster, "
                    "passes FROM baseline_cases "
                    "WHERE baseline_id = ? ORDER BY rowid",
                    (row[0],),
                )
                if cases
                else []
            )
        self._check_baseline(row, case_rows)
        problem = set_targets_column_problem(row[10])
        if problem is not None:
            raise StoreRowError(
                self.path,
                baseline=str(row[1] or row[0]),
                column="baselines.set_targets",
                problem=problem,
                repair=repair_command(self.path, baseline=str(row[0])),
            )
        return Baseline(
            id=row[0],
            label=row[1],
            run_id=row[2],
            mean=row[3],
            created_at=parse_iso(row[4]),
            model=row[5],
            judge_model=row[6],
            plugin_version=row[7],
            target=row[8],
            target_version=row[9],
            set_targets=set_targets_from_text(row[10]),
            cases=tuple(
                BaselineCase(
                    eval_set_id=eval_set_id,
                    case_id=case_id,
                    value=value,
                    fingerprint=fingerprint,
                    passed=None if passed is None else bool(passed),
                    samples=tuple(float(item) for item in stored_json(samples)) if samples else (),
                    cluster=cluster,
                    passes=passes_from_text(passes),
                )
                for (
                    eval_set_id,
                    case_id,
                    value,
                    fingerprint,
                    passed,
                    samples,
                    cluster,
                    passes,
                ) in case_rows
            ),
        )

    def list_baselines(self) -> list[tuple[str, str, float, datetime]]:
        with self.db.errors("list baselines"):
            rows = self.db.rows(
                "SELECT id, label, mean, created_at FROM baselines "
                "ORDER BY created_at DESC, rowid DESC"
            )
        listed = []
        for id_, label, mean, created in rows:
            self._check_baseline((id_, label, None, mean, created), ())
            listed.append((id_, label, mean, parse_iso(created)))
        return listed

    def _check_baseline(self, row: Sequence[Any], cases: Sequence[Sequence[Any]]) -> None:
        """A baseline's mean, time and case scores as `Baseline` needs them, else a
        StoreRowError naming the baseline, the case and the column."""
        name = str(row[1] or row[0])
        found: tuple[str | None, str, str] | None = None
        if unit_problem(row[3]) is not None:
            found = (None, "baselines.mean", str(unit_problem(row[3])))
        elif not isinstance(row[4], str) or _time(row[4]) is None:
            found = (None, "baselines.created_at", f"holds {row[4]!r}, expected an ISO time")
        else:
            for (
                eval_set_id,
                case_id,
                value,
                _fingerprint,
                _passed,
                samples,
                cluster,
                *rest,
            ) in cases:
                problem = unit_problem(value)
                column = "baseline_cases.value"
                if problem is None:
                    problem, column = samples_problem(samples), "baseline_cases.samples"
                if problem is None and rest:
                    problem, column = passes_problem(rest[0]), "baseline_cases.passes"
                if problem is None and cluster is not None and not isinstance(cluster, str):
                    problem, column = f"holds {cluster!r}, expected text", "baseline_cases.cluster"
                if problem is not None:
                    found = (f"{eval_set_id}::{case_id}", column, str(problem))
                    break
        if found is not None:
            case, column, problem = found
            raise StoreRowError(
                self.path,
                baseline=name,
                case=case,
                column=column,
                problem=problem,
                repair=repair_command(self.path, baseline=str(row[0])),
            )

    # -- model response cache ------------------------------------------------------------------

    def cache_get_many(self, keys: Iterable[str]) -> dict[str, tuple[dict[str, Any], float]]:
        wanted = list(keys)
        found: dict[str, tuple[dict[str, Any], float]] = {}
        with self.db.errors("read the model cache"):
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                for key, response, cost in self.db.rows(
                    "SELECT key, response, cost_usd FROM model_cache "
                    f"WHERE key IN ({marks(len(chunk))})",
                    chunk,
                ):
                    answer = _cached(response, cost)
                    if answer is not None:
                        found[key] = answer
        return found

    def cache_put_many(self, entries: Iterable[CacheEntry]) -> None:
        now = iso_utc(datetime.now(UTC))
        self._cache_write(
            (_cache_row(entry, now) for entry in entries),
            "DO UPDATE SET model = excluded.model, response = excluded.response, "
            "cost_usd = excluded.cost_usd, created_at = excluded.created_at",
        )

    def cache_import(self, entries: Iterable[CacheEntry]) -> None:
        now = iso_utc(datetime.now(UTC))  # for an entry that was never stored (none in a merge)
        # DO NOTHING: the answer already there is kept (a merge keeps the first answer), also
        # when another merge stored it a moment ago.
        self._cache_write(
            (_cache_row(entry, entry.created_at or now) for entry in entries), "DO NOTHING"
        )

    def _cache_write(self, entries: Iterable[tuple[str, str, str, float, str]], then: str) -> None:
        # Sorted by key: two processes upserting overlapping keys lock rows in one order, so
        # they wait for each other instead of deadlocking (PostgreSQL).
        rows = sorted({row[0]: row for row in entries}.values())
        if not rows:
            return
        with self.db.errors("write the model cache"), self.db.transaction():
            self.db.executemany(
                "INSERT INTO model_cache (key, model, response, cost_usd, created_at) "
                f"VALUES ({marks(5)}) ON CONFLICT (key) {then}",
                rows,
            )

    def cache_entries(self) -> Iterator[CacheEntry]:
        with self.db.errors("read the model cache"):
            rows = self.db.rows(
                "SELECT key, model, response, cost_usd, created_at FROM model_cache ORDER BY key"
            )
        for key, model, response, cost, created in rows:
            answer = _cached(response, cost)
            if answer is None or not isinstance(model, str) or not isinstance(created, str):
                continue  # an answer that cannot be read is not copied (see `_cached`)
            yield CacheEntry(
                key=key,
                model=model,
                response=answer[0],
                cost_usd=answer[1],
                created_at=created,
            )

    # -- repair (docs/store.md, "Rows that cannot be read") -----------------------------------

    def repair_run(self, run_id: str) -> list[str] | None:
        with self.db.errors(f"repair run {run_id}"), self.db.transaction():
            rows = self.db.rows(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
            if not rows:
                return None
            problem = run_problem(rows[0])
            if problem is not None and essential(problem[0]):
                raise self._broken_run(rows[0], problem)
            changed: list[str] = []
            scores = []
            for row in self.db.rows(
                f"SELECT {SCORE_COLUMNS} FROM scores WHERE run_id = ? ORDER BY seq", (run_id,)
            ):
                fields, what = repaired_score(row)
                scores.append(fields)
                if what:
                    case = f"{row[2]}::{row[3]}"
                    changed += [f"case {case}: {item}" for item in what]
                    score_names = SCORE_FIELDS[2:]
                    self.db.execute(
                        f"UPDATE scores SET {', '.join(f'{name} = ?' for name in score_names)} "
                        "WHERE run_id = ? AND seq = ?",
                        [
                            *(
                                self.db.text_in(fields[name])
                                if name in ("output", "expected", "reason")
                                else fields[name]
                                for name in score_names
                            ),
                            row[0],
                            row[1],
                        ],
                    )
            run_fields, what = repaired_run(rows[0], scores)
            if what:
                changed += what
                run_names = RUN_FIELDS[1:]
                self.db.execute(
                    f"UPDATE runs SET {', '.join(f'{name} = ?' for name in run_names)} "
                    "WHERE id = ?",
                    [*(run_fields[name] for name in run_names), rows[0][0]],
                )
        return changed

    def delete_run(self, run_id: str) -> bool:
        with self.db.errors(f"remove run {run_id}"), self.db.transaction():
            self.db.execute("DELETE FROM scores WHERE run_id = ?", (run_id,))
            return self.db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount > 0

    def delete_baseline(self, baseline_id: str) -> bool:
        with self.db.errors(f"remove baseline {baseline_id}"), self.db.transaction():
            self.db.execute("DELETE FROM baseline_cases WHERE baseline_id = ?", (baseline_id,))
            cursor = self.db.execute("DELETE FROM baselines WHERE id = ?", (baseline_id,))
            return cursor.rowcount > 0

    def _summary(self, row: Sequence[Any]) -> RunSummary:
        """A run row as a RunSummary, each column checked first (`store/rows.py`)."""
        problem = run_problem(row)
        if problem is not None:
            raise self._broken_run(row, problem)
        return _summary(row)

    def _broken_run(self, row: Sequence[Any], problem: tuple[str, str]) -> StoreRowError:
        column, why = problem
        run_id = str(row[0])
        return StoreRowError(
            self.path,
            run_id=run_id,
            column=column,
            problem=why,
            repair=repair_command(self.path, run_id=run_id, delete=essential(column)),
        )

    # -- rows ----------------------------------------------------------------------------------

    def _score_row(self, run_id: str, seq: int, score: Score) -> tuple[Any, ...]:
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
            self.db.text_in(score.output),
            self.db.text_in(score.expected),
            self.db.text_in(score.reason),
            checks_text(score.checks),
            score.cluster,
            score.failed_by_output,
            passes_text(score.samples, score.sample_passes()),
        )

    def _score_from_row(self, row: Sequence[Any]) -> Score:
        """A stored score row as a Score, each column checked first (`store/rows.py`): a row
        out of range is a StoreRowError naming the run, the case and the column."""
        problem = score_problem(row)
        if problem is not None:
            column, why = problem
            run_id = str(row[0])
            raise StoreRowError(
                self.path,
                run_id=run_id,
                case=f"{row[2]}::{row[3]}",
                column=column,
                problem=why,
                repair=repair_command(self.path, run_id=run_id),
            )
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
            samples=tuple(float(item) for item in stored_json(row[12])) if row[12] else (),
            output=self.db.text_out(row[13]),
            expected=self.db.text_out(row[14]),
            reason=self.db.text_out(row[15]),
            checks=checks_from_text(row[16]),
            cluster=row[17],
            failed_by_output=row[18],
            passes=passes_from_text(row[19]),
        )


def _cache_row(entry: CacheEntry, created_at: str) -> tuple[str, str, str, float, str]:
    return (
        entry.key,
        entry.model,
        json.dumps(entry.response, ensure_ascii=False),
        entry.cost_usd,
        created_at,
    )


def _cached(response: Any, cost: Any) -> tuple[dict[str, Any], float] | None:
    """A cache row's answer and cost; None when it cannot be read. Such a row is a miss,
    not an error: the call is made again and its fresh answer replaces the row (answers are
    kept to save money, not as a record)."""
    if cost_problem(cost) is not None or not isinstance(response, str):
        return None
    try:
        answer = stored_json(response)
    except ValueError:
        return None
    return (answer, float(cost)) if isinstance(answer, dict) else None


def _time(text: str) -> datetime | None:
    try:
        return parse_iso(text)
    except ValueError:
        return None


def _summary(row: Sequence[Any]) -> RunSummary:
    return RunSummary(
        id=row[0],
        model=row[1],
        judge_model=row[2],
        agent_id=row[3],
        eval_set_ids=tuple(stored_json(row[4])),
        started_at=parse_iso(row[5]),
        finished_at=parse_iso(row[6]) if row[6] else None,
        complete=bool(row[7]),
        cases=row[9],
        unmeasured=row[10],
        mean_score=row[11],
        total_tokens=row[12],
        model_cost_usd=row[13],
        judge_cost_usd=row[14],
        label=row[15],
        commit=row[16],
        branch=row[17],
        ci_url=row[18],
        run_group=row[19],
        shard=row[20],
        partial=bool(row[21]),
        target=row[22],
        target_version=row[23],
        shard_share=row[24],
        set_targets=set_targets_from_text(row[25]),
    )
