"""A light HTTP/1.1 transport for the SDKs' `httpx2` clients: keep-alive connections, one
send per request, the body read in one piece when its length is known.

The SDKs' default transport (httpcore over h11) spends about 0.5 ms of CPU a request on
bookkeeping; a model call's whole budget is 1 ms (docs/models-and-judges.md, "What a call
costs"). This transport plugs in through httpx's public transport API
(`httpx2.BaseTransport.handle_request`, `AsyncBaseTransport.handle_async_request`) below the
`httpx2.Client` the SDK is given, so the SDK's retries, timeouts, redirects and errors are
unchanged: each failure is raised as the `httpx2` exception the default transport raises for
it (a connect timeout as `ConnectTimeout`, a peer that hangs up as `RemoteProtocolError`, ...),
which the SDK retries or turns into `APITimeoutError` / `APIConnectionError` as before.

The sync transport speaks HTTP/1.1 over plain sockets, the async one over asyncio streams;
both parse the answer's head themselves (status line, headers, content-length or chunked
framing) and leave content decoding (gzip) to httpx, as the default transport does. Both keep
idle connections per origin (at most 100, each at most 5 s, httpcore's defaults) and drop one
the server has closed before reusing it. TLS uses
`httpx2.create_ssl_context()`, the context the default transport builds (certifi, and
`SSL_CERT_FILE` / `SSL_CERT_DIR` when set). Proxies are not spoken here:
`verdryx_core.llm.sdk_http` hands out this transport only when no proxy variable is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Final

import httpx2

__all__ = ["AsyncKeepAliveTransport", "KeepAliveTransport"]

#: Idle connections kept per transport, and how long one may sit idle (httpcore's defaults).
MAX_IDLE: Final = 100
IDLE_EXPIRY_S: Final = 5.0
#: A body of a known length up to this size is read in one piece; a longer one, or one
#: without a length (chunked, as a streamed answer is), is handed over as it arrives.
_EAGER_BYTES: Final = 1 << 20
_CHUNK: Final = 1 << 16
_HTTP11: Final = b"HTTP/1.1"
_MAX_HEAD: Final = 1 << 18

_Origin = tuple[str, str, int]


def _socket_options(sock: socket.socket) -> None:
    """TCP keep-alive as the SDKs' default client sets it: a long call whose peer vanished
    is noticed within minutes instead of hanging until its timeout."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPINTVL", 60), ("TCP_KEEPCNT", 5), ("TCP_KEEPIDLE", 60)):
        option = getattr(socket, name, None)
        if option is not None:
            sock.setsockopt(socket.IPPROTO_TCP, option, value)


def _origin(url: httpx2.URL) -> _Origin:
    scheme = url.scheme
    if scheme not in ("http", "https"):
        raise httpx2.UnsupportedProtocol(f"request URL has an unsupported protocol '{scheme}://'")
    # The ASCII (IDNA) host, as httpcore connects to and names it in TLS.
    host = url.raw_host.decode("ascii")
    return scheme, host, url.port or (443 if scheme == "https" else 80)


def _timeouts(request: httpx2.Request) -> dict[str, float | None]:
    timeout = request.extensions.get("timeout")
    return timeout if isinstance(timeout, dict) else {}


class _Idle:
    """Idle connections by origin, newest last, each with the time it went idle."""

    def __init__(self) -> None:
        self._by_origin: dict[_Origin, list[tuple[float, Any]]] = {}
        self._count = 0

    def take(self, origin: _Origin) -> tuple[Any | None, list[Any]]:
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

    def put(self, origin: _Origin, connection: Any) -> bool:
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


class _SslContext:
    """The default transport's TLS context, built on the first https request."""

    def __init__(self) -> None:
        self._context: ssl.SSLContext | None = None
        self._lock = threading.Lock()

    def get(self) -> ssl.SSLContext:
        with self._lock:
            if self._context is None:
                self._context = httpx2.create_ssl_context()
            return self._context


class _Head:
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


# -- sync ------------------------------------------------------------------------------------


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
        return not self.buffer and not pending and not _readable(sock)

    def _fill(self) -> bool:
        try:
            data = self.sock.recv(_CHUNK)
        except TimeoutError as exc:
            raise httpx2.ReadTimeout(str(exc) or "timed out reading") from exc
        except OSError as exc:
            raise httpx2.ReadError(str(exc) or type(exc).__name__) from exc
        self.buffer += data
        return bool(data)

    def read_until(self, separator: bytes) -> bytes:
        start = 0
        while (end := self.buffer.find(separator, start)) < 0:
            if len(self.buffer) > _MAX_HEAD:
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


def _readable(sock: socket.socket) -> bool:
    try:
        poller = select.poll()
    except AttributeError:  # no poll() (Windows): select() is enough for one socket
        return bool(select.select([sock], [], [], 0)[0])
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _request_bytes(request: httpx2.Request, body: bytes) -> bytes:
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


def _server_hostname(request: httpx2.Request, host: str) -> str:
    sni = request.extensions.get("sni_hostname")
    return sni if isinstance(sni, str) and sni else host


class KeepAliveTransport(httpx2.BaseTransport):
    """Keep-alive sockets per origin; thread-safe (one transport serves every thread of
    the call pool, each request on a connection of its own)."""

    def __init__(self) -> None:
        self._idle = _Idle()
        self._lock = threading.Lock()
        self._ssl = _SslContext()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        origin = _origin(request.url)
        timeouts = _timeouts(request)
        data = _request_bytes(request, request.read())
        connection = self._reused(origin)
        if connection is None:
            connection = self._connect(origin, request, timeouts.get("connect"))
        try:
            head = self._exchange(connection, data, timeouts)
            return self._response(origin, connection, head, request)
        except BaseException:
            connection.close()
            raise

    def _reused(self, origin: _Origin) -> _SyncConn | None:
        while True:
            with self._lock:
                connection, stale = self._idle.take(origin)
            for old in stale:
                old.close()
            if connection is None or connection.usable():
                return connection
            connection.close()

    def _connect(
        self, origin: _Origin, request: httpx2.Request, timeout: float | None
    ) -> _SyncConn:
        scheme, host, port = origin
        try:
            sock = socket.create_connection((host, port), timeout)
        except TimeoutError as exc:
            raise httpx2.ConnectTimeout(str(exc) or "timed out connecting") from exc
        except OSError as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _socket_options(sock)
            if scheme == "https":
                sock = self._ssl.get().wrap_socket(
                    sock, server_hostname=_server_hostname(request, host)
                )
        except TimeoutError as exc:
            sock.close()
            raise httpx2.ConnectTimeout(str(exc) or "timed out in the TLS handshake") from exc
        except OSError as exc:  # ssl.SSLError included: a certificate refused
            sock.close()
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        return _SyncConn(sock)

    @staticmethod
    def _exchange(connection: _SyncConn, data: bytes, timeouts: dict[str, float | None]) -> _Head:
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
            head = _Head(connection.read_until(b"\r\n\r\n")[:-4])
            # An interim answer (100 Continue) is followed by the real one.
            if not (100 <= head.status < 200 and head.status != 101):
                return head

    def _response(
        self, origin: _Origin, connection: _SyncConn, head: _Head, request: httpx2.Request
    ) -> httpx2.Response:
        stream: httpx2.SyncByteStream
        bodiless = request.method == "HEAD" or head.status in (204, 304)
        if bodiless or (head.length is not None and head.length <= _EAGER_BYTES):
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
            extensions={"http_version": _HTTP11, "reason_phrase": head.reason},
            request=request,
        )

    def _release(self, origin: _Origin, connection: _SyncConn, keep_alive: bool) -> None:
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
        self, transport: KeepAliveTransport, origin: _Origin, connection: _SyncConn, head: _Head
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
                size = _chunk_size(connection.read_until(b"\r\n"))
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


def _chunk_size(line: bytes) -> int:
    text = line.split(b";", 1)[0].strip()
    try:
        size = int(text, 16)
    except ValueError:
        raise httpx2.RemoteProtocolError(f"bad chunk size {text[:40]!r}") from None
    if size < 0:
        raise httpx2.RemoteProtocolError(f"bad chunk size {text[:40]!r}")
    return size


# -- async -----------------------------------------------------------------------------------


class _Conn:
    """One asyncio connection and the loop it belongs to (it cannot serve another)."""

    __slots__ = ("loop", "reader", "writer")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.loop = loop
        self.reader = reader
        self.writer = writer

    def usable(self, loop: asyncio.AbstractEventLoop) -> bool:
        return (
            self.loop is loop
            and not loop.is_closed()
            and not self.writer.is_closing()
            and not self.reader.at_eof()
            # Bytes that arrived on an idle connection: nobody asked for them. StreamReader
            # has no public peek; the loop has already moved such bytes into its buffer.
            and not getattr(self.reader, "_buffer", b"")
            # ... or still in the socket, when the loop has not run since they came.
            and not self._socket_readable()
        )

    def _socket_readable(self) -> bool:
        sock = self.writer.get_extra_info("socket")
        return sock is not None and _readable(sock)

    def close(self) -> None:
        if self.loop.is_closed():
            # Its transport cannot be closed without its loop: hang up, so the server is not
            # left holding the connection; the socket is freed with the transport (as the
            # default transport's are, after a loop ends).
            sock = self.writer.get_extra_info("socket")
            with contextlib.suppress(OSError, AttributeError):
                sock.shutdown(socket.SHUT_RDWR)
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self.writer.close()
        else:
            # Another thread's loop: a transport is closed on its own loop's thread only.
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self.writer.close)


async def _bounded(awaitable: Any, timeout: float | None, error: type[Exception]) -> Any:
    try:
        async with asyncio.timeout(timeout):
            return await awaitable
    except TimeoutError as exc:
        raise error("timed out") from exc


class AsyncKeepAliveTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 over asyncio streams, connections kept alive per origin and event loop."""

    def __init__(self) -> None:
        self._idle = _Idle()
        self._lock = threading.Lock()
        self._ssl = _SslContext()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        origin = _origin(request.url)
        timeouts = _timeouts(request)
        body = await request.aread()
        loop = asyncio.get_running_loop()
        connection = self._reused(origin, loop)
        if connection is None:
            connection = await self._connect(origin, loop, request, timeouts.get("connect"))
        try:
            head = await self._exchange(connection, request, body, timeouts)
            return await self._response(origin, connection, head, request, timeouts)
        except BaseException:
            connection.close()
            raise

    def _reused(self, origin: _Origin, loop: asyncio.AbstractEventLoop) -> _Conn | None:
        # Locked although one loop rarely races itself: loops in two threads may share a
        # client, and a connection is only ever handed to its own loop.
        while True:
            with self._lock:
                connection, stale = self._idle.take(origin)
            for old in stale:
                old.close()
            if connection is None or connection.usable(loop):
                return connection
            connection.close()

    async def _connect(
        self,
        origin: _Origin,
        loop: asyncio.AbstractEventLoop,
        request: httpx2.Request,
        timeout: float | None,
    ) -> _Conn:
        scheme, host, port = origin
        tls = self._ssl.get() if scheme == "https" else None
        try:
            reader, writer = await _bounded(
                asyncio.open_connection(
                    host,
                    port,
                    ssl=tls,
                    server_hostname=_server_hostname(request, host) if tls else None,
                    limit=_MAX_HEAD,
                ),
                timeout,
                httpx2.ConnectTimeout,
            )
        except OSError as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:
            _socket_options(sock)
        return _Conn(loop, reader, writer)

    @staticmethod
    async def _exchange(
        connection: _Conn,
        request: httpx2.Request,
        body: bytes,
        timeouts: dict[str, float | None],
    ) -> _Head:
        try:
            writer = connection.writer
            writer.write(_request_bytes(request, body))
            if writer.transport.get_write_buffer_size():
                # Only a request the socket did not take at once waits (a timer costs CPU).
                await _bounded(writer.drain(), timeouts.get("write"), httpx2.WriteTimeout)
        except OSError as exc:
            raise httpx2.WriteError(str(exc) or type(exc).__name__) from exc
        while True:
            raw = await _read_until(connection.reader, b"\r\n\r\n", timeouts.get("read"))
            head = _Head(raw[:-4])
            # An interim answer (100 Continue) is followed by the real one.
            if not (100 <= head.status < 200 and head.status != 101):
                return head

    async def _response(
        self,
        origin: _Origin,
        connection: _Conn,
        head: _Head,
        request: httpx2.Request,
        timeouts: dict[str, float | None],
    ) -> httpx2.Response:
        stream: httpx2.AsyncByteStream
        bodiless = request.method == "HEAD" or head.status in (204, 304)
        if bodiless or (head.length is not None and head.length <= _EAGER_BYTES):
            content = b""
            if not bodiless and head.length:
                content = await _read_exactly(connection.reader, head.length, timeouts.get("read"))
            self._release(origin, connection, head.keep_alive)
            stream = httpx2.ByteStream(content)
        else:
            stream = _AsyncBody(self, origin, connection, head, timeouts.get("read"))
        return httpx2.Response(
            head.status,
            headers=head.headers,
            stream=stream,
            extensions={"http_version": _HTTP11, "reason_phrase": head.reason},
            request=request,
        )

    def _release(self, origin: _Origin, connection: _Conn, keep_alive: bool) -> None:
        if keep_alive:
            with self._lock:
                kept = self._idle.put(origin, connection)
            if kept:
                return
        connection.close()

    async def aclose(self) -> None:
        with self._lock:
            connections = self._idle.drain()
        for connection in connections:
            connection.close()

    def __del__(self) -> None:
        for connection in self._idle.drain():
            with contextlib.suppress(Exception):  # a finaliser must not raise
                connection.close()


async def _read_until(
    reader: asyncio.StreamReader, separator: bytes, timeout: float | None
) -> bytes:
    try:
        async with asyncio.timeout(timeout):
            return await reader.readuntil(separator)
    except TimeoutError as exc:
        raise httpx2.ReadTimeout("timed out") from exc
    except asyncio.IncompleteReadError as exc:
        raise httpx2.RemoteProtocolError(
            "server disconnected without sending a complete response"
        ) from exc
    except asyncio.LimitOverrunError as exc:
        raise httpx2.RemoteProtocolError("a response line or head is too long") from exc
    except OSError as exc:
        raise httpx2.ReadError(str(exc) or type(exc).__name__) from exc


async def _read_exactly(reader: asyncio.StreamReader, amount: int, timeout: float | None) -> bytes:
    try:
        async with asyncio.timeout(timeout):
            return await reader.readexactly(amount)
    except TimeoutError as exc:
        raise httpx2.ReadTimeout("timed out") from exc
    except asyncio.IncompleteReadError as exc:
        raise httpx2.RemoteProtocolError("server disconnected in the middle of the answer") from exc
    except OSError as exc:
        raise httpx2.ReadError(str(exc) or type(exc).__name__) from exc


async def _read_some(
    reader: asyncio.StreamReader, timeout: float | None, most: int = _CHUNK
) -> bytes:
    try:
        async with asyncio.timeout(timeout):
            return await reader.read(most)
    except TimeoutError as exc:
        raise httpx2.ReadTimeout("timed out") from exc
    except OSError as exc:
        raise httpx2.ReadError(str(exc) or type(exc).__name__) from exc


class _AsyncBody(httpx2.AsyncByteStream):
    """A body without a length (chunked, or until the server closes) or a long one, handed
    over as it arrives."""

    def __init__(
        self,
        transport: AsyncKeepAliveTransport,
        origin: _Origin,
        connection: _Conn,
        head: _Head,
        timeout: float | None,
    ) -> None:
        self._transport = transport
        self._origin = origin
        self._connection = connection
        self._head = head
        self._timeout = timeout
        self._complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        reader, timeout = self._connection.reader, self._timeout
        if self._head.chunked:
            while True:
                size = _chunk_size(await _read_until(reader, b"\r\n", timeout))
                if size == 0:
                    # Trailers, if any, up to the empty line that ends the message.
                    while await _read_until(reader, b"\r\n", timeout) != b"\r\n":
                        pass
                    break
                chunk = await _read_exactly(reader, size + 2, timeout)
                yield chunk[:-2]
        elif self._head.length is not None:
            left = self._head.length
            while left:
                chunk = await _read_some(reader, timeout, min(_CHUNK, left))
                if not chunk:
                    raise httpx2.RemoteProtocolError(
                        "server disconnected in the middle of the answer"
                    )
                left -= len(chunk)
                yield chunk
        else:
            while chunk := await _read_some(reader, timeout):
                yield chunk
            self._head.keep_alive = False
        self._complete = True

    async def aclose(self) -> None:
        if self._complete:
            self._transport._release(self._origin, self._connection, self._head.keep_alive)
        else:
            self._connection.close()
