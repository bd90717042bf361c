"""A loopback OTLP/HTTP collector for tests.

`mode="ok"` records each `POST /v1/traces` and answers 200 `{}` (a full success, as the OTLP
spec words it); `mode="hang"` records the request and never answers until the collector is
stopped (the dead collector the exporter's timeout must bound); an int answers that status.
HTTP/1.1 keep-alive, status + headers + body in ONE write.
"""

from __future__ import annotations

import http
import json
import threading
from dataclasses import dataclass
from typing import Any

from .loopback import LoopbackHandler, LoopbackServer

__all__ = ["FakeCollector", "ReceivedExport"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceivedExport:
    method: str
    path: str
    content_type: str
    body: bytes
    #: The Authorization header as received ("" when none).
    authorization: str = ""

    def json(self) -> Any:
        return json.loads(self.body)


class _Handler(LoopbackHandler):
    def do_POST(self) -> None:
        collector = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        collector._record(
            ReceivedExport(
                method=self.command,
                path=self.path,
                content_type=self.headers.get("content-type", ""),
                body=body,
                authorization=self.headers.get("authorization", ""),
            )
        )
        if collector.mode == "hang":
            collector._released.wait()
            self.close_connection = True
            return
        status = 200 if collector.mode == "ok" else int(collector.mode)
        if self.path != "/v1/traces":
            status = 404
        payload = b"{}"
        head = (
            f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        self.wfile.write(head.encode("latin-1") + payload)  # one write


class FakeCollector(LoopbackServer):
    """`with FakeCollector() as collector:` then export to `collector.url`."""

    handler = _Handler

    def __init__(self, *, mode: str | int = "ok") -> None:
        self.mode = mode
        self._received: list[ReceivedExport] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        #: Set when the first export arrives.
        self.arrived = threading.Event()

    def _before_stop(self) -> None:
        self._released.set()  # let hanging handlers go

    @property
    def received(self) -> list[ReceivedExport]:
        with self._lock:
            return list(self._received)

    def _record(self, export: ReceivedExport) -> None:
        with self._lock:
            self._received.append(export)
        self.arrived.set()
