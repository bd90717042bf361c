"""A case's `system` prompt and `messages` reach the model as they are, through both SDKs,
the cache and Message Batches (docs/evalset-reference.md, docs/models-and-judges.md "What
is sent")."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic
from fakes.openai_server import FakeOpenAI
from plugin_support import write_evalset

from verdryx_core.llm import CachedAdapter, make_adapter
from verdryx_core.store import Store

MODEL = "claude-haiku-4-5"
SYSTEM = "You are the support agent of Acme. Answer in one sentence."
CONVERSATION = (
    {"role": "user", "content": "I ordered a lamp."},
    {"role": "assistant", "content": "Which order number?"},
    {"role": "user", "content": "A-1, can I return it?"},
)
TOOLS = [{"name": "lookup_order", "input_schema": {"type": "object"}}]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake
        assert fake.violations == []


def test_anthropic_gets_the_system_prompt_and_the_whole_conversation(
    server: FakeAnthropic,
) -> None:
    adapter = make_adapter(MODEL, env=server.env())
    adapter.complete("A-1, can I return it?", system=SYSTEM, messages=CONVERSATION)
    adapter.complete_with_tools("look it up", TOOLS, system=SYSTEM)
    adapter.complete("plain")
    sent = [request.body for request in server.requests]
    assert sent[0]["system"] == SYSTEM
    assert sent[0]["messages"] == [dict(message) for message in CONVERSATION]
    assert sent[1]["system"] == SYSTEM and sent[1]["tools"][0]["name"] == "lookup_order"
    assert sent[1]["messages"] == [{"role": "user", "content": "look it up"}]
    # Without them the request is what it always was: no system key at all.
    assert "system" not in sent[2]
    assert sent[2]["messages"] == [{"role": "user", "content": "plain"}]


def test_openai_gets_the_system_prompt_first_and_the_whole_conversation(
    openai_server: FakeOpenAI,
) -> None:
    adapter = make_adapter("openai:gpt-4o-mini", env=openai_server.env())
    adapter.complete("A-1, can I return it?", system=SYSTEM, messages=CONVERSATION)
    adapter.complete("plain")
    first, second = (request.body["messages"] for request in openai_server.requests)
    assert first == [{"role": "system", "content": SYSTEM}, *map(dict, CONVERSATION)]
    assert second == [{"role": "user", "content": "plain"}]


def test_the_cache_tells_conversations_apart_and_keeps_old_keys(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    with Store.open(tmp_path / "v.db") as store:
        adapter = CachedAdapter(make_adapter(MODEL, env=server.env()), store, "on")
        prompt = "A-1, can I return it?"
        plain = adapter.cache_key("complete", prompt)
        keys = {
            plain,
            adapter.cache_key("complete", prompt, system=SYSTEM),
            adapter.cache_key("complete", prompt, messages=CONVERSATION),
            adapter.cache_key("complete", prompt, system=SYSTEM, messages=CONVERSATION),
        }
        assert len(keys) == 4
        # A case without a system prompt or messages keeps the key it always had, so
        # existing caches stay valid: the documented recipe, computed here on its own.
        material = {
            "format": 1,
            "kind": "complete",
            "model": MODEL,
            "system": None,
            "prompt": prompt,
            "tools": None,
            "parameters": json.loads(json.dumps(dict(adapter.parameters))),
            "repeat": 0,
        }
        text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert plain == hashlib.sha256(text.encode("utf-8")).hexdigest()
        for _ in range(2):
            adapter.complete(prompt, system=SYSTEM, messages=CONVERSATION)
            adapter.complete(prompt)
    assert len(server.requests) == 2


@pytest.mark.usefixtures("anthropic_env")
@pytest.mark.parametrize("batch", [[], ["--verdryx-batch"]], ids=["calls", "batch"])
def test_a_conversation_case_is_sent_as_written_by_the_plugin(
    pytester: pytest.Pytester, server: FakeAnthropic, batch: list[str]
) -> None:
    cases = [
        {
            "id": "returns",
            "system": SYSTEM,
            "messages": list(CONVERSATION),
            "expected": "echo: A-1, can I return it?",
        },
        {"id": "plain", "prompt": "hello", "expected": "echo: hello"},
    ]
    write_evalset(pytester.path, "support", "support", cases)
    db = pytester.path / "v.db"
    result = pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-model={MODEL}", *batch)
    result.assert_outcomes(passed=2)
    if batch:
        (requests,) = server.batches.values()
        sent = {request["custom_id"]: request["params"] for request in requests}
        bodies = sorted(sent.values(), key=lambda params: len(params["messages"]))
    else:
        bodies = sorted(
            (request.body for request in server.requests), key=lambda b: len(b["messages"])
        )
    plain, conversation = bodies
    assert conversation["system"] == SYSTEM
    assert conversation["messages"] == [dict(message) for message in CONVERSATION]
    assert "system" not in plain
    # The answers were cached under the conversation: an unchanged re-run calls nothing.
    server.reset()
    again = pytester.runpytest(f"--verdryx-db={db}", f"--verdryx-model={MODEL}")
    again.assert_outcomes(passed=2)
    assert server.requests == []
