"""The one SQL layer under the store and the add-ons' tables (verdryx_core/store/db), the same
on both dialects: a SQLite file in tmp_path and a real PostgreSQL server (a fresh schema per
test; skipped only when VERDRYX_TEST_POSTGRES_URL is unset). Statements with `?`
placeholders, transactions that commit, roll back and nest, free text with a NUL in it,
snapshot reads, pipelined writes, and every driver error one StoreError line naming the
database without its password (docs/store.md)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.store_support import BACKENDS, fresh_schema, needs_postgres, store_target
from verdryx_core.errors import StoreError
from verdryx_core.store import StoreTarget, StoreUrl
from verdryx_core.store.db import Database, PostgresDb, SqliteDb, marks

PURPOSE = "the test database"


def open_db(target: StoreTarget, **options: bool) -> Database:
    if isinstance(target, StoreUrl):
        return PostgresDb.open(target, purpose=PURPOSE, **options)
    return SqliteDb.open(str(target), purpose=PURPOSE, **options)


def make_table(db: Database) -> None:
    """A table of notes: free text in the column type the dialect keeps it in."""
    text = {"sqlite": "TEXT", "postgresql": "BYTEA"}[db.dialect]
    with db.transaction():
        db.script(
            f"""
-- a comment-only statement is skipped;
CREATE TABLE notes (
    id      INTEGER PRIMARY KEY,
    body    {text},
    kind    TEXT NOT NULL
);
CREATE INDEX notes_by_kind ON notes (kind);
"""
        )


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
    with store_target(request.param, tmp_path) as where:
        yield where


@pytest.fixture
def db(target: StoreTarget) -> Iterator[Database]:
    opened = open_db(target)
    try:
        opened.tune_for_writing()
        make_table(opened)
        yield opened
    finally:
        opened.close()


def count(db: Database) -> int:
    return int(db.rows("SELECT count(*) FROM notes")[0][0])


def test_statements_with_placeholders_and_free_text_round_trip(db: Database) -> None:
    texts = ["plain", "h\u00e9llo \u2713", "nul\x00inside", None]
    with db.transaction():
        db.execute(f"INSERT INTO notes (id, body, kind) VALUES ({marks(3)})", (0, "first", "a"))
        db.executemany(
            "INSERT INTO notes (id, body, kind) VALUES (?, ?, ?)",
            [(i + 1, db.text_in(text), "b") for i, text in enumerate(texts[:2])],
        )
        db.insert_rows(
            "notes", "id, body, kind", [(i + 3, db.text_in(t), "c") for i, t in enumerate(texts)]
        )
        db.insert_rows("notes", "id, body, kind", [])  # nothing to insert: nothing sent
    rows = db.rows("SELECT id, body, kind FROM notes WHERE kind = ? ORDER BY id", ("c",))
    assert [db.text_out(body) for _, body, _ in rows] == texts
    assert db.rows("SELECT id FROM notes WHERE kind IN (?, ?) ORDER BY id", ("a", "b")) == [
        (0,),
        (1,),
        (2,),
    ]
    assert db.execute("UPDATE notes SET kind = 'z' WHERE kind = ?", ("c",)).rowcount == 4


def test_a_transaction_commits_or_rolls_back_whole(db: Database) -> None:
    with db.transaction():
        db.execute("INSERT INTO notes (id, kind) VALUES (1, 'a')")
    for failure in (ValueError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(failure)), db.transaction():
            db.execute("INSERT INTO notes (id, kind) VALUES (2, 'a')")
            raise failure
        assert count(db) == 1 and not db.in_transaction
    with pytest.raises(StoreError) as info, db.errors("write a note"), db.transaction():
        db.execute("INSERT INTO notes (id, kind) VALUES (3, 'a')")
        db.execute("INSERT INTO notes (id, kind) VALUES (4, NULL)")  # NOT NULL: refused
    message = str(info.value)
    assert message.startswith(f"{db.name}: cannot write a note: ") and "\n" not in message
    assert count(db) == 1
    # Still usable after every rollback.
    with db.transaction():
        db.execute("INSERT INTO notes (id, kind) VALUES (5, 'a')")
    assert count(db) == 2


def test_a_nested_transaction_joins_the_outer_one(db: Database) -> None:
    with pytest.raises(RuntimeError), db.transaction():
        with db.transaction():
            db.execute("INSERT INTO notes (id, kind) VALUES (1, 'a')")
        assert db.in_transaction  # the inner block did not commit
        raise RuntimeError("the outer block fails")
    assert count(db) == 0
    with db.transaction():
        with db.transaction():
            db.execute("INSERT INTO notes (id, kind) VALUES (1, 'a')")
        db.execute("INSERT INTO notes (id, kind) VALUES (2, 'a')")
    assert count(db) == 2


def test_a_read_transaction_is_one_snapshot(target: StoreTarget, db: Database) -> None:
    with db.transaction():
        db.execute("INSERT INTO notes (id, kind) VALUES (1, 'a')")
    other = open_db(target)
    try:
        with other.transaction(write=False):
            assert count(other) == 1
            with db.transaction():
                db.execute("INSERT INTO notes (id, kind) VALUES (2, 'a')")
            assert count(other) == 1  # the snapshot the read began with
        assert count(other) == 2
    finally:
        other.close()


def test_a_pipelined_write_that_fails_leaves_nothing(db: Database) -> None:
    with (
        pytest.raises(StoreError),
        db.errors("write notes"),
        db.lock,
        db.pipelined(),
        db.transaction(),
    ):
        db.execute("INSERT INTO notes (id, kind) VALUES (1, 'a')")
        db.execute("INSERT INTO notes (id, kind) VALUES (1, 'a')")  # the same key: refused
    assert count(db) == 0 and not db.in_transaction
    with db.lock, db.pipelined(), db.transaction():
        db.execute("INSERT INTO notes (id, kind) VALUES (1, 'a')")
        db.execute("INSERT INTO notes (id, kind) VALUES (2, 'a')")
    assert count(db) == 2


def test_tables_are_created_once_and_found(db: Database) -> None:
    ddl = "CREATE TABLE IF NOT EXISTS extra (id INTEGER PRIMARY KEY)"
    assert db.has_table("notes") and not db.has_table("extra")
    db.create_tables(ddl, lock_key=1)
    db.create_tables(ddl, lock_key=1)
    assert db.has_table("extra")
    with db.transaction():  # inside a caller's transaction: made or rolled back with it
        db.lock_table("notes")
        db.advisory_lock(2)
        db.create_tables("CREATE TABLE IF NOT EXISTS more (id INTEGER)", lock_key=1)
        assert db.has_table("more")
    assert db.has_table("more")


def test_threads_share_one_connection(db: Database) -> None:
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for index in range(20):
                with db.errors("write a note"), db.transaction():
                    db.execute(
                        "INSERT INTO notes (id, kind) VALUES (?, ?)", (worker * 100 + index, "t")
                    )
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and count(db) == 80


def test_a_closed_database_is_a_store_error(db: Database) -> None:
    db.close()
    with pytest.raises(StoreError) as info, db.errors("read notes"):
        db.rows("SELECT 1")
    assert str(info.value).startswith(f"{db.name}: cannot read notes: ")


def test_a_sqlite_file_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    path = tmp_path / "no-such-dir" / "v.db"
    with pytest.raises(StoreError) as info:
        SqliteDb.open(str(path), purpose=PURPOSE)
    message = str(info.value)
    assert message.startswith(f"{path}: cannot open {PURPOSE}: ") and "\n" not in message


def _with_password(base: str, secret: str, port: int | None = None) -> str:
    parts = urlsplit(base)
    host = f"{parts.username or 'verdryx'}:{secret}@{parts.hostname}:{port or parts.port}"
    return urlunsplit(parts._replace(netloc=host))


def test_postgres_errors_name_the_database_without_its_password() -> None:
    base = needs_postgres()
    secret = "s3cr3t-Pa55"
    with pytest.raises(StoreError) as info:
        PostgresDb.open(StoreUrl(_with_password(base, secret, port=1)), purpose=PURPOSE)
    message = str(info.value)
    assert f"cannot open {PURPOSE}: " in message and ":***@" in message
    assert secret not in message and "\n" not in message
    # A reachable server (trust auth ignores the password): errors name it redacted.
    with fresh_schema(_with_password(base, secret)) as url:
        db = PostgresDb.open(url, purpose=PURPOSE)
        try:
            assert secret not in db.name and ":***@" in db.name
            with pytest.raises(StoreError) as info, db.errors("read notes"):
                db.rows("SELECT * FROM no_such_table")
            message = str(info.value)
            assert message.startswith(f"{db.name}: cannot read notes: ")
            assert secret not in message and "\n" not in message  # no DETAIL/LINE lines
        finally:
            db.close()


def test_a_lost_postgres_connection_is_reopened_only_when_asked() -> None:
    import psycopg

    with fresh_schema(needs_postgres()) as url:
        for reconnect in (True, False):
            db = PostgresDb.open(url, purpose=PURPOSE, reconnect=reconnect)
            try:
                pid = db.connection.info.backend_pid
                with psycopg.connect(url.url, autocommit=True) as admin:
                    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                with pytest.raises(StoreError), db.errors("read"):
                    db.rows("SELECT 1")
                if reconnect:
                    assert db.rows("SELECT 1") == [(1,)]
                    assert db.connection.info.backend_pid != pid
                else:
                    with pytest.raises(StoreError), db.errors("read"):
                        db.rows("SELECT 1")
            finally:
                db.close()
