"""The OpenAI-compatible adapter on the real `openai` SDK against a fake chat-completions
server (docs/models-and-judges.md). Every test checks the request shapes the SDK sent."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from fakes.openai_server import (
    FakeOpenAI,
    Reply,
    completion_body,
    completion_reply,
    error_reply,
)

from verdryx_core.cases import EvalCase, ToolCall
from verdryx_core.errors import ModelCallError, UsageError, VerdryxError
from verdryx_core.graders.base import GradeContext
from verdryx_core.graders.tool_trace import ToolTraceGrader
from verdryx_core.judge.prompt import JUDGE_SYSTEM, RECORD_VERDICT_TOOL
from verdryx_core.llm import (
    CachedAdapter,
    Completion,
    ModelAdapter,
    OpenAIAdapter,
    PriceBook,
    StubAdapter,
    make_adapter,
)
from verdryx_core.store import Store

MODEL = "openai:gpt-4o-mini"
TOOLS = [
    {"name": "lookup_order", "description": "find an order", "input_schema": {"type": "object"}},
    {"name": "refund_order", "input_schema": {"type": "object", "properties": {}}},
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake
        assert fake.violations == []


def adapter_for(server: FakeOpenAI, model: str = MODEL, **kwargs: object) -> ModelAdapter:
    return make_adapter(model, env=server.env(), **kwargs)  # type: ignore[arg-type]


# -- completion ---------------------------------------------------------------------------


def test_completion_text_tokens_and_real_cost(server: FakeOpenAI) -> None:
    server.usage = (1000, 500)
    adapter = adapter_for(server)
    assert isinstance(adapter, OpenAIAdapter)
    completion = adapter.complete("What is 2+2?")
    # gpt-4o-mini: $0.15 in, $0.60 out per million tokens.
    assert completion == Completion(
        text="echo: What is 2+2?", input_tokens=1000, output_tokens=500, cost_usd=0.00045
    )
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "ok"
    assert request.body["model"] == "gpt-4o-mini"  # the prefix picks the adapter, no more
    assert request.body["messages"] == [{"role": "user", "content": "What is 2+2?"}]
    # A compatible server gets max_tokens, the name every such server knows.
    assert request.body["max_tokens"] == 1024
    assert "temperature" not in request.body and "tools" not in request.body


def test_cached_prompt_tokens_are_priced_at_the_cache_read_rate(server: FakeOpenAI) -> None:
    server.script(completion_reply(text="t", usage=(1000, 0), cached_tokens=800))
    completion = adapter_for(server).complete("p")
    # 200 fresh x 0.15 + 800 cached x 0.075, per million.
    assert completion.input_tokens == 1000
    assert completion.cost_usd == pytest.approx((200 * 0.15 + 800 * 0.075) / 1e6)


def test_temperature_is_sent_only_when_configured(server: FakeOpenAI) -> None:
    adapter_for(server, temperature=0.0).complete("p")
    adapter_for(server).complete("p")
    first, second = server.requests
    assert first.body["temperature"] == 0.0
    assert "temperature" not in second.body


def test_an_unpriced_model_costs_the_fallback_and_the_note_names_its_id(
    server: FakeOpenAI,
) -> None:
    prices = PriceBook.default()
    server.usage = (1_000_000, 0)
    adapter_for(server, "openai:llama3.1", prices=prices).complete("p")
    assert prices.unpriced == {"openai:llama3.1"}
    local = PriceBook.from_mapping({"models": {"openai:llama3.1": {"input": 0, "output": 0}}})
    assert adapter_for(server, "openai:llama3.1", prices=local).complete("p").cost_usd == 0.0
    assert local.unpriced == set()


def test_the_endpoint_is_part_of_what_the_cache_keys_on(server: FakeOpenAI, tmp_path) -> None:
    adapter = adapter_for(server)
    assert adapter.parameters["base_url"] == server.base_url  # type: ignore[attr-defined]
    with Store.open(tmp_path / "v.db") as store:
        cached = CachedAdapter(adapter, store, "on")
        cached.complete("p")
        assert cached.complete("p").cached
    assert len(server.requests) == 1


# -- tools --------------------------------------------------------------------------------


def test_tools_become_function_tools_and_calls_keep_their_arguments(server: FakeOpenAI) -> None:
    server.script(
        completion_reply(
            calls=[
                ("lookup_order", {"order_id": "A-7"}),
                ("refund_order", {"order_id": "A-7", "amount": 12.5}),
                ("lookup_order", "not json"),
            ]
        )
    )
    completion = adapter_for(server).complete_with_tools("Refund order A-7", TOOLS)
    assert completion.tool_names == ("lookup_order", "refund_order", "lookup_order")
    assert completion.tool_calls == (
        ToolCall(name="lookup_order", arguments={"order_id": "A-7"}),
        ToolCall(name="refund_order", arguments={"order_id": "A-7", "amount": 12.5}),
        ToolCall(name="lookup_order", arguments=None),  # unreadable: not recorded
    )
    assert completion.text == ""
    (request,) = server.requests
    assert request.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "find an order",
                "parameters": {"type": "object"},
            },
        },
        {
            "type": "function",
            "function": {
                "name": "refund_order",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    assert "tool_choice" not in request.body
    case = EvalCase(
        id="refund",
        prompt="Refund order A-7",
        grader="tool_trace",
        tools=tuple(TOOLS),
        expected_tools=("lookup_order", "refund_order"),
    )
    grade = ToolTraceGrader().grade(
        case, list(completion.tool_names), GradeContext(eval_set_id="s")
    )
    assert grade.value == pytest.approx(2 / 3)


def test_tools_already_in_function_form_pass_unchanged(server: FakeOpenAI) -> None:
    tool = {"type": "function", "function": {"name": "escalate", "parameters": {"type": "object"}}}
    assert adapter_for(server).complete_with_tools("p", [tool]).tool_names == ("escalate",)
    assert server.requests[0].body["tools"] == [tool]


# -- the judge ----------------------------------------------------------------------------


def test_judge_forces_record_verdict_and_reads_it(server: FakeOpenAI) -> None:
    judgement = adapter_for(server).judge("Say hi", "hi there", "Greets the user")
    assert (judgement.score, judgement.reason, judgement.unmeasured) == (
        0.75,
        "fake judge reason",
        None,
    )
    assert judgement.cost_usd == pytest.approx((10 * 0.15 + 5 * 0.6) / 1e6)
    (request,) = server.requests
    system, user = request.body["messages"]
    assert system == {"role": "system", "content": JUDGE_SYSTEM}
    assert "<output>\nhi there\n</output>" in user["content"]
    assert request.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "record_verdict",
                "description": RECORD_VERDICT_TOOL["description"],
                "parameters": RECORD_VERDICT_TOOL["input_schema"],
            },
        }
    ]
    assert request.body["tool_choice"] == {
        "type": "function",
        "function": {"name": "record_verdict"},
    }


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (completion_body(calls=[("record_verdict", "{'score': 1")]), "arguments are not JSON"),
        (
            completion_body(calls=[("record_verdict", {"score": 1.5, "reason": "r"})]),
            "score 1.5 is outside [0, 1]",
        ),
        (
            completion_body(calls=[("record_verdict", {"score": "0.9", "reason": "r"})]),
            "is not a number",
        ),
        (
            completion_body(calls=[("record_verdict", {"score": True, "reason": "r"})]),
            "is not a number",
        ),
        (completion_body(calls=[("record_verdict", {"score": 0.5})]), "reason is missing"),
        (completion_body(calls=[("record_verdict", [0.5])]), "is not an object"),
        (
            completion_body(text="I'd say 0.9"),
            'did not call record_verdict; it wrote: "I\'d say 0.9"',
        ),
        (
            completion_body(text="Well", finish_reason="length"),
            "did not call record_verdict (cut off at max_tokens)",
        ),
        (
            completion_body(
                calls=[
                    ("record_verdict", {"score": 0.2, "reason": "a"}),
                    ("record_verdict", {"score": 0.9, "reason": "b"}),
                ]
            ),
            "the judge gave 2 different verdicts",
        ),
    ],
)
def test_a_judge_answer_that_is_not_a_verdict_is_unmeasured(
    server: FakeOpenAI, reply: dict[str, object], why: str
) -> None:
    server.script(Reply(body=reply))
    judgement = adapter_for(server).judge("p", "o", "r")
    assert judgement.score is None
    assert judgement.unmeasured is not None and why in judgement.unmeasured
    assert judgement.input_tokens == 10  # the call was paid either way


# -- retries, timeouts, credentials -------------------------------------------------------


def test_429_is_retried_after_the_retry_after_the_server_asks(server: FakeOpenAI) -> None:
    server.script(error_reply(429, "rate_limit_error", "slow down", retry_after="1"))
    assert adapter_for(server, max_retries=2).complete("p").text == "echo: p"
    first, second = server.requests
    assert second.received_at - first.received_at >= 1.0


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_exhaust_the_bound_and_name_the_status(
    server: FakeOpenAI, status: int
) -> None:
    failure = error_reply(status, "server_error", "try later", retry_after="0.01")
    server.script(failure, failure, failure)
    with pytest.raises(ModelCallError) as caught:
        adapter_for(server, max_retries=2).complete("p")
    assert caught.value.status == status
    assert f"HTTP {status}: server_error: try later, request id req_fake_openai_0001" in str(
        caught.value
    )
    assert "after 2 retries; retry later" in str(caught.value)
    assert len(server.requests) == 3


def test_a_wrong_key_is_refused_at_once_naming_the_variable_never_the_key(
    server: FakeOpenAI,
) -> None:
    secret = "sk-proj-THIS-IS-SECRET-42"
    adapter = make_adapter(MODEL, env=server.env(api_key=secret), max_retries=3)
    with pytest.raises(ModelCallError) as caught:
        adapter.complete("p")
    message = str(caught.value)
    assert caught.value.status == 401
    assert "set OPENAI_API_KEY" in message and "invalid_api_key" in message
    assert secret not in message  # the provider echoes it; it is redacted
    assert "[redacted]" in message
    assert secret not in repr(adapter)
    assert len(server.requests) == 1


def test_openai_itself_needs_a_key_before_any_request() -> None:
    adapter = make_adapter(MODEL, env={})
    with pytest.raises(ModelCallError, match="no OpenAI credential; set OPENAI_API_KEY"):
        adapter.complete("p")


def test_a_local_server_needs_no_key() -> None:
    with FakeOpenAI(api_key=None) as local:
        completion = make_adapter("openai:llama3.1", env={"OPENAI_BASE_URL": local.base_url})
        assert completion.complete("hi").text == "echo: hi"
        assert local.requests[0].body["model"] == "llama3.1"
        assert local.violations == []


def test_a_400_is_not_retried_and_says_what_the_provider_said(server: FakeOpenAI) -> None:
    server.script(error_reply(404, "invalid_request_error", "model nope does not exist"))
    with pytest.raises(ModelCallError, match="model nope does not exist") as caught:
        adapter_for(server, "openai:nope", max_retries=3).complete("p")
    assert caught.value.status == 404
    assert "check the model id" in str(caught.value)
    assert len(server.requests) == 1


def test_a_bad_model_id_and_a_missing_sdk_are_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError, match="expected openai:NAME"):
        make_adapter("openai:", env={})
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(VerdryxError, match=r"pip install 'verdryx\[openai\]'"):
        make_adapter(MODEL, env={"OPENAI_API_KEY": "k"})
    assert isinstance(make_adapter("stub", env={}), StubAdapter)
