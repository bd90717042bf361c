"""A target's OpenTelemetry spans as its result (docs/targets.md, "Frameworks"): a target that
returns only text is graded on the tool calls, tokens and model its framework's GenAI spans
report, through real pytest sessions and real frameworks (pydantic-ai with its
`FunctionModel`, from the `frameworks` extra; an agent instrumented by hand on the
OpenTelemetry API), never mocked spans.

The global tracer provider is set once per process, so every session here shares verdryx's
own provider; the one test that needs a provider of the user's runs in a subprocess
(tests/test_target_spans_anthropic.py).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic, message_reply
from plugin_support import stored_runs, write_evalset

from verdryx_core import evaluate
from verdryx_core.evaluation import EvalSettings
from verdryx_core.targets import TargetCase

pytest.importorskip("opentelemetry.sdk.trace", reason="needs opentelemetry-sdk (the dev extra)")

if importlib.util.find_spec("pydantic_ai") is not None:
    # Imported here, once: pytester's in-process sessions drop what each one imported, and the
    # framework's modules would be imported again by every session.
    import pydantic_ai.models.function  # noqa: F401

#: The framework tests need the `frameworks` extra, apart from dev (CI's install time).
needs_pydantic_ai = pytest.mark.skipif(
    importlib.util.find_spec("pydantic_ai") is None,
    reason="needs pydantic-ai-slim: pip install -e '.[dev,frameworks]'",
)

#: A pydantic-ai agent on its offline FunctionModel: it looks an order up (or refunds it, when
#: asked to) with the order id the prompt ends with, then answers with the tool's result.
PYDANTIC_AGENT = textwrap.dedent(
    """
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    Agent.instrument_all()


    def _model(messages, info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if last.part_kind == "user-prompt":
            tool = "refund_order" if "refund" in last.content else "lookup_order"
            return ModelResponse(parts=[ToolCallPart(tool, {"order_id": last.content.split()[-1]})])
        return ModelResponse(parts=[TextPart(f"done: {last.content}")])


    agent = Agent(FunctionModel(_model, model_name="orders-fn"))


    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        return f"{order_id} shipped"


    @agent.tool_plain
    def refund_order(order_id: str) -> str:
        return f"{order_id} refunded"


    def answer(prompt: str) -> str:
        return agent.run_sync(prompt).output


    async def answer_async(prompt: str) -> str:
        return (await agent.run(prompt)).output


    def answer_with_own_calls(prompt: str) -> dict:
        output = agent.run_sync(prompt).output
        own = {"name": "lookup_order", "arguments": {"order_id": "own"}}
        return {"output": output, "tool_calls": [own]}
    """
)


def _lookup(case_id: str, order: str, tool: str = "lookup_order") -> dict[str, Any]:
    return {
        "id": case_id,
        "prompt": f"where is order {order}",
        "grader": "tool_trace",
        "expected_tool_calls": [{"name": tool, "arguments": {"order_id": order}}],
    }


def _project(root: Path, module: str, cases: list[dict[str, Any]]) -> Path:
    (root / f"{module}.py").write_text(PYDANTIC_AGENT, encoding="utf-8")
    path = root / "orders.evalset.json"
    path.write_text(json.dumps({"id": "orders", "cases": cases}), encoding="utf-8")
    return root / "s.db"


@needs_pydantic_ai
def test_a_pydantic_ai_agent_is_graded_on_its_spans(pytester: pytest.Pytester) -> None:
    db = _project(pytester.path, "pai_graded", [_lookup("a1", "A-1"), _lookup("a2", "A-2")])
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--verdryx-db={db}", "--verdryx-target=pai_graded:answer"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["OpenTelemetry spans: tool calls or usage of 2 target call(s) read from their spans*"]
    )
    (run,) = stored_runs(db)
    # Two model requests per case (the tool call, then the answer): the chat spans' tokens,
    # not the agent span's aggregated total on top of them.
    assert all(score.tokens > 0 for score in run.scores)
    assert len({score.tokens for score in run.scores}) == 1


@needs_pydantic_ai
def test_the_wrong_tool_in_the_spans_fails_the_case(pytester: pytest.Pytester) -> None:
    case = {**_lookup("r1", "A-1"), "prompt": "refund order A-1"}
    db = _project(pytester.path, "pai_wrong", [case])
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--verdryx-db={db}", "--verdryx-target=pai_wrong:answer"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(['*unexpected  refund_order {"order_id": "A-1"}  (call 1)'])


@needs_pydantic_ai
def test_off_reads_no_spans(pytester: pytest.Pytester) -> None:
    db = _project(pytester.path, "pai_off", [_lookup("a1", "A-1")])
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--verdryx-db={db}",
        "--verdryx-target=pai_off:answer",
        "--verdryx-otel=off",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*missing     lookup_order*"])
    assert "OpenTelemetry spans" not in result.stdout.str()


@needs_pydantic_ai
def test_spans_stay_with_their_case_under_concurrency(pytester: pytest.Pytester) -> None:
    """Eight async cases in flight at once on one event loop, each reading its own spans."""
    cases = [_lookup(f"c{i}", f"B-{i}") for i in range(8)]
    db = _project(pytester.path, "pai_async", cases)
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--verdryx-db={db}",
        "--verdryx-target=pai_async:answer_async",
        "--verdryx-concurrency=8",
    )
    result.assert_outcomes(passed=8)


@needs_pydantic_ai
def test_what_a_target_returns_wins_over_its_spans(pytester: pytest.Pytester) -> None:
    db = _project(pytester.path, "pai_own", [_lookup("a1", "own")])
    (pytester.path / "orders.evalset.json").write_text(
        json.dumps({"id": "orders", "cases": [{**_lookup("a1", "own"), "prompt": "order A-9"}]})
    )
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--verdryx-db={db}",
        "--verdryx-target=pai_own:answer_with_own_calls",
    )
    # Its own call (order "own") is graded, not the spans' (order A-9); its usage is the spans'.
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "OpenTelemetry spans: tool calls or usage of 1 target call(s) read from their "
            "spans; 1 call(s) returned tool calls or usage of their own, graded instead of "
            "their spans' (--verdryx-otel off to read no spans)"
        ]
    )
    (run,) = stored_runs(db)
    assert run.scores[0].tokens > 0


#: An agent instrumented by hand on the OpenTelemetry API, as a user's own loop would be: its
#: tools run in worker threads that carry the context (`contextvars.copy_context`), and one
#: tool span says arguments that are not JSON.
HAND_AGENT = textwrap.dedent(
    """
    import contextvars
    import json
    from concurrent.futures import ThreadPoolExecutor

    from opentelemetry import trace

    tracer = trace.get_tracer("hand-agent")


    def _tool(name, arguments):
        with tracer.start_as_current_span(
            f"execute_tool {name}",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": arguments,
            },
        ):
            return name


    def answer(prompt: str) -> str:
        order = prompt.split()[-1]
        with tracer.start_as_current_span(
            "chat hand-model",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.response.model": "claude-haiku-4-5",
                "gen_ai.usage.input_tokens": 1000,
                "gen_ai.usage.output_tokens": 100,
            },
        ):
            pass
        arguments = "{not json" if order == "bad" else json.dumps({"order_id": order})
        with ThreadPoolExecutor(2) as pool:
            for name in ("lookup_order", "notify"):
                context = contextvars.copy_context()
                pool.submit(context.run, _tool, name, arguments).result()
        return "done"
    """
)


def test_spans_from_worker_threads_and_a_bad_one(pytester: pytest.Pytester) -> None:
    (pytester.path / "hand_agent.py").write_text(HAND_AGENT, encoding="utf-8")
    cases = [
        {
            "id": order,
            "prompt": f"order {order}",
            "grader": "tool_trace",
            "expected_tool_calls": [
                {"name": "lookup_order", "arguments": {"order_id": order}},
                {"name": "notify"},
            ],
        }
        for order in ("A-1", "bad")
    ]
    (pytester.path / "hand.evalset.json").write_text(json.dumps({"id": "hand", "cases": cases}))
    db = pytester.path / "s.db"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--verdryx-db={db}", "--verdryx-target=hand_agent:answer"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*hand.evalset.json::bad: target hand_agent:answer: its OpenTelemetry spans cannot "
            "be read: span 'execute_tool lookup_order': gen_ai.tool.call.arguments is not JSON: "
            "'{not json'; pass --verdryx-otel off to grade only what it returns"
        ]
    )
    (run,) = stored_runs(pytester.path / "s.db")
    (score,) = run.measured
    assert score.tokens == 1100
    # Priced by the model the chat span names, as a returned usage with a model is.
    assert score.cost_usd > 0


def test_a_dialogue_reads_each_turns_spans_and_never_the_users(
    anthropic_env: FakeAnthropic, tmp_path: Path
) -> None:
    """Each turn's tool calls and tokens come from that turn's spans; the model playing the
    user (the anthropic SDK, whose own spans would land in the call's trace) is verdryx's
    work, outside the agent's spans: its tokens count once, as the user's."""
    from opentelemetry import trace

    tracer = trace.get_tracer("dialogue-agent")

    def agent(case: TargetCase) -> str:
        turn = sum(1 for m in case.messages or () if m["role"] == "assistant")
        tool = ("lookup", "refund")[min(turn, 1)]
        with tracer.start_as_current_span(
            "chat agent-model",
            attributes={"gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 2},
        ):
            pass
        with tracer.start_as_current_span(
            f"execute_tool {tool}",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.arguments": '{"id": "A-1"}',
            },
        ):
            pass
        return f"reply {turn + 1}"

    anthropic_env.script(
        message_reply(text="It is A-1, refund it.", usage=(100, 10)),
        message_reply(text="###DONE###", usage=(200, 20)),
    )
    case = {
        "id": "d",
        "user": {"persona": "Ann", "goal": "a refund of A-1"},
        "grader": "tool_trace",
        "expected_tool_calls": [
            {"name": "lookup", "arguments": {"id": "A-1"}},
            {"name": "refund", "arguments": {"id": "A-1"}},
        ],
    }
    path = write_evalset(tmp_path, "d", "d", [case])
    run = evaluate([path], EvalSettings(user_model="claude-haiku-4-5"), target=agent)
    (score,) = run.scores
    assert score.value == 1.0
    assert score.tokens == 2 * 42 + 110 + 220
    transcript = score.output or ""
    assert '  -> {"name":"refund","arguments":{"id":"A-1"}}' in transcript


def test_a_run_that_reads_no_spans_never_imports_the_sdk(tmp_path: Path) -> None:
    """`off`, or no target: opentelemetry-sdk is never imported (docs/targets.md)."""
    import subprocess

    path = write_evalset(tmp_path, "e", "e", [{"id": "a", "prompt": "hi", "expected": "hi"}])
    script = textwrap.dedent(
        f"""
        import sys
        from verdryx_core import evaluate
        from verdryx_core.evaluation import EvalSettings

        evaluate([{str(path)!r}], EvalSettings(otel="off"), target=lambda case: "hi")
        evaluate([{str(path)!r}], EvalSettings(model="stub"))
        print("opentelemetry.sdk.trace" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "False", done.stderr


@needs_pydantic_ai
@pytest.mark.parametrize(("otel", "mean"), [("auto", 1.0), ("off", 0.0)])
def test_verdryx_eval_reads_spans_unless_off(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    otel: str,
    mean: float,
) -> None:
    from verdryx_core.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    module = f"pai_cli_{otel}"
    _project(tmp_path, module, [_lookup("a1", "A-1")])
    path = str(tmp_path / "orders.evalset.json")
    code = main(["eval", path, "--target", f"{module}:answer", "--otel", otel, "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["mean_score"] == mean
    sys.modules.pop(module, None)
