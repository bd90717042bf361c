"""The store, on both backends: round trips, a model-agreement state machine, atomic saves,
migrations, refusals, and the path resolution order of docs/store.md.

Real SQLite files in tmp_path and a real PostgreSQL server (a fresh schema per test; skipped
only when VERDRYX_TEST_POSTGRES_URL is unset); the only failure injection is through the
store's own methods or through rows the database itself refuses.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from tests.store_support import (
    BACKENDS,
    ENV,
    fresh_schema,
    needs_postgres,
    postgres_url,
    store_target,
    table_count,
)
from verdryx_core.addons.contracts.history import save_verdicts, verdicts
from verdryx_core.errors import StoreError, UsageError, VerdryxError
from verdryx_core.runs import Baseline, BaselineCase, EvalRun, Score
from verdryx_core.store import (
    SCHEMA_VERSION,
    CacheEntry,
    Store,
    StoreTarget,
    StoreUrl,
    redact,
    resolve_store_path,
)
from verdryx_core.store.db import SqliteDb
from verdryx_core.store.postgres import PostgresStore
from verdryx_core.store.sqlite import SqliteStore

T0 = datetime(2025, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)


def make_score(case_id: str, value: float | None, **extra: object) -> Score:
    fields: dict[str, object] = {
        "case_id": case_id,
        "eval_set_id": "support",
        "value": value,
        "grader": "exact",
    }
    if value is None:
        fields["unmeasured"] = "the judge gave no number"
    fields.update(extra)
    return Score(**fields)  # type: ignore[arg-type]


def make_run(run_id: str, values: list[float | None], **extra: object) -> EvalRun:
    fields: dict[str, object] = {
        "id": run_id,
        "model": "stub",
        "started_at": T0,
        "finished_at": T0 + timedelta(seconds=3),
        "eval_set_ids": ("support",),
        "scores": tuple(make_score(f"c{i}", v) for i, v in enumerate(values)),
    }
    fields.update(extra)
    return EvalRun(**fields)  # type: ignore[arg-type]


def one_line_store_error(excinfo: pytest.ExceptionInfo[StoreError], path: object) -> str:
    message = str(excinfo.value)
    assert isinstance(excinfo.value, VerdryxError)
    assert "\n" not in message
    assert str(path) in message, message
    return message


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
    """Where a new store goes: a SQLite file, or a fresh PostgreSQL schema."""
    with store_target(request.param, tmp_path) as where:
        yield where


# -- round trips -----------------------------------------------------------------------------


def test_a_run_round_trips_with_every_field(target: StoreTarget) -> None:
    scores = (
        make_score(
            "refund",
            0.75,
            tokens=120,
            cost_usd=0.0125,
            judge_cost_usd=0.002,
            fingerprint="f" * 64,
            passed=True,
            samples=(0.5, 1.0),
            output="Refunds within 30 days \u2713\x00tail",
            expected="within 30 days",
            reason="judge: mostly right",
            grader="llm_judge",
        ),
        make_score("unmeasured-one", None, grader="typed", tokens=7, judge_cost_usd=0.01),
        make_score("failed", 0.0, passed=False, eval_set_id="tools"),
    )
    run = EvalRun(
        id="run-1",
        model="claude-x",
        judge_model="stub",
        agent_id="agent-7",
        started_at=datetime(2025, 3, 1, 14, 0, tzinfo=timezone(timedelta(hours=2))),
        finished_at=None,
        eval_set_ids=("tools", "support"),
        scores=scores,
        complete=False,
        plugin_version="0.2.0",
    )
    with Store.open(target) as store:
        store.save_run(run)
    with Store.open(target) as store:
        loaded = store.load_run("run-1")
        summary = store.list_runs()[0]
    assert loaded == run
    assert loaded is not None and loaded.unmeasured[0].unmeasured == "the judge gave no number"
    assert summary.cases == 2 and summary.unmeasured == 1
    assert summary.mean_score == pytest.approx(0.375)
    assert summary.total_tokens == 127
    assert summary.model_cost_usd == pytest.approx(0.0125)
    assert summary.judge_cost_usd == pytest.approx(0.012)
    assert summary.complete is False
    assert summary.eval_set_ids == ("support", "tools")
    assert summary.to_dict()["run_id"] == "run-1"


def test_a_run_with_nothing_measured_has_no_mean(target: StoreTarget) -> None:
    with Store.open(target) as store:
        store.save_run(make_run("r", [None, None]))
        assert store.list_runs()[0].mean_score is None
        loaded = store.load_run("r")
    assert loaded is not None and loaded.mean_score is None and len(loaded.unmeasured) == 2


def test_saving_a_run_again_replaces_it(target: StoreTarget) -> None:
    with Store.open(target) as store:
        store.save_run(make_run("r", [1.0, 1.0, 1.0]))
        store.save_run(make_run("r", [0.0]))
        loaded = store.load_run("r")
        assert [s.value for s in loaded.scores] == [0.0] if loaded else False
        assert len(store.list_runs()) == 1
        assert store.load_run("missing") is None


def test_list_runs_filters_and_orders_newest_first(target: StoreTarget) -> None:
    with Store.open(target) as store:
        store.save_run(make_run("old", [1.0], started_at=T0))
        store.save_run(make_run("new", [0.5], started_at=T0 + timedelta(hours=1)))
        store.save_run(make_run("other-model", [0.5], model="m2", started_at=T0))
        store.save_run(make_run("partial", [0.5], complete=False, started_at=T0))
        store.save_run(
            make_run("two-sets", [0.5], eval_set_ids=("tools", "support"), started_at=T0)
        )
        assert [r.id for r in store.list_runs(model="stub", eval_set_ids=["support"])] == [
            "new",
            "partial",
            "old",
        ]
        assert [r.id for r in store.list_runs(complete_only=True, limit=2)] == [
            "new",
            "two-sets",
        ]
        assert [r.id for r in store.list_runs(eval_set_ids=["support", "tools"])] == ["two-sets"]
        before = store.list_runs(before=(T0 + timedelta(minutes=1)).isoformat())
        assert "new" not in {r.id for r in before} and len(before) == 4
        scores = store.case_scores(["old", "new"])
        assert sorted(s.value for s in scores) == [0.5, 1.0]
        assert store.case_scores([]) == []


def test_find_run_by_unique_exact_prefix(target: StoreTarget) -> None:
    with Store.open(target) as store:
        store.save_run(make_run("abc123", [1.0]))
        store.save_run(make_run("abd456", [1.0]))
        store.save_run(make_run("a_%x", [1.0]))
        assert store.find_run("abc").id == "abc123"  # type: ignore[union-attr]
        assert store.find_run("abd456").id == "abd456"  # type: ignore[union-attr]
        # LIKE would ignore case and read _ and % as wildcards.
        assert store.find_run("ABC") is None
        assert store.find_run("a_%").id == "a_%x"  # type: ignore[union-attr]
        assert store.find_run("zzz") is None
        with pytest.raises(UsageError, match="ambiguous"):
            store.find_run("ab")


def test_baselines_round_trip_with_their_cases(target: StoreTarget) -> None:
    run = make_run("r", [0.25, None, 1.0])
    baseline = Baseline.from_run(run, id="b-1", label="v1", created_at=T0)
    assert [c.case_id for c in baseline.cases] == ["c0", "c2"]  # unmeasured cases left out
    assert baseline.mean == pytest.approx(0.625)
    newer = Baseline.from_run(
        make_run("r2", [0.5]), id="b-2", label="v1", created_at=T0 + timedelta(days=1)
    )
    with Store.open(target) as store:
        store.save_baseline(baseline)
        store.save_baseline(newer)
    with Store.open(target) as store:
        assert store.get_baseline("b-1") == baseline
        assert store.get_baseline("v1") == newer  # a label means its newest baseline
        assert store.get_baseline("v2") is None
        assert [row[0] for row in store.list_baselines()] == ["b-2", "b-1"]


def test_a_baseline_needs_a_measured_case() -> None:
    with pytest.raises(ValueError, match="zero measured cases"):
        Baseline.from_run(make_run("r", [None]), id="b", label="v1")


def test_the_model_cache_round_trips(target: StoreTarget) -> None:
    response = {"text": "h\u00e9llo", "tool_names": ["a"], "tokens": 12}
    with Store.open(target) as store:
        store.cache_put_many(
            [
                CacheEntry(key="k1", model="stub", response=response, cost_usd=0.5),
                CacheEntry(key="k2", model="stub", response={"text": ""}, cost_usd=0.0),
            ]
        )
        store.cache_put_many([])
    with Store.open(target) as store:
        found = store.cache_get_many(["k1", "k2", "absent"])
        many = store.cache_get_many([f"key-{i}" for i in range(1200)])  # beyond one chunk
    assert found == {"k1": (response, 0.5), "k2": ({"text": ""}, 0.0)}
    assert many == {}


# -- atomicity -------------------------------------------------------------------------------


def test_a_run_whose_score_violates_a_constraint_leaves_nothing(target: StoreTarget) -> None:
    bad = make_score("bad", 0.5, grader=None)  # NOT NULL: SQLite refuses the third row
    run = make_run("r", [1.0, 1.0])
    broken = EvalRun(
        id="r2", model="stub", started_at=T0, scores=(*run.scores, bad), eval_set_ids=("s",)
    )
    with Store.open(target) as store:
        store.save_run(run)
        with pytest.raises(StoreError) as info:
            store.save_run(broken)
        assert "r2" in one_line_store_error(info, target)
        assert store.load_run("r2") is None
        assert store.case_scores(["r2"]) == []
        assert [r.id for r in store.list_runs()] == ["r"]
        # A failed replacement keeps the run it would have replaced, scores and all.
        replacement = EvalRun(id="r", model="stub", started_at=T0, scores=(bad,))
        with pytest.raises(StoreError):
            store.save_run(replacement)
        assert store.load_run("r") == run
        # The store is still usable after the rollback.
        store.save_run(make_run("r3", [0.5]))
        assert {r.id for r in store.list_runs()} == {"r", "r3"}


def interrupted(backend: type[SqliteStore | PostgresStore]) -> type[Store]:
    """The backend, as if its process were interrupted after a transaction's rows were
    written but before COMMIT."""

    class InterruptedDb(backend.database):  # type: ignore[name-defined,misc]
        def _commit(self) -> None:
            if self.execute("SELECT count(*) FROM scores").fetchone()[0]:
                raise KeyboardInterrupt
            super()._commit()

    class Interrupted(backend):  # type: ignore[valid-type,misc]
        database = InterruptedDb

    return Interrupted


def backend_of(target: StoreTarget) -> type[SqliteStore | PostgresStore]:
    return PostgresStore if isinstance(target, StoreUrl) else SqliteStore


def test_an_interrupt_before_commit_leaves_no_partial_run(target: StoreTarget) -> None:
    with interrupted(backend_of(target)).open(target) as store:
        with pytest.raises(KeyboardInterrupt):
            store.save_run(make_run("r", [1.0, 0.0, None]))
        assert store.load_run("r") is None
        # The store is usable after the rollback.
        store.save_baseline(Baseline.from_run(make_run("r", [1.0]), id="b", label="v1"))
    with Store.open(target) as store:
        assert store.list_runs() == [] and store.case_scores(["r"]) == []
        assert store.get_baseline("b") is not None


def test_a_batch_is_one_transaction(target: StoreTarget) -> None:
    with Store.open(target) as store:
        with pytest.raises(StoreError), store.batch():
            store.save_run(make_run("first", [1.0]))
            store.save_run(make_run("second", [0.5], model=None))  # NOT NULL: refused
        assert store.list_runs() == []
        with store.batch():
            store.save_run(make_run("first", [1.0]))
            store.save_run(make_run("second", [0.5]))
        assert store.run_ids() == ["first", "second"]


def test_provenance_round_trips_and_a_group_lists_its_runs(target: StoreTarget) -> None:
    shard = {"run_group": "pipeline-41", "commit": "a" * 40, "branch": "main", "label": "nightly"}
    runs = [
        make_run(
            f"s{i}",
            [1.0],
            started_at=T0 + timedelta(minutes=3 - i),
            shard=f"{i}/3",
            partial=True,
            ci_url=f"https://ci.example/job/{i}",
            **shard,
        )
        for i in (1, 2, 3)
    ]
    with Store.open(target) as store:
        for run in runs:
            store.save_run(run)
        store.save_run(make_run("other", [1.0], run_group="pipeline-42"))
        store.save_run(make_run("plain", [1.0]))
    with Store.open(target) as store:
        assert store.load_run("s2") == runs[1]
        assert store.load_run("plain") == make_run("plain", [1.0])
        group = store.list_group_runs("pipeline-41")
        assert [r.id for r in group] == ["s3", "s2", "s1"]  # oldest first
        assert {(r.shard, r.partial, r.commit) for r in group} == {
            (f"{i}/3", True, "a" * 40) for i in (1, 2, 3)
        }
        assert store.list_group_runs("nope") == []
    assert EvalRun.from_dict(runs[0].to_dict()) == runs[0]
    assert EvalRun.from_dict({k: v for k, v in runs[0].to_dict().items() if k != "partial"}) == (
        EvalRun(**{**_fields(runs[0]), "partial": False})
    )


def _fields(run: EvalRun) -> dict[str, object]:
    return {name: getattr(run, name) for name in run.__dataclass_fields__}


# -- PRAGMAs and refusals --------------------------------------------------------------------


def test_wal_and_the_schema_version_are_set(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    with Store.open(path):
        pass
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        connection.close()


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    content = b"these are my notes, not a database\n" * 20
    path.write_bytes(content)
    with pytest.raises(StoreError) as info:
        Store.open(path)
    assert "not a verdryx store" in one_line_store_error(info, path)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def another_apps_file(path: Path, *, table: str = "customers") -> bytes:
    """A SQLite file another application made (rollback journal, its own table)."""
    connection = sqlite3.connect(path)
    connection.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name TEXT)")
    connection.execute(f"INSERT INTO {table} (name) VALUES ('ada')")
    connection.commit()
    connection.close()
    return path.read_bytes()


@pytest.mark.parametrize("table", ["customers", "runs"])
def test_another_applications_sqlite_file_is_refused_unchanged(tmp_path: Path, table: str) -> None:
    # "runs": a table of verdryx's name but not its shape is no verdryx store either.
    path = tmp_path / "app.db"
    content = another_apps_file(path, table=table)
    for read_only in (False, True):
        with pytest.raises(StoreError) as info:
            Store.open(path, read_only=read_only)
        message = one_line_store_error(info, path)
        assert "not a verdryx store" in message and table in message
    assert path.read_bytes() == content  # no table, no user_version, no WAL switch
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal, no -shm
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        connection.close()


def test_an_empty_sqlite_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    path.touch()
    with Store.open(path) as store:
        store.save_run(make_run("r", [1.0]))
    assert schema_of(path)[0] == SCHEMA_VERSION


def test_reading_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "missing.db"
    with pytest.raises(StoreError) as info:
        Store.open(path, read_only=True)
    assert "no verdryx store" in one_line_store_error(info, path)
    assert list(tmp_path.iterdir()) == []


def test_reading_an_empty_file_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(StoreError) as info:
        Store.open(path, read_only=True)
    assert "no verdryx store" in one_line_store_error(info, path)
    assert path.read_bytes() == b"" and list(tmp_path.iterdir()) == [path]


def test_a_version_1_store_is_not_migrated_read_only(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    shutil.copyfile(FIXTURES / "store_v1.db", path)
    path.chmod(0o444)
    if os.access(path, os.W_OK):
        pytest.skip("this user writes read-only files (root)")
    with pytest.raises(StoreError) as info:
        Store.open(path, read_only=True)
    assert "cannot be migrated read-only" in one_line_store_error(info, path)


def test_error_messages_name_the_fact_not_a_flag(tmp_path: Path) -> None:
    path = tmp_path / "no" / "v.db"
    with pytest.raises(StoreError) as info:
        Store.open(path)
    assert "--" not in str(info.value)


def test_a_store_stamped_newer_than_the_build_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    connection = sqlite3.connect(path)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.close()
    with pytest.raises(StoreError) as info:
        Store.open(path)
    message = one_line_store_error(info, path)
    assert f"version {SCHEMA_VERSION + 1}" in message and "upgrade verdryx" in message
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    finally:
        connection.close()


def test_a_store_in_a_missing_directory_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "dir" / "v.db"
    with pytest.raises(StoreError) as info:
        Store.open(path)
    message = one_line_store_error(info, path)
    assert "does not exist" in message
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as info:
        Store.open(tmp_path)
    one_line_store_error(info, tmp_path)


def test_a_closed_store_raises_a_store_error(tmp_path: Path) -> None:
    with Store.open(tmp_path / "v.db") as store:
        pass
    with pytest.raises(StoreError, match=r"v\.db"):
        store.list_runs()


FIXTURES = Path(__file__).parent / "fixtures"


def schema_of(path: Path) -> tuple[int, list[str], list[str]]:
    """(user_version, tables, columns of runs) of a SQLite file, read without changing it."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        columns = [row[1] for row in connection.execute("PRAGMA table_info(runs)")]
    finally:
        connection.close()
    return version, tables, columns


def test_a_version_1_store_migrates_and_keeps_everything(tmp_path: Path) -> None:
    # store_v1.db was written by verdryx 0.2.0 (schema version 1) and committed as it was.
    path = tmp_path / "v.db"
    shutil.copyfile(FIXTURES / "store_v1.db", path)
    assert schema_of(path)[0] == 1
    with Store.open(path) as store:
        runs = [store.load_run("v1-run-0"), store.load_run("v1-run-1")]
        assert all(run is not None and len(run.scores) == 3 for run in runs)
        assert runs[1] is not None and runs[1].scores[2].unmeasured == "no number"
        assert runs[1].label is None and runs[1].partial is False
        baseline = store.get_baseline("v1")
        assert baseline is not None and baseline.run_id == "v1-run-1"
        assert store.cache_get_many(["k1"]) == {"k1": ({"text": "hello"}, 0.25)}
        assert [v["task_id"] for v in verdicts(store, "agent-1")] == ["t1"]
        # A migrated store takes the new fields.
        store.save_run(make_run("new", [1.0], run_group="g", shard="1/2", partial=True))
        assert [r.id for r in store.list_group_runs("g")] == ["new"]
    version, tables, columns = schema_of(path)
    assert version == SCHEMA_VERSION and "verdryx_meta" in tables
    assert {"label", "vcs_commit", "run_group", "shard", "is_partial"} <= set(columns)


class DiesAtCommit(SqliteDb):
    """A connection whose process dies as it commits."""

    def _commit(self) -> None:
        raise KeyboardInterrupt


class FailingMigration(SqliteStore):
    """A store whose process dies as the migration commits."""

    database = DiesAtCommit


def test_a_migration_is_one_transaction(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    shutil.copyfile(FIXTURES / "store_v1.db", path)
    before = schema_of(path)
    with pytest.raises(KeyboardInterrupt):
        FailingMigration.open(path)
    assert schema_of(path) == before  # still version 1, no column or table added
    with Store.open(path) as store:
        assert store.load_run("v1-run-0") is not None


def test_a_new_store_is_the_migrated_schema(tmp_path: Path) -> None:
    new, migrated = tmp_path / "new.db", tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "store_v1.db", migrated)
    for path in (new, migrated):
        with Store.open(path) as store:
            # The contract verdicts table is the contracts add-on's now: the version-1 store
            # has it from when the store made it, the new one once a verdict is saved.
            save_verdicts(store, [{"task_id": "t", "verdict": "PASS", "reason": ""}])
    assert schema_of(new) == schema_of(migrated)


def test_a_reader_sees_only_committed_runs(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    with Store.open(path) as writer, Store.open(path) as reader:
        writer.save_run(make_run("r1", [1.0]))
        assert [r.id for r in reader.list_runs()] == ["r1"]
        writer.save_run(make_run("r2", [1.0]))
        assert {r.id for r in reader.list_runs()} == {"r1", "r2"}


# -- path resolution (docs/options.md) ---------------------------------------------------


def test_the_flag_wins(tmp_path: Path) -> None:
    env = {"VERDRYX_DB": "/env.db", "TAIPAN_HOME": str(tmp_path), "HOME": str(tmp_path)}
    assert resolve_store_path("flag.db", env) == Path("flag.db")


def test_verdryx_db_is_taken_verbatim_even_if_missing(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere" / "x.db")
    env = {"VERDRYX_DB": missing, "TAIPAN_HOME": str(tmp_path)}
    assert resolve_store_path(None, env) == Path(missing)
    assert not (tmp_path / "nowhere").exists()


def test_taipan_home_only_when_it_is_a_directory(tmp_path: Path) -> None:
    assert resolve_store_path(None, {"TAIPAN_HOME": str(tmp_path)}) == tmp_path / "verdryx.db"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    missing = tmp_path / "missing"
    for home in (a_file, missing):
        # A TAIPAN_HOME that is not a folder falls through to ./verdryx.db, not ~/.taipan.
        env = {"TAIPAN_HOME": str(home), "HOME": str(tmp_path)}
        assert resolve_store_path(None, env) == Path("verdryx.db")
    assert not missing.exists()


def test_the_default_taipan_home_is_dot_taipan_under_home(tmp_path: Path) -> None:
    assert resolve_store_path(None, {"HOME": str(tmp_path)}) == Path("verdryx.db")
    (tmp_path / ".taipan").mkdir()
    assert resolve_store_path(None, {"HOME": str(tmp_path)}) == tmp_path / ".taipan" / "verdryx.db"


def test_empty_values_are_unset(tmp_path: Path) -> None:
    env = {"VERDRYX_DB": "", "TAIPAN_HOME": str(tmp_path)}
    assert resolve_store_path("", env) == tmp_path / "verdryx.db"


# -- the store agrees with an in-memory model (hypothesis stateful) ---------------------------

_RUN_IDS = st.sampled_from(["r1", "r2", "r3", "r4"])
_TIMES = st.integers(0, 3).map(lambda minutes: T0 + timedelta(minutes=minutes))
_values = st.one_of(st.none(), st.floats(0.0, 1.0))
_labels = st.sampled_from(["v1", "v2", "b1"])  # "b1" is also a baseline id: ids win
_BASELINE_IDS = st.sampled_from(["b1", "b2", "b3"])


class StoreAgreesWithAModel(RuleBasedStateMachine):
    """Runs and baselines saved, replaced and read: the store must say what a dict says."""

    runs_saved = Bundle("runs_saved")

    backend = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="verdryx-state-")
        self._target = store_target(self.backend, Path(self.directory))
        self.path = self._target.__enter__()
        self.store = Store.open(self.path)
        self.runs: dict[str, tuple[EvalRun, int]] = {}  # id -> (run, save counter)
        self.baselines: dict[str, tuple[Baseline, int]] = {}
        self.saves = 0

    @initialize()
    def empty(self) -> None:
        assert self.store.list_runs() == []

    @rule(
        target=runs_saved,
        run_id=_RUN_IDS,
        started=_TIMES,
        values=st.lists(_values, max_size=4),
        model=st.sampled_from(["stub", "m2"]),
        complete=st.booleans(),
        output=st.one_of(st.none(), st.text(max_size=5)),
    )
    def save_run(
        self,
        run_id: str,
        started: datetime,
        values: list[float | None],
        model: str,
        complete: bool,
        output: str | None,
    ) -> str:
        scores = tuple(make_score(f"c{i}", v, output=output) for i, v in enumerate(values))
        run = EvalRun(id=run_id, model=model, started_at=started, scores=scores, complete=complete)
        self.store.save_run(run)
        self.saves += 1
        self.runs[run_id] = (run, self.saves)
        return run_id

    @rule(run_id=runs_saved)
    def load_saved_run(self, run_id: str) -> None:
        assert self.store.load_run(run_id) == self.runs[run_id][0]

    @rule(run_id=_RUN_IDS)
    def load_any_run(self, run_id: str) -> None:
        expected = self.runs.get(run_id)
        assert self.store.load_run(run_id) == (expected[0] if expected else None)

    @rule(model=st.one_of(st.none(), st.sampled_from(["stub", "m2"])), complete=st.booleans())
    def list_runs(self, model: str | None, complete: bool) -> None:
        # Newest first; among runs started at the same moment, the last saved first.
        wanted = [
            (run, counter)
            for run, counter in self.runs.values()
            if (model is None or run.model == model) and (run.complete or not complete)
        ]
        wanted.sort(key=lambda item: (item[0].started_at, item[1]), reverse=True)
        listed = self.store.list_runs(model=model, complete_only=complete)
        assert [s.id for s in listed] == [run.id for run, _ in wanted]
        for summary, (run, _) in zip(listed, wanted, strict=True):
            assert summary.mean_score == run.mean_score
            assert summary.cases == len(run.measured)

    @rule(
        baseline_id=_BASELINE_IDS,
        label=_labels,
        run_values=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3),
        created=_TIMES,
    )
    def save_baseline(
        self, baseline_id: str, label: str, run_values: list[float], created: datetime
    ) -> None:
        run = make_run(f"run-of-{baseline_id}", list(run_values))
        baseline = Baseline.from_run(run, id=baseline_id, label=label, created_at=created)
        self.store.save_baseline(baseline)
        self.saves += 1
        self.baselines[baseline_id] = (baseline, self.saves)

    @rule(name=st.one_of(_BASELINE_IDS, _labels, st.just("nope")))
    def get_baseline(self, name: str) -> None:
        found = self.store.get_baseline(name)
        if name in self.baselines:
            assert found == self.baselines[name][0]
            return
        labelled = [b for b, _ in self.baselines.values() if b.label == name]
        if not labelled:
            assert found is None
            return
        newest = max(b.created_at for b in labelled)
        # Several baselines of one label created at the same moment: any of them.
        assert found in [b for b in labelled if b.created_at == newest]

    @invariant()
    def baselines_listed(self) -> None:
        listed = self.store.list_baselines()
        assert sorted(row[0] for row in listed) == sorted(self.baselines)
        created = [row[3] for row in listed]
        assert created == sorted(created, reverse=True)

    @precondition(lambda self: bool(self.runs))
    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = Store.open(self.path)

    def teardown(self) -> None:
        self.store.close()
        self._target.__exit__(None, None, None)
        shutil.rmtree(self.directory, ignore_errors=True)


class PostgresStoreAgreesWithAModel(StoreAgreesWithAModel):
    """The same machine on PostgreSQL, a fresh schema per example."""

    backend = "postgres"


_MACHINE_SETTINGS = settings(
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
StoreAgreesWithAModel.TestCase.settings = _MACHINE_SETTINGS
PostgresStoreAgreesWithAModel.TestCase.settings = _MACHINE_SETTINGS
test_store_agrees_with_a_model = StoreAgreesWithAModel.TestCase


@pytest.mark.skipif(not postgres_url(), reason=f"{ENV} is unset")
class TestPostgresStoreAgreesWithAModel(PostgresStoreAgreesWithAModel.TestCase):  # type: ignore[misc,valid-type]
    pass


def test_scores_survive_the_round_trip_as_json(tmp_path: Path) -> None:
    run = make_run("r", [0.1, None], agent_id="")
    assert EvalRun.from_dict(run.to_dict()) == run
    with Store.open(tmp_path / "v.db") as store:
        store.save_run(run)
        assert store.load_run("r") == run
    assert BaselineCase.from_dict(BaselineCase(eval_set_id="s", case_id="c", value=1).to_dict())


# -- PostgreSQL: refusals, redaction, many writers -------------------------------------------


def test_a_postgres_schema_of_another_application_is_refused_unchanged() -> None:
    import psycopg

    with fresh_schema(needs_postgres()) as url:
        with psycopg.connect(url.url, autocommit=True) as admin:
            admin.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY)")
        for read_only in (False, True):
            with pytest.raises(StoreError) as info:
                Store.open(url, read_only=read_only)
            message = one_line_store_error(info, url)
            assert "not a verdryx store" in message and "customers" in message
        assert table_count(url) == 1


def test_an_empty_postgres_schema_is_no_store_to_read() -> None:
    with fresh_schema(needs_postgres()) as url:
        with pytest.raises(StoreError) as info:
            Store.open(url, read_only=True)
        assert "no verdryx store" in one_line_store_error(info, url)
        assert table_count(url) == 0


def test_a_postgres_store_newer_than_the_build_is_refused() -> None:
    import psycopg

    with fresh_schema(needs_postgres()) as url:
        Store.open(url).close()
        with psycopg.connect(url.url, autocommit=True) as admin:
            admin.execute("UPDATE verdryx_meta SET value = '99' WHERE key = 'schema_version'")
        with pytest.raises(StoreError) as info:
            Store.open(url)
        assert "version 99" in one_line_store_error(info, url)


def test_a_password_never_appears_in_messages() -> None:
    base = needs_postgres()
    secret = "s3cr3t-Pa55"
    parts = urlsplit(base)
    host = f"verdryx:{secret}@127.0.0.1:1"  # nothing listens on port 1
    unreachable = urlunsplit(parts._replace(netloc=host))
    with pytest.raises(StoreError) as info:
        Store.open(unreachable)
    message = str(info.value)
    assert secret not in message and "verdryx:***@127.0.0.1:1" in message
    assert "\n" not in message
    # A reachable server (trust auth ignores the password): the store names itself redacted.
    with_secret = urlunsplit(
        parts._replace(netloc=f"{parts.username}:{secret}@{parts.hostname}:{parts.port}")
    )
    with fresh_schema(with_secret) as url, Store.open(url) as store:
        assert secret not in store.path and "***" in store.path
        assert secret not in str(url) and secret not in repr(url)
        with pytest.raises(StoreError) as info:
            store.save_run(make_run("bad", [1.0], model=None))
        assert secret not in str(info.value) and "***" in str(info.value)


def test_redact_hides_every_password_form() -> None:
    assert redact("postgresql://u:p%40ss@h:5/db?x=1") == "postgresql://u:***@h:5/db?x=1"
    assert redact("postgres://u@h/db?password=pw&sslmode=require") == (
        "postgres://u@h/db?password=***&sslmode=require"
    )
    assert (
        redact("error in postgresql://a:b@c/d: refused")
        == "error in postgresql://a:***@c/d: refused"
    )
    assert redact("/tmp/v.db") == "/tmp/v.db"
    assert redact("host=h password='x y' dbname=d") == "host=h password=*** dbname=d"


WRITER = """
import sys
from datetime import UTC, datetime, timedelta
from verdryx_core.runs import EvalRun, Score
from verdryx_core.store import CacheEntry, Store, StoreUrl

url, writer, runs, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
T0 = datetime(2025, 3, 1, tzinfo=UTC)
with Store.open(StoreUrl(url)) as store:
    for index in range(runs):
        scores = tuple(
            Score(case_id=f"c{case}", eval_set_id="s", value=((writer + index + case) % 5) / 4,
                  grader="exact", output=f"w{writer} r{index} c{case}")
            for case in range(cases)
        )
        run = EvalRun(id=f"w{writer}-r{index}", model="stub", eval_set_ids=("s",), scores=scores,
                      started_at=T0 + timedelta(seconds=index), run_group=f"w{writer}")
        # Every writer fills the same cache keys too: the cache is shared between the jobs.
        store.cache_put_many([CacheEntry(key=f"key-{case}", model="stub",
                                         response={"text": f"w{writer}"}, cost_usd=0.0)
                              for case in range(cases)])
        store.save_run(run)
"""


def test_eight_processes_write_one_postgres_store_at_once(tmp_path: Path) -> None:
    runs, cases = 4, 200
    with fresh_schema(needs_postgres()) as url:
        writers = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, url.url, str(w), str(runs), str(cases)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in range(8)
        ]
        errors = [writer.communicate(timeout=300)[1] for writer in writers]
        assert [w.returncode for w in writers] == [0] * 8, errors
        with Store.open(url, read_only=True) as store:
            assert len(store.run_ids()) == 8 * runs
            for writer in range(8):
                assert [r.id for r in store.list_group_runs(f"w{writer}")] == [
                    f"w{writer}-r{index}" for index in range(runs)
                ]
                for index in range(runs):
                    run = store.load_run(f"w{writer}-r{index}")
                    assert run is not None and len(run.scores) == cases
                    assert [s.value for s in run.scores] == [
                        ((writer + index + case) % 5) / 4 for case in range(cases)
                    ]
                    assert {s.output for s in run.scores} == {
                        f"w{writer} r{index} c{case}" for case in range(cases)
                    }
            cached = store.cache_get_many([f"key-{case}" for case in range(cases)])
            assert len(cached) == cases


def test_a_postgres_store_opened_read_only_cannot_be_written() -> None:
    with fresh_schema(needs_postgres()) as url:
        with Store.open(url) as store:
            store.save_run(make_run("r", [1.0]))
        with Store.open(url, read_only=True) as reader:
            with pytest.raises(StoreError) as info:
                reader.save_run(make_run("r2", [1.0]))
            assert "read-only" in one_line_store_error(info, url)
            assert reader.run_ids() == ["r"]


def test_a_store_opens_its_own_backend_only_however_store_was_imported(tmp_path: Path) -> None:
    # Each backend is imported by the first `Store.open` of its kind: a SQLite run never
    # imports PostgreSQL's, and the interface module alone can open a store.
    script = (
        "import sys\n"
        "from verdryx_core.store.base import Store\n"
        f"with Store.open({str(tmp_path / 'v.db')!r}) as store:\n"
        "    print(type(store).__name__)\n"
        "print('verdryx_core.store.postgres' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["SqliteStore", "False"]
