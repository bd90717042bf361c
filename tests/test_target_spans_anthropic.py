"""An agent on the anthropic SDK under `opentelemetry-instrumentation-anthropic` is graded on
its spans (docs/targets.md, "Frameworks"): its own tool loop returns only the reply, and the
chat spans give the tool calls the model asked for and the tokens, each response counted
once though the SDK's own span and the instrumentation's both report it. The real SDK and the
real instrumentation talk to the loopback fake.

The session runs in a subprocess: its conftest.py sets a tracer provider of its own (the
user's, with an exporter), which verdryx adds its processor to, and instruments the SDK for
the whole process; neither can be undone in this one.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from fakes.anthropic_server import FakeAnthropic, RecordedRequest, Reply, message_reply
from plugin_support import stored_runs

pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk (the dev extra)")
pytest.importorskip(
    "opentelemetry.instrumentation.anthropic",
    reason="needs opentelemetry-instrumentation-anthropic: pip install -e '.[dev,frameworks]'",
)

CONFTEST = textwrap.dedent(
    """
    import json
    from pathlib import Path

    from opentelemetry import trace
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    EXPORTED = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(EXPORTED))
    trace.set_tracer_provider(provider)
    AnthropicInstrumentor().instrument()


    def pytest_unconfigure(config):
        names = sorted({span.name for span in EXPORTED.get_finished_spans()})
        (Path(__file__).parent / "exported.json").write_text(json.dumps(names))
    """
)

AGENT = textwrap.dedent(
    """
    import anthropic

    SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}}
    TOOLS = [{"name": "lookup_order", "input_schema": SCHEMA}]
    client = anthropic.Anthropic()


    def answer(prompt: str) -> str:
        messages = [{"role": "user", "content": prompt}]
        while True:
            reply = client.messages.create(
                model="claude-haiku-4-5", max_tokens=200, messages=messages, tools=TOOLS
            )
            uses = [block for block in reply.content if block.type == "tool_use"]
            if not uses:
                return reply.content[0].text
            said = [block.model_dump(exclude_none=True) for block in reply.content]
            messages.append({"role": "assistant", "content": said})
            results = [
                {"type": "tool_result", "tool_use_id": use.id, "content": "shipped"} for use in uses
            ]
            messages.append({"role": "user", "content": results})
    """
)


def _respond(request: RecordedRequest) -> Reply:
    last = request.body["messages"][-1]["content"]
    if isinstance(last, list) and any(part.get("type") == "tool_result" for part in last):
        return message_reply(text="It has shipped.", usage=(30, 8), model="claude-haiku-4-5")
    order = request.user_text.split()[-1]
    return message_reply(
        tool_uses=[("lookup_order", {"order_id": order})], usage=(20, 6), model="claude-haiku-4-5"
    )


def test_an_instrumented_anthropic_agent_is_graded_on_its_spans(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    (pytester.path / "sdk_agent.py").write_text(AGENT, encoding="utf-8")
    cases = [
        {
            "id": order,
            "prompt": f"where is order {order}",
            "grader": "tool_trace",
            "expected_tool_calls": [{"name": "lookup_order", "arguments": {"order_id": order}}],
        }
        for order in ("A-1", "A-2", "A-3")
    ]
    (pytester.path / "sdk.evalset.json").write_text(json.dumps({"id": "sdk", "cases": cases}))
    db = pytester.path / "s.db"
    with FakeAnthropic() as server:
        server.responder = _respond
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--verdryx-db={db}", "--verdryx-target=sdk_agent:answer"
        )
        assert server.violations == []
    result.assert_outcomes(passed=3)
    (run,) = stored_runs(db)
    # Two responses a case, (20 + 6) + (30 + 8) tokens: each once, not once per span of it.
    assert [score.tokens for score in run.scores] == [64, 64, 64]
    assert all(score.cost_usd > 0 for score in run.scores)  # priced as claude-haiku-4-5
    # The user's own provider still exports its spans: verdryx added a processor to it.
    exported = json.loads((pytester.path / "exported.json").read_text())
    assert "anthropic.chat" in exported and "verdryx.target_call" in exported
