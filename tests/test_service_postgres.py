"""`verdryx serve` on a PostgreSQL store, for real: the command as an operator starts it (its
own process, uvicorn on 127.0.0.1), driven by the real client; two servers sharing one store,
where every verdict lands in the ledger exactly once. Each test gets a fresh schema and skips
only when VERDRYX_TEST_POSTGRES_URL is unset (docs/verification-service.md)."""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tests.service_support import example_bundle, example_contract, example_workspace, free_port
from tests.store_support import fresh_schema, needs_postgres
from verdryx_core.addons.service import Client, PostgresServiceStorage
from verdryx_core.store import Store, StoreUrl

VERDRYX = Path(sys.executable).parent / "verdryx"


def keys_create(url: StoreUrl, name: str) -> tuple[str, str]:
    """`verdryx keys create`: the key (stdout) and the message (stderr)."""
    done = subprocess.run(
        [str(VERDRYX), "keys", "create", "--name", name, "--db", url.url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), done.stderr


def _healthy(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


@dataclass
class Server:
    address: str
    #: What the process printed (its start line, uvicorn's access log), once it has stopped.
    output: str = ""


@contextmanager
def serving(url: StoreUrl, count: int = 1) -> Iterator[list[Server]]:
    """`count` `verdryx serve` processes on the store, started at once."""
    ports = [free_port() for _ in range(count)]
    servers = [
        subprocess.Popen(
            [str(VERDRYX), "serve", "--db", url.url, "--port", str(port), "--log-level", "info"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for port in ports
    ]
    try:
        deadline = time.monotonic() + 60
        for port, server in zip(ports, servers, strict=True):
            while not _healthy(port):
                if server.poll() is not None:
                    raise AssertionError(server.stdout.read() if server.stdout else "")
                assert time.monotonic() < deadline, f"verdryx serve on {port} did not start"
                time.sleep(0.05)
        running = [Server(f"http://127.0.0.1:{port}") for port in ports]
        yield running
    finally:
        for server in servers:
            if server.poll() is None:
                server.terminate()
        outputs = [server.communicate(timeout=30)[0] for server in servers]
    for record, output in zip(running, outputs, strict=True):
        record.output = output


def test_verdryx_serve_on_postgres_end_to_end() -> None:
    base = needs_postgres()
    secret = "s3rve-Pa55"
    parts = urlsplit(base)
    # Trust auth on the test server ignores the password; it is there to be kept out of sight.
    with_secret = urlunsplit(
        parts._replace(netloc=f"{parts.username}:{secret}@{parts.hostname}:{parts.port}")
    )
    with fresh_schema(with_secret) as url:
        key, created = keys_create(url, "ci")
        assert f"in {url};" in created and secret not in created
        with serving(url) as [server]:
            client = Client(api_key=key, base_url=server.address, timeout=30)
            contract_id = client.create_contract(example_contract())
            assert client.create_contract(example_contract()) == contract_id
            bundle = example_bundle()
            verdict = client.submit_run(contract_id, bundle)
            assert verdict["verdict"] == "PASS"
            assert verdict["bundle_hash"] == bundle["bundle_hash"]
            assert client.get_verdict(contract_id) == verdict
            ledger = client.list_verdicts("report-writer")
            assert ledger["counts"] == {"PASS": 1, "FLAG": 0, "FAIL": 0, "total": 1}
            assert [entry["run_id"] for entry in ledger["verdicts"]] == [verdict["run_id"]]
            assert ledger["verdicts"][0]["received_at"] == verdict["received_at"]
            assert ledger["next_cursor"] is None
        output = server.output
        # The start line names the store with its password redacted; no line carries the key.
        assert f"(store {url})" in output and secret not in output
        assert "POST /v1/contracts HTTP/1.1" in output and key not in output
        # Everything is in the database, readable after the server is gone; the store's own
        # commands still read their store.
        with PostgresServiceStorage.open(url) as storage:
            assert storage.latest_verdict(contract_id, storage.list_keys()[0].key_id) == verdict
        with Store.open(url, read_only=True) as store:
            assert store.run_ids() == []


def test_two_servers_on_one_store_record_every_verdict_exactly_once(tmp_path: Path) -> None:
    """Two `verdryx serve` processes started at once on an empty schema (they race to create
    the tables), clients submitting to both at once: each verdict is in the shared ledger
    once, as the client was told, and both servers read the same ledger."""
    bad = example_workspace(tmp_path)
    (bad / ".env").write_text("TOKEN=left-behind\n")
    bundles = [example_bundle(), example_bundle(bad)]
    with fresh_schema(needs_postgres()) as url, serving(url, count=2) as servers:
        key, _ = keys_create(url, "ci")
        addresses = [server.address for server in servers]
        clients = [Client(api_key=key, base_url=address, timeout=60) for address in addresses]
        # Registered on one server, known to the other: the contracts are shared.
        contract_id = clients[0].create_contract(example_contract())
        assert clients[1].create_contract(example_contract()) == contract_id

        told: dict[str, str] = {}
        errors: list[BaseException] = []
        lock = threading.Lock()

        def submit(worker: int) -> None:
            client = Client(api_key=key, base_url=addresses[worker % 2], timeout=60)
            try:
                for index in range(12):
                    answer = client.submit_run(contract_id, bundles[(worker + index) % 2])
                    with lock:
                        told[answer["run_id"]] = answer["verdict"]
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=submit, args=(worker,)) for worker in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(told) == 72
        assert sorted(set(told.values())) == ["FAIL", "PASS"]

        ledgers = []
        for client in clients:
            seen: list[tuple[str, str]] = []
            cursor = None
            while True:
                page = client.list_verdicts("report-writer", limit=10, cursor=cursor)
                assert page["counts"]["total"] == 72
                seen += [(entry["run_id"], entry["verdict"]) for entry in page["verdicts"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            ledgers.append(seen)
        assert ledgers[0] == ledgers[1]
        run_ids = [run_id for run_id, _ in ledgers[0]]
        assert len(run_ids) == len(set(run_ids)) == 72
        assert dict(ledgers[0]) == told
        latest = clients[1].get_verdict(contract_id)["run_id"]
        assert latest == run_ids[0]


def test_servers_opening_a_new_store_at_once_create_the_tables_once() -> None:
    with fresh_schema(needs_postgres()) as url:
        opened: list[PostgresServiceStorage] = []
        errors: list[BaseException] = []
        start = threading.Barrier(8)

        def open_one() -> None:
            start.wait()
            try:
                opened.append(PostgresServiceStorage.open(url))
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=open_one) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for storage in opened:
            storage.close()
        assert errors == []
        import psycopg

        with psycopg.connect(url.url, autocommit=True) as connection:
            assert connection.execute("SELECT version FROM service_schema").fetchall() == [(1,)]
