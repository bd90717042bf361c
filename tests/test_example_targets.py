"""The target examples: the offline order-support target passes its own eval set, and the
Anthropic SDK agent runs its tool loop end to end against the fake Messages API."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic, message_reply

from verdryx_core.cases import ToolCall
from verdryx_core.evalsets.load import evalset_from_data
from verdryx_core.graders import GradeContext, build_graders
from verdryx_core.targets import Target, TargetCase, TargetRunner

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ROOT / "examples" / "targets"
AGENT = ROOT / "examples" / "agent"
ORDERS = TARGETS / "orders.evalset.json"


@pytest.fixture
def example_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in ("order_support", "order_agent"):
        sys.modules.pop(name, None)


def _orders_set() -> Any:
    """The example's eval set, read and validated like any eval set file."""
    return evalset_from_data(json.loads(ORDERS.read_text(encoding="utf-8")), ORDERS)


@pytest.mark.parametrize("function", ["answer", "answer_async"])
def test_the_order_support_target_passes_its_eval_set(example_path: None, function: str) -> None:
    evalset = _orders_set()
    assert {case.target for case in evalset.cases} == {"order_support:answer"}
    target = Target.load(f"order_support:{function}", rootdir=TARGETS)
    assert target.is_async == (function == "answer_async")
    cases = [TargetCase.from_eval_case(case, eval_set_id=evalset.id) for case in evalset.cases]
    with TargetRunner(concurrency=4) as runner:
        outcomes = runner.run(target, cases)
    graders = build_graders()
    context = GradeContext(eval_set_id=evalset.id)
    scores = {}
    for case, outcome in zip(evalset.cases, outcomes, strict=True):
        assert outcome.result is not None, outcome.error
        output: Any = outcome.result.output
        if case.grader == "tool_trace":
            output = list(outcome.result.tool_calls)
        scores[case.id] = graders[case.grader].grade(case, output, context).value
    assert scores == dict.fromkeys(scores, 1.0)
    assert len(scores) == 10
    # The gold tier (case metadata) widens the refund window: same order, other trace.
    by_id = {o.case_id: o for o in outcomes}
    assert by_id["refund-gold-customer"].result.tool_calls[-1] == ToolCall(  # type: ignore[union-attr]
        name="refund_order", arguments={"order_id": "A-1003", "amount": 99.0}
    )


# -- the Anthropic SDK agent --------------------------------------------------------------


@pytest.fixture
def agent_env(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> FakeAnthropic:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("VERDRYX_AGENT_MODEL", "claude-haiku-4-5")
    return server


def test_the_agent_runs_its_tool_loop_end_to_end(
    example_path: None, agent_env: FakeAnthropic
) -> None:
    server = agent_env
    server.script(
        message_reply(text="Let me check.", tool_uses=[("lookup_order", {"order_id": "A-1001"})]),
        message_reply(tool_uses=[("refund_order", {"order_id": "A-1001"})], usage=(40, 8)),
        message_reply(text="Your order A-1001 was refunded: $42.00.", usage=(60, 12)),
    )
    target = Target.load("order_agent:answer", rootdir=AGENT)
    case = TargetCase(id="refund", eval_set_id="agent", prompt="Please refund A-1001.")
    with TargetRunner() as runner:
        (outcome,) = runner.run(target, [case])
    assert outcome.result is not None, outcome.error
    result = outcome.result
    assert result.output == "Your order A-1001 was refunded: $42.00."
    assert result.tool_calls == (
        ToolCall(name="lookup_order", arguments={"order_id": "A-1001"}),
        ToolCall(name="refund_order", arguments={"order_id": "A-1001"}),
    )
    assert (result.usage.input_tokens, result.usage.output_tokens) == (110, 25)
    assert result.usage.cost_usd == pytest.approx((110 * 1.0 + 25 * 5.0) / 1e6)
    assert result.metadata == {"model": "claude-haiku-4-5", "turns": 3}
    # What went over the wire: each tool result answers the tool_use before it (the fake
    # checks the pairing), carrying what the database said.
    first, second, third = server.requests
    assert first.body["messages"] == [{"role": "user", "content": "Please refund A-1001."}]
    assert [tool["name"] for tool in first.body["tools"]] == ["lookup_order", "refund_order"]
    looked_up = json.loads(second.body["messages"][-1]["content"][0]["content"])
    assert looked_up == {"id": "A-1001", "status": "delivered", "total": 42.0, "refunded": False}
    refunded = json.loads(third.body["messages"][-1]["content"][0]["content"])
    assert refunded == {"refunded": 42.0}
    assert len(third.body["messages"]) == 5


def test_the_agents_cases_share_one_connection(
    example_path: None, agent_env: FakeAnthropic
) -> None:
    agent_env.script(*(message_reply(text=f"answer {i}") for i in range(3)))  # one turn each
    target = Target.load("order_agent:answer", rootdir=AGENT)
    cases = [
        TargetCase(id=f"q{i}", eval_set_id="agent", prompt=f"Where is A-100{i}?") for i in range(3)
    ]
    with TargetRunner(concurrency=1) as runner:
        outcomes = runner.run(target, cases)
    assert [o.result.output if o.result else o.error for o in outcomes] == [
        f"answer {i}" for i in range(3)
    ]
    # One client for the run: its connection kept alive from case to case.
    assert len({request.client_port for request in agent_env.requests}) == 1


def test_an_agent_that_never_finishes_is_that_cases_error(
    example_path: None, agent_env: FakeAnthropic
) -> None:
    agent_env.tool_calls = ["lookup_order"]  # the default reply: always another tool call
    target = Target.load("order_agent:answer", rootdir=AGENT)
    case = TargetCase(id="loop", eval_set_id="agent", prompt="Where is A-1002?")
    with TargetRunner() as runner:
        (outcome,) = runner.run(target, [case])
    assert outcome.result is None and outcome.error_kind == "exception"
    assert outcome.error == (
        "target order_agent:answer raised RuntimeError: the agent did not finish within 6 "
        "model turns"
    )
    assert len(agent_env.requests) == 6


def test_the_fake_refuses_a_tool_result_that_answers_nothing(server: FakeAnthropic) -> None:
    import anthropic

    client = anthropic.Anthropic(api_key=server.api_key, base_url=server.url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="did not call"):
        client.messages.create(
            model="claude-haiku-4-5",
            max_tokens=10,
            messages=[
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}],
                },
            ],
        )
    assert any("did not call" in v for v in server.violations)
    server.reset()  # the violation was the point


def test_the_order_support_set_runs_in_a_pytest_session(
    pytester: pytest.Pytester,
) -> None:
    # As docs/targets.md says: the set's own "target" names the agent, its conftest makes
    # the folder importable, and every case passes.
    folder = pytester.path / "targets"
    shutil.copytree(TARGETS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    result = pytester.runpytest("targets", "--no-verdryx-store")
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(["*cases: 10 passed, 0 failed, 0 unmeasured*"])
