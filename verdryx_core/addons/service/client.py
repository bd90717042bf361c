"""A client for the verification service (docs/verification-service.md), on the stdlib.

`http.client` rather than an HTTP library: the core gains no dependency, and every failure
maps to one of two errors here, never a library's traceback. The API key travels only in
the Authorization header: it is in no message, repr or log line this module writes.

A server is not trusted to end its answer. `timeout` is one deadline for the whole exchange
(connect, TLS handshake, request, every byte of the answer), not a bound on each read: a
server that sends one byte just before each read would time out would otherwise hold the
client for as long as it likes. Every socket operation waits only for what is left of the
deadline. And an answer is read into memory only up to `max_response_bytes` (status line,
headers and body as received); past it the exchange ends with one error line.
"""

from __future__ import annotations

import http.client
import io
import json
import math
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from verdryx_core.addons.contracts.model import Contract, ContractVerdict
from verdryx_core.addons.errors import AuthError, VerificationServiceError

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "Client"]

_USER_AGENT: Final = "verdryx-client"
#: 32 MiB: the largest answer the API gives is a ledger page of 500 entries or a verdict
#: document of a contract at its limits (1,000 criteria, docs/contracts.md), far below it.
DEFAULT_MAX_RESPONSE_BYTES: Final = 32 * 1024 * 1024
#: Bytes sent per socket call, so each call waits at most what is left of the deadline.
_SEND_CHUNK: Final = 64 * 1024


class Client:
    """`Client(api_key=..., base_url="http://127.0.0.1:8000", timeout=30.0)`.

    Each call is one exchange, over in `timeout` seconds or a timeout error, whatever the
    server does; `deadline` (a `time.monotonic()` instant) also ends every call of this
    client by then (`verdryx verify` bounds its two calls by one `--timeout` with it). An
    answer larger than `max_response_bytes` is an error, never kept.

    One request per connection: simple and safe to share between threads (the benchmark
    runs one client per thread anyway).
    """

    __slots__ = (
        "_api_key",
        "_deadline",
        "_host",
        "_https",
        "_path",
        "_port",
        "base_url",
        "max_response_bytes",
        "timeout",
    )

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str = "http://127.0.0.1:8000",
        timeout: float = 30.0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        deadline: float | None = None,
    ) -> None:
        if not isinstance(api_key, str) or not api_key.strip():
            raise AuthError("no API key given; create one with `verdryx keys create`")
        if not api_key.isascii() or any(ch in api_key for ch in "\r\n\x00 "):
            raise AuthError("the API key holds characters no key has; copy it again")
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise VerificationServiceError(
                f"base_url {base_url!r} is not an http:// or https:// URL"
            )
        try:
            port = url.port
        except ValueError:
            raise VerificationServiceError(f"base_url {base_url!r} has an invalid port") from None
        if not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
            raise VerificationServiceError(f"timeout must be a positive number, got {timeout!r}")
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1024
        ):
            raise VerificationServiceError(
                "max_response_bytes must be an integer of at least 1024, got "
                f"{max_response_bytes!r}"
            )
        self._api_key = api_key
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = port if port is not None else (443 if self._https else 80)
        self._path = url.path.rstrip("/")
        self._deadline = deadline
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self.max_response_bytes = max_response_bytes

    def __repr__(self) -> str:
        return f"Client(base_url={self.base_url!r}, api_key='<redacted>', timeout={self.timeout:g})"

    # -- the API ----------------------------------------------------------------------------

    def create_contract(self, contract: Contract | Mapping[str, Any]) -> str:
        """Register a contract; returns its `contract_id` (the same id for the same contract)."""
        body = contract.to_dict() if isinstance(contract, Contract) else dict(contract)
        answer = self._call("POST", "/v1/contracts", body)
        contract_id = answer.get("contract_id")
        if not isinstance(contract_id, str):
            raise VerificationServiceError("the service answered without a contract_id")
        return contract_id

    def submit_run(self, contract_id: str, bundle: Mapping[str, Any]) -> dict[str, Any]:
        """Submit an evidence bundle; returns the service's verdict document."""
        answer = self._call("POST", f"/v1/contracts/{_segment(contract_id)}/runs", bundle)
        return _verdict(answer)

    def get_verdict(self, contract_id: str) -> dict[str, Any]:
        """The latest verdict of a contract."""
        return _verdict(self._call("GET", f"/v1/contracts/{_segment(contract_id)}/verdict"))

    def list_verdicts(
        self, agent_id: str | None = None, *, limit: int | None = None, cursor: str | None = None
    ) -> dict[str, Any]:
        """One page of the ledger (newest first, with counts); pass `next_cursor` on."""
        query = {
            name: str(value)
            for name, value in (("agent_id", agent_id), ("limit", limit), ("cursor", cursor))
            if value is not None
        }
        path = "/v1/verdicts" + ("?" + urllib.parse.urlencode(query) if query else "")
        answer = self._call("GET", path)
        if not isinstance(answer.get("verdicts"), list) or not isinstance(
            answer.get("counts"), dict
        ):
            raise VerificationServiceError("the service's ledger answer has no verdicts or counts")
        return answer

    # -- HTTP -------------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        where = f"{method} {self.base_url}{path.split('?')[0]}"
        headers = {
            "Authorization": f"Bearer {self._api_key}",
            "Accept": "application/json",
            "User-Agent": _USER_AGENT,
        }
        payload = None
        if body is not None:
            try:
                payload = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            except (TypeError, ValueError) as exc:
                raise VerificationServiceError(f"{where}: the body is not JSON: {exc}") from None
            headers["Content-Type"] = "application/json"
        ends = time.monotonic() + self.timeout
        if self._deadline is not None:
            ends = min(ends, self._deadline)
        budget = _Budget(ends, self.max_response_bytes)
        tls = _tls_context() if self._https else None
        connection: _Connection | None = None
        try:
            connection = _Connection(self._host, self._port, budget=budget, tls=tls)
            connection.connect()
            connection.request(method, self._path + path, body=payload, headers=headers)
            response = connection.getresponse()
            status = response.status
            declared = response.getheader("content-length", "")
            if declared.isascii() and declared.isdigit() and int(declared) > budget.max_bytes:
                raise _TooLarge
            raw = _read_all(response)
        except TimeoutError:
            raise VerificationServiceError(
                f"{where}: no answer within {self.timeout:g}s (timeout)"
            ) from None
        except _TooLarge:
            raise VerificationServiceError(
                f"{where}: the answer is larger than the client's limit of "
                f"{self.max_response_bytes} bytes (max_response_bytes)"
            ) from None
        except ssl.SSLError as exc:
            if budget.spent():  # a handshake cut by the deadline
                raise VerificationServiceError(
                    f"{where}: no answer within {self.timeout:g}s (timeout)"
                ) from None
            raise VerificationServiceError(f"{where}: TLS failed: {exc.reason or exc}") from None
        except (OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            raise VerificationServiceError(f"{where}: cannot reach the service: {reason}") from None
        finally:
            if connection is not None:
                connection.release()
        return _answer(where, status, raw)


class _TooLarge(Exception):
    """The answer grew past the client's limit."""


class _Budget:
    """One exchange's deadline and byte allowance, shared by its socket calls."""

    __slots__ = ("ends", "max_bytes", "received")

    def __init__(self, ends: float, max_bytes: int) -> None:
        self.ends = ends
        self.max_bytes = max_bytes
        self.received = 0

    def left(self) -> float:
        """Seconds left; TimeoutError when none are."""
        left = self.ends - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left

    def spent(self) -> bool:
        return time.monotonic() >= self.ends


class _BoundedReader(io.RawIOBase):
    """The answer's bytes off the socket, each read waiting only for what is left of the
    deadline, and refused past the byte allowance (http.client reads through this)."""

    def __init__(self, sock: socket.socket, budget: _Budget, on_close: Callable[[], None]) -> None:
        super().__init__()
        self._sock = sock
        self._budget = budget
        self._on_close: Callable[[], None] | None = on_close

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()
        super().close()

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(self._budget.left())
        count = self._sock.recv_into(buffer)
        self._budget.received += count
        if self._budget.received > self._budget.max_bytes:
            raise _TooLarge
        return count


class _BoundedSocket:
    """What http.client sees as its socket: sends in chunks, each waiting only for what is
    left of the deadline, and answers read through `_BoundedReader`.

    http.client closes its socket as soon as it knows the connection ends with the answer,
    before the answer is read: as with the stdlib's own socket files, the descriptor then
    stays open until the reader is closed too (`release` closes it whatever happens)."""

    def __init__(self, sock: socket.socket, budget: _Budget) -> None:
        self._sock = sock
        self._budget = budget
        self._readers = 0
        self._closed = False

    def sendall(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        while view:
            self._sock.settimeout(self._budget.left())
            sent = self._sock.send(view[:_SEND_CHUNK])
            view = view[sent:]

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        self._readers += 1
        return io.BufferedReader(_BoundedReader(self._sock, self._budget, self._reader_closed))

    def _reader_closed(self) -> None:
        self._readers -= 1
        if self._closed and not self._readers:
            self._sock.close()

    def close(self) -> None:
        self._closed = True
        if not self._readers:
            self._sock.close()

    def release(self) -> None:
        self._sock.close()


class _Connection(http.client.HTTPConnection):
    """One exchange's connection: TCP connect, then (for https) a TLS handshake, each
    within what is left of the deadline; then the bounded socket above."""

    def __init__(
        self, host: str, port: int, *, budget: _Budget, tls: ssl.SSLContext | None
    ) -> None:
        super().__init__(host, port, timeout=budget.left())
        self._budget = budget
        self._tls = tls
        self.bounded: _BoundedSocket | None = None
        if tls is not None:
            # The Host header names the port only when it is not the scheme's own.
            self.default_port = 443

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self._budget.left())
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(
                    sock, server_hostname=self.host, do_handshake_on_connect=False
                )
                # One deadline for the whole handshake: the ssl module bounds do_handshake
                # as a whole by the socket's timeout.
                sock.settimeout(self._budget.left())
                sock.do_handshake()
        except BaseException:
            sock.close()
            raise
        # http.client only sends, makes its reader, and closes through its socket.
        self.bounded = _BoundedSocket(sock, self._budget)
        self.sock = cast(socket.socket, self.bounded)

    def release(self) -> None:
        """Close the descriptor, whether or not the answer was read to its end."""
        self.close()
        if self.bounded is not None:
            self.bounded.release()


def _tls_context() -> ssl.SSLContext:
    """What http.client's HTTPS connection uses: the system's CAs, host name checked."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


def _read_all(response: http.client.HTTPResponse) -> bytes:
    """The body in bounded reads (never one allocation of whatever length was claimed)."""
    chunks: list[bytes] = []
    while True:
        chunk = response.read(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _segment(value: str) -> str:
    return urllib.parse.quote(str(value), safe="")


def _answer(where: str, status: int, raw: bytes) -> dict[str, Any]:
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        document = None
    if 200 <= status < 300:
        if not isinstance(document, dict):
            raise VerificationServiceError(
                f"{where}: the service answered {status} with a body that is not a JSON object",
                status=status,
            )
        return document
    message = document.get("error") if isinstance(document, dict) else None
    if not isinstance(message, str):
        message = f"HTTP {status} without an error message"
    error = AuthError if status in (401, 403) else VerificationServiceError
    raise error(f"{where}: {status}: {message[:2000]}", status=status)


def _verdict(document: dict[str, Any]) -> dict[str, Any]:
    """The document, once it is known to read as a `ContractVerdict` (a caller may build one)."""
    try:
        verdict = ContractVerdict.from_dict(document)
        ok = verdict.verdict in ("PASS", "FAIL", "FLAG") and all(
            isinstance(result.status, str) for result in verdict.check_results
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        ok = False
    if not ok:
        raise VerificationServiceError("the service's answer is not a verdict document")
    return document
