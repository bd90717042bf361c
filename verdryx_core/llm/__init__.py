"""Model calls: one adapter protocol, the stub, Anthropic and OpenAI-compatible adapters, the
response cache, the bounded call pool with its progress line, and the price book
(docs/models-and-judges.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from verdryx_core.llm.anthropic_adapter import AnthropicAdapter, check_sdk, import_sdk
from verdryx_core.llm.base import CALL_KINDS, Completion, Judgement, ModelAdapter
from verdryx_core.llm.cache import CACHE_MODES, CachedAdapter, CacheStats
from verdryx_core.llm.openai_adapter import MODEL_PREFIX as OPENAI_PREFIX
from verdryx_core.llm.openai_adapter import OpenAIAdapter
from verdryx_core.llm.openai_adapter import check_sdk as check_openai_sdk
from verdryx_core.llm.openai_adapter import import_sdk as import_openai_sdk
from verdryx_core.llm.pool import CallPool
from verdryx_core.llm.prices import ModelPrice, PriceBook
from verdryx_core.llm.progress import Progress
from verdryx_core.llm.stub import StubAdapter, StubCall
from verdryx_core.timeouts import DEFAULT_TIMEOUT_S

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
        return StubAdapter()
    env = os.environ if env is None else env
    if model.startswith(OPENAI_PREFIX):
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
