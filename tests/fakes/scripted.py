"""What the two fake model providers (`anthropic_server`, `openai_server`) share: scripted
replies sent in one write, and every request recorded with the problems found in it.

A fake built on `ScriptedServer` answers each request, in this order: a 400 naming what the
real API would reject (recorded in `violations`), a 401 for a wrong credential, the next
scripted reply (`script(...)`, first-in first-out), silence when `hang` is set, `responder`'s
reply when one is set, else its own default answer by request kind. A subclass says what its
API checks (`_problems`) and how it words a refusal (`_invalid`, `_refused`).
"""

from __future__ import annotations

import http
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .loopback import LoopbackHandler, LoopbackServer

__all__ = ["RecordedRequest", "Reply", "ScriptedHandler", "ScriptedServer", "hang_reply"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    status: int = 200
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Extra seconds before answering, on top of the server's latency.
    delay: float = 0.0
    #: Garbage mode: these bytes are the body as is (truncated JSON, an HTML page, ...), sent
    #: with `content_type`; `body` is then ignored.
    raw: bytes | None = None
    content_type: str = "application/json"
    #: Accept the request and never answer (until the server stops): a provider that hangs.
    hang: bool = False


def hang_reply() -> Reply:
    """A reply that never comes: the connection stays open and silent until the server stops."""
    return Reply(hang=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    method: str
    path: str
    #: Lower-cased names; the credential header's value is replaced by "ok" or "wrong".
    headers: Mapping[str, str]
    body: Any
    received_at: float
    #: The client's port: requests sharing one are on one keep-alive connection.
    client_port: int


class ScriptedHandler(LoopbackHandler):
    """Reads a request, hands it to the fake, and sends its reply after the fake's latency:
    status, headers and body in ONE write (split writes cost a keep-alive client ~40 ms a
    call through delayed ACK, which would hide real concurrency figures)."""

    server: Any

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        fake._enter()
        try:
            reply = fake._respond(
                self.command, self.path, self.headers, raw, self.client_address[1]
            )
            if reply.hang:
                # Read, then silence: the client's own timeout is the only way out.
                fake._stopping.wait()
                self.close_connection = True
                return
            pause = fake.latency + reply.delay
            if pause > 0:
                time.sleep(pause)
            self._send(reply, fake)
        finally:
            fake._leave()

    def _send(self, reply: Reply, fake: ScriptedServer) -> None:
        if reply.raw is not None:
            payload = reply.raw
        else:
            payload = json.dumps(reply.body if reply.body is not None else {}).encode()
        try:
            phrase = http.HTTPStatus(reply.status).phrase
        except ValueError:
            phrase = fake.phrases.get(reply.status, "Unknown")
        headers = {
            "Content-Type": reply.content_type,
            "Content-Length": str(len(payload)),
            **fake.reply_headers,
            **reply.headers,
        }
        head = f"HTTP/1.1 {reply.status} {phrase}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()
        )
        # One write: status, headers and body leave together.
        self.wfile.write(head.encode("latin-1") + b"\r\n" + payload)


class ScriptedServer(LoopbackServer):
    handler = ScriptedHandler
    #: The request type recorded (a subclass of `RecordedRequest` reading its API's body).
    recorded: ClassVar[type[RecordedRequest]] = RecordedRequest
    #: Headers every reply carries (the provider's request id).
    reply_headers: ClassVar[Mapping[str, str]] = {}
    #: Reason phrases for statuses `http.HTTPStatus` does not know.
    phrases: ClassVar[Mapping[int, str]] = {}
    #: The headers that carry the credential, recorded as "ok" or "wrong".
    credential_headers: ClassVar[tuple[str, ...]] = ("authorization",)
    #: The one path requests are POSTed to.
    endpoint: ClassVar[str]
    #: The provider's error reply, `(status, kind, message, **options) -> Reply`.
    error_reply: ClassVar[Callable[..., Reply]]

    def __init__(self, *, api_key: str | None, latency: float, hang: bool) -> None:
        #: None accepts any credential, as a local server (Ollama, vLLM) does.
        self.api_key = api_key
        self.latency = latency
        #: Every request is accepted and never answered (see `hang_reply` for one at a time).
        self.hang = hang
        self.responder: Callable[[Any], Reply] | None = None
        self._stopping = threading.Event()
        self._script: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._violations: list[str] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._lock = threading.Lock()

    # -- scripting and inspection ----------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    @property
    def requests(self) -> list[Any]:
        with self._lock:
            return list(self._requests)

    @property
    def violations(self) -> list[str]:
        with self._lock:
            return list(self._violations)

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._violations.clear()
            self._script.clear()
            self._max_in_flight = 0

    # -- what a subclass says --------------------------------------------------------------

    def _credential(self, headers: Any) -> str | None:
        auth = headers.get("authorization") or ""
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    def _header_problems(self, headers: Mapping[str, str]) -> list[str]:
        """Headers the real API wants and the SDK must send (beyond the content type)."""
        return []

    def _body_problems(self, body: Any) -> list[str]:
        """What the real API would reject in a request body, or verdryx should never send."""
        raise NotImplementedError

    def _refused(self, credential: str | None) -> Reply:
        """The 401 answering a wrong credential."""
        raise NotImplementedError

    def _default(self, request: Any) -> Reply:
        raise NotImplementedError

    # -- the server side -------------------------------------------------------------------

    def _before_stop(self) -> None:
        self._stopping.set()

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _respond(self, method: str, path: str, headers: Any, raw: bytes, port: int) -> Reply:
        credential = self._credential(headers)
        seen = {name.lower(): value for name, value in headers.items()}
        for name in self.credential_headers:
            if name in seen:
                seen[name] = "ok" if credential == self.api_key else "wrong"
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        request = self.recorded(
            method=method,
            path=path,
            headers=seen,
            body=body,
            received_at=time.monotonic(),
            client_port=port,
        )
        return self._answer(request, credential)

    def _record(self, request: RecordedRequest, problems: list[str]) -> None:
        with self._lock:
            self._requests.append(request)
            self._violations.extend(problems)

    def _problems(self, request: Any) -> list[str]:
        problems: list[str] = []
        if request.method != "POST" or request.path != self.endpoint:
            problems.append(f"{request.method} {request.path}: only POST {self.endpoint} exists")
        problems += self._header_problems(request.headers)
        if not request.headers.get("content-type", "").startswith("application/json"):
            problems.append("content-type is not application/json")
        return problems + self._body_problems(request.body)

    def _invalid(self, problems: list[str]) -> Reply:
        return self.error_reply(400, "invalid_request_error", "; ".join(problems))

    def _answer(self, request: Any, credential: str | None) -> Reply:
        problems = self._problems(request)
        with self._lock:
            self._requests.append(request)
            self._violations.extend(problems)
            scripted = self._script.popleft() if self._script else None
        if problems:
            return self._invalid(problems)
        if self.api_key is not None and credential != self.api_key:
            return self._refused(credential)
        if scripted is not None:
            return scripted
        if self.hang:
            return hang_reply()
        if self.responder is not None:
            return self.responder(request)
        return self._default(request)
