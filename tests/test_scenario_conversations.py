"""Conversations with tool turns: validated at load, sent to Anthropic and OpenAI in each
API's shape by the real SDKs (the loopback fakes check that every call is answered by its
result), handed to targets as written (docs/scenarios.md, "Conversations with tool turns")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic
from fakes.openai_server import FakeOpenAI
from plugin_support import write_evalset

from verdryx_core import evaluate
from verdryx_core.errors import EvalSetError
from verdryx_core.evalsets.load import load_evalset
from verdryx_core.judge.prompt import judged_task
from verdryx_core.llm import make_adapter
from verdryx_core.llm.conversation import openai_messages
from verdryx_core.targets import TargetCase

TOOLS = [
    {"name": "lookup_order", "input_schema": {"type": "object"}},
    {"name": "refund", "input_schema": {"type": "object"}},
]
#: Two calls in one turn (answered in the other order), then a turn with one more.
CHAT: list[dict[str, Any]] = [
    {"role": "user", "content": "Refund A-1 and A-2"},
    {
        "role": "assistant",
        "content": "Looking both up.",
        "tool_calls": [
            {"name": "lookup_order", "arguments": {"order_id": "A-1"}},
            {"name": "refund", "arguments": {"order_id": "A-2"}},
        ],
    },
    {"role": "tool", "name": "refund", "content": "refunded A-2"},
    {"role": "tool", "name": "lookup_order", "content": '{"status": "delivered"}'},
    {"role": "assistant", "tool_calls": [{"name": "refund", "arguments": {"order_id": "A-1"}}]},
    {"role": "tool", "name": "refund", "content": "refunded A-1"},
    {"role": "user", "content": "Thanks. When will I see it?"},
]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake
        assert fake.violations == []


def _loaded(tmp_path: Path) -> Any:
    path = write_evalset(
        tmp_path,
        "chat",
        "chat",
        [
            {
                "id": "c",
                "messages": CHAT,
                "tools": TOOLS,
                "grader": "tool_trace",
                "expected_tools": ["refund"],
            }
        ],
    )
    (case,) = load_evalset(path).cases
    return case


def test_a_chat_with_tool_turns_reaches_anthropic_as_paired_tool_blocks(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    case = _loaded(tmp_path)
    adapter = make_adapter("claude-haiku-4-5", env=server.env())
    adapter.complete_with_tools(case.prompt, list(case.tools), messages=case.messages)
    (request,) = server.requests
    sent = request.body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    uses = [b for b in sent[1]["content"] if b["type"] == "tool_use"]
    assert sent[1]["content"][0] == {"type": "text", "text": "Looking both up."}
    assert [(u["name"], u["input"]) for u in uses] == [
        ("lookup_order", {"order_id": "A-1"}),
        ("refund", {"order_id": "A-2"}),
    ]
    # Each result names its own call's id, whatever order the results come in.
    results = {b["tool_use_id"]: b["content"] for b in sent[2]["content"]}
    assert results == {uses[1]["id"]: "refunded A-2", uses[0]["id"]: '{"status": "delivered"}'}
    (last_use,) = sent[3]["content"]
    # The tool result and the user's next words share the one user turn after the call.
    assert sent[4]["content"] == [
        {"type": "tool_result", "tool_use_id": last_use["id"], "content": "refunded A-1"},
        {"type": "text", "text": "Thanks. When will I see it?"},
    ]
    assert len({u["id"] for u in (*uses, last_use)}) == 3


def test_a_chat_with_tool_turns_reaches_openai_as_tool_calls_and_tool_messages(
    openai_server: FakeOpenAI, tmp_path: Path
) -> None:
    case = _loaded(tmp_path)
    adapter = make_adapter("openai:gpt-4o-mini", env=openai_server.env())
    adapter.complete(case.prompt, messages=case.messages)
    (request,) = openai_server.requests
    sent = request.body["messages"]
    assert [m["role"] for m in sent] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "user",
    ]
    calls = sent[1]["tool_calls"]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("lookup_order", {"order_id": "A-1"}),
        ("refund", {"order_id": "A-2"}),
    ]
    assert sent[2] == {"role": "tool", "tool_call_id": calls[1]["id"], "content": "refunded A-2"}
    assert sent[3]["tool_call_id"] == calls[0]["id"]
    assert sent[4]["content"] is None  # calls only
    assert sent[5]["tool_call_id"] == sent[4]["tool_calls"][0]["id"]
    # The same conversation is the same request: ids come from positions.
    adapter.complete(case.prompt, messages=case.messages)
    assert openai_server.requests[1].body == request.body


def test_the_fakes_refuse_a_result_that_answers_no_call() -> None:
    """The pairing check can fail: a conversation the loader would refuse, sent anyway."""
    from openai import BadRequestError, OpenAI

    broken = [*CHAT[:2], {"role": "tool", "name": "cancel", "content": "?"}, CHAT[-1]]
    with FakeOpenAI() as fake:
        client = OpenAI(base_url=fake.base_url, api_key=fake.env()["OPENAI_API_KEY"], max_retries=0)
        with pytest.raises(BadRequestError):
            client.chat.completions.create(model="gpt-4o-mini", messages=openai_messages(broken))
        problems = list(fake.violations)
    assert any("answers tool_call_id None" in p for p in problems)
    assert any("never answered" in p or "before tool_call" in p for p in problems)


@pytest.mark.parametrize(
    ("messages", "field", "words"),
    [
        ([CHAT[0], CHAT[1], CHAT[0]], "messages[2]", "'lookup_order' has no result"),
        (
            [CHAT[0], {"role": "tool", "name": "refund", "content": "x"}],
            "messages[1].name",
            "which the assistant turn before it did not call",
        ),
        (
            [{"role": "user", "content": "x", "tool_calls": [{"name": "a"}]}],
            "messages[0].tool_calls",
            "only an assistant turn makes calls",
        ),
        (
            [CHAT[0], CHAT[1], {"role": "tool", "content": "x"}],
            "messages[2].name",
            "names the tool",
        ),
        ([CHAT[0], {"role": "assistant"}, CHAT[0]], "messages[1].content", "says something"),
        (CHAT[:2], "messages[1]", "has no result"),
    ],
)
def test_a_broken_tool_turn_is_one_line_naming_file_case_and_message(
    tmp_path: Path, messages: list[dict[str, Any]], field: str, words: str
) -> None:
    path = write_evalset(tmp_path, "bad", "bad", [{"id": "c1", "messages": messages}])
    with pytest.raises(EvalSetError) as caught:
        load_evalset(path)
    text = str(caught.value)
    assert "\n" not in text
    assert str(path) in text and "case 'c1'" in text and f"field '{field}'" in text
    assert words in text


def test_a_target_gets_the_tool_turns_as_written(tmp_path: Path) -> None:
    seen: list[TargetCase] = []

    def agent(case: TargetCase) -> dict[str, Any]:
        seen.append(case)
        return {"output": "in 3 days", "tool_calls": [{"name": "refund"}]}

    path = write_evalset(
        tmp_path,
        "chat",
        "chat",
        [{"id": "c", "messages": CHAT, "grader": "contains", "expected": "days"}],
    )
    run = evaluate([path], target=agent)
    assert [s.value for s in run.scores] == [1.0]
    (case,) = seen
    assert [dict(m) for m in case.messages or ()] == CHAT
    assert case.user_text() == "Thanks. When will I see it?"


def test_a_judge_is_told_the_tool_turns_of_the_conversation(tmp_path: Path) -> None:
    lines = judged_task(_loaded(tmp_path)).splitlines()
    assert lines[0] == "The conversation:"
    assert lines[1:5] == [
        "user: Refund A-1 and A-2",
        "assistant: Looking both up.",
        '  -> {"name":"lookup_order","arguments":{"order_id":"A-1"}}',
        '  -> {"name":"refund","arguments":{"order_id":"A-2"}}',
    ]
    assert "tool refund: refunded A-2" in lines
    assert lines[-1] == "user: Thanks. When will I see it?"
