"""The HTTP client an adapter hands its SDK: the SDK's own default client, with as many
connections kept alive as the run has calls in flight (docs/models-and-judges.md, "How a
call is made").

Both SDKs keep 100 idle connections by default (`DEFAULT_CONNECTION_LIMITS`); a run at a
higher `concurrency` would close the rest after each call and connect again for the next.
Only the SDK's public `DefaultHttpxClient(limits=...)` is used, so its timeout, redirect
policy, proxy variables and TLS settings stay the SDK's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["http_client_options"]


def http_client_options(sdk: Any, connections: int | None) -> dict[str, Any]:
    """Keyword arguments for a client of `sdk` (the `anthropic` or `openai` module) that
    makes up to `connections` calls at once: `{}` (the SDK's default client) when its default
    limits already keep that many alive, else `http_client` with larger limits."""
    default = sdk.DEFAULT_CONNECTION_LIMITS
    kept = default.max_keepalive_connections
    if connections is None or kept is None or connections <= kept:
        return {}
    most = default.max_connections
    limits = type(default)(
        max_connections=None if most is None else max(most, connections),
        max_keepalive_connections=connections,
        keepalive_expiry=default.keepalive_expiry,
    )
    return {"http_client": sdk.DefaultHttpxClient(limits=limits)}
