"""Model calls: one adapter protocol, the stub, Anthropic and OpenAI-compatible adapters, the
response cache, the bounded call pool with its progress line, and the price book
(docs/models-and-judges.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from verdryx_core.lazy_names import first_use
from verdryx_core.timeouts import DEFAULT_TIMEOUT_S

if TYPE_CHECKING:
    from verdryx_core.llm.anthropic_adapter import AnthropicAdapter
    from verdryx_core.llm.base import CALL_KINDS, Completion, Judgement, ModelAdapter
    from verdryx_core.llm.cache import CACHE_MODES, CachedAdapter, CacheStats
    from verdryx_core.llm.openai_adapter import OpenAIAdapter
    from verdryx_core.llm.pool import CallPool
    from verdryx_core.llm.prices import ModelPrice, PriceBook
    from verdryx_core.llm.progress import Progress
    from verdryx_core.llm.stub import StubAdapter, StubCall

#: Public name -> the module that defines it. A session of the stub model imports neither
#: provider's adapter.
_HOMES: Final = {
    "CACHE_MODES": "verdryx_core.llm.cache",
    "CALL_KINDS": "verdryx_core.llm.base",
    "AnthropicAdapter": "verdryx_core.llm.anthropic_adapter",
    "CacheStats": "verdryx_core.llm.cache",
    "CachedAdapter": "verdryx_core.llm.cache",
    "CallPool": "verdryx_core.llm.pool",
    "Completion": "verdryx_core.llm.base",
    "Judgement": "verdryx_core.llm.base",
    "ModelAdapter": "verdryx_core.llm.base",
    "ModelPrice": "verdryx_core.llm.prices",
    "OpenAIAdapter": "verdryx_core.llm.openai_adapter",
    "PriceBook": "verdryx_core.llm.prices",
    "Progress": "verdryx_core.llm.progress",
    "StubAdapter": "verdryx_core.llm.stub",
    "StubCall": "verdryx_core.llm.stub",
}

__all__ = [
    "CACHE_MODES",
    "CALL_KINDS",
    "AnthropicAdapter",
    "CacheStats",
    "CachedAdapter",
    "CallPool",
    "Completion",
    "Judgement",
    "ModelAdapter",
    "ModelPrice",
    "OpenAIAdapter",
    "PriceBook",
    "Progress",
    "StubAdapter",
    "StubCall",
    "make_adapter",
]

__getattr__ = first_use(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(__all__)


def make_adapter(
    model: str,
    *,
    env: Mapping[str, str] | None = None,
    prices: PriceBook | None = None,
    max_retries: int = 4,
    temperature: float | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    connections: int | None = None,
    sdk_now: bool = True,
) -> ModelAdapter:
    """`stub` is the offline stub; `openai:NAME` an OpenAI-compatible model; any other name
    is a real Anthropic model.

    The endpoint and credential come from the environment (`ANTHROPIC_BASE_URL`,
    `ANTHROPIC_API_KEY`, else `ANTHROPIC_AUTH_TOKEN`; `OPENAI_BASE_URL`, `OPENAI_API_KEY`),
    read here once; there is deliberately no way to pass a key as an argument a command line
    could carry. `timeout` bounds each attempt of each call, in seconds; `connections` is how
    many calls are made at once (the run's concurrency), each kept alive.

    A missing SDK is named here, before any call. With `sdk_now` the SDK is also imported
    here, so the first calls' latencies do not carry its import (a second or more); without
    it the first call imports it, which a run answered from the response cache never makes.
    """
    if model == "stub":
        from verdryx_core.llm.stub import StubAdapter

        return StubAdapter()
    env = os.environ if env is None else env
    from verdryx_core.llm.openai_adapter import MODEL_PREFIX as OPENAI_PREFIX

    if model.startswith(OPENAI_PREFIX):
        from verdryx_core.llm.openai_adapter import OpenAIAdapter
        from verdryx_core.llm.openai_adapter import check_sdk as check_openai_sdk
        from verdryx_core.llm.openai_adapter import import_sdk as import_openai_sdk

        (import_openai_sdk if sdk_now else check_openai_sdk)()
        return OpenAIAdapter(
            model,
            api_key=env.get("OPENAI_API_KEY") or None,
            base_url=env.get("OPENAI_BASE_URL") or None,
            prices=prices,
            max_retries=max_retries,
            temperature=temperature,
            timeout=timeout,
            connections=connections,
        )
    from verdryx_core.llm.anthropic_adapter import AnthropicAdapter, check_sdk, import_sdk

    (import_sdk if sdk_now else check_sdk)()
    return AnthropicAdapter(
        model,
        api_key=env.get("ANTHROPIC_API_KEY") or None,
        auth_token=env.get("ANTHROPIC_AUTH_TOKEN") or None,
        base_url=env.get("ANTHROPIC_BASE_URL") or None,
        prices=prices,
        max_retries=max_retries,
        temperature=temperature,
        timeout=timeout,
        connections=connections,
    )
