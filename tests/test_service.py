"""The hosted verification service, for real: uvicorn on 127.0.0.1 with the real app and a
real store (a SQLite file, and a fresh PostgreSQL schema when VERDRYX_TEST_POSTGRES_URL is
set), driven by the real client and the `verdryx` command (docs/verification-service.md)."""

from __future__ import annotations

import base64
import copy
import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.service_support import (
    EXAMPLE,
    RunningService,
    example_bundle,
    example_contract,
    example_workspace,
    running_service,
)
from tests.store_support import BACKENDS, store_target
from verdryx_core.addons.contracts import bundle_hash, collect_evidence, contract_from_data
from verdryx_core.addons.service import (
    AuthError,
    Client,
    VerificationServiceError,
    openapi_document,
)
from verdryx_core.cli import main
from verdryx_core.errors import VerdryxError

VERDRYX = Path(sys.executable).parent / "verdryx"
CONTRACT_FILE = EXAMPLE / "weekly-report.contract.json"
WORKSPACE = EXAMPLE / "workspace"


@pytest.fixture(scope="module", params=BACKENDS)
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningService]:
    with (
        store_target(request.param, tmp_path_factory.mktemp("service")) as db,
        running_service(db, max_body_bytes=2 * 1024 * 1024) as running,
    ):
        yield running


@pytest.fixture
def client(service: RunningService) -> Client:
    return Client(api_key=service.new_key(), base_url=service.url, timeout=30)


def raw(
    service: RunningService,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """One request with no client in between; returns the status and the parsed JSON body."""
    url = urllib.parse.urlsplit(service.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        status, data = response.status, response.read()
        assert response.getheader("content-type", "").startswith("application/json")
    finally:
        connection.close()
    return status, json.loads(data)


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def reseal(bundle: dict[str, Any]) -> dict[str, Any]:
    bundle["bundle_hash"] = bundle_hash(bundle)
    return bundle


def only_error(document: Any) -> str:
    """Every error is exactly {"error": "one line"}."""
    assert isinstance(document, dict)
    assert list(document) == ["error"]
    message = document["error"]
    assert isinstance(message, str)
    assert message
    assert "\n" not in message
    return message


# -- the full flow ---------------------------------------------------------------------------


def test_the_full_flow_with_the_client(client: Client) -> None:
    contract = example_contract()
    contract_id = client.create_contract(contract)
    assert contract_id.startswith("vc_")
    assert client.create_contract(contract.to_dict()) == contract_id  # content-derived
    bundle = example_bundle()
    verdict = client.submit_run(contract_id, bundle)
    assert verdict["verdict"] == "PASS"
    assert verdict["bundle_hash"] == bundle["bundle_hash"]
    assert verdict["contract_id"] == contract_id
    assert verdict["run_id"].startswith("vr_")
    assert [r["status"] for r in verdict["check_results"]] == ["pass"] * 9
    # The same document `verdryx verify --json` prints, plus where the ledger keeps it.
    local = subprocess.run(
        [str(VERDRYX), "verify", str(CONTRACT_FILE), "--json", "--base-path", str(WORKSPACE)],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads(local.stdout)
    assert {key: verdict[key] for key in expected} == expected
    assert set(verdict) - set(expected) == {"run_id", "contract_id", "received_at"}
    assert client.get_verdict(contract_id) == verdict
    ledger = client.list_verdicts("report-writer")
    assert ledger["counts"] == {"PASS": 1, "FLAG": 0, "FAIL": 0, "total": 1}
    assert [entry["run_id"] for entry in ledger["verdicts"]] == [verdict["run_id"]]
    assert ledger["next_cursor"] is None


def test_the_ledger_is_newest_first_with_counts_and_a_cursor(
    client: Client, tmp_path: Path
) -> None:
    contract_id = client.create_contract(example_contract())
    good = example_bundle()
    workspace = example_workspace(tmp_path)
    (workspace / ".env").write_text("SECRET=1\n")
    bad = example_bundle(workspace)
    runs = [client.submit_run(contract_id, b) for b in (good, bad, good, bad, bad)]
    assert [run["verdict"] for run in runs] == ["PASS", "FAIL", "PASS", "FAIL", "FAIL"]
    seen: list[str] = []
    cursor = None
    while True:
        page = client.list_verdicts("report-writer", limit=2, cursor=cursor)
        assert page["counts"] == {"PASS": 2, "FLAG": 0, "FAIL": 3, "total": 5}
        seen += [entry["run_id"] for entry in page["verdicts"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [run["run_id"] for run in reversed(runs)]
    assert client.get_verdict(contract_id)["run_id"] == runs[-1]["run_id"]
    assert client.list_verdicts("nobody")["counts"]["total"] == 0


# -- what the server refuses to trust --------------------------------------------------------


def test_a_tampered_bundle_is_fail_naming_the_artifact(client: Client) -> None:
    contract_id = client.create_contract(example_contract())
    bundle = example_bundle()
    report = next(a for a in bundle["artifacts"] if a["path"] == "report.md")
    report["content"]["data"] = report["content"]["data"].replace("Summary", "Sumary!")
    verdict = client.submit_run(contract_id, reseal(bundle))
    assert verdict["verdict"] == "FAIL"
    assert verdict["integrity_problems"][0].startswith(
        "artifact 'report.md': content sha256 mismatch"
    )
    # Without even resealing: the bundle hash names it too.
    bundle = example_bundle()
    app_db = next(a for a in bundle["artifacts"] if a["path"] == "app.db")
    app_db["sqlite"]["tables"]["orders"]["rows"] = 400
    verdict = client.submit_run(contract_id, bundle)
    assert verdict["verdict"] == "FAIL"
    assert verdict["integrity_problems"][0].startswith("bundle_hash: recorded")
    assert any(
        p.startswith("artifact 'app.db': sqlite sha256") for p in verdict["integrity_problems"]
    )


def test_a_bundle_for_another_contract_is_fail(client: Client, tmp_path: Path) -> None:
    contract = example_contract()
    other = contract_from_data({**contract.to_dict(), "task_id": "weekly-report-w33"})
    contract_id = client.create_contract(other)
    verdict = client.submit_run(contract_id, example_bundle())  # collected for w32
    assert verdict["verdict"] == "FAIL"
    assert verdict["integrity_problems"][0] == (
        "contract: the bundle was collected for task_id 'weekly-report-w32', this contract's "
        "is 'weekly-report-w33' (a bundle for another contract)"
    )
    # A bundle collected for a contract with one criterion less proves nothing here either.
    fewer = contract_from_data(
        {**contract.to_dict(), "success_criteria": contract.to_dict()["success_criteria"][:8]}
    )
    verdict = client.submit_run(
        client.create_contract(contract), collect_evidence(fewer, EXAMPLE / "workspace")
    )
    assert verdict["verdict"] == "FAIL"
    assert verdict["integrity_problems"][0].startswith(
        "contract: the bundle was collected for contract_sha256"
    )


def test_a_truncated_artifact_is_flag_never_pass(client: Client, tmp_path: Path) -> None:
    workspace = example_workspace(tmp_path)
    with (workspace / "logs" / "run.log").open("a") as log:
        log.write("padding line\n" * 25_000)  # 325 KB: past the 256 KiB cap
    contract = example_contract()
    local = subprocess.run(
        [str(VERDRYX), "verify", str(CONTRACT_FILE), "--base-path", str(workspace)],
        capture_output=True,
    )
    assert local.returncode == 0  # the live checks read the whole file
    verdict = client.submit_run(client.create_contract(contract), example_bundle(workspace))
    assert verdict["verdict"] == "FLAG"
    statuses = {r["check_id"]: r["status"] for r in verdict["check_results"]}
    assert statuses["every-region-logged"] == statuses["log-complete"] == "error"
    assert "truncated" in verdict["reason"]


# -- keys and tenants ------------------------------------------------------------------------


def test_tenants_never_see_each_others_contracts(service: RunningService) -> None:
    alice = Client(api_key=service.new_key("alice"), base_url=service.url)
    bob = Client(api_key=service.new_key("bob"), base_url=service.url)
    contract_id = alice.create_contract(example_contract())
    alice.submit_run(contract_id, example_bundle())
    for call in (
        lambda: bob.get_verdict(contract_id),
        lambda: bob.submit_run(contract_id, example_bundle()),
    ):
        with pytest.raises(VerificationServiceError) as caught:
            call()
        assert caught.value.status == 404
        assert "no contract" in str(caught.value)
    # The same 404 as for an id that never existed: bob learns nothing.
    with pytest.raises(VerificationServiceError) as never:
        bob.get_verdict("vc_" + "0" * 32)
    assert never.value.status == 404
    assert bob.list_verdicts("report-writer")["counts"]["total"] == 0
    # Bob's copy of the same contract is his own, under another id.
    assert bob.create_contract(example_contract()) != contract_id


def test_keys_from_the_command_line_and_a_revoked_key_is_refused(
    service: RunningService, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "create", "--name", "ci-bot", "--db", service.db_arg]) == 0
    out, err = capsys.readouterr()
    key = out.strip()
    assert key.startswith("vk_live_") and len(key) > 40
    assert "shown only now" in err
    assert main(["keys", "list", "--db", service.db_arg, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    mine = next(item for item in listed if item["name"] == "ci-bot")
    assert key not in json.dumps(listed)  # the key itself is never stored or shown again
    assert mine["prefix"] == key[:12] and mine["revoked_at"] is None
    stored = service.stored_bytes()
    assert key.encode() not in stored
    assert hashlib.sha256(key.encode()).hexdigest().encode() in stored

    client = Client(api_key=key, base_url=service.url)
    contract_id = client.create_contract(example_contract())
    assert main(["keys", "revoke", mine["key_id"], "--db", service.db_arg]) == 0
    assert "revoked" in capsys.readouterr().out
    with pytest.raises(AuthError) as caught:
        client.get_verdict(contract_id)
    assert caught.value.status == 401
    assert "revoked" in str(caught.value)
    assert main(["keys", "revoke", "key_nope", "--db", service.db_arg]) == 2
    assert "no API key 'key_nope'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer",
        "Basic dXNlcjpwYXNz",
        "Bearer vk_live_" + "x" * 43,
        "Bearer not-a-key",
        "Bearer " + "vk_live_" + "é" * 40,
    ],
    ids=["none", "empty", "basic", "unknown", "malformed", "non-ascii"],
)
def test_a_missing_or_bad_key_is_401(service: RunningService, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    for method, path in (
        ("POST", "/v1/contracts"),
        ("GET", "/v1/verdicts"),
        ("GET", f"/v1/contracts/vc_{'0' * 32}/verdict"),
    ):
        status, document = raw(service, method, path, b"{}" if method == "POST" else None, headers)
        assert status == 401
        assert "API key" in only_error(document)


# -- bad input: 4xx with one message, never 5xx ----------------------------------------------


def test_bad_bodies_are_400_naming_the_problem(service: RunningService) -> None:
    key = service.new_key()
    contract_id = Client(api_key=key, base_url=service.url).create_contract(example_contract())
    runs = f"/v1/contracts/{contract_id}/runs"
    bad_table = copy.deepcopy(example_contract().to_dict())
    bad_table["success_criteria"][7]["table"] = "orders; DROP TABLE x"
    cases = [
        ("/v1/contracts", b"[" * 100_000, "nests deeper than the JSON parser allows"),
        (runs, b"[" * 100_000, "nests deeper than the JSON parser allows"),
        ("/v1/contracts", b"", "not valid JSON at line 1, column 1"),
        ("/v1/contracts", b"\xff\xfe", "not UTF-8 text"),
        ("/v1/contracts", b'{"task_id": 1e999}', "overflows to infinity"),
        (
            "/v1/contracts",
            json.dumps(bad_table).encode(),
            "criterion 'orders-loaded' (#8): field 'table'",
        ),
        ("/v1/contracts", b'{"task_id": "t"}', "missing the required field 'success_criteria'"),
        (runs, b"{}", "not a verdryx evidence bundle"),
        (runs, b'{"a": 1, "a": 1}', "the key 'a' appears twice"),
    ]
    bundle = example_bundle()
    bundle["artifacts"][0]["size"] = -5
    cases.append(
        (
            runs,
            json.dumps(bundle).encode(),
            "artifact '.env': field 'size': -5 is less than the minimum of 0",
        )
    )
    for path, body, words in cases:
        status, document = raw(service, "POST", path, body, auth(key))
        assert status == 400, (path, body[:40], document)
        assert words in only_error(document), (words, document)
    for query, words in (
        ("limit=0", "limit must be an integer from 1 to 500"),
        ("limit=abc", "limit must be"),
        ("limit=%C2%B2", "limit must be"),
        ("cursor=-1", "is not one this server returned"),
        ("agent=x", "unknown query parameter 'agent'"),
        ("agent_id=a&agent_id=b", "'agent_id' is given more than once"),
    ):
        status, document = raw(service, "GET", f"/v1/verdicts?{query}", None, auth(key))
        assert status == 400, query
        assert words in only_error(document)


def test_a_body_over_the_limit_is_413_naming_it(service: RunningService) -> None:
    key = service.new_key()
    big = b'{"task_id": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    status, document = raw(service, "POST", "/v1/contracts", big, auth(key))
    assert status == 413
    assert "larger than the server's limit of 2097152 bytes (2 MiB)" in only_error(document)
    # Chunked, with no Content-Length to refuse it by: refused while streaming.
    url = urllib.parse.urlsplit(service.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    chunks = (b"x" * 65536 for _ in range(64))
    connection.request("POST", "/v1/contracts", body=chunks, headers=auth(key), encode_chunked=True)
    response = connection.getresponse()
    assert response.status == 413
    assert "2097152 bytes" in only_error(json.loads(response.read()))
    connection.close()


def test_unknown_routes_and_methods_answer_json(service: RunningService) -> None:
    key = service.new_key()
    status, document = raw(service, "GET", "/v2/nothing", None, auth(key))
    assert status == 404 and "no such endpoint" in only_error(document)
    status, document = raw(service, "DELETE", "/v1/contracts", None, auth(key))
    assert status == 405 and only_error(document)
    status, document = raw(service, "GET", "/v1/contracts/not-an-id/verdict", None, auth(key))
    assert status == 404 and "no contract 'not-an-id'" in only_error(document)
    contract_id = Client(api_key=key, base_url=service.url).create_contract(example_contract())
    status, document = raw(service, "GET", f"/v1/contracts/{contract_id}/verdict", None, auth(key))
    assert status == 404 and "has no verdict yet" in only_error(document)


def test_the_committed_openapi_document_is_what_the_server_serves(
    service: RunningService,
) -> None:
    status, served = raw(service, "GET", "/openapi.json")
    assert status == 200
    committed = json.loads(
        (EXAMPLE.parent.parent / "docs" / "verification-service.openapi.json").read_text(
            encoding="utf-8"
        )
    )
    assert served == committed == openapi_document(), "regenerate: python scripts/write_openapi.py"


# -- the client's errors ---------------------------------------------------------------------


def test_client_errors_are_one_family_and_never_carry_the_key(service: RunningService) -> None:
    key = service.new_key()
    assert issubclass(AuthError, VerificationServiceError)
    assert issubclass(VerificationServiceError, VerdryxError)
    client = Client(api_key=key, base_url=service.url, timeout=5)
    assert key not in repr(client) and key not in str(vars(type(client)))
    failures: list[VerificationServiceError] = []

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    with pytest.raises(VerificationServiceError, match="cannot reach the service") as refused:
        Client(api_key=key, base_url=dead).create_contract(example_contract())
    failures.append(refused.value)

    with silent_server() as silent:
        slow = Client(api_key=key, base_url=silent, timeout=0.3)
        with pytest.raises(VerificationServiceError, match=r"no answer within 0.3s") as late:
            slow.list_verdicts()
    failures.append(late.value)

    for reply in (
        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot json!",
        b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 5\r\nConnection: close\r\n\r\noops!",
        b"garbage, not HTTP\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: 39\r\nConnection: close\r\n\r\n"
        b'{"verdict": "PASS", "check_results": 7}',
    ):
        with canned_server(reply) as canned:
            with pytest.raises(VerificationServiceError) as odd:
                Client(api_key=key, base_url=canned).get_verdict("vc_x")
            assert not isinstance(odd.value, AuthError)
            failures.append(odd.value)

    with pytest.raises(AuthError) as denied:
        Client(api_key="vk_live_" + "y" * 43, base_url=service.url).list_verdicts()
    failures.append(denied.value)
    for bad in ("", "  ", "vk_live_a\r\nX-Injected: 1"):
        with pytest.raises(AuthError):
            Client(api_key=bad, base_url=service.url)
    with pytest.raises(VerificationServiceError, match="not an http"):
        Client(api_key=key, base_url="ftp://example.invalid")
    for timeout in (0, -1, float("nan"), float("inf")):
        with pytest.raises(VerificationServiceError, match="timeout must be a positive number"):
            Client(api_key=key, base_url=service.url, timeout=timeout)

    for failure in failures:
        text = f"{failure} {failure!r} {failure.args}"
        assert key not in text
        assert "\n" not in str(failure)
        # No chained traceback of the HTTP machinery underneath.
        assert failure.__cause__ is None
        assert failure.__context__ is None or failure.__suppress_context__


class _Canned(threading.Thread):
    def __init__(self, reply: bytes | None) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.reply = reply
        self.stop = threading.Event()

    def run(self) -> None:
        self.sock.settimeout(0.05)
        while not self.stop.is_set():
            try:
                connection, _ = self.sock.accept()
            except OSError:
                continue
            with connection:
                connection.recv(65536)
                if self.reply is None:
                    self.stop.wait(5)  # never answer
                else:
                    connection.sendall(self.reply)


class canned_server:
    """A socket that answers every request with fixed bytes (or never, for `None`)."""

    def __init__(self, reply: bytes | None) -> None:
        self.thread = _Canned(reply)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.thread.sock.getsockname()[1]}"

    def __exit__(self, *exc: object) -> None:
        self.thread.stop.set()
        self.thread.join(timeout=10)
        self.thread.sock.close()


def silent_server() -> canned_server:
    return canned_server(None)


# -- the command line ------------------------------------------------------------------------


def run_verify(
    service: RunningService, key: str | None, *args: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VERDRYX_API_KEY"}
    if key is not None:
        env["VERDRYX_API_KEY"] = key
    return subprocess.run(
        [str(VERDRYX), "verify", *args, "--server", service.url],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_verify_server_exit_codes_follow_the_servers_verdict(
    service: RunningService, tmp_path: Path
) -> None:
    key = service.new_key()
    workspace = example_workspace(tmp_path)
    passed = run_verify(service, key, str(CONTRACT_FILE), "--base-path", str(workspace))
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.startswith("PASS  task weekly-report-w32 (agent report-writer)")
    assert f"verified by {service.url} (contract vc_" in passed.stdout

    (workspace / "logs" / "run.log").write_text("started\n")
    failed = run_verify(service, key, str(CONTRACT_FILE), "--base-path", str(workspace), "--json")
    assert failed.returncode == 1, failed.stderr
    document = json.loads(failed.stdout)
    assert document["verdict"] == "FAIL" and document["run_id"].startswith("vr_")

    flagged_contract = tmp_path / "flag.json"
    flagged_contract.write_text(
        json.dumps({**example_contract().to_dict(), "unverifiable_claims": ["emailed it"]})
    )
    bundle_file = tmp_path / "bundle.json"
    flagged = run_verify(
        service,
        key,
        str(flagged_contract),
        "--base-path",
        str(EXAMPLE / "workspace"),
        "--bundle-out",
        str(bundle_file),
    )
    assert flagged.returncode == 2, flagged.stderr
    assert flagged.stdout.startswith("FLAG")
    # An existing bundle can be submitted as it is.
    again = run_verify(service, key, str(flagged_contract), "--bundle", str(bundle_file))
    assert again.returncode == 2, again.stderr

    ledger = Client(api_key=key, base_url=service.url).list_verdicts("report-writer")
    assert ledger["counts"] == {"PASS": 1, "FLAG": 2, "FAIL": 1, "total": 4}


def test_verify_server_errors_exit_3_with_one_line(service: RunningService, tmp_path: Path) -> None:
    base = ("--base-path", str(EXAMPLE / "workspace"))
    no_key = run_verify(service, None, str(CONTRACT_FILE), *base)
    assert (no_key.returncode, no_key.stdout) == (3, "")
    assert no_key.stderr.startswith("error: --server needs an API key in $VERDRYX_API_KEY")
    bad_key = "vk_live_" + "z" * 43
    refused = run_verify(service, bad_key, str(CONTRACT_FILE), *base)
    assert refused.returncode == 3
    assert refused.stderr.count("\n") == 1 and "401" in refused.stderr
    assert bad_key not in refused.stderr + refused.stdout
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    done = subprocess.run(
        [str(VERDRYX), "verify", str(CONTRACT_FILE), *base, "--server", f"http://127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        env={**os.environ, "VERDRYX_API_KEY": service.new_key()},
        timeout=60,
    )
    assert done.returncode == 3
    assert done.stderr.startswith("error: POST http://127.0.0.1:")
    assert "cannot reach the service" in done.stderr and "Traceback" not in done.stderr


def test_verdryx_serve_runs_the_service(tmp_path: Path) -> None:
    """The real command, as an operator starts it."""
    from tests.service_support import free_port

    db = tmp_path / "verdryx.db"
    created = subprocess.run(
        [str(VERDRYX), "keys", "create", "--name", "op", "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
    )
    key = created.stdout.strip()
    port = free_port()
    server = subprocess.Popen(
        [str(VERDRYX), "serve", "--db", str(db), "--port", str(port), "--log-level", "info"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        client = Client(api_key=key, base_url=f"http://127.0.0.1:{port}", timeout=10)
        for _ in range(200):
            try:
                client.list_verdicts()
                break
            except VerificationServiceError:
                if server.poll() is not None:
                    raise AssertionError(server.stdout.read() if server.stdout else "") from None
                threading.Event().wait(0.05)
        contract_id = client.create_contract(example_contract())
        assert client.submit_run(contract_id, example_bundle())["verdict"] == "PASS"
    finally:
        server.terminate()
        err, _ = server.communicate(timeout=20)
    # The access log (info) names every request, and never the key.
    assert "POST /v1/contracts HTTP/1.1" in err
    assert key not in err


def test_serve_without_the_extra_names_the_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['uvicorn'] = None\n"
        "from verdryx_core.cli import main\n"
        f"sys.exit(main(['serve', '--db', {str(tmp_path / 'v.db')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert "pip install 'verdryx[serve]'" in done.stderr
    assert done.stderr.count("\n") == 1


def test_base64_content_round_trips_through_the_server(client: Client, tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)))
    contract = contract_from_data(
        {
            "task_id": "bin",
            "agent_id": "b",
            "success_criteria": [
                {"id": "l", "type": "line_count_gte", "path": "blob.bin", "min_lines": 1}
            ],
        }
    )
    bundle = collect_evidence(contract, tmp_path)
    assert bundle["artifacts"][0]["content"]["encoding"] == "base64"
    assert base64.b64decode(bundle["artifacts"][0]["content"]["data"]) == bytes(range(256))
    assert client.submit_run(client.create_contract(contract), bundle)["verdict"] == "PASS"
