"""OTLP span export: one span per run and per drift check, as OTLP/HTTP JSON.

Opt-in by `$VERDRYX_OTLP_ENDPOINT`. Spans go to `<endpoint>/v1/traces` from a background
thread, so the eval never waits on the collector while it runs; `SpanExporter.wait()` at the
end of the process delivers them before exit, bounded by one short timeout, so a dead or
silent collector costs at most that timeout and never fails the eval.

The trace id is derived from the run id, so a run's span and the span of a later drift check
on that run land in one trace without any state kept between the two processes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit, urlunsplit

from verdryx_core.errors import UsageError
from verdryx_core.untrusted.redact import redact_text, redact_url
from verdryx_core.version import __version__

if TYPE_CHECKING:
    from verdryx_core.runs import EvalRun

__all__ = [
    "DEFAULT_TIMEOUT",
    "ENV_OTLP_ENDPOINT",
    "SpanExporter",
    "build_payload",
    "resolve_otlp_endpoint",
    "run_span_attributes",
    "span_id",
    "trace_id",
    "traces_url",
]

ENV_OTLP_ENDPOINT: Final = "VERDRYX_OTLP_ENDPOINT"
DEFAULT_TIMEOUT: Final = 2.0
_TRACES_PATH: Final = "/v1/traces"
#: SpanKind INTERNAL: a run is work verdryx did, not a call to or from a peer.
_SPAN_KIND_INTERNAL: Final = 1
_ATTRIBUTE_PREFIX: Final = "verdryx."

_log = logging.getLogger("verdryx.otel")


def resolve_otlp_endpoint(env: Mapping[str, str] | None = None) -> str | None:
    """`$VERDRYX_OTLP_ENDPOINT` when set and not blank, else None (no export at all)."""
    value = (os.environ if env is None else env).get(ENV_OTLP_ENDPOINT, "").strip()
    return value or None


def traces_url(endpoint: str) -> str:
    """`<endpoint>/v1/traces`, whether or not the endpoint already ends in it (or in `/`)."""
    url = endpoint.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"OTLP endpoint {redact_url(endpoint)!r} is not an http(s) URL; set "
            f"{ENV_OTLP_ENDPOINT} to the collector's OTLP/HTTP base, for example "
            "http://localhost:4318"
        )
    return url if url.endswith(_TRACES_PATH) else url + _TRACES_PATH


def trace_id(run_id: str) -> str:
    """32 hex digits from the run id alone: a run and its later drift checks share a trace."""
    return hashlib.sha256(f"verdryx-trace|{run_id}".encode()).hexdigest()[:32]


def span_id(run_id: str, name: str, timestamp_ns: int) -> str:
    return hashlib.sha256(f"verdryx-span|{run_id}|{name}|{timestamp_ns}".encode()).hexdigest()[:16]


def _any_value(value: Any) -> dict[str, Any] | None:
    """An OTLP AnyValue, typed so a backend can aggregate numbers; None when not sendable."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 is a decimal string in proto3 JSON
    if isinstance(value, float):
        # NaN and infinities have no meaning on a dashboard and some collectors reject them.
        return {"doubleValue": value} if math.isfinite(value) else None
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, (list, tuple)):
        values = [item for item in (_any_value(v) for v in value) if item is not None]
        return {"arrayValue": {"values": values}}
    return {"stringValue": str(value)}


def _attribute(key: str, value: Any) -> dict[str, Any] | None:
    any_value = _any_value(value)
    return None if any_value is None else {"key": key, "value": any_value}


def build_payload(
    name: str,
    run_id: str,
    attributes: Mapping[str, Any],
    *,
    agent_id: str | None = None,
    timestamp_ns: int,
    end_ns: int | None = None,
) -> dict[str, Any]:
    """The OTLP/HTTP JSON body (`ExportTraceServiceRequest`) for one span; pure.

    Attribute keys get the `verdryx.` prefix; `verdryx.run_id` comes first, then
    `verdryx.agent_id` when there is one. None and non-finite values are left out, never sent
    as a made-up number. Ids are hex, as the OTLP/JSON encoding requires.
    """
    pairs: list[tuple[str, Any]] = [("run_id", run_id)]
    if agent_id:
        pairs.append(("agent_id", agent_id))
    pairs.extend((key, value) for key, value in attributes.items() if value is not None)
    encoded = [_attribute(_ATTRIBUTE_PREFIX + key, value) for key, value in pairs]
    span = {
        "traceId": trace_id(run_id),
        "spanId": span_id(run_id, name, timestamp_ns),
        "name": name,
        "kind": _SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(timestamp_ns),
        "endTimeUnixNano": str(timestamp_ns if end_ns is None else end_ns),
        "attributes": [item for item in encoded if item is not None],
    }
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [
                        {"key": "service.name", "value": {"stringValue": "verdryx"}},
                        {"key": "service.version", "value": {"stringValue": __version__}},
                    ]
                },
                "scopeSpans": [
                    {"scope": {"name": "verdryx", "version": __version__}, "spans": [span]}
                ],
            }
        ]
    }


def run_span_attributes(run: EvalRun) -> dict[str, Any]:
    """The attributes of a run's `eval_run` span (mean_score left out when nothing measured)."""
    return {
        "model": run.model,
        "cases": len(run.measured),
        "unmeasured": len(run.unmeasured),
        "mean_score": run.mean_score,
        "total_tokens": run.total_tokens,
        "total_cost_usd": run.total_cost_usd,
        "eval_set_ids": list(run.eval_set_ids),
    }


class SpanExporter:
    """Posts spans in daemon threads; `wait()` bounds how long the process waits for them.

    `timeout` bounds each request's socket operations and the whole of `wait()`. Failures
    (refused, unreachable, silent, non-2xx) are logged at debug level and counted, never
    raised: observability must not fail the eval it observes.
    """

    def __init__(self, endpoint: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        if not (timeout > 0 and math.isfinite(timeout)):
            raise UsageError(f"OTLP timeout {timeout!r} is not a positive number of seconds")
        url = traces_url(endpoint)
        # A user:password in the endpoint is sent as basic auth, never kept in the URL that
        # is logged or shown (verdryx_core.untrusted.redact).
        parts = urlsplit(url)
        self._auth: str | None = None
        if parts.username is not None or parts.password is not None:
            pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            self._auth = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
            netloc = parts.netloc.rpartition("@")[2]
            url = urlunsplit(parts._replace(netloc=netloc))
        self.url = url
        self.timeout = timeout
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.delivered = 0
        self.failed = 0
        #: The last failure, for a summary line; never includes the request body.
        self.last_error: str | None = None

    def __repr__(self) -> str:
        return (
            f"SpanExporter(url={self.url!r}, timeout={self.timeout}, "
            f"delivered={self.delivered}, failed={self.failed})"
        )

    def export(
        self,
        name: str,
        run_id: str,
        attributes: Mapping[str, Any],
        *,
        agent_id: str | None = None,
    ) -> None:
        """Start posting one span and return at once."""
        try:
            payload = build_payload(
                name, run_id, attributes, agent_id=agent_id, timestamp_ns=time.time_ns()
            )
            body = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            self._record(ok=False, error=f"span {name!r} not encodable: {exc}")
            return
        thread = threading.Thread(
            target=self._post, args=(name, body), name=f"verdryx-otlp-{name}", daemon=True
        )
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def wait(self) -> bool:
        """Join every export against one deadline `timeout` from now; True when all arrived."""
        deadline = time.monotonic() + self.timeout
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._threads = [thread for thread in self._threads if thread.is_alive()]
            pending = len(self._threads)
            return pending == 0 and self.failed == 0

    def _post(self, name: str, body: bytes) -> None:
        request = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"}
            | ({"Authorization": self._auth} if self._auth else {}),
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
                status = response.status
        except urllib.error.HTTPError as exc:
            self._record(ok=False, error=f"span {name!r}: collector answered {exc.code}")
            return
        except (OSError, ValueError) as exc:  # URLError, timeouts and resets are OSErrors
            self._record(ok=False, error=f"span {name!r}: {exc}")
            return
        if 200 <= status < 300:
            self._record(ok=True, error=None)
        else:
            self._record(ok=False, error=f"span {name!r}: collector answered {status}")

    def _record(self, *, ok: bool, error: str | None) -> None:
        with self._lock:
            if ok:
                self.delivered += 1
            else:
                self.failed += 1
                self.last_error = redact_text(error) if error else error
        if error:
            _log.debug("OTLP export to %s failed: %s", self.url, error)
