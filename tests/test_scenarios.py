"""Fourteen support scenarios, each one case run once and graded every way (docs/scenarios.md,
"Checks over the whole result"): the tools called with their arguments, the reply, a judge
over the reply, and the refund the agent reports in its metadata.

The agent under test is a target on the real `anthropic` SDK, talking to the loopback fake
Messages server, which plays the model (a scripted answer per scenario) and the judge; the
calls are counted there. Real pytest sessions (`pytester`), the runs read back from SQLite."""

from __future__ import annotations

import json
import math
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic, RecordedRequest, message_reply
from fakes.scripted import Reply
from plugin_support import stored_runs

SCENARIOS = Path(__file__).parent / "fixtures" / "scenarios" / "support-scenarios.evalset.json"
MODEL = "claude-haiku-4-5"
USAGE = (120, 40)

#: The agent under test: one Messages call with its own tools; it reports what it refunded.
AGENT = textwrap.dedent(
    f"""
    import anthropic

    TOOLS = [{{"name": n, "description": n, "input_schema": {{"type": "object"}}}}
             for n in ("lookup_order", "refund_order", "cancel_order", "update_address",
                       "reset_password", "escalate")]

    _CLIENT = []

    def answer(case):
        if not _CLIENT:
            _CLIENT.append(anthropic.Anthropic(max_retries=0))
        message = _CLIENT[0].messages.create(
            model={MODEL!r}, max_tokens=512, tools=TOOLS,
            messages=[{{"role": "user", "content": case.prompt}}],
        )
        calls = [{{"name": b.name, "arguments": b.input}}
                 for b in message.content if b.type == "tool_use"]
        text = "".join(b.text for b in message.content if b.type == "text")
        refunds = [c["arguments"]["amount"] for c in calls if c["name"] == "refund_order"]
        return {{
            "output": text,
            "tool_calls": calls,
            "metadata": {{"refund": {{"amount": refunds[0]}}}} if refunds else {{}},
            "usage": {{"input_tokens": message.usage.input_tokens,
                       "output_tokens": message.usage.output_tokens, "model": {MODEL!r}}},
        }}
    """
)


def _scenarios() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(SCENARIOS.read_text(encoding="utf-8"))["cases"]
    return cases


def _right_answer(case: dict[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
    """What a good agent replies and calls: the case's expectations, as a model would word
    them (a name's case changed, to exercise ignore_case)."""
    trace = next(c for c in case["checks"] if c["grader"] == "tool_trace")
    calls = [(c["name"], dict(c["arguments"])) for c in trace["expected_tool_calls"]]
    for _, arguments in calls:
        if "reason" in arguments:
            arguments["reason"] = arguments["reason"].title()
    reply = next(c for c in case["checks"] if c["grader"] == "icontains")["expected"]
    return f"Thanks for writing. {reply.capitalize()}.", calls


class Model:
    """The fake's answers: each scenario's right answer, but for `broken` scenarios (the
    regressed agent), which say nothing useful and refund a wrong amount, as a string."""

    def __init__(self) -> None:
        self.by_prompt = {case["prompt"]: case for case in _scenarios()}
        self.by_prompt_ids = [case["id"] for case in self.by_prompt.values()]
        self.broken: set[str] = set()
        self.judge_score = 0.9

    def __call__(self, request: RecordedRequest) -> Reply:
        if (request.body.get("tool_choice") or {}).get("name") == "record_verdict":
            verdict = {"score": self.judge_score, "reason": "clear and polite"}
            return message_reply(tool_uses=[("record_verdict", verdict)], usage=(50, 10))
        case = self.by_prompt[request.user_text]
        text, calls = _right_answer(case)
        if case["id"] in self.broken:
            text = "Done."
            calls = [
                (name, {**args, "amount": str(args["amount"] + 1)} if "amount" in args else args)
                for name, args in calls
            ]
        return message_reply(text=text, tool_uses=calls, usage=USAGE)


@pytest.fixture
def model(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> Iterator[Model]:
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    scripted = Model()
    server.responder = scripted
    yield scripted


def _session(pytester: pytest.Pytester, db: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--verdryx-db={db}",
        "--verdryx-target=support_llm_agent:answer",
        f"--verdryx-judge={MODEL}",
        *args,
    )


def test_fourteen_scenarios_are_fourteen_cases_and_fourteen_agent_runs_gated(
    pytester: pytest.Pytester, server: FakeAnthropic, model: Model
) -> None:
    shutil.copy(SCENARIOS, pytester.path / SCENARIOS.name)
    (pytester.path / "support_llm_agent.py").write_text(AGENT, encoding="utf-8")
    db = pytester.path / "s.db"
    saved = _session(pytester, db, "--verdryx-save-baseline=v1")
    saved.assert_outcomes(passed=14)
    agent_calls = [r for r in server.requests if "record_verdict" not in json.dumps(r.body)]
    judge_calls = [r for r in server.requests if r not in agent_calls]
    assert len(agent_calls) == 14 and len(judge_calls) == 14
    assert sorted(r.user_text for r in agent_calls) == sorted(model.by_prompt)
    (run,) = stored_runs(db)
    assert len(run.scores) == 14
    for score in run.scores:
        # Every check's score is stored, each naming the part it read.
        assert [c.value for c in score.checks][:3] == [1.0, 1.0, 0.9]
        assert [c.on for c in score.checks][:3] == ["tool_calls", "output", "output"]
    refunds = [s for s in run.scores if len(s.checks) == 4]
    assert {s.case_id for s in refunds} == {"refund-broken", "refund-gold"}
    assert all(s.checks[3].on == "metadata.refund.amount" for s in refunds)
    # The judge saw each case's own prompt and the agent's reply.
    assert sorted(model.by_prompt)[0] in "".join(r.user_text for r in judge_calls)
    # Target usage is priced by the price book, apart from the judge's spend.
    # claude-haiku-4-5 at $1 / $5 per million input / output tokens (Anthropic's price list).
    per_call = (USAGE[0] * 1.00 + USAGE[1] * 5.00) / 1_000_000
    assert math.isclose(run.model_cost_usd, 14 * per_call, rel_tol=1e-9)
    assert run.judge_cost_usd > 0
    saved.stdout.fnmatch_lines(["*(target $*, judge $*)*"])

    server.reset()
    unchanged = _session(pytester, db, "--verdryx-baseline=v1")
    assert unchanged.ret == 0
    unchanged.stdout.fnmatch_lines(["*verdict: ON-TRACK*"])

    server.reset()
    model.broken = set(model.by_prompt_ids)
    regressed = _session(pytester, db, "--verdryx-baseline=v1", "--verdryx-fail-on=cases")
    assert regressed.ret == 1
    assert len([r for r in server.requests if "record_verdict" not in json.dumps(r.body)]) == 14
    regressed.stdout.fnmatch_lines(["*verdict: REGRESSED*"])
    regressed.stdout.fnmatch_lines(
        [
            "*support-scenarios::refund-broken scored*",
            "*checks:*",
            "*#1 tool_trace on tool_calls: 0.500 (weight 2)*",
            "*wrong args  refund_order (call 2, expected 2): amount: expected 42.0, got"
            ' "43.0"; type amount: expected number, got "43.0"',
            "*#4 numeric on metadata.refund.amount: 0.000*",
        ]
    )
