"""What a target may return, normalised and checked (docs/targets.md, "What a target returns")."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verdryx_core.cases import ToolCall
from verdryx_core.targets import TargetResult, TargetResultError, TargetUsage, normalise_result


def test_a_string_is_the_output() -> None:
    assert normalise_result("hello") == TargetResult(output="hello")
    assert normalise_result("").tool_calls == ()


def test_a_result_and_a_dict_read_the_same() -> None:
    fields: dict[str, Any] = {
        "output": "Refunded.",
        "tool_calls": [
            {"name": "lookup_order", "arguments": {"order_id": "A-1"}},
            {"name": "refund_order", "arguments": {"order_id": "A-1", "amount": 12.5}},
        ],
        "usage": {"input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0012},
        "metadata": {"turns": 3},
    }
    from_dict = normalise_result(fields)
    assert from_dict == normalise_result(TargetResult(**fields))
    assert from_dict.tool_names == ("lookup_order", "refund_order")
    assert from_dict.usage == TargetUsage(input_tokens=120, output_tokens=30, cost_usd=0.0012)
    assert from_dict.to_dict() == fields
    assert TargetResult.from_dict(from_dict.to_dict()) == from_dict


def test_tool_calls_accept_bare_names_and_missing_arguments() -> None:
    result = normalise_result(
        {"output": "", "tool_calls": ["lookup_order", {"name": "escalate", "arguments": None}]}
    )
    assert result.tool_calls == (ToolCall(name="lookup_order"), ToolCall(name="escalate"))
    assert result.to_dict()["tool_calls"] == [{"name": "lookup_order"}, {"name": "escalate"}]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "the target returned NoneType None; expected a string, a TargetResult or a dict"),
        (42, "the target returned int 42; expected a string"),
        ({"text": "x"}, "the result has unknown key 'text'; expected only output, tool_calls"),
        ({"tool_calls": []}, "the result has no output"),
        ({"output": 3}, "output is 3, expected a string"),
        ({"output": "", "tool_calls": "lookup"}, "tool_calls is 'lookup', expected a list"),
        ({"output": "", "tool_calls": [{"tool": "x"}]}, "tool_calls[0] has unknown key 'tool'"),
        ({"output": "", "tool_calls": [{"name": ""}]}, "tool_calls[0].name is '', expected"),
        ({"output": "", "tool_calls": ["a", 7]}, "tool_calls[1] is 7, expected a dict"),
        (
            {"output": "", "tool_calls": [{"name": "a", "arguments": "id=1"}]},
            "tool_calls[0].arguments is 'id=1', expected a dict of arguments",
        ),
        (
            {"output": "", "tool_calls": [{"name": "a", "arguments": {"when": object()}}]},
            "tool_calls[0].arguments is not JSON data",
        ),
        ({"output": "", "usage": {"prompt_tokens": 3}}, "usage has unknown key 'prompt_tokens'"),
        ({"output": "", "usage": {"input_tokens": -1}}, "usage.input_tokens is -1, expected a"),
        ({"output": "", "usage": {"output_tokens": 2.5}}, "usage.output_tokens is 2.5"),
        ({"output": "", "usage": {"input_tokens": True}}, "usage.input_tokens is True"),
        ({"output": "", "usage": {"cost_usd": math.nan}}, "usage.cost_usd is nan"),
        ({"output": "", "usage": {"cost_usd": "0.1"}}, "usage.cost_usd is '0.1', expected a"),
        ({"output": "", "usage": [1, 2]}, "usage is [1, 2], expected a dict"),
        ({"output": "", "metadata": ["a"]}, "metadata is ['a'], expected a dict"),
        ({"output": "", "metadata": {"x": math.inf}}, "metadata is not JSON data"),
    ],
)
def test_a_bad_return_is_one_line_naming_the_field(value: object, message: str) -> None:
    with pytest.raises(TargetResultError) as info:
        normalise_result(value)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_bad_result_built_by_the_target_fails_where_it_is_built() -> None:
    with pytest.raises(TargetResultError, match=r"usage\.cost_usd is -1\.0"):
        TargetResult(output="x", usage={"cost_usd": -1.0})  # type: ignore[arg-type]


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    output=st.text(max_size=20),
    calls=st.lists(
        st.fixed_dictionaries(
            {
                "name": st.text(min_size=1, max_size=10).filter(str.strip),
                "arguments": st.dictionaries(st.text(max_size=5), _json, max_size=3),
            }
        ),
        max_size=4,
    ),
    tokens=st.tuples(st.integers(0, 10**9), st.integers(0, 10**9)),
    cost=st.floats(0, 1e6, allow_nan=False),
    metadata=st.dictionaries(st.text(max_size=5), _json, max_size=3),
)
def test_every_valid_result_round_trips_through_plain_data(
    output: str,
    calls: list[dict[str, Any]],
    tokens: tuple[int, int],
    cost: float,
    metadata: dict[str, Any],
) -> None:
    data = {
        "output": output,
        "tool_calls": calls,
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1], "cost_usd": cost},
        "metadata": metadata,
    }
    result = normalise_result(data)
    assert result.to_dict() == data
    assert TargetResult.from_dict(result.to_dict()) == result
