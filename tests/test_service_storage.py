"""The service tables, on both backends (a SQLite file; a fresh PostgreSQL schema, skipped only
when VERDRYX_TEST_POSTGRES_URL is unset): the ledger agrees with an in-memory model under any
interleaving of runs, pages and cursors; the schema version is checked; keys are stored as
hashes only; every database error is one StoreError line naming the store, never its
password (docs/verification-service.md)."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.store_support import BACKENDS, fresh_schema, needs_postgres, store_target
from verdryx_core.addons.service import (
    PostgresServiceStorage,
    ServiceStorage,
    SqliteServiceStorage,
    StoredContract,
    contract_id_for,
    create_key,
    hash_key,
    open_service_storage,
)
from verdryx_core.addons.service.storage import now_iso
from verdryx_core.cli import main
from verdryx_core.errors import StoreError
from verdryx_core.store import Store, StoreTarget, StoreUrl

#: A NUL in an agent id (a contract may carry one): PostgreSQL's TEXT cannot hold it.
AGENTS = ("a", "b\x00c", None)


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
    """Where a new store goes: a SQLite file, or a fresh PostgreSQL schema."""
    with store_target(request.param, tmp_path) as where:
        yield where


@pytest.fixture
def storage(target: StoreTarget) -> Iterator[ServiceStorage]:
    with open_service_storage(target) as opened:
        yield opened


def raw_rows(target: StoreTarget, sql: str) -> list[tuple[Any, ...]]:
    """Rows read past verdryx, with the backend's own driver."""
    if isinstance(target, StoreUrl):
        import psycopg

        with psycopg.connect(target.url, autocommit=True) as connection:
            return list(connection.execute(sql).fetchall())
    connection = sqlite3.connect(target)
    try:
        return list(connection.execute(sql).fetchall())
    finally:
        connection.close()


def raw_execute(target: StoreTarget, sql: str) -> None:
    if isinstance(target, StoreUrl):
        import psycopg

        with psycopg.connect(target.url, autocommit=True) as connection:
            connection.execute(sql)
        return
    connection = sqlite3.connect(target)
    try:
        connection.execute(sql)
        connection.commit()
    finally:
        connection.close()


def _contract(storage: ServiceStorage, key_id: str, agent: str | None) -> StoredContract:
    contract_id = contract_id_for(key_id, hashlib.sha256(repr(agent).encode()).hexdigest())
    storage.put_contract(
        contract_id=contract_id,
        key_id=key_id,
        contract_sha256="0" * 64,
        document={"task_id": "t\x00", "agent_id": agent, "success_criteria": []},
    )
    found = storage.get_contract(contract_id, key_id)
    assert found is not None
    assert found.document["agent_id"] == agent
    return found


# One store per test, many examples in it: each example makes new keys, which are new
# tenants, so what earlier examples wrote is invisible to it (that is tenant isolation too).
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    runs=st.lists(
        st.tuples(
            st.sampled_from([0, 1]),  # which key
            st.sampled_from(AGENTS),
            st.sampled_from(["PASS", "FAIL", "FLAG"]),
        ),
        max_size=30,
    ),
    limit=st.integers(min_value=1, max_value=7),
    agent=st.sampled_from((*AGENTS[:2], None)),
)
def test_the_ledger_agrees_with_a_model(
    storage: ServiceStorage, runs: list[tuple[int, str | None, str]], limit: int, agent: str | None
) -> None:
    keys = [create_key(storage, f"k{i}")[0] for i in range(2)]
    contracts = {(k, a): _contract(storage, keys[k].key_id, a) for k in range(2) for a in AGENTS}
    model: list[dict[str, Any]] = []
    for index, (k, a, verdict) in enumerate(runs):
        document = {
            "verdict": verdict,
            "reason": f"{verdict}: run {index}",
            "summary": f"run {index}\x00",
            "task_id": "t\x00",
            "agent_id": a,
            "bundle_hash": None,
            "run_id": f"vr_{keys[k].key_id[4:]}{index:012x}",
            "received_at": now_iso(),
        }
        storage.record_run(contract=contracts[(k, a)], document=document, bundle_text=None)
        model.append({"key": k, **document})
    for k in range(2):
        expected = [
            row
            for row in reversed(model)
            if row["key"] == k and (agent is None or row["agent_id"] == agent)
        ]
        got: list[tuple[str, str | None, str, str]] = []
        before = None
        while True:
            page = storage.ledger(keys[k].key_id, agent_id=agent, limit=limit, before=before)
            assert len(page.entries) <= limit
            assert page.counts == {
                v: sum(row["verdict"] == v for row in expected) for v in ("PASS", "FLAG", "FAIL")
            }
            got += [(e.run_id, e.agent_id, e.summary, e.task_id) for e in page.entries]
            if page.next_before is None:
                break
            before = page.next_before
        assert got == [
            (row["run_id"], row["agent_id"], row["summary"], row["task_id"]) for row in expected
        ]
        for a in AGENTS:
            latest = storage.latest_verdict(contracts[(k, a)].contract_id, keys[k].key_id)
            mine = [row for row in model if row["key"] == k and row["agent_id"] == a]
            assert (latest or {}).get("run_id") == (mine[-1]["run_id"] if mine else None)
            # Another key never reads it.
            other = keys[1 - k].key_id
            assert storage.latest_verdict(contracts[(k, a)].contract_id, other) is None
            assert storage.get_contract(contracts[(k, a)].contract_id, other) is None


def test_a_contract_and_a_bundle_are_kept_once(
    storage: ServiceStorage, target: StoreTarget
) -> None:
    key = create_key(storage, "ci")[0]
    document = {"task_id": "t", "agent_id": "a", "success_criteria": []}
    first = storage.put_contract(
        contract_id="vc_" + "1" * 32, key_id=key.key_id, contract_sha256="0" * 64, document=document
    )
    again = storage.put_contract(
        contract_id="vc_" + "1" * 32, key_id=key.key_id, contract_sha256="0" * 64, document=document
    )
    assert (first, again) == (True, False)
    contract = storage.get_contract("vc_" + "1" * 32, key.key_id)
    assert contract is not None and contract.document == document
    for index in range(2):
        storage.record_run(
            contract=contract,
            document={
                "verdict": "PASS",
                "summary": "ok",
                "task_id": "t",
                "agent_id": "a",
                "bundle_hash": "f" * 64,
                "run_id": f"vr_{index}",
                "received_at": now_iso(),
            },
            bundle_text='{"bundle": 1}',
        )
    assert raw_rows(target, "SELECT bundle_hash, body FROM service_bundles") == [
        ("f" * 64, '{"bundle": 1}')
    ]
    assert storage.ledger(key.key_id, agent_id="a", limit=5, before=None).counts["PASS"] == 2


def test_a_failed_write_leaves_nothing_behind(storage: ServiceStorage, target: StoreTarget) -> None:
    """One transaction per write: a verdict that cannot be recorded keeps no bundle either."""
    key = create_key(storage, "ci")[0]
    contract = _contract(storage, key.key_id, "a")
    document = {
        "verdict": "MAYBE",  # refused by the table's CHECK, after the bundle's insert
        "summary": "",
        "task_id": "t",
        "agent_id": "a",
        "bundle_hash": "e" * 64,
        "run_id": "vr_bad",
        "received_at": now_iso(),
    }
    with pytest.raises(StoreError) as info:
        storage.record_run(contract=contract, document=document, bundle_text="{}")
    message = str(info.value)
    assert message.startswith(f"{storage.path}: cannot record a verdict: ")
    assert "\n" not in message
    assert raw_rows(target, "SELECT count(*) FROM service_bundles") == [(0,)]
    assert raw_rows(target, "SELECT count(*) FROM service_verdicts") == [(0,)]
    # The storage is still usable after the failure.
    storage.record_run(
        contract=contract, document={**document, "verdict": "FLAG"}, bundle_text="{}"
    )
    assert storage.ledger(key.key_id, agent_id=None, limit=5, before=None).counts["FLAG"] == 1


def test_only_the_hash_of_a_key_is_stored(storage: ServiceStorage, target: StoreTarget) -> None:
    record, key = create_key(storage, "ci")
    assert storage.active_key(hash_key(key)) == record
    assert storage.active_key(hash_key(key + "x")) is None
    assert storage.list_keys() == [record]
    assert storage.revoke_key(record.key_id).revoked_at is not None  # type: ignore[union-attr]
    assert storage.active_key(hash_key(key)) is None
    assert storage.revoke_key("key_missing") is None
    rows = raw_rows(target, "SELECT * FROM service_keys")
    assert rows and all(key not in str(cell) for row in rows for cell in row)


def test_the_service_tables_join_the_store_and_its_commands_still_read_it(
    target: StoreTarget,
) -> None:
    with open_service_storage(target) as storage:
        create_key(storage, "ci")
    with Store.open(target, read_only=True) as store:
        assert store.run_ids() == []
    # Opened again (a second server, a restart): nothing created twice, the version kept.
    open_service_storage(target).close()
    assert raw_rows(target, "SELECT version FROM service_schema") == [(1,)]


def test_a_newer_schema_is_refused(target: StoreTarget) -> None:
    open_service_storage(target).close()
    raw_execute(target, "UPDATE service_schema SET version = 99")
    with pytest.raises(StoreError, match="schema version 99, newer than this verdryx") as info:
        open_service_storage(target)
    assert str(info.value).startswith(str(target))


def test_a_foreign_file_or_a_missing_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = tmp_path / "notes.txt"
    foreign.write_text("not a database at all, just some text that is long enough " * 20)
    assert main(["keys", "list", "--db", str(foreign)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert main(["keys", "list", "--db", str(tmp_path / "missing-dir" / "v.db")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_postgres_schema_of_another_application_is_refused_unchanged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with fresh_schema(needs_postgres()) as url:
        raw_execute(url, "CREATE TABLE invoices (id INTEGER)")
        assert main(["keys", "list", "--db", url.url]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {url}: not a verdryx store") and err.count("\n") == 1
        assert raw_rows(
            url,
            "SELECT table_name::text FROM information_schema.tables "
            "WHERE table_schema = current_schema()",
        ) == [("invoices",)]


def test_keys_list_as_a_table(target: StoreTarget, capsys: pytest.CaptureFixture[str]) -> None:
    db = target.url if isinstance(target, StoreUrl) else str(target)
    assert main(["keys", "list", "--db", db]) == 0
    assert "no API keys" in capsys.readouterr().out
    assert main(["keys", "create", "--name", "ci", "--db", db]) == 0
    captured = capsys.readouterr()
    key = captured.out.strip()
    assert f" in {target};" in captured.err  # the store named as it is shown everywhere
    assert main(["keys", "list", "--db", db]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["id", "name", "key", "created", "status"]
    assert table[1].split()[1:3] == ["ci", key[:12] + "..."]
    assert table[1].endswith("active")
    assert key not in "\n".join(table)
    assert main(["keys", "create", "--name", " ", "--db", db]) == 2
    assert "--name must be 1 to 200 characters" in capsys.readouterr().err


def test_the_backend_follows_the_store_target(tmp_path: Path) -> None:
    with open_service_storage(tmp_path / "v.db") as storage:
        assert isinstance(storage, SqliteServiceStorage)
    with fresh_schema(needs_postgres()) as url:
        for form in (url, url.url, "  " + url.url):
            with open_service_storage(form) as storage:
                assert isinstance(storage, PostgresServiceStorage)


# -- PostgreSQL: passwords, lost connections, many writers -------------------------------------


def _with_password(base: str, secret: str, port: int | None = None) -> str:
    parts = urlsplit(base)
    host = f"{parts.username or 'verdryx'}:{secret}@{parts.hostname}:{port or parts.port}"
    return urlunsplit(parts._replace(netloc=host))


def test_a_password_never_appears_in_messages(capsys: pytest.CaptureFixture[str]) -> None:
    base = needs_postgres()
    secret = "s3cr3t-Pa55"
    unreachable = _with_password(base, secret, port=1)  # nothing listens on port 1
    with pytest.raises(StoreError) as info:
        PostgresServiceStorage.open(unreachable)
    assert secret not in str(info.value) and ":***@" in str(info.value)
    assert main(["keys", "list", "--db", unreachable]) == 2
    err = capsys.readouterr().err
    assert secret not in err and ":***@" in err and err.count("\n") == 1
    # A reachable server (trust auth ignores the password): every message names it redacted.
    with fresh_schema(_with_password(base, secret)) as url:
        assert main(["keys", "create", "--name", "ci", "--db", url.url]) == 0
        err = capsys.readouterr().err
        assert secret not in err and ":***@" in err
        with PostgresServiceStorage.open(url) as storage:
            assert secret not in storage.path and "***" in storage.path
            key = create_key(storage, "k")[0]
            contract = _contract(storage, key.key_id, "a")
            with pytest.raises(StoreError) as info:
                storage.record_run(
                    contract=contract,
                    document={"verdict": "NO", "task_id": "t", "run_id": "r", "received_at": ""},
                    bundle_text=None,
                )
            message = str(info.value)
            assert message.startswith(f"{storage.path}: cannot record a verdict: ")
            assert secret not in message and "\n" not in message


def test_a_lost_connection_fails_one_call_and_the_next_reconnects() -> None:
    import psycopg

    with fresh_schema(needs_postgres()) as url, PostgresServiceStorage.open(url) as storage:
        record, key = create_key(storage, "ci")
        pid = storage.db.connection.info.backend_pid
        with psycopg.connect(url.url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StoreError) as info:
            storage.active_key(hash_key(key))
        assert str(info.value).startswith(f"{url}: cannot look up an API key: ")
        assert storage.active_key(hash_key(key)) == record
        assert storage.db.connection.info.backend_pid != pid


def test_threads_and_two_storages_record_every_verdict_once() -> None:
    """Two storages (two connections, as two servers have) and four threads each, writing one
    ledger at once: every verdict is in it once, and seq order is the order of commits."""
    with fresh_schema(needs_postgres()) as url:
        storages = [PostgresServiceStorage.open(url) for _ in range(2)]
        try:
            key = create_key(storages[0], "ci")[0]
            contract = _contract(storages[0], key.key_id, "a")
            errors: list[BaseException] = []

            def write(storage: ServiceStorage, worker: int) -> None:
                try:
                    for index in range(25):
                        storage.record_run(
                            contract=contract,
                            document={
                                "verdict": ("PASS", "FAIL", "FLAG")[index % 3],
                                "summary": "",
                                "task_id": "t",
                                "agent_id": "a",
                                "bundle_hash": "d" * 64,
                                "run_id": f"vr_{worker}_{index}",
                                "received_at": now_iso(),
                            },
                            bundle_text="{}",
                        )
                except BaseException as exc:  # reported below, with the worker's number
                    errors.append(exc)

            threads = [threading.Thread(target=write, args=(storages[w % 2], w)) for w in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert errors == []
            page = storages[1].ledger(key.key_id, agent_id="a", limit=500, before=None)
            run_ids = [entry.run_id for entry in page.entries]
            assert sorted(run_ids) == sorted(f"vr_{w}_{i}" for w in range(8) for i in range(25))
            assert sum(page.counts.values()) == 200
            # Each writer's own verdicts appear in the order it wrote them.
            for worker in range(8):
                mine = [r for r in reversed(run_ids) if r.startswith(f"vr_{worker}_")]
                assert mine == [f"vr_{worker}_{index}" for index in range(25)]
        finally:
            for storage in storages:
                storage.close()


def test_a_verdict_being_recorded_holds_the_next_writer_so_seq_is_commit_order() -> None:
    """A reader paging with a cursor must never see a newer verdict before an older one
    commits (it would page past it): a writer mid-transaction holds the others."""
    with fresh_schema(needs_postgres()) as url:
        first, second = PostgresServiceStorage.open(url), PostgresServiceStorage.open(url)
        try:
            key = create_key(first, "ci")[0]
            contract = _contract(first, key.key_id, "a")

            def document(run_id: str) -> dict[str, Any]:
                return {
                    "verdict": "PASS",
                    "summary": "",
                    "task_id": "t",
                    "agent_id": "a",
                    "bundle_hash": None,
                    "run_id": run_id,
                    "received_at": now_iso(),
                }

            # `first` is inside record_run: between its ledger lock and its insert.
            recording = first.db.transaction()
            recording.__enter__()
            first._lock_ledger()
            done = threading.Event()
            writer = threading.Thread(
                target=lambda: (
                    second.record_run(
                        contract=contract, document=document("vr_later"), bundle_text=None
                    ),
                    done.set(),
                )
            )
            writer.start()
            assert not done.wait(0.5), "a second writer did not wait for the first"
            first.db.execute(
                "INSERT INTO service_verdicts (run_id, contract_id, key_id, task_id, agent_id, "
                "verdict, summary, bundle_hash, document, created_at) "
                "VALUES ('vr_earlier', ?, ?, ?, ?, 'PASS', ?, NULL, '{}', ?)",
                (contract.contract_id, key.key_id, b"t", b"a", b"", now_iso()),
            )
            recording.__exit__(None, None, None)
            writer.join(timeout=20)
            assert done.is_set()
            page = second.ledger(key.key_id, agent_id="a", limit=5, before=None)
            assert [entry.run_id for entry in page.entries] == ["vr_later", "vr_earlier"]
        finally:
            first.close()
            second.close()
