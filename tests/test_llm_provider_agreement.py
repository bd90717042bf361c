"""The two adapters fail alike: the same failure reads the same through the real `anthropic`
SDK against the fake Messages server and the real `openai` SDK against the fake
chat-completions server, every line naming which of a case's calls failed, and a judge's 2xx
answer with nothing readable in it is unmeasured through both (docs/troubleshooting.md)."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fakes import anthropic_server, openai_server

from verdryx_core.errors import ModelCallError
from verdryx_core.llm import make_adapter

TOOLS = [{"name": "lookup", "description": "d", "input_schema": {"type": "object"}}]
CALLS: dict[str, Callable[[Any], object]] = {
    "model call": lambda adapter: adapter.complete("p"),
    "model call with tools": lambda adapter: adapter.complete_with_tools("p", TOOLS),
    "judge call": lambda adapter: adapter.judge("p", "o", "r"),
}


@dataclass
class Side:
    """One provider as these tests drive it."""

    fake: Any
    model: str
    #: The endpoint as messages name it.
    url: str
    url_variable: str
    endpoint: str
    request_id: str
    error_reply: Callable[..., Any]
    #: A 2xx answer that is well-formed JSON but holds no answer at all.
    empty_answer: Any
    reply: type

    def adapter(self, **kwargs: Any) -> Any:
        return make_adapter(self.model, env=self.fake.env(), **kwargs)


@pytest.fixture(params=["anthropic", "openai"])
def side(request: pytest.FixtureRequest) -> Iterator[Side]:
    if request.param == "anthropic":
        with anthropic_server.FakeAnthropic() as fake:
            body = anthropic_server.message_body(text="x")
            yield Side(
                fake=fake,
                model="claude-haiku-4-5",
                url=fake.url,
                url_variable="ANTHROPIC_BASE_URL",
                endpoint="an Anthropic Messages API endpoint",
                request_id="req_fake_0001",
                error_reply=anthropic_server.error_reply,
                empty_answer=anthropic_server.Reply(
                    body={key: value for key, value in body.items() if key != "content"}
                ),
                reply=anthropic_server.Reply,
            )
            assert fake.violations == []
    else:
        with openai_server.FakeOpenAI() as fake:
            yield Side(
                fake=fake,
                model="openai:gpt-4o-mini",
                url=fake.base_url,
                url_variable="OPENAI_BASE_URL",
                endpoint="a chat-completions endpoint",
                request_id="req_fake_openai_0001",
                error_reply=openai_server.error_reply,
                empty_answer=openai_server.Reply(
                    body={**openai_server.completion_body(text="x"), "choices": []}
                ),
                reply=openai_server.Reply,
            )
            assert fake.violations == []


def test_an_exhausted_rate_limit_reads_the_same_through_both(side: Side) -> None:
    limited = side.error_reply(429, "rate_limit_error", "slow down", retry_after="0.01")
    side.fake.script(limited, limited)
    with pytest.raises(ModelCallError) as caught:
        side.adapter(max_retries=1).complete("p")
    assert caught.value.status == 429
    assert str(caught.value) == (
        f"model {side.model} (model call): HTTP 429: rate_limit_error: slow down, request id "
        f"{side.request_id} from {side.url}, still failing after 1 retries; lower --concurrency "
        "or raise your rate limit"
    )


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_rejected_request_names_the_call_through_both(side: Side, call: str) -> None:
    side.fake.script(side.error_reply(404, "not_found_error", "no such model"))
    with pytest.raises(ModelCallError) as caught:
        CALLS[call](side.adapter(max_retries=0))
    assert caught.value.status == 404
    assert str(caught.value).startswith(
        f"model {side.model} ({call}): {side.url} rejected the request (HTTP 404: not_found_error"
    )
    assert str(caught.value).endswith(
        f"no such model, request id {side.request_id}); check the model id and the request"
    )


def test_a_refused_key_names_the_call_and_the_variable_through_both(side: Side) -> None:
    adapter = make_adapter(side.model, env=side.fake.env(api_key="sk-wrong-key-0042"))
    with pytest.raises(ModelCallError) as caught:
        adapter.judge("p", "o", "r")
    message = str(caught.value)
    assert caught.value.status == 401
    assert message.startswith(f"model {side.model} (judge call): {side.url} refused the credential")
    assert message.endswith(
        f"; set {side.url_variable.replace('BASE_URL', 'API_KEY')} to a valid key for this endpoint"
    )
    assert "sk-wrong-key-0042" not in message


def test_an_unreachable_endpoint_names_the_call_and_the_variable_through_both(side: Side) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}" + ("/v1" if side.url.endswith("/v1") else "")
    env = {**side.fake.env(), side.url_variable: url}
    with pytest.raises(ModelCallError) as caught:
        make_adapter(side.model, env=env, max_retries=0).complete_with_tools("p", TOOLS)
    message = str(caught.value)
    assert caught.value.status is None
    assert message.startswith(f"model {side.model} (model call with tools): cannot reach {url} (")
    assert message.endswith(
        f"still failing after 0 retries; check {side.url_variable} and the network"
    )


def test_an_html_page_with_200_reads_the_same_through_both(side: Side) -> None:
    page = side.reply(raw=b"<html>proxy login</html>", content_type="text/html")
    adapter = side.adapter(max_retries=0)
    problem = (
        "content type 'text/html', not application/json (it starts '<html>proxy login</html>')"
    )
    side.fake.script(page)
    with pytest.raises(ModelCallError) as caught:
        adapter.complete("p")
    assert caught.value.status == 200
    assert str(caught.value) == (
        f"model {side.model}: the model call to {side.url} got HTTP 200 with {problem}; is "
        f"{side.url_variable} {side.endpoint} (a proxy's error page is not)?"
    )
    side.fake.script(page)
    judgement = adapter.judge("p", "o", "r")
    assert judgement.score is None
    assert judgement.unmeasured == (
        f"judge answer unreadable (cost unknown): model {side.model}: the judge call to "
        f"{side.url} got HTTP 200 with {problem}; is {side.url_variable} {side.endpoint} (a "
        "proxy's error page is not)?"
    )


def test_a_2xx_answer_with_no_answer_in_it_is_an_error_or_unmeasured_through_both(
    side: Side,
) -> None:
    # No content blocks at all (Anthropic), no choices at all (OpenAI): nothing to grade.
    adapter = side.adapter(max_retries=0)
    side.fake.script(side.empty_answer)
    with pytest.raises(ModelCallError) as caught:
        adapter.complete("p")
    assert caught.value.status == 200
    assert str(caught.value).startswith(
        f"model {side.model}: the model call to {side.url} got HTTP 200 with a "
    )
    side.fake.script(side.empty_answer)
    judgement = adapter.judge("p", "o", "r")  # a verdict nobody can read, not a crash
    assert judgement.score is None and judgement.unmeasured is not None
    assert judgement.unmeasured.startswith(
        f"judge answer unreadable (cost unknown): model {side.model}: the judge call to "
    )
