"""A provider that accepts a request and never answers cannot hang a run: each attempt is
bounded by the timeout, so a call fails within timeout x (retries + 1) plus the SDK's
backoff (docs/models-and-judges.md, "Timeouts"). Both adapters, on their real SDKs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fakes import anthropic_server, openai_server

from verdryx_core.errors import ModelCallError, UsageError
from verdryx_core.llm import AnthropicAdapter, OpenAIAdapter, make_adapter

#: The SDKs' backoff before retry n is at most 0.5 x 2**n seconds (both SDKs, before jitter).
_BACKOFF = [0.5, 1.0, 2.0]
#: Generous: the point is that the call fails instead of hanging (the SDK default is 600 s
#: per attempt), on a machine that may be busy; the request count pins the attempts.
_SLACK = 10.0

Fake = anthropic_server.FakeAnthropic | openai_server.FakeOpenAI


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> Iterator[tuple[str, Fake, str]]:
    fake: Fake
    if request.param == "anthropic":
        fake, model = anthropic_server.FakeAnthropic(), "claude-haiku-4-5"
    else:
        fake, model = openai_server.FakeOpenAI(), "openai:gpt-4o-mini"
    with fake:
        yield request.param, fake, model
        assert fake.violations == []


def _wait_until(condition: Callable[[], bool], limit: float = _SLACK) -> None:
    deadline = time.monotonic() + limit
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def _calls(adapter: Any) -> list[Callable[[], Any]]:
    return [
        lambda: adapter.complete("p"),
        lambda: adapter.complete_with_tools(
            "p", [{"name": "lookup", "input_schema": {"type": "object"}}]
        ),
        lambda: adapter.judge("p", "o", "r"),
    ]


@pytest.mark.parametrize("retries", [0, 1])
def test_a_provider_that_never_answers_fails_within_the_bound(
    provider: tuple[str, Fake, str], retries: int
) -> None:
    name, fake, model = provider
    fake.hang = True
    timeout = 0.3
    adapter = make_adapter(model, env=fake.env(), timeout=timeout, max_retries=retries)
    started = time.monotonic()
    with pytest.raises(ModelCallError) as caught:
        adapter.complete("p")
    elapsed = time.monotonic() - started
    attempts = retries + 1
    assert elapsed >= timeout * attempts
    assert elapsed < timeout * attempts + sum(_BACKOFF[:retries]) + _SLACK
    # Each attempt reached the server and was dropped. On a busy machine the fake's handler
    # may read a request only after the client gave up on it (the bytes wait in the socket).
    _wait_until(lambda: len(fake.requests) >= attempts)
    assert len(fake.requests) == attempts
    assert str(caught.value) == (
        # Both adapters name which of a case's calls failed.
        f"model {model} (model call): "
        f"{fake.base_url if name == 'openai' else fake.url} did not answer "
        f"within 0.3s, still failing after {retries} retries; check the endpoint, retry later "
        "or raise --timeout"  # the core's own face words the hint; pytest says --verdryx-timeout
    )
    assert caught.value.status is None


def test_every_kind_of_call_is_bounded(provider: tuple[str, Fake, str]) -> None:
    _, fake, model = provider
    fake.hang = True
    adapter = make_adapter(model, env=fake.env(), timeout=0.2, max_retries=0)
    for call in _calls(adapter):
        started = time.monotonic()
        with pytest.raises(ModelCallError, match=r"did not answer within 0\.2s"):
            call()
        assert time.monotonic() - started < 0.2 + _SLACK


def test_a_hang_then_an_answer_succeeds_on_the_retry(provider: tuple[str, Fake, str]) -> None:
    name, fake, model = provider
    hang = anthropic_server.hang_reply() if name == "anthropic" else openai_server.hang_reply()
    fake.script(hang)  # type: ignore[arg-type]
    adapter = make_adapter(model, env=fake.env(), timeout=0.3, max_retries=1)
    assert adapter.complete("p").text == "echo: p"
    _wait_until(lambda: len(fake.requests) >= 2)
    assert len(fake.requests) == 2


def test_the_default_timeout_is_the_documented_one() -> None:
    assert AnthropicAdapter("claude-haiku-4-5").timeout == 120.0
    assert OpenAIAdapter("openai:gpt-4o").timeout == 120.0


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), "10", True])
def test_a_timeout_that_is_not_a_positive_number_is_refused(bad: object) -> None:
    with pytest.raises(UsageError, match="is not a"):
        make_adapter("claude-haiku-4-5", env={}, timeout=bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="is not a"):
        make_adapter("openai:gpt-4o", env={}, timeout=bad)  # type: ignore[arg-type]


def test_a_read_timeout_the_sdk_wraps_as_a_connection_error_is_worded_as_a_timeout() -> None:
    # On a busy machine the SDK can let its HTTP stack's read timeout surface as an
    # APIConnectionError; the call still timed out, and the hint must say so.
    import anthropic
    import httpx2

    adapter = AnthropicAdapter(
        model="claude-haiku-4-5", api_key="k", base_url="http://127.0.0.1:9", timeout=0.3
    )
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/messages")
    errors = adapter._errors()
    for cause, timed_out in (
        (httpx2.ReadTimeout("timed out"), True),
        (ConnectionRefusedError(), False),
    ):
        try:
            try:
                raise cause
            except Exception as inner:
                raise anthropic.APIConnectionError(request=request) from inner
        except anthropic.APIConnectionError as exc:
            message = str(errors.from_sdk(exc, anthropic, "model call"))
        assert ("did not answer within 0.3s" in message) is timed_out, message
        assert ("cannot reach" in message) is not timed_out, message


def test_a_transport_error_the_sdk_lets_through_is_worded_like_the_sdk_s_own() -> None:
    # The same words whether the SDK wrapped its HTTP stack's error or let it through.
    import anthropic
    import httpx2

    adapter = AnthropicAdapter(
        model="claude-haiku-4-5", api_key="k", base_url="http://127.0.0.1:9", timeout=0.3
    )
    errors = adapter._errors()
    for raised, words in (
        (httpx2.ReadTimeout("timed out"), "did not answer within 0.3s"),
        (httpx2.ConnectError("[Errno 111] Connection refused"), "cannot reach"),
    ):

        def send(raised: Exception = raised) -> tuple[int, str, bytes]:
            raise raised

        with pytest.raises(ModelCallError) as caught:
            errors.answer(send, lambda body, kind: body, sdk=anthropic, call="model call")
        assert words in str(caught.value), str(caught.value)
