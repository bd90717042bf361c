"""A light HTTP/1.1 transport for the SDKs' `httpx2` clients: keep-alive connections, one
send per request, the body read in one piece when its length is known.

The SDKs' default transport (httpcore over h11) spends about 0.5 ms of CPU a request on
bookkeeping; a model call's whole budget is 1 ms (docs/models-and-judges.md, "What a call
costs"). This transport plugs in through httpx's public transport API
(`httpx2.BaseTransport.handle_request`; its async twin is verdryx_core.llm.keepalive_async)
below the `httpx2.Client` the SDK is given, so the SDK's retries, timeouts, redirects and
errors are unchanged: each failure is raised as the `httpx2` exception the default transport
raises for it (a connect timeout as `ConnectTimeout`, a peer that hangs up as
`RemoteProtocolError`, ...), which the SDK retries or turns into `APITimeoutError` /
`APIConnectionError` as before.

It speaks HTTP/1.1 over plain sockets (verdryx_core.llm.http11 frames it) and leaves content
decoding (gzip) to httpx, as the default transport does. Idle connections are kept per origin
(at most 100, each at most 5 s, httpcore's defaults), and one the server has closed is dropped
before reuse. TLS uses `httpx2.create_ssl_context()`, the context the default transport
builds (certifi, and `SSL_CERT_FILE` / `SSL_CERT_DIR` when set). Proxies are not spoken here:
`verdryx_core.llm.sdk_http` hands out this transport only when no proxy variable is set.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator

import httpx2

from verdryx_core.llm.http11 import (
    CHUNK,
    EAGER_BYTES,
    HTTP11,
    MAX_HEAD,
    IdleConnections,
    Origin,
    ResponseHead,
    TlsContext,
    chunk_size,
    keep_alive_options,
    origin_of,
    readable,
    request_bytes,
    timeouts_of,
    tls_server_name,
)

__all__ = ["KeepAliveTransport"]


class _SyncConn:
    """One socket and the bytes read from it but not yet consumed."""

    __slots__ = ("buffer", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def usable(self) -> bool:
        # Bytes waiting on an idle connection (EOF included) mean the server closed it or
        # sent what nobody asked for: either way it cannot carry the next request.
        sock = self.sock
        if sock.fileno() < 0:
            return False  # closed already
        pending = isinstance(sock, ssl.SSLSocket) and sock.pending()
        return not self.buffer and not pending and not readable(sock)

    def _fill(self) -> bool:
        try:
            data = self.sock.recv(CHUNK)
        except TimeoutError as exc:
            raise httpx2.ReadTimeout(str(exc) or "timed out reading") from exc
        except OSError as exc:
            raise httpx2.ReadError(str(exc) or type(exc).__name__) from exc
        self.buffer += data
        return bool(data)

    def read_until(self, separator: bytes) -> bytes:
        start = 0
        while (end := self.buffer.find(separator, start)) < 0:
            if len(self.buffer) > MAX_HEAD:
                raise httpx2.RemoteProtocolError("a response head longer than 256 KiB")
            start = max(0, len(self.buffer) - len(separator) + 1)
            if not self._fill():
                raise httpx2.RemoteProtocolError(
                    "server disconnected without sending a complete response"
                )
        end += len(separator)
        line = bytes(self.buffer[:end])
        del self.buffer[:end]
        return line

    def read_exactly(self, amount: int) -> bytes:
        while len(self.buffer) < amount:
            if not self._fill():
                raise httpx2.RemoteProtocolError("server disconnected in the middle of the answer")
        data = bytes(self.buffer[:amount])
        del self.buffer[:amount]
        return data

    def read_some(self) -> bytes:
        if not self.buffer:
            self._fill()
        data = bytes(self.buffer)
        self.buffer.clear()
        return data

    def close(self) -> None:
        self.sock.close()


class KeepAliveTransport(httpx2.BaseTransport):
    """Keep-alive sockets per origin; thread-safe (one transport serves every thread of
    the call pool, each request on a connection of its own)."""

    def __init__(self) -> None:
        self._idle = IdleConnections()
        self._lock = threading.Lock()
        self._ssl = TlsContext()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        origin = origin_of(request.url)
        timeouts = timeouts_of(request)
        data = request_bytes(request, request.read())
        connection = self._reused(origin)
        if connection is None:
            connection = self._connect(origin, request, timeouts.get("connect"))
        try:
            head = self._exchange(connection, data, timeouts)
            return self._response(origin, connection, head, request)
        except BaseException:
            connection.close()
            raise

    def _reused(self, origin: Origin) -> _SyncConn | None:
        while True:
            with self._lock:
                connection, stale = self._idle.take(origin)
            for old in stale:
                old.close()
            if connection is None or connection.usable():
                return connection
            connection.close()

    def _connect(self, origin: Origin, request: httpx2.Request, timeout: float | None) -> _SyncConn:
        scheme, host, port = origin
        try:
            sock = socket.create_connection((host, port), timeout)
        except TimeoutError as exc:
            raise httpx2.ConnectTimeout(str(exc) or "timed out connecting") from exc
        except OSError as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            keep_alive_options(sock)
            if scheme == "https":
                sock = self._ssl.get().wrap_socket(
                    sock, server_hostname=tls_server_name(request, host)
                )
        except TimeoutError as exc:
            sock.close()
            raise httpx2.ConnectTimeout(str(exc) or "timed out in the TLS handshake") from exc
        except OSError as exc:  # ssl.SSLError included: a certificate refused
            sock.close()
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        return _SyncConn(sock)

    @staticmethod
    def _exchange(
        connection: _SyncConn, data: bytes, timeouts: dict[str, float | None]
    ) -> ResponseHead:
        sock = connection.sock
        try:
            sock.settimeout(timeouts.get("write"))
            sock.sendall(data)
        except TimeoutError as exc:
            raise httpx2.WriteTimeout(str(exc) or "timed out writing") from exc
        except OSError as exc:
            raise httpx2.WriteError(str(exc) or type(exc).__name__) from exc
        sock.settimeout(timeouts.get("read"))
        while True:
            head = ResponseHead(connection.read_until(b"\r\n\r\n")[:-4])
            # An interim answer (100 Continue) is followed by the real one.
            if not (100 <= head.status < 200 and head.status != 101):
                return head

    def _response(
        self, origin: Origin, connection: _SyncConn, head: ResponseHead, request: httpx2.Request
    ) -> httpx2.Response:
        stream: httpx2.SyncByteStream
        bodiless = request.method == "HEAD" or head.status in (204, 304)
        if bodiless or (head.length is not None and head.length <= EAGER_BYTES):
            content = b""
            if not bodiless and head.length:
                content = connection.read_exactly(head.length)
            self._release(origin, connection, head.keep_alive)
            stream = httpx2.ByteStream(content)
        else:
            stream = _SyncBody(self, origin, connection, head)
        return httpx2.Response(
            head.status,
            headers=head.headers,
            stream=stream,
            extensions={"http_version": HTTP11, "reason_phrase": head.reason},
            request=request,
        )

    def _release(self, origin: Origin, connection: _SyncConn, keep_alive: bool) -> None:
        if keep_alive:
            with self._lock:
                kept = self._idle.put(origin, connection)
            if kept:
                return
        connection.close()

    def close(self) -> None:
        with self._lock:
            connections = self._idle.drain()
        for connection in connections:
            connection.close()

    def __del__(self) -> None:
        # A client nobody closed (the SDK closes only the clients it built): its idle sockets
        # are closed here rather than warned about one by one. No lock: nothing else can
        # reach an object being collected.
        for connection in self._idle.drain():
            with contextlib.suppress(OSError):
                connection.close()


class _SyncBody(httpx2.SyncByteStream):
    """A body without a length (chunked, as a streamed answer is, or until the server
    closes) or a long one, handed over as it arrives; the connection goes back to the pool
    when it was read to the end."""

    def __init__(
        self,
        transport: KeepAliveTransport,
        origin: Origin,
        connection: _SyncConn,
        head: ResponseHead,
    ) -> None:
        self._transport = transport
        self._origin = origin
        self._connection = connection
        self._head = head
        self._complete = False

    def __iter__(self) -> Iterator[bytes]:
        connection = self._connection
        if self._head.chunked:
            while True:
                size = chunk_size(connection.read_until(b"\r\n"))
                if size == 0:
                    # Trailers, if any, up to the empty line that ends the message.
                    while connection.read_until(b"\r\n") != b"\r\n":
                        pass
                    break
                yield connection.read_exactly(size + 2)[:-2]
        elif self._head.length is not None:
            left = self._head.length
            while left:
                chunk = connection.read_some()
                if not chunk:
                    raise httpx2.RemoteProtocolError(
                        "server disconnected in the middle of the answer"
                    )
                chunk, extra = chunk[:left], chunk[left:]
                connection.buffer += extra
                left -= len(chunk)
                yield chunk
        else:
            while chunk := connection.read_some():
                yield chunk
            self._head.keep_alive = False
        self._complete = True

    def close(self) -> None:
        if self._complete:
            self._transport._release(self._origin, self._connection, self._head.keep_alive)
        else:
            self._connection.close()
