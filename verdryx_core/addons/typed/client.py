"""A client for typryx, the typed verdict service behind the `typed` grader.

The service key is read from a file (never a flag value, never an environment variable's
value) and sent only as the `X-Typryx-Key` header: it appears in no message, `str` or `repr`,
even when the service echoes it back in an error body.

A refusal (non-2xx) or an unreachable service raises `ModelCallError` with the HTTP status:
an infrastructure failure, not a score. The wire contract is typryx's `internal/api`
(see docs/typed-grader.md).
"""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, final
from urllib.parse import urlsplit

from verdryx_core.errors import ModelCallError, UsageError, VerdryxError
from verdryx_core.untrusted.json_input import parse_json
from verdryx_core.untrusted.redact import redact_url

__all__ = [
    "DEFAULT_TEMPLATE",
    "ENV_KEY_FILE",
    "KEY_HEADER",
    "TypryxClient",
    "read_key_file",
    "resolve_key_file",
]

DEFAULT_TEMPLATE: Final = "eval.outcome_met"
ENV_KEY_FILE: Final = "VERDRYX_TYPRYX_KEY_FILE"
KEY_HEADER: Final = "X-Typryx-Key"
_REDACTED: Final = "<redacted>"
#: Responses larger than typryx ever sends are refused rather than read into memory.
_MAX_RESPONSE_BYTES: Final = 1 << 20

#: What to do about a refusal, by typryx's error code.
_HINTS: Final[Mapping[str, str]] = {
    "unauthorized": (
        f"the key was not accepted; check the file named by {{typed_key_file}} or ${ENV_KEY_FILE}"
    ),
    "over_hourly_cap": "the service's hourly cap is spent; run again later or raise the cap",
    "unknown_template": "the service has no such template; check {typed_template}",
    "bad_state": "the service rejected the state it was sent",
    "state_too_large": "the prompt and output are larger than the service accepts",
    "unknown_answer": "the service does not know this answer id",
    "bad_truth": "the service rejected the label posted as the outcome",
    "outcome_exists": "an outcome was already posted for this answer",
    "no_ledger": "the service keeps no outcome ledger; start it with one to post labels",
}


def resolve_key_file(flag: str | None, env: Mapping[str, str] | None = None) -> Path | None:
    """The key file path: the flag, else `$VERDRYX_TYPRYX_KEY_FILE`, else None."""
    if flag:
        return Path(flag)
    value = (os.environ if env is None else env).get(ENV_KEY_FILE)
    return Path(value) if value else None


def read_key_file(path: str | os.PathLike[str]) -> str:
    """The key in `path`, stripped. Errors name the file and never show what it holds."""
    where = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise VerdryxError(
            f"cannot read the typryx key file {where!r}: {exc.strerror or type(exc).__name__}",
            hint=f"pass a readable file with {{typed_key_file}} or ${ENV_KEY_FILE}",
        ) from None
    try:
        key = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise VerdryxError(
            f"the typryx key file {where!r} is not UTF-8 text; it should hold the key alone"
        ) from None
    if not key:
        raise VerdryxError(f"the typryx key file {where!r} is empty; write the service key into it")
    if any(char.isspace() or not char.isprintable() for char in key):
        # A header value cannot carry these, and a second line is likely not part of the key.
        raise VerdryxError(
            f"the typryx key file {where!r} holds whitespace or control characters inside "
            "the key; it should hold the key alone on one line"
        )
    return key


def _display_url(url: str) -> str:
    """The URL with any user:password part masked, for messages."""
    return redact_url(url)


@final
class TypryxClient:
    """`ask` for a typed verdict, `post_outcome` to post the human label for an answer."""

    __slots__ = ("__key", "template", "timeout", "url")

    def __init__(
        self,
        url: str,
        key: str,
        *,
        template: str = DEFAULT_TEMPLATE,
        timeout: float = 30.0,
    ) -> None:
        base = url.strip().rstrip("/")
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(
                f"typryx URL {_display_url(url)!r} is not an http(s) URL",
                hint="pass the service's base URL, for example {typed_url} http://localhost:8080",
            )
        if not key:
            raise UsageError(
                "no typryx key", hint=f"pass {{typed_key_file}} PATH or set ${ENV_KEY_FILE}"
            )
        if not template:
            raise UsageError("the typryx template is empty", hint="pass {typed_template} ID")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise UsageError(f"typryx timeout {timeout!r} is not a positive number of seconds")
        self.url = base
        self.__key = key
        self.template = template
        self.timeout = timeout

    def __repr__(self) -> str:
        return (
            f"TypryxClient(url={_display_url(self.url)!r}, template={self.template!r}, "
            f"key={_REDACTED})"
        )

    __str__ = __repr__

    def __reduce__(self) -> Any:
        # Pickling would copy the key into whatever holds the bytes (an xdist channel, a cache).
        raise TypeError("a TypryxClient holds a credential and is not picklable")

    def ask(self, state: Mapping[str, Any], run_id: str | None) -> dict[str, Any]:
        """A typed verdict on `state` under this client's template; `run_id` groups answers."""
        body: dict[str, Any] = {"template": self.template, "state": dict(state)}
        if run_id:
            body["run_id"] = run_id
        return self._post("/v1/ask", body)

    def post_outcome(self, answer_id: str, truth: bool | int | str, source: str) -> dict[str, Any]:
        """Post the known truth for an answer so the service can calibrate against it."""
        return self._post("/v1/outcome", {"answer_id": answer_id, "truth": truth, "source": source})

    def _redact(self, text: str) -> str:
        return text.replace(self.__key, _REDACTED)

    def _post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        where = _display_url(self.url) + path
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body, allow_nan=False).encode("utf-8"),
            method="POST",
            headers={"Content-Type": "application/json", KEY_HEADER: self.__key},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                status = response.status
                raw = response.read(_MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            with exc:
                raw = exc.read(_MAX_RESPONSE_BYTES + 1)
            raise self._refusal(where, exc.code, raw) from None
        except (OSError, ValueError) as exc:  # URLError, refused, reset, timed out
            reason = getattr(exc, "reason", None) or exc
            raise ModelCallError(
                self._redact(f"could not reach typryx at {where}: {reason}"),
                hint="check that the service runs and {typed_url} points at it",
            ) from None
        if not 200 <= status < 300:
            raise self._refusal(where, status, raw)
        try:
            if len(raw) > _MAX_RESPONSE_BYTES:
                raise ValueError("response larger than 1 MiB")
            document = parse_json(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ModelCallError(
                self._redact(
                    f"typryx at {where} answered {status} with a body that is not JSON "
                    f"({exc}); is the URL a typryx service?"
                ),
                status=status,
            ) from None
        if not isinstance(document, dict):
            raise ModelCallError(
                f"typryx at {where} answered {status} with JSON that is not an object; "
                "is the URL a typryx service?",
                status=status,
            )
        return document

    def _refusal(self, where: str, status: int, raw: bytes) -> ModelCallError:
        code: str | None = None
        try:
            document = parse_json(raw[:_MAX_RESPONSE_BYTES].decode("utf-8"))
            if isinstance(document, dict) and isinstance(document.get("error"), str):
                code = document["error"]
        except (UnicodeDecodeError, ValueError):
            pass
        # By status when the code is unknown: a 401 is the key whatever the body says (a
        # service that echoes the key in its code leaves a code that matches no hint).
        hint = _HINTS.get(code or "") or (
            _HINTS["unauthorized"] if status == 401 else "see the service's log for why"
        )
        message = f"typryx refused the request to {where} (status={status}, code={code!r})"
        return ModelCallError(self._redact(message), status=status, hint=hint)
