"""The stub model: deterministic, records calls, configurable, thread-safe,
and its values round-trip through plain dicts."""

from __future__ import annotations

import threading

import pytest

from verdryx_core.cases import ToolCall
from verdryx_core.llm import Completion, Judgement, StubAdapter, StubCall

TOOLS = ({"name": "search", "input_schema": {"type": "object"}}, {"name": "refund"})


def test_the_stub_defaults() -> None:
    stub = StubAdapter()
    assert stub.model == "stub"
    assert stub.complete("p") == Completion(text="stub output")
    assert stub.complete_with_tools("p", TOOLS) == Completion(
        text="stub", tool_calls=(ToolCall(name="search", arguments={}),)
    )
    assert stub.judge("p", "o", "r") == Judgement(score=1.0, reason="stub judge")


def test_calls_are_recorded_in_order_with_their_arguments() -> None:
    stub = StubAdapter()
    stub.complete("a", repeat=1)
    stub.complete_with_tools("b", TOOLS)
    stub.judge("c", "out", "rub", repeat=2)
    assert stub.calls == [
        StubCall(kind="complete", prompt="a", repeat=1),
        StubCall(kind="tools", prompt="b", tools=TOOLS),
        StubCall(kind="judge", prompt="c", repeat=2, output="out", rubric="rub"),
    ]


def test_completion_judge_and_tool_names_are_configurable() -> None:
    stub = StubAdapter(
        completion=str.upper,
        judge_value=0.25,
        judge_reason="meh",
        tool_names=["refund", "search"],
        input_tokens=3,
        output_tokens=4,
        cost_usd=0.5,
    )
    assert stub.complete("hi") == Completion(
        text="HI", input_tokens=3, output_tokens=4, cost_usd=0.5
    )
    assert stub.complete_with_tools("p", TOOLS).tool_names == ("refund", "search")
    judgement = stub.judge("p", "o", "r")
    assert (judgement.score, judgement.reason, judgement.tokens) == (0.25, "meh", 7)


@pytest.mark.parametrize(
    ("tool_names", "tools", "expected"),
    [
        ([], TOOLS, ()),  # an explicit empty list is respected
        (None, (), ()),
        (None, ({"name": 3},), ()),
        (None, TOOLS, ("search",)),
    ],
)
def test_tool_names_rules(
    tool_names: list[str] | None, tools: tuple[dict[str, object], ...], expected: tuple[str, ...]
) -> None:
    assert StubAdapter(tool_names=tool_names).complete_with_tools("p", tools).tool_names == expected


def test_recording_is_thread_safe() -> None:
    stub = StubAdapter()
    threads = [
        threading.Thread(target=lambda: [stub.complete("p") for _ in range(200)]) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(stub.calls) == 1600


def test_values_round_trip_through_dicts() -> None:
    completion = Completion(
        text="t", tool_names=("a", "b"), input_tokens=1, output_tokens=2, cost_usd=0.1, cached=True
    )
    assert Completion.from_dict(completion.to_dict()) == completion
    measured = Judgement(score=0.5, reason="r", input_tokens=1, output_tokens=1, cost_usd=0.2)
    unmeasured = Judgement(score=None, unmeasured="why", cost_usd=0.3)
    for judgement in (measured, unmeasured):
        assert Judgement.from_dict(judgement.to_dict()) == judgement
    assert completion.tokens == 3


@pytest.mark.parametrize(
    ("score", "unmeasured"), [(None, None), (0.5, "why"), (1.5, None), (float("nan"), None)]
)
def test_a_judgement_is_either_a_score_in_range_or_unmeasured(
    score: float | None, unmeasured: str | None
) -> None:
    with pytest.raises(ValueError, match="Judgement"):
        Judgement(score=score, unmeasured=unmeasured)
