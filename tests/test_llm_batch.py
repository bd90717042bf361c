"""Batch model calls (docs/sharding.md, "Batch model calls"): the real SDK submits one Message
Batch to the fake Anthropic server, polls it, reads its JSONL results; answers land in the
response cache at half price, failed requests are their own call's error and nothing else's."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic
from hypothesis import given
from hypothesis import strategies as st

from verdryx_core.errors import ModelCallError, UsageError
from verdryx_core.llm import CachedAdapter, Completion, PriceBook, StubAdapter, make_adapter
from verdryx_core.llm.batch import (
    BATCH_PRICE_FACTOR,
    PlannedCall,
    custom_id,
    plan_call,
    prefetch_batch,
)
from verdryx_core.store import Store

MODEL = "claude-haiku-4-5"
TOOLS = [{"name": "lookup", "input_schema": {"type": "object"}}]
PROMPTS = [f"question {i}" for i in range(5)]


@pytest.fixture
def fake() -> FakeAnthropic:
    with FakeAnthropic() as server:
        server.batch_polls = 2
        yield server


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store.open(tmp_path / "verdryx.db") as opened:
        yield opened


def _session(fake: FakeAnthropic, store: Store | None, **adapter: object) -> CachedAdapter:
    inner = make_adapter(MODEL, env=fake.env(), **adapter)  # type: ignore[arg-type]
    return CachedAdapter(inner, store)


def _model_calls(cached: CachedAdapter) -> list[PlannedCall]:
    calls = [plan_call(cached, "complete", p, label=f"case s::c{i}") for i, p in enumerate(PROMPTS)]
    calls.append(plan_call(cached, "tools", "use a tool", tools=TOOLS, label="case s::t"))
    return calls


def _paths(fake: FakeAnthropic) -> list[str]:
    return [f"{request.method} {request.path.rsplit('/', 1)[0]}" for request in fake.requests]


def _no_wait(_: float) -> None:
    pass


def test_the_whole_flow_model_calls_then_judge_calls(fake: FakeAnthropic, store: Store) -> None:
    cached = _session(fake, store)
    log = io.StringIO()
    first = prefetch_batch(cached, _model_calls(cached), poll_s=0.01, stream=log)
    assert first.batch_id == "msgbatch_fake0001"
    assert not first.errors and len(first.answers) == 6
    # One batch, polled, then its results: never a single Messages call.
    assert [r.method + " " + r.path for r in fake.requests if r.method == "POST"] == [
        "POST /v1/messages/batches"
    ]
    assert any(r.path.endswith("/results") for r in fake.requests)
    (sent,) = fake.batches.values()
    assert [item["params"] for item in sent[:5]] == [
        {"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": p}]}
        for p in PROMPTS
    ]
    assert fake.violations == []
    assert log.getvalue().startswith(
        "batch msgbatch_fake0001: 6 requests (5 model calls, 1 model call with tools) submitted"
    )
    assert "batch msgbatch_fake0001: 6/6" in log.getvalue()

    before = len(fake.requests)
    answers = [cached.complete(prompt) for prompt in PROMPTS]
    tools = cached.complete_with_tools("use a tool", TOOLS)
    assert len(fake.requests) == before  # served from the batch's answers
    assert [a.text for a in answers] == [f"echo: {p}" for p in PROMPTS]
    assert tools.tool_names == ("lookup",)
    full = PriceBook.default().cost(MODEL, 10, 5)
    assert all(a.cost_usd == pytest.approx(full * BATCH_PRICE_FACTOR) for a in answers)
    assert BATCH_PRICE_FACTOR == 0.5
    # A batch answer is what this run paid for: a miss, not a cache hit.
    assert not any(a.cached for a in answers)
    assert (cached.hits, cached.misses) == (0, 6)

    judges = [
        plan_call(cached, "judge", p, output=a.text, rubric="is it helpful?", label=f"case s::c{i}")
        for i, (p, a) in enumerate(zip(PROMPTS, answers, strict=True))
    ]
    second = prefetch_batch(cached, judges, poll_s=0.01, stream=log)
    assert second.batch_id == "msgbatch_fake0002" and not second.errors
    judge_requests = list(fake.batches.values())[1]
    assert judge_requests[0]["params"]["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    before = len(fake.requests)
    verdicts = [
        cached.judge(p, a.text, "is it helpful?") for p, a in zip(PROMPTS, answers, strict=True)
    ]
    assert len(fake.requests) == before
    assert [v.score for v in verdicts] == [0.75] * 5
    assert verdicts[0].reason == "fake judge reason"
    assert fake.violations == []

    # Stored with the session's other answers: a second run sends no batch and calls nothing.
    assert cached.flush() == 11
    again = _session(fake, store)
    before = len(fake.requests)
    result = prefetch_batch(again, [*_model_calls(again), *judges], poll_s=0.01, stream=log)
    assert result.batch_id is None
    assert again.complete(PROMPTS[0]).cached
    assert len(fake.requests) == before


@pytest.mark.parametrize(
    ("outcome", "words"),
    [
        ("expired", "batch msgbatch_fake0001 ended without an answer for this request"),
        ("errored", "the provider refused this request in batch msgbatch_fake0001"),
        ("canceled", "ended without an answer"),
    ],
)
def test_a_failed_request_is_that_calls_error_only(
    fake: FakeAnthropic, store: Store, outcome: str, words: str
) -> None:
    cached = _session(fake, store)
    calls = _model_calls(cached)
    fake.batch_outcomes[custom_id(calls[2].key)] = outcome
    result = prefetch_batch(cached, calls, poll_s=0.01, stream=io.StringIO())
    assert list(result.errors) == [calls[2].key]
    assert len(result.answers) == 5
    before = len(fake.requests)
    with pytest.raises(ModelCallError) as info:
        cached.complete(PROMPTS[2])
    message = str(info.value)
    assert message.startswith(f"model {MODEL} (case s::c2, model call, batch result {outcome}): ")
    assert words in message and "\n" not in message
    if outcome == "errored":
        assert "invalid_request_error: scripted batch error" in message
    # Raised again, not retried as a single call, and the other cases are untouched.
    with pytest.raises(ModelCallError):
        cached.complete(PROMPTS[2])
    assert [cached.complete(p).text for p in PROMPTS if p != PROMPTS[2]] == [
        f"echo: {p}" for p in PROMPTS if p != PROMPTS[2]
    ]
    assert len(fake.requests) == before
    # Only answers are stored: the failed call is asked again on the next run.
    cached.flush()
    again = _session(fake, store)
    retry = prefetch_batch(again, _model_calls(again), poll_s=0.01, stream=io.StringIO())
    assert [item["custom_id"] for item in fake.batches[retry.batch_id or ""]] == [
        custom_id(calls[2].key)
    ]


def test_the_wait_is_bounded_and_the_batch_canceled(fake: FakeAnthropic) -> None:
    fake.batch_polls = 1000
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    cached = _session(fake, None)
    result = prefetch_batch(
        cached,
        _model_calls(cached),
        poll_s=30,
        max_wait_s=300,
        sleep=sleep,
        clock=lambda: now[0],
        stream=io.StringIO(),
    )
    assert fake.canceled == ["msgbatch_fake0001"]
    assert len(result.errors) == 6 and not result.answers
    # Every case fails with the batch's error, naming its own call; nothing is sent again.
    before = len(fake.requests)
    with pytest.raises(ModelCallError) as info:
        cached.complete(PROMPTS[1])
    assert "batch msgbatch_fake0001 did not end within 300s (6 processing" in str(info.value)
    assert str(info.value).endswith("(case s::c1, model call)")
    assert len(fake.requests) == before
    assert fake.violations == []


def test_duplicate_calls_are_sent_once_and_temperature_travels(fake: FakeAnthropic) -> None:
    cached = _session(fake, None, temperature=0.0)
    calls = _model_calls(cached)
    result = prefetch_batch(cached, [*calls, *calls], poll_s=0.01, stream=io.StringIO())
    (sent,) = fake.batches.values()
    assert len(sent) == 6 and len(result.answers) == 6
    assert all(item["params"]["temperature"] == 0.0 for item in sent)
    assert fake.violations == []


def test_the_batch_request_is_the_single_call_request(fake: FakeAnthropic) -> None:
    """`request_params` is what the adapter sends: a single call puts the same body on the
    wire as the batch carries for it."""
    cached = _session(fake, None)
    planned = plan_call(cached, "judge", "q", output="a", rubric="r")
    cached.inner.judge("q", "a", "r")
    (request,) = fake.requests
    assert request.body == dict(planned.params)


def test_a_malformed_succeeded_message_is_that_calls_error(fake: FakeAnthropic) -> None:
    from fakes.anthropic_server import Reply

    fake.responder = lambda request: Reply(body={"content": "not a list"})
    cached = _session(fake, None)
    calls = _model_calls(cached)[:2]
    judge = plan_call(cached, "judge", "q", output="a", rubric="r", label="case s::j")
    result = prefetch_batch(cached, [*calls, judge], poll_s=0.01, stream=io.StringIO())
    assert set(result.errors) == {calls[0].key, calls[1].key}
    assert str(result.errors[calls[0].key]) == (
        f"model {MODEL} (case s::c0, model call): answer unreadable: a message without a "
        "'content' list"
    )
    # An unreadable judge answer is unmeasured, as on the single-call path.
    verdict = result.answers[judge.key]
    assert verdict.unmeasured is not None and "unreadable" in verdict.unmeasured  # type: ignore[union-attr]


def test_batching_needs_an_anthropic_model_and_the_cache_on(fake: FakeAnthropic) -> None:
    with pytest.raises(UsageError, match="batch model calls need an Anthropic model; 'stub'"):
        prefetch_batch(CachedAdapter(StubAdapter(), None), [])
    off = CachedAdapter(make_adapter(MODEL, env=fake.env()), None, "off")
    with pytest.raises(UsageError, match="need the response cache on"):
        prefetch_batch(off, [])


@given(st.text())
def test_custom_ids_are_what_the_api_accepts(key: str) -> None:
    key = key.encode("utf-8", "replace").decode()
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", custom_id(key))


def test_completion_type_round_trips_through_the_cache(fake: FakeAnthropic, store: Store) -> None:
    cached = _session(fake, store)
    prefetch_batch(cached, _model_calls(cached)[:1], poll_s=0.01, stream=io.StringIO())
    answer = cached.complete(PROMPTS[0])
    assert isinstance(answer, Completion) and answer.input_tokens == 10


def test_a_runs_cases_planned_as_two_batches(fake: FakeAnthropic, store: Store) -> None:
    from verdryx_core.cases import EvalCase
    from verdryx_core.llm.batch_plan import batch_run_calls

    cases = [
        ("s", EvalCase(id="plain", prompt="say hi", expected="hi")),
        ("s", EvalCase(id="trace", prompt="look up", grader="tool_trace", tools=tuple(TOOLS))),
        ("s", EvalCase(id="judged", prompt="explain", grader="llm_judge", rubric="clear?")),
        ("s", EvalCase(id="recorded", prompt="p", grader="llm_judge", rubric="r", output="given")),
        ("s", EvalCase(id="offline", prompt="p", expected="x", output="x")),
    ]
    model = _session(fake, store)
    judge = _session(fake, store)
    results = batch_run_calls(model, judge, cases, repeat=2, stream=io.StringIO(), poll_s=0.01)
    first, second = list(fake.batches.values())
    # 3 cases need the model, twice each; 2 judge cases, the recorded one judged once.
    assert len(first) == 6 and len(second) == 3
    assert [len(r.answers) for r in results] == [6, 3]
    before = len(fake.requests)
    for index in range(2):
        text = model.complete("explain", repeat=index).text
        assert judge.judge("explain", text, "clear?", repeat=index).score == 0.75
        assert model.complete("say hi", repeat=index).text == "echo: say hi"
        assert model.complete_with_tools("look up", TOOLS, repeat=index).tool_names == ("lookup",)
    assert judge.judge("p", "given", "r").score == 0.75
    assert len(fake.requests) == before
    assert fake.violations == []


def test_a_conversations_batched_verdict_is_the_one_its_grader_reads(
    fake: FakeAnthropic, store: Store
) -> None:
    # The judge is told a conversation's whole task (every turn), so the batch must ask for
    # that verdict; a verdict on the last turn alone would be paid and then called again.
    from verdryx_core.cases import EvalCase
    from verdryx_core.graders.base import GradeContext
    from verdryx_core.judge.grader import LLMJudgeGrader
    from verdryx_core.judge.prompt import judged_task
    from verdryx_core.llm.batch_plan import batch_run_calls

    case = EvalCase(
        id="chat",
        prompt="and now?",
        grader="llm_judge",
        rubric="answers the last turn",
        output="soon",
        messages=(
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "and now?"},
        ),
    )
    judge = _session(fake, store)
    batch_run_calls(None, judge, [("s", case)], stream=io.StringIO(), poll_s=0.01)
    (sent,) = next(iter(fake.batches.values()))
    assert "hello" in json.dumps(sent["params"]["messages"])  # the earlier turns went too
    assert judged_task(case) != case.prompt
    before = len(fake.requests)
    grade = LLMJudgeGrader(judge).grade(case, "soon", GradeContext(eval_set_id="s"))
    assert grade.value == 0.75
    assert len(fake.requests) == before  # read from the batch's answer, not called again


def test_verdryx_eval_batch(
    anthropic_env: FakeAnthropic, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from verdryx_core.cli import main

    cases = [{"id": f"q{i}", "prompt": f"q {i}", "expected": f"echo: q {i}"} for i in range(3)]
    path = tmp_path / "live.evalset.json"
    path.write_text(json.dumps({"id": "live", "cases": cases}), encoding="utf-8")
    argv = ["eval", str(path), "--model", MODEL, "--batch", "--db", str(tmp_path / "v.db")]
    assert main([*argv, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["mean_score"] == 1.0
    assert [r.path for r in anthropic_env.requests if r.method == "POST"] == [
        "/v1/messages/batches"
    ]
    price = PriceBook.default().cost(MODEL, 10, 5)
    assert all(s["cost_usd"] == pytest.approx(price / 2) for s in document["scores"])
    assert main(["eval", str(path), "--batch", "--model", "stub"]) == 2
    assert "batch model calls need an Anthropic model; 'stub' is not one; drop --batch" in (
        capsys.readouterr().err
    )
