"""Providers answering generated garbage: the real `anthropic` SDK against the fake Messages
server (model, tools and judge paths) and the typed verdict client against the fake typryx
service. Every answer ends in a result or one `ModelCallError` line; the judge's unreadable
2xx answers are unmeasured; nothing else escapes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic, Reply, garbage_reply, message_body
from fakes.openai_server import FakeOpenAI, completion_body
from fakes.openai_server import Reply as OpenAIReply
from fakes.typryx_server import FakeTypryx
from fakes.typryx_server import Reply as TypryxReply
from fuzz_support import FUZZ, arbitrary_json, assert_one_printable_line, document_text
from hypothesis import given
from hypothesis import strategies as st

from verdryx_core.addons.typed.client import TypryxClient
from verdryx_core.errors import ModelCallError
from verdryx_core.llm.anthropic_adapter import AnthropicAdapter
from verdryx_core.untrusted.text import is_valid_text

TOOLS = [{"name": "lookup", "description": "d", "input_schema": {"type": "object"}}]


@pytest.fixture(scope="module")
def provider() -> Iterator[FakeAnthropic]:
    # One server for the module: starting one per example would dominate the run time.
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture(scope="module")
def adapter(provider: FakeAnthropic) -> AnthropicAdapter:
    # One SDK client (one connection pool) for every example, as in a real run.
    return AnthropicAdapter(
        "claude-haiku-4-5", api_key=provider.api_key, base_url=provider.url, max_retries=0
    )


@pytest.fixture(scope="module")
def typed() -> Iterator[FakeTypryx]:
    with FakeTypryx() as fake:
        yield fake


def _block() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": arbitrary_json}),
        st.fixed_dictionaries(
            {"type": st.just("tool_use"), "name": arbitrary_json, "input": arbitrary_json}
        ),
        arbitrary_json,
    )


#: Bodies shaped like a message with hostile parts, arbitrary JSON, and raw bytes.
_bodies = st.one_of(
    st.builds(
        lambda content, usage, stop: json.dumps(
            {**message_body(text="x"), "content": content, "usage": usage, "stop_reason": stop}
        ).encode(),
        st.lists(_block(), max_size=3) | arbitrary_json,
        st.fixed_dictionaries(
            {},
            optional={
                "input_tokens": st.integers(-5, 10**12) | arbitrary_json,
                "output_tokens": st.integers(0, 100),
            },
        )
        | arbitrary_json,
        arbitrary_json,
    ),
    arbitrary_json.map(lambda value: document_text(value).encode("utf-8", "surrogatepass")),
    st.binary(max_size=200),
)

_replies = st.builds(
    garbage_reply,
    _bodies,
    status=st.sampled_from([200, 200, 200, 201, 204, 400, 404, 500]),
    content_type=st.sampled_from(
        ["application/json", "application/json", "text/html", "text/plain", ""]
    ),
)


def _call(adapter: AnthropicAdapter, path: str) -> object:
    if path == "model":
        return adapter.complete("hi")
    if path == "tools":
        return adapter.complete_with_tools("hi", TOOLS)
    return adapter.judge("p", "o", "r")


@pytest.mark.parametrize("path", ["model", "tools", "judge"])
@FUZZ
@given(reply=_replies)
def test_generated_garbage_from_the_provider(
    provider: FakeAnthropic, adapter: AnthropicAdapter, path: str, reply: Reply
) -> None:
    provider.reset()
    provider.script(reply)
    try:
        answer = _call(adapter, path)
    except ModelCallError as exc:
        assert_one_printable_line(str(exc))
        assert "claude-haiku-4-5" in str(exc)
        return
    # An answer that was accepted is a real one: 2xx, JSON, with valid text and counts.
    assert 200 <= reply.status < 300
    if path == "judge":
        unmeasured = getattr(answer, "unmeasured", None)
        score = getattr(answer, "score", None)
        assert (score is None) != (unmeasured is None)
        assert score is None or 0.0 <= score <= 1.0
    else:
        assert reply.content_type == "application/json"
        assert getattr(answer, "input_tokens", 0) >= 0
        text = getattr(answer, "text", "")
        assert isinstance(text, str)
        # A lone surrogate may arrive (a JSON escape); the text rule cleans it at the score.
        assert is_valid_text(text) or "\\ud" in reply.raw.decode("utf-8", "replace").lower()


@FUZZ
@given(body=_bodies, status=st.sampled_from([200, 200, 401, 500]))
def test_generated_garbage_from_the_typed_service(
    typed: FakeTypryx, body: bytes, status: int
) -> None:
    typed.script(TypryxReply(status=status, raw=body))
    client = TypryxClient(typed.url, typed.key)
    try:
        answer = client.ask({"task": "t", "final_answer": "a"}, None)
    except ModelCallError as exc:
        assert_one_printable_line(str(exc))
        assert typed.key not in str(exc)
        return
    assert isinstance(answer, dict) and status == 200


@pytest.fixture(scope="module")
def openai_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def openai_adapter(openai_fake: FakeOpenAI) -> Any:
    from verdryx_core.llm import make_adapter

    return make_adapter("openai:gpt-4o-mini", env=openai_fake.env(), max_retries=0)


_call_shapes = st.fixed_dictionaries(
    {"id": st.just("call_1"), "type": st.just("function")},
    optional={
        "function": st.fixed_dictionaries(
            {"name": arbitrary_json}, optional={"arguments": arbitrary_json}
        )
        | arbitrary_json
    },
)

_openai_bodies = st.one_of(
    st.builds(
        lambda content, calls, usage: json.dumps(
            {
                **completion_body(text="x"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}}
                    | ({"tool_calls": calls} if calls is not None else {})
                ],
                "usage": usage,
            }
        ).encode(),
        arbitrary_json,
        st.none() | st.lists(_call_shapes, max_size=2) | arbitrary_json,
        arbitrary_json
        | st.fixed_dictionaries(
            {}, optional={"prompt_tokens": arbitrary_json, "completion_tokens": st.integers()}
        ),
    ),
    arbitrary_json.map(lambda value: document_text(value).encode("utf-8", "surrogatepass")),
    st.binary(max_size=200),
)


@pytest.mark.parametrize("path", ["model", "tools", "judge"])
@FUZZ
@given(
    body=_openai_bodies,
    status=st.sampled_from([200, 200, 200, 400, 500]),
    content_type=st.sampled_from(["application/json", "application/json", "text/html"]),
)
def test_generated_garbage_from_an_openai_compatible_provider(
    openai_fake: FakeOpenAI,
    openai_adapter: Any,
    path: str,
    body: bytes,
    status: int,
    content_type: str,
) -> None:
    openai_fake.script(OpenAIReply(status=status, raw=body, content_type=content_type))
    try:
        answer = _call(openai_adapter, path)
    except ModelCallError as exc:
        assert_one_printable_line(str(exc))
        assert "gpt-4o-mini" in str(exc)
        return
    assert 200 <= status < 300
    if path == "judge":
        assert (answer.score is None) != (answer.unmeasured is None)
    else:
        assert content_type == "application/json"
        assert answer.input_tokens >= 0 and isinstance(answer.text, str)
