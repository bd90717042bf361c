"""The lifecycle every fake service shares: a threading HTTP server on 127.0.0.1, started
and stopped around a test (`with FakeX() as fake:`), its handlers reaching the fake through
`self.server.fake`."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self

__all__ = ["LoopbackHandler", "LoopbackServer", "ServerWithFake"]


class LoopbackHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive, Nagle off (a reply in one write must not wait for a delayed ACK),
    and quiet: subclasses only answer requests."""

    protocol_version = "HTTP/1.1"
    server: ServerWithFake

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ServerWithFake(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog is 5: a client opening 64 connections at once would
    # see SYNs dropped and retried a second later, a cost of the fake, not of the client.
    request_queue_size = 256
    fake: Any


class LoopbackServer:
    """Subclasses set `handler` (a BaseHTTPRequestHandler speaking HTTP/1.1)."""

    handler: ClassVar[type[BaseHTTPRequestHandler]]
    _server: ServerWithFake | None = None

    def start(self) -> Self:
        server = ServerWithFake(("127.0.0.1", 0), self.handler)
        server.fake = self
        self._server = server
        # A short poll interval keeps shutdown (and so each test's teardown) quick.
        threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def _before_stop(self) -> None:
        """Release anything a handler may be waiting on."""

    def stop(self) -> None:
        self._before_stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, f"start the {type(self).__name__} first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"
