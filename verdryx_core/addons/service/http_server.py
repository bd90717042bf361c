"""The HTTP server under the verification service: uvicorn, with a connection guard.

uvicorn reads requests with no deadline of its own until their headers are whole (its
keep-alive timer is cancelled by the first byte of a request), accepts as many connections
as the process has descriptors, and answers its own errors (malformed HTTP, oversized
headers) in plain text. A client that opens sockets and never finishes its headers would
hold them forever, and a few hundred of them exhaust the descriptors so that no one else
is served. `GuardedH11Protocol`, uvicorn's own h11 protocol with a guard around it, adds
(docs/verification-service.md, "Limits"):

- a **header deadline**: from the moment a connection opens (or its previous answer was
  sent) to the end of the request's headers; past it, `408` and the connection is closed;
- a **body deadline**: from the end of the headers to the end of the body, whether or not
  the app reads it; and the same deadline for a client that stops reading its answer;
- a **limit on concurrent connections**: past it, a new connection first evicts the oldest
  one that is still waiting for its headers (a legitimate client sends them at once, so the
  sockets a slow client holds are what goes), else the one whose request body has stalled
  longest: no byte of it for a second (half the body deadline, when that is shorter), or
  its answer already sent (a legitimate client sends its body with its headers, so whole
  headers and then silence, even with a valid key, hold no slot against others); only when
  every connection has a request really in progress is the new one refused with `503`;
- **JSON errors at every layer**: what uvicorn would answer in plain text is
  `{"error": "one message"}` here too, as the app's own errors are.

The options are `verdryx serve`'s; `server_config` builds uvicorn's configuration from them
for the command and for the tests alike, so the tests run the server as it is deployed.
"""

from __future__ import annotations

import asyncio
import http
import json
import logging
import re
import sys
from typing import Any, ClassVar, Final

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from verdryx_core.addons.service.server_limits import ServerLimits

__all__ = ["GuardedH11Protocol", "guarded_protocol", "json_error_bytes", "server_config"]

#: How long a connection being closed may take to flush its last answer before it is cut:
#: a client that reads nothing must not keep the socket through `close()`.
_CLOSE_GRACE_S: Final = 1.0

#: How long a request body may go without a byte before its connection may be evicted at
#: the connection limit (or half the body deadline, when that is shorter).
_STALLED_BODY_S: Final = 1.0

#: Where a request's head ends (h11 accepts bare LF line ends too).
_END_OF_HEAD: Final = re.compile(b"\n\r?\n")
#: The statuses of h11's errors passed on as they are; any other is a 400.
_HINTS: Final = frozenset({400, 413, 414, 431, 501})

_log = logging.getLogger("uvicorn.error")


def json_error_bytes(status: int, message: str) -> bytes:
    """A whole HTTP/1.1 answer `{"error": message}` that closes the connection, written
    straight to the socket where no request (or no app) is there to answer it."""
    body = json.dumps({"error": message}).encode("utf-8")
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines, a connection limit and JSON errors (see the
    module docstring). `guarded_protocol` makes one subclass per server with its limits."""

    limits: ClassVar[ServerLimits] = ServerLimits()
    #: The connections of this server still waiting for their request's headers, oldest
    #: first (a dict keeps insertion order): the ones a new connection may evict.
    waiting: ClassVar[dict[GuardedH11Protocol, None]] = {}
    #: The connections of this server receiving a request body: evictable once it stalls.
    bodies: ClassVar[dict[GuardedH11Protocol, None]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: str | None = None
        #: When the connection last received a byte (the event loop's clock).
        self._last_byte = self.loop.time()
        self._deadline: asyncio.TimerHandle | None = None
        self._write_deadline: asyncio.TimerHandle | None = None
        #: Answers this connection has sent.
        self._answered = 0

    # -- the connection's life -------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self.loop.get_exception_handler() is not _quiet_accept_errors:
            self.loop.set_exception_handler(_quiet_accept_errors)
        if len(self.connections) > self.limits.max_connections and not self._evict_one():
            _log.warning("refused a connection: %d connections in progress", len(self.connections))
            self._answer_and_close(
                503,
                "the server is serving as many connections as it may "
                f"({self.limits.max_connections}); try again shortly",
            )
            return
        self._reconcile()

    def data_received(self, data: bytes) -> None:
        self._last_byte = self.loop.time()
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._set_phase(None)
        self._cancel_write_deadline()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        if self._head_too_large():
            self._answer_and_close(
                431,
                "request line and headers are larger than the server's limit of "
                f"{self.limits.max_header_bytes} bytes",
            )
            return
        super().handle_events()
        self._reconcile()

    def on_response_complete(self) -> None:
        self._answered += 1
        super().on_response_complete()
        self._reconcile()

    def pause_writing(self) -> None:
        """The client stopped reading its answer: it has the body deadline to read on."""
        super().pause_writing()
        if self._write_deadline is None and not self.transport.is_closing():
            self._write_deadline = self.loop.call_later(
                self.limits.body_timeout, self._write_timed_out
            )

    def resume_writing(self) -> None:
        self._cancel_write_deadline()
        super().resume_writing()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 cannot parse, as JSON. It is called from inside
        the handler of h11's RemoteProtocolError, which says what was wrong and whether the
        headers were too large (status hint 431)."""
        error = sys.exc_info()[1]
        status = 400
        message = "malformed HTTP request"
        if isinstance(error, h11.RemoteProtocolError):
            # h11's hint: 431 for oversized headers, 501 for a transfer coding it lacks.
            status = error.error_status_hint if error.error_status_hint in _HINTS else 400
            if status == 431:
                message = (
                    "request line and headers are larger than the server's limit of "
                    f"{self.limits.max_header_bytes} bytes"
                )
            else:
                what = "not supported" if status == 501 else "malformed HTTP request"
                message = f"{what}: {str(error)[:200]}"
        self._answer_and_close(status, message)

    def _head_too_large(self) -> bool:
        """Whether the request head waiting to be parsed is past `max_header_bytes`. h11
        enforces its limit only on a head that is still incomplete: one that arrives whole
        in a single read, however large, would be parsed."""
        if self.conn.their_state is not h11.IDLE:
            return False
        buffered, _ = self.conn.trailing_data
        limit = self.limits.max_header_bytes
        end = _END_OF_HEAD.search(buffered, 0, limit + 4)
        return len(buffered) > limit if end is None else end.start() > limit

    # -- deadlines -------------------------------------------------------------------------

    def _reconcile(self) -> None:
        """Arm the deadline of the phase the connection is in now; a phase that goes on keeps
        the deadline it started with (bytes trickling in never extend it)."""
        if self.transport is None or self.transport.is_closing():
            self._set_phase(None)
            return
        theirs = self.conn.their_state
        cycle = self.cycle
        if theirs is h11.SEND_BODY:
            phase: str | None = "body"
        elif theirs is h11.IDLE and (cycle is None or cycle.response_complete):
            phase = "headers"
        else:  # the request is whole: the app is on it, or its answer is being sent
            phase = None
        self._set_phase(phase)

    def _set_phase(self, phase: str | None) -> None:
        if phase == self._phase:
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._phase == "headers":
            self.waiting.pop(self, None)
        elif self._phase == "body":
            self.bodies.pop(self, None)
        self._phase = phase
        if phase == "headers":
            self.waiting[self] = None
            self._deadline = self.loop.call_later(
                self.limits.header_timeout, self._timed_out, "headers"
            )
        elif phase == "body":
            self.bodies[self] = None
            self._deadline = self.loop.call_later(self.limits.body_timeout, self._timed_out, "body")

    def _timed_out(self, phase: str) -> None:
        self._deadline = None
        if phase == "headers" and self._answered and not self.conn.trailing_data[0]:
            # A keep-alive connection that sent nothing more: closed quietly, as uvicorn's
            # own keep-alive timer does (a 408 could cross a request the client just sent).
            self._answer_and_close(None, "")
            return
        if phase == "headers":
            limit = self.limits.header_timeout
            message = f"request headers not complete within {limit:g}s (the server's limit)"
        else:
            limit = self.limits.body_timeout
            message = f"request body not complete within {limit:g}s (the server's limit)"
        _log.info("closed a connection: %s", message)
        self._answer_and_close(408, message)

    def _write_timed_out(self) -> None:
        self._write_deadline = None
        _log.info(
            "closed a connection: the client read none of its answer for %gs",
            self.limits.body_timeout,
        )
        self._abandon_cycle()
        self.transport.abort()

    def _cancel_write_deadline(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    # -- closing ---------------------------------------------------------------------------

    def _evict_one(self) -> bool:
        """Close the oldest connection still waiting for its headers, else the one whose
        body stalled longest; False when there is none of either."""
        victim = next((known for known in self.waiting if known is not self), None)
        if victim is not None:
            _log.info("evicted a connection that had not sent its headers")
            victim._answer_and_close(
                503, "the server is at its connection limit and this connection sent no request"
            )
            return True
        victim = self._stalled_body()
        if victim is None:
            return False
        _log.info("evicted a connection whose request body had stalled")
        victim._answer_and_close(
            503,
            "the server is at its connection limit and this connection's request body stalled",
        )
        return True

    def _stalled_body(self) -> GuardedH11Protocol | None:
        """The connection receiving a body that has gone longest without a byte, if that is
        past the stall time or its answer was already sent (the app did not need the rest)."""
        now = self.loop.time()
        stall = min(_STALLED_BODY_S, self.limits.body_timeout / 2)
        stalled = [
            known
            for known in self.bodies
            if known is not self
            and (
                now - known._last_byte >= stall
                or (known.cycle is not None and known.cycle.response_complete)
            )
        ]
        return min(stalled, key=lambda known: known._last_byte, default=None)

    def _answer_and_close(self, status: int | None, message: str) -> None:
        """Answer `status` with a JSON error when no answer of this request has started
        (None: no answer), and close. The app, if it is running, is told the client is gone:
        whatever it sends next goes nowhere, and a body it waits for ends."""
        self._set_phase(None)
        transport = self.transport
        if transport.is_closing():
            return
        cycle = self.cycle
        if status is None:
            pass
        elif (
            cycle is None
            or not cycle.response_started
            # The answer before was whole and the client is not still sending that request's
            # body: this is the next request's answer.
            or (cycle.response_complete and self.conn.their_state is not h11.SEND_BODY)
        ):
            transport.write(json_error_bytes(status, message))
        self._abandon_cycle()
        transport.close()
        self.loop.call_later(_CLOSE_GRACE_S, transport.abort)

    def _abandon_cycle(self) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()


def _quiet_accept_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio pauses accepting for a second when the process is out of descriptors, and
    logs that with a traceback; it is the flood the limits answer, not a bug: one line."""
    if context.get("message") == "socket.accept() out of system resource":
        _log.warning(
            "out of descriptors (%s); accepting again in a second", context.get("exception")
        )
        return
    loop.default_exception_handler(context)


def guarded_protocol(limits: ServerLimits) -> type[GuardedH11Protocol]:
    """A protocol class for one server: its limits, and its own registers of connections
    waiting for their headers and receiving a body."""
    return type(
        "GuardedH11Protocol",
        (GuardedH11Protocol,),
        {"limits": limits, "waiting": {}, "bodies": {}, "__module__": __name__},
    )


def server_config(
    app: Any,
    *,
    host: str,
    port: int,
    limits: ServerLimits,
    log_level: str = "info",
    access_log: bool = True,
    lifespan: str = "auto",
) -> uvicorn.Config:
    """uvicorn's configuration for the service: the guarded h11 protocol (never httptools,
    which has no header size limit to set), no WebSocket (the API has none), and a backlog
    of half the connection limit: asyncio accepts up to a backlog of sockets at once, and a
    second burst can come before the connections the first one evicted are closed, so the
    peak is the limit plus two backlogs, which `connection_budget` keeps within
    `ulimit -n`."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=guarded_protocol(limits),
        ws="none",
        lifespan=lifespan,  # type: ignore[arg-type]
        log_level=log_level,
        access_log=access_log,
        timeout_keep_alive=limits.keep_alive_timeout,
        h11_max_incomplete_event_size=limits.max_header_bytes,
        backlog=max(8, min(2048, limits.max_connections // 2)),
    )
