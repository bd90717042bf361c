"""The Anthropic adapter on the real SDK against a fake Messages server.

Every test checks the request shapes the SDK sent (`server.violations == []`); retry tests use
sub-second `retry-after` values and small `max_retries` so the file stays fast.
"""

from __future__ import annotations

import socket
import sys
import time

import pytest
from fakes.anthropic_server import (
    DEFAULT_KEY,
    FakeAnthropic,
    Reply,
    error_reply,
    message_reply,
)

from verdryx_core.cases import EvalCase, ToolCall
from verdryx_core.errors import ModelCallError, VerdryxError
from verdryx_core.graders.base import GradeContext
from verdryx_core.graders.tool_trace import ToolTraceGrader
from verdryx_core.judge.prompt import JUDGE_SYSTEM, RECORD_VERDICT_TOOL
from verdryx_core.llm import (
    AnthropicAdapter,
    Completion,
    ModelAdapter,
    PriceBook,
    StubAdapter,
    make_adapter,
)

MODEL = "claude-haiku-4-5"
TOOLS = [
    {"name": "search_orders", "description": "find orders", "input_schema": {"type": "object"}},
    {"name": "issue_refund", "input_schema": {"type": "object", "properties": {}}},
]


def adapter_for(server: FakeAnthropic, **kwargs: object) -> ModelAdapter:
    return make_adapter(MODEL, env=server.env(), **kwargs)  # type: ignore[arg-type]


# -- completion ---------------------------------------------------------------------------


def test_completion_text_tokens_and_real_cost(server: FakeAnthropic) -> None:
    server.usage = (1000, 500)
    completion = adapter_for(server).complete("What is 2+2?")
    assert completion == Completion(
        text="echo: What is 2+2?", input_tokens=1000, output_tokens=500, cost_usd=0.0035
    )
    assert completion.tokens == 1500
    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.body["model"] == MODEL
    assert request.body["messages"] == [{"role": "user", "content": "What is 2+2?"}]
    assert request.body["max_tokens"] == 1024
    assert "temperature" not in request.body  # not sent unless configured
    assert "system" not in request.body and "tools" not in request.body


def test_completion_concatenates_text_blocks(server: FakeAnthropic) -> None:
    body = message_reply(text="first ").body
    assert body is not None
    body = {**body, "content": [*body["content"], {"type": "text", "text": "second"}]}
    server.script(Reply(body=body))
    assert adapter_for(server).complete("p").text == "first second"


def test_temperature_is_sent_only_when_configured(server: FakeAnthropic) -> None:
    make_adapter(MODEL, env=server.env(), temperature=0.0).complete("p")
    adapter_for(server).complete("p")
    first, second = server.requests
    assert first.body["temperature"] == 0.0
    assert "temperature" not in second.body


def test_the_adapter_satisfies_the_protocol(server: FakeAnthropic) -> None:
    assert isinstance(adapter_for(server), ModelAdapter)
    assert isinstance(make_adapter("stub"), StubAdapter)
    assert isinstance(make_adapter("stub"), ModelAdapter)


def test_base_url_comes_from_the_environment_and_calls_share_a_connection(
    server: FakeAnthropic,
) -> None:
    adapter = adapter_for(server)
    for index in range(3):
        adapter.complete(f"p{index}")
    ports = {request.client_port for request in server.requests}
    assert len(server.requests) == 3
    assert len(ports) == 1  # HTTP/1.1 keep-alive: one connection for sequential calls


def test_an_unpriced_model_costs_the_fallback_and_is_noted(server: FakeAnthropic) -> None:
    prices = PriceBook.default()
    completion = make_adapter("claude-next-9", env=server.env(), prices=prices).complete("p")
    assert completion.cost_usd == pytest.approx((10 * 15.0 + 5 * 75.0) / 1e6)
    assert prices.unpriced == {"claude-next-9"}


# -- live tool traces ---------------------------------------------------------------------


def test_tool_trace_is_the_ordered_tool_use_names_of_the_first_response(
    server: FakeAnthropic,
) -> None:
    server.tool_calls = ["search_orders", "issue_refund", "search_orders"]
    completion = adapter_for(server).complete_with_tools("Refund order 7", TOOLS)
    assert completion.tool_names == ("search_orders", "issue_refund", "search_orders")
    assert completion.text == "Let me look that up."
    (request,) = server.requests  # single turn: no tool is executed, nothing is sent back
    assert request.body["tools"] == TOOLS
    assert "tool_choice" not in request.body
    case = EvalCase(
        id="refund",
        prompt="Refund order 7",
        grader="tool_trace",
        tools=tuple(TOOLS),
        expected_tools=("search_orders", "issue_refund"),
    )
    grade = ToolTraceGrader().grade(
        case, list(completion.tool_names), GradeContext(eval_set_id="s")
    )
    assert grade.value == pytest.approx(2 / 3)


def test_tool_calls_carry_each_tool_use_input_and_grade_with_arguments(
    server: FakeAnthropic,
) -> None:
    server.script(
        message_reply(
            text="Checking both.",
            tool_uses=[
                ("search_orders", {"customer": "ada", "limit": 5}),
                ("issue_refund", {"order_id": "7"}),
            ],
        )
    )
    completion = adapter_for(server).complete_with_tools("Refund Ada's last order", TOOLS)
    assert completion.tool_names == ("search_orders", "issue_refund")
    assert completion.tool_calls == (
        ToolCall(name="search_orders", arguments={"customer": "ada", "limit": 5}),
        ToolCall(name="issue_refund", arguments={"order_id": "7"}),
    )
    assert Completion.from_dict(completion.to_dict()) == completion  # the cache's round trip
    case = EvalCase.from_dict(
        {
            "id": "refund",
            "prompt": "p",
            "grader": "tool_trace",
            "tools": TOOLS,
            "expected_tool_calls": [
                {"name": "issue_refund", "arguments": {"order_id": {"one_of": ["7", 7]}}},
                {"name": "search_orders", "arguments": {"customer": "ada"}},
            ],
            "tool_match": "unordered",
            "argument_match": "subset",
        }
    )
    context = GradeContext(eval_set_id="s")
    assert ToolTraceGrader().grade(case, list(completion.tool_calls), context).value == 1.0
    exact = EvalCase.from_dict({**case.to_dict(), "argument_match": "exact"})
    # search_orders also got `limit`: exact arguments match only the refund, 1 of 2.
    assert ToolTraceGrader().grade(exact, list(completion.tool_calls), context).value == 0.5


def test_a_response_with_no_tool_use_is_an_empty_trace(server: FakeAnthropic) -> None:
    server.script(message_reply(text="I will not call anything."))
    assert adapter_for(server).complete_with_tools("p", TOOLS).tool_names == ()


# -- the judge ----------------------------------------------------------------------------


def test_judge_forces_record_verdict_and_reads_it(server: FakeAnthropic) -> None:
    judgement = adapter_for(server).judge("Say hi", "hi there", "Greets the user")
    assert judgement.score == 0.75
    assert judgement.reason == "fake judge reason"
    assert judgement.unmeasured is None
    assert judgement.cost_usd == pytest.approx(3.5e-05)
    (request,) = server.requests
    assert request.body["system"] == JUDGE_SYSTEM
    assert request.body["tools"] == [RECORD_VERDICT_TOOL]
    assert request.body["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    text = request.user_text
    assert "<task>\nSay hi\n</task>" in text
    assert "<rubric>\nGreets the user\n</rubric>" in text
    assert "<output>\nhi there\n</output>" in text


# -- retries ------------------------------------------------------------------------------


def test_429_is_retried_after_the_retry_after_the_server_asks(server: FakeAnthropic) -> None:
    # The SDK's own first backoff is at most 0.5 s: a gap of at least the 1 s the server asks
    # for proves the header was honoured. Observed at the server, with no upper bound, so a
    # busy machine cannot fail it.
    server.script(error_reply(429, "rate_limit_error", "slow down", retry_after="1"))
    completion = make_adapter(MODEL, env=server.env(), max_retries=2).complete("p")
    assert completion.text == "echo: p"
    first, second = server.requests
    assert second.received_at - first.received_at >= 1.0
    assert [r.headers.get("x-stainless-retry-count") for r in server.requests] == ["0", "1"]


def test_5xx_without_retry_after_backs_off_exponentially_with_jitter(
    server: FakeAnthropic,
) -> None:
    server.script(error_reply(500, "api_error", "boom"))
    completion = make_adapter(MODEL, env=server.env(), max_retries=1).complete("p")
    assert completion.text == "echo: p"
    first, second = server.requests
    # The SDK's first backoff is 0.5 s x a jitter in (0.75, 1]: at least that, and (10x the
    # backoff, so a busy machine cannot fail it) not the SDK's longer waits nor a hang.
    assert 0.3 <= second.received_at - first.received_at < 5.0


@pytest.mark.parametrize("status", [500, 503, 529])
def test_server_errors_exhaust_the_bound_and_name_the_status(
    server: FakeAnthropic, status: int
) -> None:
    failure = error_reply(status, "overloaded_error", "try later", retry_after="0.01")
    server.script(failure, failure, failure, failure)
    with pytest.raises(ModelCallError) as caught:
        make_adapter(MODEL, env=server.env(), max_retries=2).complete("p")
    assert caught.value.status == status
    assert f"HTTP {status}" in str(caught.value)
    assert "after 2 retries" in str(caught.value)
    assert len(server.requests) == 3  # the first try and two retries, then give up


def test_429_exhausted_says_to_lower_concurrency(server: FakeAnthropic) -> None:
    limited = error_reply(429, "rate_limit_error", "slow down", retry_after="0.01")
    server.script(limited, limited)
    with pytest.raises(ModelCallError, match="lower --concurrency") as caught:
        make_adapter(MODEL, env=server.env(), max_retries=1).complete("p")
    assert caught.value.status == 429
    # The pytest face words the same hint with its own flag.
    assert "lower --verdryx-concurrency" in caught.value.worded(
        {"concurrency": "--verdryx-concurrency"}
    )


def test_a_recovering_server_succeeds_after_500s(server: FakeAnthropic) -> None:
    failure = error_reply(500, "api_error", "boom", retry_after="0.01")
    server.script(failure, failure)
    judgement = make_adapter(MODEL, env=server.env(), max_retries=3).judge("p", "o", "r")
    assert judgement.score == 0.75
    assert len(server.requests) == 3


# -- credentials and hard failures --------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_error_at_once_naming_the_variable_never_the_key(
    server: FakeAnthropic, status: int
) -> None:
    secret = "sk-ant-THIS-IS-SECRET-42"
    server.api_key = secret
    server.script(error_reply(status, "authentication_error", f"key {secret} is not valid here"))
    adapter = make_adapter(MODEL, env=server.env(api_key=secret), max_retries=3)
    with pytest.raises(ModelCallError) as caught:
        adapter.complete("p")
    message = str(caught.value)
    assert caught.value.status == status
    assert "ANTHROPIC_API_KEY" in message
    assert f"HTTP {status}" in message
    assert secret not in message  # redacted even from the provider's own text
    assert secret not in repr(adapter)
    assert len(server.requests) == 1  # never retried


def test_a_refused_bearer_token_names_its_own_variable(server: FakeAnthropic) -> None:
    secret = "proxy-token-THIS-IS-SECRET-77"
    env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_AUTH_TOKEN": secret}
    with pytest.raises(ModelCallError) as caught:
        make_adapter(MODEL, env=env, max_retries=3).complete("p")
    message = str(caught.value)
    assert caught.value.status == 401
    assert "set ANTHROPIC_AUTH_TOKEN" in message
    assert secret not in message
    assert server.requests[0].headers.get("authorization") == "wrong"  # sent as a bearer
    assert len(server.requests) == 1


def test_a_wrong_key_is_a_401_from_the_server(server: FakeAnthropic) -> None:
    with pytest.raises(ModelCallError) as caught:
        make_adapter(MODEL, env=server.env(api_key="sk-wrong")).complete("p")
    assert caught.value.status == 401
    assert server.requests[0].headers.get("authorization") == "wrong"
    assert "sk-wrong" not in str(caught.value)


def test_the_key_reaches_the_server(server: FakeAnthropic) -> None:
    adapter_for(server).complete("p")
    headers = server.requests[0].headers
    assert "ok" in (headers.get("authorization"), headers.get("x-api-key"))
    assert "anthropic-version" in headers


def test_no_key_fails_at_the_first_call_without_a_request(server: FakeAnthropic) -> None:
    adapter = make_adapter(MODEL, env={"ANTHROPIC_BASE_URL": server.url})
    with pytest.raises(ModelCallError, match="set ANTHROPIC_API_KEY"):
        adapter.complete("p")
    assert server.requests == []


def test_a_400_is_not_retried_and_says_what_the_provider_said(server: FakeAnthropic) -> None:
    server.script(error_reply(404, "not_found_error", "model: claude-nope"))
    with pytest.raises(ModelCallError, match="not_found_error: model: claude-nope") as caught:
        make_adapter("claude-nope", env=server.env(), max_retries=3).complete("p")
    assert caught.value.status == 404
    assert len(server.requests) == 1


def test_an_unreachable_endpoint_is_an_error_naming_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://user:pa55word@127.0.0.1:{port}"
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": DEFAULT_KEY}
    started = time.monotonic()
    with pytest.raises(
        ModelCallError, match=r"cannot reach http://user:\*\*\*@127\.0\.0\.1"
    ) as caught:
        make_adapter(MODEL, env=env, max_retries=0).complete("p")
    assert time.monotonic() - started < 5
    assert caught.value.status is None
    assert "pa55word" not in str(caught.value)


def test_missing_sdk_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(VerdryxError, match=r"pip install 'verdryx\[anthropic\]'"):
        make_adapter(MODEL, env={"ANTHROPIC_API_KEY": "k"})
    assert isinstance(make_adapter("stub", env={}), StubAdapter)  # the stub never needs it


def test_the_environment_default_is_the_process_environment(
    server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", DEFAULT_KEY)
    adapter = make_adapter(MODEL)
    assert isinstance(adapter, AnthropicAdapter)
    assert adapter.complete("p").text == "echo: p"


def test_injected_latency_is_paid_once_per_call(server: FakeAnthropic) -> None:
    # Observed at the server: the second call of a sequence arrives only after the first
    # answer, which the server held back for its latency.
    server.latency = 0.1
    adapter = adapter_for(server)
    adapter.complete("p")
    adapter.complete("q")
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.1
