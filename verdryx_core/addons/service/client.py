"""A client for the verification service (docs/verification-service.md), on the stdlib.

`http.client` rather than an HTTP library: the core gains no dependency, and every failure
maps to one of two errors here, never a library's traceback. The API key travels only in
the Authorization header: it is in no message, repr or log line this module writes.
"""

from __future__ import annotations

import http.client
import json
import math
import ssl
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final

from verdryx_core.addons.contracts.model import Contract, ContractVerdict
from verdryx_core.addons.errors import AuthError, VerificationServiceError

__all__ = ["Client"]

_USER_AGENT: Final = "verdryx-client"


class Client:
    """`Client(api_key=..., base_url="http://127.0.0.1:8000", timeout=30.0)`.

    One request per connection: simple and safe to share between threads (the benchmark
    runs one client per thread anyway).
    """

    __slots__ = ("_api_key", "_host", "_https", "_path", "_port", "base_url", "timeout")

    def __init__(
        self, *, api_key: str, base_url: str = "http://127.0.0.1:8000", timeout: float = 30.0
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
        self._api_key = api_key
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = port
        self._path = url.path.rstrip("/")
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)

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
        connection: http.client.HTTPConnection
        if self._https:
            connection = http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout)
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        try:
            connection.request(method, self._path + path, body=payload, headers=headers)
            response = connection.getresponse()
            status, raw = response.status, response.read()
        except TimeoutError:
            raise VerificationServiceError(
                f"{where}: no answer within {self.timeout:g}s (timeout)"
            ) from None
        except ssl.SSLError as exc:
            raise VerificationServiceError(f"{where}: TLS failed: {exc.reason or exc}") from None
        except (OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            raise VerificationServiceError(f"{where}: cannot reach the service: {reason}") from None
        finally:
            connection.close()
        return _answer(where, status, raw)


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
