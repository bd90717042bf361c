"""The HTTP client verdryx gives an SDK: its own default client on the keep-alive transport
(verdryx_core.llm.keepalive), or nothing (the SDK builds its default) when the light
transport cannot honour the environment.

The client is the SDK's `DefaultHttpxClient` / `DefaultAsyncHttpxClient` (its timeout,
connection limits and redirect policy) with only the transport swapped, through the SDK's
public `http_client=` argument. The SDK's default transport is kept when a proxy variable is
set (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, any case), when `VERDRYX_SDK_TRANSPORT=default`
asks for it, and for an SDK that is not built on `httpx2` (docs/models-and-judges.md, "What a
call costs").
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "PROXY_VARIABLES",
    "TRANSPORT_VARIABLE",
    "light_transport_refusal",
    "sdk_client_options",
    "sdk_http_client",
]

PROXY_VARIABLES: Final = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
TRANSPORT_VARIABLE: Final = "VERDRYX_SDK_TRANSPORT"


def light_transport_refusal(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the keep-alive transport is not used in `environ` (default: `os.environ`, what the
    SDK's own client reads), or None when it is."""
    env = os.environ if environ is None else environ
    choice = env.get(TRANSPORT_VARIABLE, "").strip().lower()
    if choice == "default":
        return f"{TRANSPORT_VARIABLE}=default"
    for name in PROXY_VARIABLES:
        for spelled in (name, name.lower()):
            if env.get(spelled):
                # The light transport speaks no proxy protocol: the SDK's does.
                return f"{spelled} is set (a proxy)"
    return None


def sdk_http_client(sdk: Any, *, asynchronous: bool = False) -> Any | None:
    """An `http_client=` for `sdk` (the `anthropic` or `openai` module): its default client
    on the keep-alive transport, or None for the SDK's own default (see the module doc)."""
    if light_transport_refusal() is not None:
        return None
    try:
        import httpx2
    except ImportError:
        return None
    name = "DefaultAsyncHttpxClient" if asynchronous else "DefaultHttpxClient"
    default: Any = getattr(sdk, name, None)
    base = httpx2.AsyncClient if asynchronous else httpx2.Client
    if not (isinstance(default, type) and issubclass(default, base)):
        return None  # an SDK on another HTTP library: its own transport
    from verdryx_core.llm.keepalive import KeepAliveTransport
    from verdryx_core.llm.keepalive_async import AsyncKeepAliveTransport

    transport: Any = AsyncKeepAliveTransport() if asynchronous else KeepAliveTransport()
    return default(transport=transport)


def _no_tracer_provider() -> bool:
    """Whether OpenTelemetry has no tracer provider (none set, none named by the
    environment): the SDK's spans would then be non-recording, work for nothing."""
    if any(name.startswith(("OTEL_", "ANTHROPIC_OPEN_TELEMETRY")) for name in os.environ):
        return False  # configured by the environment: the SDK's choice stands
    try:
        from opentelemetry import trace
    except ImportError:
        return True
    return isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def sdk_client_options(client_class: Any) -> dict[str, Any]:
    """Keyword arguments for a `client_class(...)` (`anthropic.Anthropic`, `AsyncAnthropic`,
    `openai.OpenAI`, ...): the keep-alive `http_client`, and `open_telemetry=False` (no span
    per call) for an SDK that takes it while no tracer provider is set; empty where neither
    applies, so the SDK's defaults stand (docs/targets.md, "A target on an SDK")."""
    sdk = importlib.import_module(str(client_class.__module__).partition(".")[0])
    # The async clients' close() is a coroutine function; the sync ones' is not.
    asynchronous = inspect.iscoroutinefunction(getattr(client_class, "close", None))
    options: dict[str, Any] = {}
    http_client = sdk_http_client(sdk, asynchronous=asynchronous)
    if http_client is not None:
        options["http_client"] = http_client
    try:
        parameters = set(inspect.signature(client_class).parameters)
    except (TypeError, ValueError):
        parameters = set()
    if "open_telemetry" in parameters and _no_tracer_provider():
        options["open_telemetry"] = False
    return options
