"""HTTP/1.1 as the keep-alive transports speak it (verdryx_core.llm.keepalive and
keepalive_async): the request in one piece, the answer's head parsed, chunk sizes, idle
connections kept per origin, and the TLS context httpx builds.

Only what the Messages and Chat Completions APIs need of HTTP/1.1, checked where a mistake
would split or misread a message: a header carrying CR or LF is refused, a status line or
header line that is not HTTP/1.1 is a `RemoteProtocolError`, and `Transfer-Encoding: chunked`
wins over a length.
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
import time
from typing import Any, Final

import httpx2

__all__ = [
    "CHUNK",
    "EAGER_BYTES",
    "HTTP11",
    "IDLE_EXPIRY_S",
    "MAX_HEAD",
    "MAX_IDLE",
    "IdleConnections",
    "Origin",
    "ResponseHead",
    "TlsContext",
    "chunk_size",
    "keep_alive_options",
    "origin_of",
    "readable",
    "request_bytes",
    "timeouts_of",
    "tls_server_name",
]

#: Idle connections kept per transport, and how long one may sit idle (httpcore's defaults).
MAX_IDLE: Final = 100
IDLE_EXPIRY_S: Final = 5.0
#: A body of a known length up to this size is read in one piece; a longer one, or one
#: without a length (chunked, as a streamed answer is), is handed over as it arrives.
EAGER_BYTES: Final = 1 << 20
CHUNK: Final = 1 << 16
HTTP11: Final = b"HTTP/1.1"
MAX_HEAD: Final = 1 << 18

Origin = tuple[str, str, int]


def keep_alive_options(sock: socket.socket) -> None:
    """TCP keep-alive as the SDKs' default client sets it: a long call whose peer vanished
    is noticed within minutes instead of hanging until its timeout."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPINTVL", 60), ("TCP_KEEPCNT", 5), ("TCP_KEEPIDLE", 60)):
        option = getattr(socket, name, None)
        if option is not None:
            sock.setsockopt(socket.IPPROTO_TCP, option, value)


def origin_of(url: httpx2.URL) -> Origin:
    scheme = url.scheme
    if scheme not in ("http", "https"):
        raise httpx2.UnsupportedProtocol(f"request URL has an unsupported protocol '{scheme}://'")
    # The ASCII (IDNA) host, as httpcore connects to and names it in TLS.
    host = url.raw_host.decode("ascii")
    return scheme, host, url.port or (443 if scheme == "https" else 80)


def timeouts_of(request: httpx2.Request) -> dict[str, float | None]:
    timeout = request.extensions.get("timeout")
    return timeout if isinstance(timeout, dict) else {}


class IdleConnections:
    """Idle connections by origin, newest last, each with the time it went idle."""

    def __init__(self) -> None:
        self._by_origin: dict[Origin, list[tuple[float, Any]]] = {}
        self._count = 0

    def take(self, origin: Origin) -> tuple[Any | None, list[Any]]:
        """A connection idle for less than the expiry, and those found expired (to close)."""
        stale: list[Any] = []
        idle = self._by_origin.get(origin)
        now = time.monotonic()
        while idle:
            since, connection = idle.pop()
            self._count -= 1
            if now - since < IDLE_EXPIRY_S:
                return connection, stale
            stale.append(connection)
        return None, stale

    def put(self, origin: Origin, connection: Any) -> bool:
        """Keep `connection`; False when the pool is full (the caller closes it)."""
        if self._count >= MAX_IDLE:
            return False
        self._by_origin.setdefault(origin, []).append((time.monotonic(), connection))
        self._count += 1
        return True

    def drain(self) -> list[Any]:
        connections = [connection for idle in self._by_origin.values() for _, connection in idle]
        self._by_origin.clear()
        self._count = 0
        return connections


class TlsContext:
    """The default transport's TLS context, built on the first https request."""

    def __init__(self) -> None:
        self._context: ssl.SSLContext | None = None
        self._lock = threading.Lock()

    def get(self) -> ssl.SSLContext:
        with self._lock:
            if self._context is None:
                self._context = httpx2.create_ssl_context()
            return self._context


class ResponseHead:
    """A response's status line and headers, parsed."""

    __slots__ = ("chunked", "headers", "keep_alive", "length", "reason", "status")

    def __init__(self, raw: bytes) -> None:
        lines = raw.split(b"\r\n")
        version, _, rest = lines[0].partition(b" ")
        code, _, self.reason = rest.partition(b" ")
        if not version.startswith(b"HTTP/1.") or not code.isdigit() or len(code) != 3:
            raise httpx2.RemoteProtocolError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
        self.status = int(code)
        self.headers: list[tuple[bytes, bytes]] = []
        self.length: int | None = None
        self.chunked = False
        connection = b""
        for line in lines[1:]:
            if not line:
                continue
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip():
                raise httpx2.RemoteProtocolError(f"malformed header line {line[:80]!r}")
            value = value.strip()
            self.headers.append((name, value))
            lowered = name.lower()
            if lowered == b"content-length":
                if not value.isdigit():
                    raise httpx2.RemoteProtocolError(f"bad content-length {value[:40]!r}")
                self.length = int(value)
            elif lowered == b"transfer-encoding":
                self.chunked = value.lower().endswith(b"chunked")
            elif lowered == b"connection":
                connection = value.lower()
        if self.chunked:
            self.length = None
        if version == b"HTTP/1.0":
            self.keep_alive = b"keep-alive" in connection
        else:
            self.keep_alive = b"close" not in connection


def readable(sock: socket.socket) -> bool:
    try:
        poller = select.poll()
    except AttributeError:  # no poll() (Windows): select() is enough for one socket
        return bool(select.select([sock], [], [], 0)[0])
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def request_bytes(request: httpx2.Request, body: bytes) -> bytes:
    """The whole request, in one piece: request line, headers (refused when one carries CR or
    LF, which would split the request, as http.client refuses it) and body. A body httpx
    announced as chunked (its content was an iterator of unknown length) is sent as one chunk
    and the last one."""
    lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
    chunked = False
    for name, value in request.headers.raw:
        if b"\r" in name or b"\n" in name or b"\r" in value or b"\n" in value:
            raise httpx2.LocalProtocolError(f"illegal header {name!r}: it holds a line break")
        if name.lower() == b"transfer-encoding" and value.lower() == b"chunked":
            chunked = True
        lines.append(name + b": " + value)
    lines.append(b"\r\n")
    if chunked:
        body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
    return b"\r\n".join(lines) + body


def tls_server_name(request: httpx2.Request, host: str) -> str:
    sni = request.extensions.get("sni_hostname")
    return sni if isinstance(sni, str) and sni else host


def chunk_size(line: bytes) -> int:
    text = line.split(b";", 1)[0].strip()
    try:
        size = int(text, 16)
    except ValueError:
        raise httpx2.RemoteProtocolError(f"bad chunk size {text[:40]!r}") from None
    if size < 0:
        raise httpx2.RemoteProtocolError(f"bad chunk size {text[:40]!r}")
    return size
