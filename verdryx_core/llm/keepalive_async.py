"""The async twin of verdryx_core.llm.keepalive: HTTP/1.1 over asyncio streams, for the
SDKs' async clients (`httpx2.AsyncBaseTransport.handle_async_request`), connections kept
alive per origin and event loop (a connection serves only the loop that opened it).

What it raises, keeps and verifies is what the sync transport does (see there); the waits
are bounded with `asyncio.timeout`, one per wait for bytes, as httpx bounds each read.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncIterator
from typing import Any

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

__all__ = ["AsyncKeepAliveTransport"]


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
        return sock is not None and readable(sock)

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
        self._idle = IdleConnections()
        self._lock = threading.Lock()
        self._ssl = TlsContext()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        origin = origin_of(request.url)
        timeouts = timeouts_of(request)
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

    def _reused(self, origin: Origin, loop: asyncio.AbstractEventLoop) -> _Conn | None:
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
        origin: Origin,
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
                    server_hostname=tls_server_name(request, host) if tls else None,
                    limit=MAX_HEAD,
                ),
                timeout,
                httpx2.ConnectTimeout,
            )
        except OSError as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:
            keep_alive_options(sock)
        return _Conn(loop, reader, writer)

    @staticmethod
    async def _exchange(
        connection: _Conn,
        request: httpx2.Request,
        body: bytes,
        timeouts: dict[str, float | None],
    ) -> ResponseHead:
        try:
            writer = connection.writer
            writer.write(request_bytes(request, body))
            if writer.transport.get_write_buffer_size():
                # Only a request the socket did not take at once waits (a timer costs CPU).
                await _bounded(writer.drain(), timeouts.get("write"), httpx2.WriteTimeout)
        except OSError as exc:
            raise httpx2.WriteError(str(exc) or type(exc).__name__) from exc
        while True:
            raw = await _read_until(connection.reader, b"\r\n\r\n", timeouts.get("read"))
            head = ResponseHead(raw[:-4])
            # An interim answer (100 Continue) is followed by the real one.
            if not (100 <= head.status < 200 and head.status != 101):
                return head

    async def _response(
        self,
        origin: Origin,
        connection: _Conn,
        head: ResponseHead,
        request: httpx2.Request,
        timeouts: dict[str, float | None],
    ) -> httpx2.Response:
        stream: httpx2.AsyncByteStream
        bodiless = request.method == "HEAD" or head.status in (204, 304)
        if bodiless or (head.length is not None and head.length <= EAGER_BYTES):
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
            extensions={"http_version": HTTP11, "reason_phrase": head.reason},
            request=request,
        )

    def _release(self, origin: Origin, connection: _Conn, keep_alive: bool) -> None:
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
    reader: asyncio.StreamReader, timeout: float | None, most: int = CHUNK
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
        origin: Origin,
        connection: _Conn,
        head: ResponseHead,
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
                size = chunk_size(await _read_until(reader, b"\r\n", timeout))
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
                chunk = await _read_some(reader, timeout, min(CHUNK, left))
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
