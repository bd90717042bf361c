"""The keep-alive transport verdryx gives the SDKs (docs/models-and-judges.md, "What a call
costs"): used for a plain base URL and kept out under a proxy variable; the SDK's retries and
timeouts unchanged on it, sync and async; HTTP/1.1 framing (chunked, gzip, `Connection:
close`, a connection the server dropped, a truncated body) and TLS verification checked
against a raw socket server."""

from __future__ import annotations

import asyncio
import gc
import gzip
import os
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from fakes.anthropic_server import DEFAULT_KEY, FakeAnthropic, error_reply, hang_reply

from verdryx_core.errors import ModelCallError
from verdryx_core.llm import make_adapter
from verdryx_core.llm.http11 import request_bytes
from verdryx_core.llm.keepalive import KeepAliveTransport
from verdryx_core.llm.keepalive_async import AsyncKeepAliveTransport
from verdryx_core.llm.sdk_http import light_transport_refusal
from verdryx_core.targets import sdk_client_options

MODEL = "claude-haiku-4-5"


def _transport(options: dict[str, Any]) -> Any:
    # The client's transport is httpx's private attribute; only read here, never set.
    return options["http_client"]._transport


# -- the choice --------------------------------------------------------------------------


def test_a_plain_base_url_gets_the_keepalive_transport_on_one_connection(
    server: FakeAnthropic,
) -> None:
    assert light_transport_refusal({}) is None
    assert isinstance(_transport(sdk_client_options(anthropic.Anthropic)), KeepAliveTransport)
    assert isinstance(
        _transport(sdk_client_options(anthropic.AsyncAnthropic)), AsyncKeepAliveTransport
    )
    adapter = make_adapter(MODEL, env=server.env())
    assert [adapter.complete(f"q{i}").text for i in range(3)] == [
        "echo: q0",
        "echo: q1",
        "echo: q2",
    ]
    assert len({request.client_port for request in server.requests}) == 1


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "https_proxy", "ALL_PROXY"])
def test_a_proxy_variable_keeps_the_sdk_default_transport(
    server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = free.getsockname()[1]
    monkeypatch.setenv(variable, f"http://127.0.0.1:{dead}")
    assert light_transport_refusal() == f"{variable} is set (a proxy)"
    assert "http_client" not in sdk_client_options(anthropic.Anthropic)
    if variable == "HTTP_PROXY":
        # The SDK's own transport honours it: the call goes to the (dead) proxy, not the fake.
        with pytest.raises(ModelCallError):
            make_adapter(MODEL, env=server.env(), max_retries=0).complete("p")
        assert server.requests == []


def test_the_default_transport_can_be_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERDRYX_SDK_TRANSPORT", "default")
    assert "http_client" not in sdk_client_options(anthropic.AsyncAnthropic)


def test_sdk_spans_are_left_off_only_while_nothing_configures_tracing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [name for name in os.environ if name.startswith(("OTEL_", "ANTHROPIC_OPEN"))]:
        monkeypatch.delenv(name)
    assert sdk_client_options(anthropic.Anthropic)["open_telemetry"] is False
    monkeypatch.setenv("OTEL_SERVICE_NAME", "my-agent")
    assert "open_telemetry" not in sdk_client_options(anthropic.Anthropic)
    # The openai SDK has no such argument: nothing is passed for it.
    openai = pytest.importorskip("openai")
    monkeypatch.delenv("OTEL_SERVICE_NAME")
    assert set(sdk_client_options(openai.OpenAI)) == {"http_client"}


# -- the SDK's behaviour on it, async (the sync adapters' suites run on it already) -------


def _async_client(server: FakeAnthropic, **options: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=server.url,
        api_key=DEFAULT_KEY,
        **options,
        **sdk_client_options(anthropic.AsyncAnthropic),
    )


async def _ask(client: anthropic.AsyncAnthropic, text: str) -> Any:
    return await client.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": text}]
    )


def test_async_an_overloaded_answer_is_retried_once_and_paid_once(server: FakeAnthropic) -> None:
    server.script(error_reply(529, "overloaded_error", "busy", retry_after="0.01"))

    async def main() -> Any:
        client = _async_client(server, max_retries=1)
        try:
            return await _ask(client, "hello")
        finally:
            await client.close()

    message = asyncio.run(main())
    assert message.content[0].text == "echo: hello"
    assert len(server.requests) == 2  # the 529 and one retry, nothing more
    # The 529 left the connection open: the retry went on the same one.
    assert len({request.client_port for request in server.requests}) == 1


def test_async_a_silent_provider_times_out(server: FakeAnthropic) -> None:
    server.script(hang_reply())

    async def main() -> None:
        client = _async_client(server, max_retries=0, timeout=0.3)
        try:
            await _ask(client, "hello")
        finally:
            await client.close()

    started = time.monotonic()
    with pytest.raises(anthropic.APITimeoutError):
        asyncio.run(main())
    assert time.monotonic() - started < 10.0  # 0.3 s expected; a hang would be 600 s
    assert len(server.requests) == 1


# The second loop's connection outlives its loop (nothing can close a transport after its
# loop): freed when collected, with the ResourceWarning asyncio gives any such transport.
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_async_one_client_serves_two_event_loops_in_turn(server: FakeAnthropic) -> None:
    client = _async_client(server, max_retries=0)
    # Each asyncio.run is a new loop: the first loop's kept connection cannot serve the
    # second, which opens its own (the SDK's default transport fails the second call).
    first = asyncio.run(_ask(client, "one"))
    second = asyncio.run(_ask(client, "two"))
    assert [first.content[0].text, second.content[0].text] == ["echo: one", "echo: two"]
    assert len({request.client_port for request in server.requests}) == 2
    del client
    gc.collect()  # here, under this test's filter, not in a later test


# -- HTTP/1.1 framing against a raw server -------------------------------------------------


class RawServer:
    """Answers each request (read to the end of its body) with the next scripted bytes; a
    reply marked `close` is followed by closing the connection."""

    def __init__(self, replies: list[tuple[bytes, bool]], tls: ssl.SSLContext | None = None):
        self.replies = list(replies)
        self.tls = tls
        self.ports: list[int] = []
        self.closed = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while self.replies:
            try:
                sock, (_, port) = self._listener.accept()
            except OSError:
                return
            if self.tls is not None:
                try:
                    sock = self.tls.wrap_socket(sock, server_side=True)
                except (ssl.SSLError, OSError):
                    sock.close()
                    continue  # a client that refused the certificate
            with sock:
                self._talk(sock, port)
            self.closed.set()

    def _talk(self, sock: socket.socket, port: int) -> None:
        data = b""
        while self.replies:
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, data = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(data) < length:
                data += sock.recv(65536)
            data = data[length:]
            self.ports.append(port)
            reply, close = self.replies.pop(0)
            sock.sendall(reply)
            if close:
                return

    def close(self) -> None:
        self._listener.close()


def _reply(body: bytes, *headers: bytes) -> bytes:
    head = [b"HTTP/1.1 200 OK", b"Content-Type: application/json", *headers]
    if not any(h.lower().startswith(b"transfer-encoding") for h in headers):
        head.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def _chunked(*pieces: bytes) -> bytes:
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece) for piece in pieces)
    return body + b"0\r\nX-Trailer: 1\r\n\r\n"


Get = Callable[[str], httpx2.Response]


def _getter(kind: str) -> tuple[Get, Callable[[], None]]:
    """GET through a new `httpx2` client on the transport (sync, or async in a loop of its
    own), and how to close it."""
    if kind == "sync":
        client = httpx2.Client(transport=KeepAliveTransport(), timeout=5.0)
        return client.get, client.close
    loop = asyncio.new_event_loop()
    async_client = httpx2.AsyncClient(transport=AsyncKeepAliveTransport(), timeout=5.0)

    def fetch(url: str) -> httpx2.Response:
        async def one() -> httpx2.Response:
            response = await async_client.get(url)
            await response.aread()
            return response

        return loop.run_until_complete(one())

    def close() -> None:
        loop.run_until_complete(async_client.aclose())
        loop.close()

    return fetch, close


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def get(kind: str) -> Iterator[Get]:
    fetch, close = _getter(kind)
    yield fetch
    close()


def test_chunked_gzip_and_close_framing(get: Get) -> None:
    zipped = gzip.compress(b'{"a": 1}')
    server = RawServer(
        [
            (_reply(_chunked(b'{"x":', b" 2}"), b"Transfer-Encoding: chunked"), False),
            (_reply(zipped, b"Content-Encoding: gzip"), False),
            (_reply(b"{}", b"Connection: close"), True),
            (_reply(b"[]"), False),
            # Longer than what is read in one piece: handed over as it arrives.
            (_reply(b'"' + b"y" * (1 << 21) + b'"'), False),
            (_reply(b"null"), False),
        ]
    )
    try:
        url = f"http://127.0.0.1:{server.port}/"
        assert get(url).json() == {"x": 2}
        assert get(url).json() == {"a": 1}
        assert get(url).json() == {}
        assert get(url).json() == []
        assert get(url).json() == "y" * (1 << 21)
        assert get(url).json() is None
    finally:
        server.close()
    first, second, third, fourth, fifth, sixth = server.ports
    assert first == second == third  # kept alive through chunked and gzip answers
    assert fourth != third  # `Connection: close` was honoured
    assert fourth == fifth == sixth  # and through a long body read to its end


def test_a_connection_the_server_dropped_is_not_reused(get: Get) -> None:
    # The first answer says nothing about closing, then the server hangs up while idle.
    server = RawServer([(_reply(b"1"), True), (_reply(b"2"), False)])
    try:
        url = f"http://127.0.0.1:{server.port}/"
        assert get(url).json() == 1
        assert server.closed.wait(5)
        time.sleep(0.05)  # the FIN reaches the client's socket
        assert get(url).json() == 2
    finally:
        server.close()
    assert server.ports[0] != server.ports[1]


def test_a_truncated_body_is_a_protocol_error(get: Get) -> None:
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 10
    server = RawServer([(cut, True)])
    try:
        with pytest.raises(httpx2.RemoteProtocolError):
            get(f"http://127.0.0.1:{server.port}/")
    finally:
        server.close()


def test_a_request_is_framed_as_httpx_announced_it() -> None:
    sized = httpx2.Request("POST", "http://h/v1/m?x=1", content=b"abc")
    assert request_bytes(sized, sized.read()).endswith(b"Content-Length: 3\r\n\r\nabc")
    assert request_bytes(sized, b"").startswith(b"POST /v1/m?x=1 HTTP/1.1\r\nHost: h\r\n")
    streamed = httpx2.Request("POST", "http://h/", content=iter([b"ab", b"cd"]))
    assert request_bytes(streamed, streamed.read()).endswith(
        b"Transfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n"
    )
    split = httpx2.Request("GET", "http://h/", headers={"x-a": "1\r\nx-b: 2"})
    with pytest.raises(httpx2.LocalProtocolError, match="line break"):
        request_bytes(split, b"")


# -- TLS -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec"),
            *("-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout", str(key)),
            *("-out", str(cert), "-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls_verifies_the_certificate_and_honours_ssl_cert_file(
    get: Get, kind: str, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = certificate
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    # Two connections: the first is refused by the client (a certificate it does not trust).
    server = RawServer([(_reply(b'"ok"'), True)], tls=tls)
    try:
        url = f"https://127.0.0.1:{server.port}/"
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            get(url)
    finally:
        server.close()
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server = RawServer([(_reply(b'"ok"'), True)], tls=tls)
    # A new transport builds its context on its first https request, reading SSL_CERT_FILE
    # as httpx does.
    fetch, close = _getter(kind)
    try:
        assert fetch(f"https://127.0.0.1:{server.port}/").json() == "ok"
    finally:
        close()
        server.close()
