"""The contracts add-on's verdict rows, kept in the store through its connection: the same on
both backends (a SQLite file; a fresh PostgreSQL schema, skipped only when
VERDRYX_TEST_POSTGRES_URL is unset). The table is created on the first save, never by a read;
a store whose schema made the table (version 1 and 2 did) keeps its rows; a save joins the
store's batch (docs/contracts.md)."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store_support import BACKENDS, fresh_schema, needs_postgres, store_target
from verdryx_core.addons.contracts.history import save_verdicts, verdicts
from verdryx_core.errors import StoreError
from verdryx_core.store import Store, StoreTarget, StoreUrl

FIXTURES = Path(__file__).parent / "fixtures"

#: The table as the PostgreSQL store's schema version 2 created it, before the table moved to
#: the contracts add-on: such stores exist and must keep their rows.
_CORE_MADE_POSTGRES_TABLE = """
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
"""


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
    """Where a new store goes: a SQLite file, or a fresh PostgreSQL schema."""
    with store_target(request.param, tmp_path) as where:
        yield where


def has_table(target: StoreTarget) -> bool:
    """Read past verdryx, with the backend's own driver."""
    if isinstance(target, StoreUrl):
        import psycopg

        with psycopg.connect(target.url, autocommit=True) as connection:
            row = connection.execute(
                "SELECT count(*) FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_name = 'contract_verdicts'"
            ).fetchone()
        return bool(row and row[0])
    connection = sqlite3.connect(target)
    try:
        return bool(
            connection.execute(
                "SELECT count(*) FROM sqlite_master WHERE name = 'contract_verdicts'"
            ).fetchone()[0]
        )
    finally:
        connection.close()


def verdict(task: str, **extra: object) -> dict[str, object]:
    return {"agent_id": "a1", "task_id": task, "verdict": "PASS", "reason": "ok", **extra}


def test_contract_verdicts_round_trip(target: StoreTarget) -> None:
    verdicts_saved = [
        {
            "agent_id": "a1",
            "task_id": "t1",
            "verdict": "PASS",
            "reason": "all checks",
            "bundle_hash": "h1",
            "run_id": "r1",
            "created_at": "2025-03-01T00:00:00+00:00",
        },
        {
            "agent_id": "a2",
            "task_id": "t2",
            "verdict": "FAIL",
            "reason": "missing file",
            "bundle_hash": None,
            "run_id": None,
            "created_at": "2025-03-02T00:00:00+00:00",
        },
    ]
    with Store.open(target) as store:
        save_verdicts(store, verdicts_saved)
    with Store.open(target) as store:
        assert verdicts(store) == list(reversed(verdicts_saved))
        assert verdicts(store, "a1") == [verdicts_saved[0]]
        assert verdicts(store, "nobody") == []


def test_the_table_is_made_by_the_first_save_and_never_by_a_read(target: StoreTarget) -> None:
    with Store.open(target) as store:
        assert verdicts(store) == [] and verdicts(store, "a1") == []
        save_verdicts(store, [])  # nothing to keep: nothing made
    assert not has_table(target)
    with Store.open(target, read_only=True) as reader:
        assert verdicts(reader) == []
    assert not has_table(target)
    with Store.open(target) as store:
        save_verdicts(store, [verdict("t1")])
        (row,) = verdicts(store)
    assert has_table(target)
    assert row["created_at"] and row["bundle_hash"] is None and row["run_id"] is None
    with Store.open(target, read_only=True) as reader:
        assert verdicts(reader) == [row]


def test_a_save_joins_the_stores_batch_and_rolls_back_with_it(target: StoreTarget) -> None:
    with Store.open(target) as store:
        with pytest.raises(StoreError) as info, store.batch():
            save_verdicts(store, [verdict("t1")])
            save_verdicts(store, [verdict("t2", verdict=None)])  # NOT NULL: refused
        message = str(info.value)
        assert message.startswith(f"{store.path}: cannot save contract verdicts: ")
        assert "\n" not in message
        assert verdicts(store) == []  # the first save, and the table it made, rolled back
        with store.batch():
            save_verdicts(store, [verdict("t1")])
            save_verdicts(store, [verdict("t2")])
        assert [row["task_id"] for row in verdicts(store)] == ["t2", "t1"]


def test_the_table_a_version_1_store_made_is_the_table_the_add_on_makes(tmp_path: Path) -> None:
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    shutil.copyfile(FIXTURES / "store_v1.db", old)
    for path in (old, new):
        with Store.open(path) as store:
            save_verdicts(store, [verdict("t9", agent_id="agent-1")])

    def shape(path: Path) -> tuple[object, ...]:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return (
                connection.execute("PRAGMA table_info(contract_verdicts)").fetchall(),
                connection.execute("PRAGMA index_list(contract_verdicts)").fetchall(),
                connection.execute("PRAGMA index_info(contract_verdicts_by_agent)").fetchall(),
            )
        finally:
            connection.close()

    assert shape(old) == shape(new)
    with Store.open(old) as store:
        # The row the old verdryx stored, then the new one.
        assert [v["task_id"] for v in verdicts(store, "agent-1")] == ["t9", "t1"]


def test_a_postgres_store_whose_schema_made_the_table_keeps_its_rows() -> None:
    import psycopg

    with fresh_schema(needs_postgres()) as url:
        Store.open(url).close()
        with psycopg.connect(url.url, autocommit=True) as admin:
            admin.execute(_CORE_MADE_POSTGRES_TABLE)
            admin.execute(
                "INSERT INTO contract_verdicts (agent_id, task_id, verdict, reason, created_at) "
                "VALUES ('a1', 'old', 'FAIL', 'kept', '2025-01-01T00:00:00Z')"
            )
        with Store.open(url) as store:
            assert [v["task_id"] for v in verdicts(store)] == ["old"]
            save_verdicts(store, [verdict("new")])
            assert [v["task_id"] for v in verdicts(store, "a1")] == ["new", "old"]


def test_stores_saving_their_first_verdicts_at_once_make_one_table() -> None:
    """Eight connections (as eight CI jobs) saving into a store that has no table yet: one
    creates it under the advisory lock, the others wait and find it made."""
    with fresh_schema(needs_postgres()) as url:
        Store.open(url).close()
        stores = [Store.open(url) for _ in range(8)]
        barrier = threading.Barrier(len(stores))
        errors: list[BaseException] = []

        def save(store: Store, index: int) -> None:
            try:
                barrier.wait()
                save_verdicts(store, [verdict(f"t{index}")])
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [
            threading.Thread(target=save, args=(store, index)) for index, store in enumerate(stores)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        try:
            assert errors == []
            assert sorted(v["task_id"] for v in verdicts(stores[0])) == [
                f"t{index}" for index in range(8)
            ]
        finally:
            for store in stores:
                store.close()
