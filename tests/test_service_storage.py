"""The service tables: the ledger agrees with an in-memory model under any interleaving of
runs, pages and cursors; the schema version is checked; keys are stored as hashes only."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verdryx_core.cli import main
from verdryx_core.errors import StoreError
from verdryx_core.service import SqliteServiceStorage, StoredContract, create_key, hash_key
from verdryx_core.service.storage import now_iso

AGENTS = ("a", "b", None)


def _contract(storage: SqliteServiceStorage, key_id: str, agent: str | None) -> StoredContract:
    contract_id = f"vc_{key_id[-6:]}{agent or 'none'}".ljust(35, "0")
    storage.put_contract(
        contract_id=contract_id,
        key_id=key_id,
        contract_sha256="0" * 64,
        document={"task_id": "t", "agent_id": agent, "success_criteria": []},
    )
    found = storage.get_contract(contract_id, key_id)
    assert found is not None
    return found


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
    runs: list[tuple[int, str | None, str]], limit: int, agent: str | None
) -> None:
    with SqliteServiceStorage.open(":memory:") as storage:
        keys = [create_key(storage, f"k{i}")[0] for i in range(2)]
        contracts = {
            (k, a): _contract(storage, keys[k].key_id, a) for k in range(2) for a in AGENTS
        }
        model: list[dict[str, Any]] = []
        for index, (k, a, verdict) in enumerate(runs):
            document = {
                "verdict": verdict,
                "reason": f"{verdict}: run {index}",
                "summary": f"run {index}",
                "task_id": "t",
                "agent_id": a,
                "bundle_hash": None,
                "run_id": f"vr_{index:024x}",
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
            got: list[str] = []
            before = None
            while True:
                page = storage.ledger(keys[k].key_id, agent_id=agent, limit=limit, before=before)
                assert len(page.entries) <= limit
                assert page.counts == {
                    v: sum(row["verdict"] == v for row in expected)
                    for v in ("PASS", "FLAG", "FAIL")
                }
                got += [entry.run_id for entry in page.entries]
                if page.next_before is None:
                    break
                before = page.next_before
            assert got == [row["run_id"] for row in expected]
            for a in AGENTS:
                latest = storage.latest_verdict(contracts[(k, a)].contract_id, keys[k].key_id)
                mine = [row for row in model if row["key"] == k and row["agent_id"] == a]
                assert (latest or {}).get("run_id") == (mine[-1]["run_id"] if mine else None)
                # Another key never reads it.
                other = keys[1 - k].key_id
                assert storage.latest_verdict(contracts[(k, a)].contract_id, other) is None
                assert storage.get_contract(contracts[(k, a)].contract_id, other) is None


def test_only_the_hash_of_a_key_is_stored(tmp_path: Path) -> None:
    with SqliteServiceStorage.open(tmp_path / "v.db") as storage:
        record, key = create_key(storage, "ci")
        assert storage.active_key(hash_key(key)) == record
        assert storage.active_key(hash_key(key + "x")) is None
        assert storage.revoke_key(record.key_id).revoked_at is not None  # type: ignore[union-attr]
        assert storage.active_key(hash_key(key)) is None
        assert storage.revoke_key("key_missing") is None
    connection = sqlite3.connect(tmp_path / "v.db")
    rows = connection.execute("SELECT * FROM service_keys").fetchall()
    connection.close()
    assert rows and all(key not in str(cell) for row in rows for cell in row)


def test_a_newer_schema_or_a_foreign_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "v.db"
    SqliteServiceStorage.open(db).close()
    connection = sqlite3.connect(db)
    connection.execute("UPDATE service_schema SET version = 99")
    connection.commit()
    connection.close()
    with pytest.raises(StoreError, match="schema version 99, newer than this verdryx"):
        SqliteServiceStorage.open(db)
    foreign = tmp_path / "notes.txt"
    foreign.write_text("not a database at all, just some text that is long enough " * 20)
    assert main(["keys", "list", "--db", str(foreign)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert main(["keys", "list", "--db", str(tmp_path / "missing-dir" / "v.db")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_keys_list_as_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "v.db")
    assert main(["keys", "list", "--db", db]) == 0
    assert "no API keys" in capsys.readouterr().out
    assert main(["keys", "create", "--name", "ci", "--db", db]) == 0
    key = capsys.readouterr().out.strip()
    assert main(["keys", "list", "--db", db]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["id", "name", "key", "created", "status"]
    assert table[1].split()[1:3] == ["ci", key[:12] + "..."]
    assert table[1].endswith("active")
    assert key not in "\n".join(table)
    assert main(["keys", "create", "--name", " ", "--db", db]) == 2
    assert "--name must be 1 to 200 characters" in capsys.readouterr().err
