"""The verification service and its client against hostile peers, for real: uvicorn on
127.0.0.1 with the guarded protocol `verdryx serve` runs (http_server.py), raw sockets that
stall, trickle or send garbage, and servers that answer one byte at a time
(docs/verification-service.md, "Limits"; docs/troubleshooting.md, "Reliability: the
verification service").

No test asserts a bound tighter than ten times the time it expects: each proves that a
connection or a call stops, not how fast."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import selectors
import socket
import subprocess
import sys
import threading
import time
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
    free_port,
    running_service,
)
from tests.store_support import BACKENDS, store_target
from verdryx_core.addons.service import Client, VerificationServiceError, create_key
from verdryx_core.addons.service.server_limits import ServerLimits, connection_budget
from verdryx_core.cli import main
from verdryx_core.errors import UsageError

VERDRYX = Path(sys.executable).parent / "verdryx"
CONTRACT_FILE = EXAMPLE / "weekly-report.contract.json"

#: Short deadlines, so each test waits a second or two for what it proves.
LIMITS = ServerLimits(header_timeout=0.8, body_timeout=0.8, max_connections=6)


@pytest.fixture(scope="module", params=BACKENDS)
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningService]:
    with (
        store_target(request.param, tmp_path_factory.mktemp("hostile")) as db,
        running_service(db, limits=LIMITS, max_body_bytes=64 * 1024) as running,
    ):
        yield running


def _address(url: str) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    assert parts.hostname and parts.port
    return parts.hostname, parts.port


def _connect(service: RunningService) -> socket.socket:
    sock = socket.create_connection(_address(service.url), timeout=30)
    sock.settimeout(30)
    return sock


def _read_to_close(sock: socket.socket, *, within: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and how long that took."""
    started = time.monotonic()
    sock.settimeout(within)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received, time.monotonic() - started


def _parse(raw: bytes) -> tuple[int, dict[str, str], Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, json.loads(body) if body else None


def _only_error(document: Any) -> str:
    assert isinstance(document, dict) and list(document) == ["error"], document
    message = document["error"]
    assert isinstance(message, str) and message and "\n" not in message
    return message


def _json_error(raw: bytes) -> tuple[int, str]:
    status, headers, document = _parse(raw)
    assert headers["content-type"].startswith("application/json"), headers
    return status, _only_error(document)


def _healthz(service: RunningService | str) -> int:
    url = service if isinstance(service, str) else service.url
    sock = socket.create_connection(_address(url), timeout=30)
    with sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        raw, _ = _read_to_close(sock, within=30)
    return _parse(raw)[0]


# -- deadlines ---------------------------------------------------------------------------------


def test_headers_that_trickle_past_the_deadline_get_408_and_are_closed(
    service: RunningService,
) -> None:
    sock = _connect(service)
    stop = threading.Event()

    def trickle() -> None:
        # A valid request line, one byte at a time, never reaching the end of the headers:
        # each byte arrives well inside any per-read timeout.
        request = b"POST /v1/verdicts HTTP/1.1\r\nX-Padding: " + b"y" * 10_000
        for byte in request:
            if stop.wait(0.05):
                return
            try:
                sock.send(bytes([byte]))
            except OSError:
                return

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        raw, took = _read_to_close(sock, within=30)
    finally:
        stop.set()
        sender.join(10)
        sock.close()
    status, message = _json_error(raw)
    assert status == 408 and "request headers not complete within 0.8s" in message
    assert took < 10 * LIMITS.header_timeout


def test_a_socket_that_sends_nothing_is_closed_at_the_header_deadline(
    service: RunningService,
) -> None:
    with _connect(service) as sock:
        raw, took = _read_to_close(sock, within=30)
    assert _json_error(raw)[0] == 408
    assert took < 10 * LIMITS.header_timeout


def test_a_body_that_stalls_gets_408_whether_or_not_the_app_reads_it(
    service: RunningService,
) -> None:
    key = service.new_key()
    # The app reads this body (a contract), and waits for the rest of it.
    with _connect(service) as sock:
        sock.sendall(
            b"POST /v1/contracts HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + key.encode() + b"\r\nContent-Length: 4000\r\n\r\n"
            b'{"task_id": "t", '
        )
        raw, took = _read_to_close(sock, within=30)
    status, message = _json_error(raw)
    assert status == 408 and "request body not complete within 0.8s" in message
    assert took < 10 * LIMITS.body_timeout
    # The app never reads this one (/healthz has no body): answered at once, and then the
    # connection that keeps promising a body is still closed at the deadline.
    with _connect(service) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 900000\r\n\r\nab")
        raw, took = _read_to_close(sock, within=30)
    status, _, document = _parse(raw)
    assert (status, document) == (200, {"status": "ok"})
    assert took < 10 * LIMITS.body_timeout
    assert _healthz(service) == 200


# -- the connection limit ------------------------------------------------------------------------


def test_idle_sockets_past_the_limit_are_evicted_and_others_are_served(
    service: RunningService,
) -> None:
    idle = [_connect(service) for _ in range(LIMITS.max_connections * 3)]
    try:
        # Served at once, however many idle sockets there are: each new connection evicts
        # the oldest one that has not sent its headers.
        for _ in range(3):
            assert _healthz(service) == 200
        answers = []
        for sock in idle:
            raw, _ = _read_to_close(sock, within=30)
            answers.append(_json_error(raw)[0] if raw else None)
    finally:
        for sock in idle:
            sock.close()
    # The oldest were evicted (503) as newer ones came, the rest timed out (408).
    assert set(answers) <= {503, 408}, answers
    assert 503 in answers


def test_when_every_connection_has_a_request_in_progress_a_new_one_gets_503(
    service: RunningService,
) -> None:
    key = service.new_key()
    busy = []
    stop = threading.Event()

    def keep_sending() -> None:
        # Each body keeps coming, a byte at a time: a request in progress, not a stalled one.
        while not stop.wait(0.02):
            for sock in list(busy):
                with contextlib.suppress(OSError):
                    sock.send(b" ")

    sender = threading.Thread(target=keep_sending, daemon=True)
    try:
        for _ in range(LIMITS.max_connections):
            sock = _connect(service)
            sock.sendall(
                b"POST /v1/contracts HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "
                + key.encode()
                + b"\r\nContent-Length: 500\r\n\r\n{"
            )
            busy.append(sock)
        sender.start()
        time.sleep(0.1)  # let the server read every request's headers
        with _connect(service) as late:
            late.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            raw, _ = _read_to_close(late, within=30)
        status, message = _json_error(raw)
        assert status == 503 and "as many connections as it may (6)" in message
    finally:
        stop.set()
        if sender.is_alive():
            sender.join(10)
        for sock in busy:
            sock.close()
    # Their bodies were never whole: the body deadline frees the slots, and it serves again.
    deadline = time.monotonic() + 30
    while _healthz(service) != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)


#: A body deadline far past what the test waits: the slots must be freed by eviction.
LONG_BODY = ServerLimits(header_timeout=0.8, body_timeout=60, max_connections=6)


@pytest.fixture(scope="module")
def long_body_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    db = tmp_path_factory.mktemp("long-body") / "v.db"
    with running_service(db, limits=LONG_BODY, max_body_bytes=64 * 1024) as running:
        yield running


def _stalled_bodies(
    service: RunningService, key: str, count: int = LONG_BODY.max_connections
) -> list[socket.socket]:
    """`count` slots (all of them) taken by a whole request head with a valid key, and then
    no body."""
    held = []
    for _ in range(count):
        sock = _connect(service)
        sock.sendall(
            b"POST /v1/contracts HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + key.encode() + b"\r\nContent-Length: 4000\r\n\r\n"
        )
        held.append(sock)
    return held


def test_whole_headers_and_no_body_cannot_hold_every_slot_until_the_body_deadline(
    long_body_service: RunningService,
) -> None:
    service = long_body_service
    key = service.new_key()
    started = time.monotonic()
    for _ in range(2):  # the same tenant, again and again
        held = _stalled_bodies(service, key)
        try:
            time.sleep(1.5)  # past the stall time (1 s), far inside the body deadline (60 s)
            assert _healthz(service) == 200
            answers = []
            for sock in held:
                sock.settimeout(0.2)
                try:
                    raw = sock.recv(65536)
                except TimeoutError:
                    continue  # still held: only as many are evicted as new ones need
                if raw:
                    answers.append(_json_error(raw))
        finally:
            for sock in held:
                sock.close()
        assert answers and {status for status, _ in answers} == {503}
        assert "this connection's request body stalled" in answers[0][1]
    assert time.monotonic() - started < LONG_BODY.body_timeout / 2


def test_a_body_that_keeps_coming_is_not_evicted(long_body_service: RunningService) -> None:
    service = long_body_service
    key = service.new_key()
    contract = CONTRACT_FILE.read_bytes()
    with _connect(service) as sock:
        sock.sendall(
            b"POST /v1/contracts HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + key.encode() + b"\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(contract)).encode() + b"\r\n\r\n"
        )
        # Every other slot stalls.
        held = _stalled_bodies(service, key, LONG_BODY.max_connections - 1)
        try:
            for index in range(30):  # 1.5 s of a body arriving a byte at a time
                sock.send(contract[index : index + 1])
                time.sleep(0.05)
            # A newcomer evicts a stalled body, never this one, which then arrives whole.
            assert _healthz(service) == 200
            sock.sendall(contract[30:])
            raw, _ = _read_to_close(sock, within=30)
        finally:
            for other in held:
                other.close()
    status, _, document = _parse(raw)
    assert status in (200, 201), document


def _connect_at_once(port: int, count: int, into: list[socket.socket]) -> None:
    """`count` sockets connected to `port` (added to `into`), their connections started
    together: a full accept queue drops a handshake, which the kernel retries a second or more
    later, so one after another they would take seconds of retries end to end."""
    with selectors.DefaultSelector() as selector:
        for _ in range(count):
            sock = socket.socket()
            into.append(sock)
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            selector.register(sock, selectors.EVENT_WRITE)
        deadline = time.monotonic() + 60
        while selector.get_map():
            assert time.monotonic() < deadline
            for key, _ in selector.select(timeout=1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                selector.unregister(sock)
                assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0


def test_serve_under_a_small_descriptor_limit_answers_healthz_through_a_flood(
    tmp_path: Path,
) -> None:
    """`verdryx serve` under `ulimit -n 256`, with 400 sockets open on it that never send
    a byte: /healthz answers (before, it timed out: the process had no descriptor left)."""
    port = free_port()

    def small_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    server = subprocess.Popen(
        [str(VERDRYX), "serve", "--db", str(tmp_path / "v.db"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=small_limit,
    )
    flood: list[socket.socket] = []
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                status = _healthz(url)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
        assert status == 200
        _connect_at_once(port, 400, flood)
        started = time.monotonic()
        for _ in range(5):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            with sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                raw, _ = _read_to_close(sock, within=30)
            assert raw and _parse(raw)[0] == 200, raw[:200]
        # The default header deadline is 10 s and the kernel's queue holds the rest; five
        # answers well inside one deadline each is what "served through the flood" means.
        assert time.monotonic() - started < 10 * 10
    finally:
        for sock in flood:
            sock.close()
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert "Traceback" not in err, err[-3000:]


def test_the_connection_budget_fits_the_descriptor_limit() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    budget, note = connection_budget(10**9)
    assert budget < soft and note and "lowered to" in note
    assert connection_budget(1) == (1, None)
    with pytest.raises(UsageError, match="--header-timeout"):
        ServerLimits(header_timeout=0)
    with pytest.raises(UsageError, match="--max-header-bytes"):
        ServerLimits(max_header_bytes=10)


# -- JSON at every layer ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_bytes", "status", "words"),
    [
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400, "malformed HTTP request"),
        (b"GET /healthz HTTP/1.1\r\nHost: t\r\nno colon here\r\n\r\n", 400, "malformed HTTP"),
        (b"GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 1e3\r\n\r\n", 400, "malformed"),
        (
            b"GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
            400,
            "malformed",
        ),
        (
            b"POST /v1/contracts HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n",
            501,
            "Transfer-Encoding: chunked",
        ),
        (
            b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: " + b"z" * 20_000 + b"\r\n\r\n",
            431,
            "larger than the server's limit of 16384 bytes",
        ),
        (b"GET /" + b"p" * 40_000 + b" HTTP/1.1\r\n\r\n", 431, "request line and headers"),
    ],
)
def test_what_the_http_layer_refuses_is_a_json_error(
    service: RunningService, request_bytes: bytes, status: int, words: str
) -> None:
    with _connect(service) as sock:
        sock.sendall(request_bytes)
        raw, _ = _read_to_close(sock, within=30)
    got, message = _json_error(raw)
    assert got == status and words in message


def test_a_body_the_framework_sees_cut_is_a_json_error_and_the_server_goes_on(
    service: RunningService,
) -> None:
    key = service.new_key()
    with _connect(service) as sock:
        sock.sendall(
            b"POST /v1/contracts HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "
            + key.encode()
            + b"\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
        )
        raw, _ = _read_to_close(sock, within=30)
    status, message = _json_error(raw)
    assert status == 400 and "malformed" in message
    assert _healthz(service) == 200


@pytest.mark.parametrize("path", ["/healthz/", "/v1/verdicts/", "/v1/contracts/"])
def test_a_trailing_slash_is_a_404_never_a_redirect_built_from_the_host(
    service: RunningService, path: str
) -> None:
    key = service.new_key()
    with _connect(service) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: attacker.invalid:8443\r\n"
            f"Authorization: Bearer {key}\r\nConnection: close\r\n\r\n".encode()
        )
        raw, _ = _read_to_close(sock, within=30)
    status, headers, document = _parse(raw)
    assert status == 404 and "location" not in headers
    assert "no such endpoint" in _only_error(document)
    assert b"attacker.invalid" not in raw


# -- the ledger's cursor ---------------------------------------------------------------------


def test_cursors_are_per_tenant_and_tell_nothing_of_other_tenants(
    service: RunningService,
) -> None:
    ours = Client(api_key=service.new_key("ours"), base_url=service.url, timeout=30)
    theirs = Client(api_key=service.new_key("theirs"), base_url=service.url, timeout=30)
    our_contract = ours.create_contract(example_contract())
    their_contract = theirs.create_contract(example_contract())
    submitted = []
    for round_ in range(5):
        submitted.append(ours.submit_run(our_contract, example_bundle())["run_id"])
        for _ in range(round_ * 3):  # another tenant's volume, between our runs
            theirs.submit_run(their_contract, example_bundle())
    seen: list[str] = []
    cursors: list[str] = []
    cursor = None
    while True:
        page = ours.list_verdicts(limit=2, cursor=cursor)
        seen += [entry["run_id"] for entry in page["verdicts"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        cursors.append(cursor)
        # Another tenant writes between pages: our pages neither skip nor repeat.
        theirs.submit_run(their_contract, example_bundle())
    assert seen == submitted[::-1]
    # A cursor is one of our own run ids, never a number counting everyone's verdicts.
    assert cursors and all(cursor in submitted for cursor in cursors)
    assert not any(cursor.isdigit() for cursor in cursors)
    with pytest.raises(VerificationServiceError, match="is not one this server returned"):
        theirs.list_verdicts(cursor=cursors[0])
    for forged in ("1", "99999", "vr_" + "0" * 24):
        with pytest.raises(VerificationServiceError, match="400"):
            ours.list_verdicts(cursor=forged)


# -- key names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["ops\tteam", "ci\u2028admin", "right\u202eto-left", "back\\nslash", "a\x1b[31m"]
)
def test_a_key_name_outside_the_printable_set_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    db = tmp_path / "k.db"
    assert main(["keys", "create", "--name", name, "--db", str(db)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: --name holds ") and captured.err.count("\n") == 1
    assert not db.exists()  # refused before the store was opened


def test_key_names_are_one_row_each_in_keys_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "k.db"
    assert main(["keys", "create", "--name", "équipe données (ci)", "--db", str(db)]) == 0
    capsys.readouterr()
    from verdryx_core.addons.service import open_service_storage

    with open_service_storage(db) as storage:
        with pytest.raises(UsageError, match="key name"):
            create_key(storage, "two\nlines")
        # A row from before names were checked, written past the check.
        storage.create_key(
            key_id="key_legacy", name="old\nkey_fake  x", key_sha256="0" * 64, prefix="vk_live_ab"
        )
    assert main(["keys", "list", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3  # the header and one row per key
    assert any("équipe données (ci)" in line for line in lines)
    assert any("old\\nkey_fake" in line for line in lines)


# -- the client against a server that never ends its answer --------------------------------------


class _Trickler(threading.Thread):
    """A server that answers each request with `reply`, `step` bytes every `every` seconds
    (for `stall`: the first `stall` bytes, then nothing)."""

    def __init__(self, reply: bytes, *, every: float = 0.05, step: int = 1, stall: int = 0):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.reply, self.every, self.step, self.stall = reply, every, step, stall
        self.stop = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def run(self) -> None:
        self.sock.settimeout(0.05)
        while not self.stop.is_set():
            try:
                connection, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(5)
            try:
                connection.recv(1 << 20)
                if self.stall:
                    connection.sendall(self.reply[: self.stall])
                    self.stop.wait(60)
                    return
                for start in range(0, len(self.reply), self.step):
                    if self.stop.wait(self.every):
                        return
                    connection.sendall(self.reply[start : start + self.step])
            except OSError:
                return

    def __enter__(self) -> _Trickler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join(10)
        self.sock.close()


_VALID = json.dumps({"verdicts": [], "counts": {}, "next_cursor": None}).encode()


@pytest.mark.parametrize(
    "reply",
    [
        # Headers one byte at a time: each read succeeds long before any per-read timeout.
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Filler: "
        + b"f" * 2000
        + b"\r\n\r\n",
        # Whole headers, then a body that never finishes.
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (len(_VALID) + 5000)
        + _VALID
        + b" " * 5000,
    ],
)
def test_the_client_timeout_bounds_the_whole_exchange(reply: bytes) -> None:
    with _Trickler(reply) as server:
        client = Client(api_key="vk_live_" + "k" * 43, base_url=server.url, timeout=1)
        started = time.monotonic()
        with pytest.raises(VerificationServiceError, match=r"no answer within 1s \(timeout\)"):
            client.list_verdicts()
        assert time.monotonic() - started < 10 * 1


def test_a_tls_handshake_that_never_completes_is_bounded_too() -> None:
    # The server takes the connection and the ClientHello, and answers nothing.
    with _Trickler(b"\x16", stall=1) as server:
        url = server.url.replace("http://", "https://")
        client = Client(api_key="vk_live_" + "k" * 43, base_url=url, timeout=1)
        started = time.monotonic()
        with pytest.raises(VerificationServiceError, match="no answer within 1s"):
            client.list_verdicts()
        assert time.monotonic() - started < 10 * 1


def test_verify_with_timeout_ends_on_a_trickling_server(tmp_path: Path) -> None:
    reply = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n" + b"X: y\r\n" * 500
    with _Trickler(reply, every=0.1) as server:
        started = time.monotonic()
        done = subprocess.run(
            [
                str(VERDRYX),
                "verify",
                str(CONTRACT_FILE),
                "--base-path",
                str(EXAMPLE / "workspace"),
                "--server",
                server.url,
                "--timeout",
                "2",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "VERDRYX_API_KEY": "vk_live_" + "k" * 43},
            timeout=120,
        )
        took = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("error: POST ") and done.stderr.count("\n") == 1
    assert "no answer within 2s (timeout)" in done.stderr
    # Two seconds of deadline plus the interpreter's start: far below ten times that.
    assert took < 10 * (2 + 3)


@pytest.mark.parametrize(
    "reply",
    [
        # Says how big it is: refused before a byte of the body is read.
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n{",
        # Chunked, no length: refused once it passes the limit.
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + (b"8000\r\n" + b" " * 0x8000 + b"\r\n") * 8,
        # Unbounded headers.
        b"HTTP/1.1 200 OK\r\n" + (b"X-Pad: " + b"p" * 1000 + b"\r\n") * 90,
    ],
)
def test_an_answer_past_the_size_limit_is_one_error_line(reply: bytes) -> None:
    with _Trickler(reply, every=0, step=1 << 20) as server:
        client = Client(
            api_key="vk_live_" + "k" * 43,
            base_url=server.url,
            timeout=30,
            max_response_bytes=64 * 1024,
        )
        with pytest.raises(VerificationServiceError) as info:
            client.list_verdicts()
    message = str(info.value)
    assert "larger than the client's limit of 65536 bytes" in message and "\n" not in message
    assert info.value.__cause__ is None


def test_the_client_still_talks_to_the_real_server_within_its_limits(
    service: RunningService,
) -> None:
    client = Client(
        api_key=service.new_key(), base_url=service.url, timeout=30, max_response_bytes=1024 * 1024
    )
    contract_id = client.create_contract(example_contract())
    assert client.submit_run(contract_id, example_bundle())["verdict"] == "PASS"
    assert client.get_verdict(contract_id)["verdict"] == "PASS"
    with pytest.raises(VerificationServiceError, match="max_response_bytes must be"):
        Client(api_key="vk_live_" + "k" * 43, base_url=service.url, max_response_bytes=10)
